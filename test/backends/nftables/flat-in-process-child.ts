// Run by flat-in-process.test.ts as `ip netns exec NS node --import tsx …/flat-in-process-child.ts FAMILY`: this
// process lives inside the test's namespace, as an agent inside its node's, so the executor chosen for it is the
// in-process one (libnftables, and nf_tables netlink for element-only work), and it writes that namespace only.
// Prints one JSON line: the executor's reason, the steps' records and how much went over netlink.
import { hostCommandRunner } from '../../../packages/agent/src/netfilter/command.js';
import { chooseNftExecutors } from '../../../packages/agent/src/netfilter/nft/choose-executor.js';
import { NftElementsExecutor } from '../../../packages/agent/src/netfilter/nft/elements-executor.js';
import type { IPFamily } from '../../../packages/agent/src/model/ip.js';
import { runFlatSteps } from './flat-steps.js';

const family = process.argv[2] as IPFamily;
const chosen = chooseNftExecutors('auto', hostCommandRunner);
if ('error' in chosen) {
  process.stdout.write(JSON.stringify({ error: chosen.error }) + '\n');
  process.exit(2);
}
const made: NftElementsExecutor[] = [];
const records = await runFlatSteps(
  family,
  () => {
    const e = chosen.create({ family: family === 'IPv6' ? 'ip6' : 'ip', table: 'kube-proxy' });
    if (!(e instanceof NftElementsExecutor)) throw new Error(`not the netlink executor: ${chosen.reason}`);
    made.push(e);
    return e;
  },
  hostCommandRunner,
);
process.stdout.write(
  JSON.stringify({ reason: chosen.reason, records, counts: made.map((e) => e.counts) }) + '\n',
);
for (const e of made) e.close();
