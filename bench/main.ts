// `npm run bench`: numbers, not pass/fail. Every mode's module (bench/<mode>.ts, shape in bench/types.ts) runs
// inside one private network namespace and adds its rows to one table, so modes compare side by side.
// Needs root, `ip` and the modes' tools; touches nothing outside its namespace.
//
// Each (mode, size) runs in a fresh Node process (each iptables back end counts as a mode), so its peak RSS is
// that run's alone (not the garbage of an earlier, smaller run or of another mode), and its first sync is cold.
// That process runs inside the namespace (`ip netns exec`), as an agent runs inside its node's: it starts the
// kernel tools directly, and libnftables' socket is in that namespace.
// Run the compiled build to measure what a user runs: under tsx the loader's own thread adds ~25 MiB.
//   npm run build; KPTS_BENCH_MODES=nftables KPTS_BENCH_SIZES=1000,10000 node dist/bench/main.js
// KPTS_BENCH_MODES: nftables, nftables-library, nftables-flat, nftables-flat-library, iptables, render (default
// all; -library: libnftables in the bench's process instead of the nft command); KPTS_BENCH_SIZES: Services
// (default 1000,10000, and 100000 for the flat layout); KPTS_BENCH_IPTABLES_VARIANTS: legacy,nft;
// KPTS_BENCH_IPTABLES_NFT_MAX: iptables-nft's largest size (1000). With both nftables layouts in the run, an SVG
// plot of their full-sync and one-endpoint times against size is written (KPTS_BENCH_PLOT, default
// bench-results/nftables-layouts.svg). KPTS_BENCH_MODES=datapath: packets through each rule set, bench/datapath.ts
// (its own variables are there; in the default run at 100 and 1,000 Services). KPTS_BENCH_MODES=agent: the agent
// process itself (the compiled CLI against an API server of the bench's, first sync, one-endpoint changes from the
// API server's write to the kernel, restart), bench/agent-bench.ts (its variables are there).
//
// Accounting, the same for every mode (bench/measure.ts does it for all of them):
// - What is timed is what a user waits for: from the moment the API objects are handed in (Services and
//   EndpointSlices into the real change trackers: BenchCluster.load or setSlice) until backend.sync() has
//   resolved, the kernel programmed. total = that wall time. Nothing of the sync happens outside it.
// - kernel = the kernel tools' own run time only: for nftables the backend's kernelMs (nft -f, or the library
//   call, applying the transaction, and waiting on nft's listing on a full sync); for iptables restoreMs + saveMs (iptables-restore
//   and iptables-save running). own = total - kernel: everything else is ours, including the model, the
//   backend's render/diff/serialize, parsing iptables-save's output, iptables' base-chain step (our planning and
//   the commands it runs) and the flock probes (legacy).
// - model = the part of own spent in the change trackers (parsing, fingerprinting, update) and checkout.
// - Runs: the "full" row is the process's first sync (every Service handed in at once, empty tables, new
//   backend), cold, one run: what a proxy's start costs. The "one-endpoint" row is REPEATS (9) changes of one
//   endpoint of the middle Service, in every mode (each changed back by a sync that is checked, not reported).
//   nftables also has a "restart" row: a new backend's first sync on the table the first sync wrote (it lists
//   the table's objects, no element, and flushes and refills every set and map), floor = nft alone listing that
//   table with its elements (what the restart no longer has to do); its
//   peak RSS columns are the process's (the first backend is still in it), not the restart's own.
//   Each column is the median of its per-run values (total is the median of per-run totals, not a sum of
//   medians), so own + kernel need not add up to total exactly.
// - floor = the kernel tool alone applying the very text (iptables: the very restore call) from the same
//   starting state, as many runs as its row, median. total/floor: what the user waits beyond the tool's own need.
// - The backend decides full or partial by itself; a full row whose sync was partial, or a one-endpoint run that
//   did a full sync, fails the bench run (BenchKindError) rather than print a number for the wrong thing.
// - nftables rows also run the proxier's post-sync step (src/sync/post-sync.ts: metrics on prom-client, proxy
//   health, the health-check servers' state) after every sync, fed by each checkout as the proxier feeds it:
//   post-sync = objects handed in -> that step done, the moment the agent's next sync could start (total stops
//   before it). /metrics is served from those metrics on a Unix socket and fetched over HTTP by this process:
//   once after each change (idle: the server's answer time, request in -> response out, and the round trip) and
//   once sent as each revert is handed in (busy: answered while it syncs).
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { AGENT_NODE_FLAGS } from 'kube-proxy-ts/util/node-flags.js';
import { hostCommandRunner } from 'kube-proxy-ts/netfilter/command.js';
import { iptablesBenches } from './iptables.js';
import { benchContext, REPEATS } from './measure.js';
import {
  nftablesBench,
  nftablesFlatBench,
  nftablesFlatLibraryBench,
  nftablesLibraryBench,
} from './nftables.js';
import { runNamespaceChild } from './namespace-child.js';
import { writeLayoutPlot } from './plot.js';
import type { BenchModule, BenchRow } from './types.js';

