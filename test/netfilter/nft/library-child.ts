// Run by library.test.ts as `ip netns exec NS node --import tsx test/netfilter/nft/library-child.ts`: this process
// lives inside the test's namespace, so libnftables (whose netlink socket is in this process's namespace) programs
// that namespace and nothing else. Prints one JSON line: how the executor was chosen here, and the scenario's
// record through libnftables.
import { hostCommandRunner } from '../../../packages/agent/src/netfilter/command.js';
import { chooseNftExecutors } from '../../../packages/agent/src/netfilter/nft/choose-executor.js';
import { loadLibnftables } from '../../../packages/agent/src/netfilter/nft/libnftables.js';
import { NftLibraryExecutor } from '../../../packages/agent/src/netfilter/nft/library-executor.js';
import { runScenario } from './library-scenario.js';

const lib = loadLibnftables();
if ('error' in lib) {
  process.stdout.write(JSON.stringify({ error: lib.error }) + '\n');
  process.exit(2);
}
const chosen = chooseNftExecutors('auto', hostCommandRunner);
const records = await runScenario(
  (ref) => new NftLibraryExecutor(ref, lib.newContext(), hostCommandRunner),
  hostCommandRunner,
);
process.stdout.write(
  JSON.stringify({ chosen: 'error' in chosen ? chosen : { kind: chosen.kind }, records }) + '\n',
);
