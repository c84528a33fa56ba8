// The steps both sides of flat-in-process.test.ts take, each with its own executor and namespace: a cold start,
// partial syncs that move the web Service 3 → 5 → 2 endpoints (new dispatch chains, slots moved into holes), a
// restart that refills the live table (the in-process side: objects through libnftables, then every element in
// one netlink transaction), then a Service losing its endpoints and a new dispatch chain. After each step the side
// records `nft list table` of its namespace (run inside it), so the two can be compared line for line.
import { NftablesBackend } from '../../../packages/agent/src/backends/nftables/backend.js';
import { FLAT_LAYOUT } from '../../../packages/agent/src/backends/nftables/flat/layout.js';
import type { CommandRunner } from '../../../packages/agent/src/netfilter/command.js';
import type { NftExecutor } from '../../../packages/agent/src/netfilter/nft/executor.js';
import type { IPFamily } from '../../../packages/agent/src/model/ip.js';
import { FakeClock } from '../../../packages/agent/src/util/clock.js';
import { flatCluster, nodeFor, objects } from './flat-objects.js';

export interface StepRecord {
  readonly step: string;
  readonly full: boolean;
  readonly operations: number;
  /** `nft list table` of the family's table after the step. */
  readonly table: string;
}

export async function runFlatSteps(
  family: IPFamily,
  executorFor: () => NftExecutor,
  commands: CommandRunner,
): Promise<StepRecord[]> {
  const node = nodeFor(family);
  const nftFamily = family === 'IPv6' ? 'ip6' : 'ip';
  const clock = new FakeClock(0);
  const { cluster, load } = flatCluster(family);
  const records: StepRecord[] = [];
  const record = async (step: string, r: { full: boolean; operations: number }): Promise<void> => {
    const listed = await commands.run('nft', ['list', 'table', nftFamily, 'kube-proxy']);
    records.push({ step, full: r.full, operations: r.operations, table: listed.stdout });
  };

  let backend = new NftablesBackend({ node, commands, clock, layout: FLAT_LAYOUT, executor: executorFor() });
  load(3);
  await record('cold start', await cluster.sync(backend, true));
  for (const n of [5, 2]) {
    load(n);
    await record(`web with ${n} endpoints`, await cluster.sync(backend));
  }
  backend = new NftablesBackend({ node, commands, clock, layout: FLAT_LAYOUT, executor: executorFor() });
  await record('restart', await cluster.sync(backend, true));
  // The dns Service loses its slice: its entries go and a no-endpoint verdict comes, elements only.
  const dns = objects(family, 2).slices.find((s) => (s.metadata.name ?? '').startsWith('dns'));
  if (dns === undefined) throw new Error('flat-objects has no dns slice');
  cluster.deleteSlice(dns);
  await record('dns without endpoints after the restart', await cluster.sync(backend));
  load(4);
  await record('web with 4 endpoints', await cluster.sync(backend));
  return records;
}