const MODULES: readonly BenchModule[] = [
  nftablesBench,
  nftablesLibraryBench,
  nftablesFlatBench,
  nftablesFlatLibraryBench,
  ...iptablesBenches,
];
const labelOf = (m: BenchModule): string => m.label ?? m.mode;

/** Set in the per-run child: `{ label, size, ns }`. */
const CHILD_ENV = 'KPTS_BENCH_CHILD';
const ROWS_MARK = 'KPTS_BENCH_ROWS ';

function parseSizes(m: BenchModule): number[] {
  const given = process.env.KPTS_BENCH_SIZES;
  const sizes = (given ?? '1000,10000')
    .split(',')
    .map((s) => Number(s.trim()))
    .filter((n) => Number.isInteger(n) && n > 0);
  return given === undefined ? [...sizes, ...(m.defaultExtraSizes ?? [])] : sizes;
}

function selectedModules(): BenchModule[] {
  const modes = process.env.KPTS_BENCH_MODES?.split(',').map((s) => s.trim());
  return MODULES.filter((m) => !modes || modes.includes(m.mode));
}

function fmt(n: number, digits = 1): string {
  return n.toFixed(digits);
}

function printTable(rows: readonly BenchRow[]): void {
  const header = [
    'mode',
    'services',
    'eps',
    'sync',
    'runs',
    'ops',
    'total ms',
    'own ms',
    'model ms',
    'model/own',
    'kernel ms',
    'floor ms',
    'total/floor',
    'own/full own',
    'peak RSS MiB',
    'pre-sync RSS',
    'tool RSS MiB',
    'post-sync ms (step)',
    '/metrics answer ms med/max',
    '/metrics round trip (cpu)',
    'busy /metrics ms med/max',
  ];
  const lines: string[][] = [header];
  for (const r of rows) {
    const fullRow = rows.find((x) => x.mode === r.mode && x.services === r.services && x.sync === 'full');
    lines.push([
      r.mode,
      String(r.services),
      String(r.endpointsPerService),
      r.sync,
      String(r.runs),
      String(r.operations),
      fmt(r.totalMs),
      fmt(r.ownMs, 2),
      fmt(r.modelMs, 2),
      r.ownMs > 0 ? `${fmt((100 * r.modelMs) / r.ownMs, 0)}%` : '',
      fmt(r.kernelMs),
      fmt(r.floorMs),
      fmt(r.totalMs / r.floorMs, 2),
      fullRow && r.sync !== 'full' ? `${fmt((100 * r.ownMs) / fullRow.ownMs, 2)}%` : '',
      fmt(r.peakRssMiB, 0),
      r.rssBeforeSyncMiB === undefined ? '' : fmt(r.rssBeforeSyncMiB, 0),
      r.toolPeakRssMiB === undefined ? '' : fmt(r.toolPeakRssMiB, 0),
      r.postSyncMs === undefined ? '' : `${fmt(r.postSyncMs, 2)} (${fmt(r.postSyncStepMs ?? 0, 2)})`,
      r.scrapeAnswerMs === undefined
        ? ''
        : `${fmt(r.scrapeAnswerMs, 2)}/${fmt(r.scrapeAnswerMaxMs ?? r.scrapeAnswerMs, 1)}`,
      r.scrapeMs === undefined ? '' : `${fmt(r.scrapeMs, 2)} (${fmt(r.scrapeCpuMs ?? 0, 2)})`,
      r.busyScrapeMs === undefined
        ? ''
        : `${fmt(r.busyScrapeMs, 2)}/${fmt(r.busyScrapeMaxMs ?? r.busyScrapeMs, 1)}`,
    ]);
  }
  const widths = header.map((_, i) => Math.max(...lines.map((l) => (l[i] ?? '').length)));
  console.log(
    `total = objects handed to the trackers -> sync resolved; kernel = the kernel tools' own run; own = total - ` +
      `kernel; model = trackers + checkout (part of own). full: the first sync, cold, 1 run; one-endpoint: ` +
      `${REPEATS} runs; restart: a new backend's first sync on that table, 1 run (floor: nft listing it); each ` +
      `column the median of its per-run values. floor: the tool alone, same text. post-sync (nftables): objects ` +
      `handed in -> the proxier's post-sync work done (metrics, health, health-check servers), when the next sync ` +
      `could start (step: that work alone). /metrics: GET over HTTP (Unix socket, client in-process) after each ` +
      `change's post-sync work: answer = the server's side (request in -> response out), median/max; round trip ` +
      `median (cpu: the process's CPU time per scrape, client included); busy: sent as each revert is handed in, ` +
      `answered while it syncs, round trip median/max.`,
  );
  for (const l of lines) console.log(l.map((c, i) => c.padStart(widths[i] ?? 0)).join('  '));
}

