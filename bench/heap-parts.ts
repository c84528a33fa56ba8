// Where the agent's heap goes at a size, part by part, on bench/workload.ts's cluster: the model (the trackers'
// service ports and endpoints, as a proxier keeps them), then the flat layout's planner after a full render and
// commit. Heap after a forced collection, so each part is what stays, not garbage. A diagnostic beside the agent
// bench (whose peak RSS is the process a node runs, stores and all): it tells which part a change made smaller.
//
//   npm run build && node --expose-gc dist/bench/heap-parts.js 100000
import { refill } from 'kube-proxy-ts/backends/nftables/planner.js';
import { FLAT_LAYOUT } from 'kube-proxy-ts/backends/nftables/flat/layout.js';
import { BenchCluster, NFTABLES_BENCH_NODE } from './workload.js';

const MIB = 1024 * 1024;

/** What is measured, kept reachable until its heap was read. */
const kept: unknown[] = [];

function heapAfterGC(): number {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc === undefined) throw new Error('run with node --expose-gc (the parts are heap after a collection)');
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

function main(): void {
  const services = Number(process.argv[2] ?? 100_000);
  const endpoints = Number(process.argv[3] ?? 10);
  if (!Number.isInteger(services) || services <= 0 || !Number.isInteger(endpoints) || endpoints <= 0)
    throw new Error('usage: heap-parts.js [services] [endpoints per Service]');
  const start = heapAfterGC();
  const cluster = new BenchCluster(NFTABLES_BENCH_NODE.nodeName, endpoints);
  cluster.load(services);
  cluster.checkout();
  const model = heapAfterGC();
  const planner = FLAT_LAYOUT.createPlanner(
    NFTABLES_BENCH_NODE,
    () => NFTABLES_BENCH_NODE.nodeIPs,
    undefined,
  );
  const plan = planner.renderFull(cluster.snapshot).plan(refill(undefined), 0, false);
  let operations = 0;
  for (const op of plan.deferredOps?.make() ?? []) if (op.object.kind === 'element') operations++;
  plan.commit();
  kept.push(cluster, planner);
  const rendered = heapAfterGC();
  const row = (part: string, bytes: number): string =>
    `${part.padEnd(34)} ${(bytes / MIB).toFixed(1).padStart(7)} MiB ${((bytes / services) | 0).toString().padStart(6)} B/Service`;
  console.log(
    `heap after GC, ${services} Services × ${endpoints} endpoints (flat layout, ${operations} elements)`,
  );
  console.log(row('model (service ports, endpoints)', model - start));
  console.log(row('flat planner (after a full sync)', rendered - model));
}

main();