/**
 * Runs one (mode, size) in a fresh process (this script, same loader flags) inside the bench's namespace, and
 * collects its rows. Inside, as an agent on a node: the kernel tools are run directly, and libnftables (whose
 * socket is in the calling process's namespace) programs that namespace; this process never enters it.
 */
function runChild(label: string, size: number, ns: string): Promise<BenchRow[]> {
  return runNamespaceChild<BenchRow[]>({
    ns,
    argv: [process.execPath, ...process.execArgv, ...AGENT_NODE_FLAGS, process.argv[1] ?? ''],
    env: { [CHILD_ENV]: JSON.stringify({ label, size, ns }) },
    mark: ROWS_MARK,
    what: `${label} at ${size} Services`,
  });
}

async function child(spec: string): Promise<void> {
  const { label, size, ns } = JSON.parse(spec) as { label: string; size: number; ns: string };
  const m = MODULES.find((x) => labelOf(x) === label);
  if (!m) throw new Error(`no bench module ${label}`);
  // Everything below programs the namespace this process is in: make sure it is the bench's.
  const here = await hostCommandRunner.run('ip', ['netns', 'identify', String(process.pid)]);
  if (here.stdout.trim() !== ns) throw new Error(`bench child is not inside ${ns} (${here.stdout.trim()})`);
  const rows = await m.run(benchContext(hostCommandRunner, [size]));
  process.stdout.write(ROWS_MARK + JSON.stringify(rows) + '\n');
}

async function main(): Promise<void> {
  const ns = `kpts${randomBytes(3).toString('hex')}-bench`;
  execFileSync('ip', ['netns', 'add', ns]);
  const cleanup = (): void => {
    try {
      execFileSync('ip', ['netns', 'del', ns]);
    } catch {
      // already gone
    }
  };
  const onSignal = (): void => {
    cleanup();
    process.exit(130);
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    const rows: BenchRow[] = [];
    // Size by size, every mode at one size before any at the next: a mode run right after a larger table's
    // deletion pays for the kernel still freeing it, so each size's modes start from the same leftovers.
    const modules = selectedModules();
    const sizes = [...new Set(modules.flatMap((m) => parseSizes(m)))].sort((a, b) => a - b);
    for (const n of sizes) {
      for (const m of modules) {
        if (!parseSizes(m).includes(n)) continue;
        if (n > (m.maxServices ?? Infinity)) {
          process.stderr.write(`${labelOf(m)} ${n}: skipped above ${m.maxServices} Services\n`);
          continue;
        }
        rows.push(...(await runChild(labelOf(m), n, ns)));
      }
    }
    // Printed mode by mode, as before (rows of one (mode, size) stay in their order).
    const order = (r: BenchRow): number => modules.findIndex((m) => labelOf(m) === r.mode);
    rows.sort((a, b) => order(a) - order(b) || a.services - b.services);
    if (rows.length > 0) printTable(rows);
    const plot = writeLayoutPlot(rows, process.env.KPTS_BENCH_PLOT ?? 'bench-results/nftables-layouts.svg');
    if (plot !== undefined) console.log(`\nplot of both nftables layouts: ${plot}`);
  } finally {
    cleanup();
  }
  // `render` is a section of its own (its stages are not a mode's syncs); KPTS_BENCH_MODES=render runs it alone.
  // Imported here, not above, so the per-mode children do not load it (their peak RSS is their own).
  const modes = process.env.KPTS_BENCH_MODES?.split(',').map((s) => s.trim());
  if (!modes || modes.includes('render')) await (await import('./render.js')).runRenderBench();
  // `datapath` too (packets through a node's rules, not syncs): bench/datapath.ts; KPTS_BENCH_MODES=datapath alone.
  if (!modes || modes.includes('datapath')) await (await import('./datapath.js')).runDatapathBench();
  // `agent` too (the agent process as a node runs it): bench/agent-bench.ts; KPTS_BENCH_MODES=agent alone.
  if (!modes || modes.includes('agent')) await (await import('./agent-bench.js')).runAgentBench();
}

const spec = process.env[CHILD_ENV];
if (spec !== undefined) await child(spec);
else await main();
