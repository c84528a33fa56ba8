// iptables mode benchmark, in bench/types.ts's shape: the first (full) sync and a one-endpoint-change sync for N
// Services × E endpoints, timed from handing the objects to the trackers until the sync resolved
// (bench/measure.ts). Kernel time is the kernel tools' own run: iptables-restore and iptables-save
// (lastKernelPhases' restoreMs + saveMs). Ours is the rest, including the base-chain step (its planning and the
// restore it runs), the flock probes (legacy), rendering, serializing and parsing iptables-save's output. Beside it,
// the floor: the very same iptables-restore call (binary, flags, lock file, stdin) replayed alone from the same
// starting state. Run once per back end (legacy and nft, or KPTS_BENCH_IPTABLES_VARIANTS), each with its own xtables
// lock file so no other process's lock is involved. A line per size on stderr splits the sync by phase.
import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { basename } from 'node:path';
import { pathToFileURL } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { randomBytes } from 'node:crypto';
import { IptablesBackend } from 'kube-proxy-ts/backends/iptables/backend.js';
import type { IptablesKernelPhases } from 'kube-proxy-ts/backends/iptables/backend.js';
import { cleanupIptables } from 'kube-proxy-ts/backends/iptables/cleanup.js';
import { nodePortAddressesFor } from 'kube-proxy-ts/model/nodeport-addresses.js';
import type { CommandOptions, CommandRunner } from 'kube-proxy-ts/netfilter/command.js';
import { netnsCommandRunner } from 'kube-proxy-ts/netfilter/command.js';
import type { IptablesVariant } from 'kube-proxy-ts/netfilter/iptables/variant.js';
import { iptablesBinaries } from 'kube-proxy-ts/netfilter/iptables/variant.js';
import type { NodeNetworkConfig } from 'kube-proxy-ts/sync/backend.js';
import { sampleChildPeakRss } from './child-rss.js';
import type { SyncSample } from './measure.js';
import { benchClock, benchContext, median, peakRssMiB, rowFrom, SETTLE_MS, timedSync } from './measure.js';
import type { BenchContext, BenchModule, BenchRow, SyncKind } from './types.js';
import { BenchCluster, NFTABLES_BENCH_NODE } from './workload.js';

// The benches' node with iptables mode's defaults: NodePorts on every address, and no service ranges (only
// nftables mode's drop of unallocated ClusterIPs reads them).
const NODE: NodeNetworkConfig = {
  ...NFTABLES_BENCH_NODE,
  nodePortAddresses: nodePortAddressesFor('IPv4', null).value,
  serviceCIDRs: [],
};

/** One command as the backend ran it, to be replayed exactly. */
interface RecordedCall {
  readonly cmd: string;
  readonly args: readonly string[];
  readonly options: CommandOptions | undefined;
}

/** Remembers the last restore call (binary, argv, env, stdin) so the floor can replay exactly that call. */
function recording(
  base: CommandRunner,
  restoreBin: string,
): { runner: CommandRunner; last: () => RecordedCall } {
  let last: RecordedCall | undefined;
  return {
    runner: {
      run: (cmd, args, options) => {
        if (cmd === restoreBin && !args.includes('--test')) last = { cmd, args, options };
        return base.run(cmd, args, options);
      },
    },
    last: () => {
      if (last === undefined) throw new Error('no restore was run');
      return last;
    },
  };
}

/** The kernel tools' own run time in the last sync: iptables-restore and iptables-save. */
function iptablesKernelMs(backend: IptablesBackend, what: string): number {
  const p = backend.lastKernelPhases;
  if (p === undefined) throw new Error(`${what}: the backend reported no kernel phases`);
  return p.restoreMs + p.saveMs;
}

async function runSize(ctx: BenchContext, variant: IptablesVariant, services: number): Promise<BenchRow[]> {
  const mode = `iptables (${variant})`;
  const what = `${mode} ${services}`;
  const lockFile = `/tmp/kpts${randomBytes(3).toString('hex')}-bench-xtables.lock`;
  const bins = iptablesBinaries('IPv4', variant);
  // The tool's process name as /proc shows it (`ip netns exec` execs it in place; comm is 15 characters).
  const toolName = basename(bins.restore).slice(0, 15);
  const floorRun = async (call: RecordedCall): Promise<number> => {
    const t0 = performance.now();
    const r = await ctx.commands.run(call.cmd, call.args, call.options);
    const ms = performance.now() - t0;
    if (r.code !== 0) throw new Error(`floor run failed: ${r.stderr.slice(0, 300)}`);
    return ms;
  };
  const clean = () => cleanupIptables(ctx.commands, variant, { families: ['IPv4'], lockFile });
  try {
    await clean();
    const rec = recording(ctx.commands, bins.restore);
    const backend = new IptablesBackend({
      node: NODE,
      commands: rec.runner,
      clock: benchClock,
      iptables: {
        variant,
        lockFile,
        localhostNodePorts: true,
        nfacctCounters: [],
        randomFully: true,
        conntrackTCPBeLiberal: false,
        // Large-cluster mode scans iptables-save once per syncPeriod; the one-endpoint rows measure the syncs in
        // between (a 10,000-Service scan would otherwise land in one repeat or another, depending on timing).
        syncPeriodMs: 3_600_000,
      },
    });
    const cluster = new BenchCluster(NODE.nodeName, ctx.endpointsPerService);
    const sync = (kind: SyncKind, handIn: () => void): Promise<SyncSample> =>
      timedSync(what, cluster, backend, kind, handIn, () => iptablesKernelMs(backend, what));

    // The first sync, cold: every Service and slice handed in, empty tables, a new backend in a fresh process.
    cluster.prepare(services);
    await sleep(SETTLE_MS);
    let rssBeforeSync = 0;
    const first = await sync('full', () => {
      cluster.load(services);
      rssBeforeSync = peakRssMiB();
    });
    const fullCall = rec.last();
    const fullPhases = backend.lastKernelPhases;

    // One endpoint of the middle Service changes (and changes back), repeatedly. Each floor replays the change's
    // restore call from the state the change started from (after the revert).
    const target = Math.floor(services / 2);
    const changes: SyncSample[] = [];
    const floor: number[] = [];
    const partialPhases: IptablesKernelPhases[] = [];
    let toolSmallRss = 0;
    for (let r = 0; r < ctx.repeats; r++) {
      changes.push(await sync('one-endpoint', () => cluster.setSlice(target, r + 1)));
      if (backend.lastKernelPhases !== undefined) partialPhases.push(backend.lastKernelPhases);
      const changeCall = rec.last();
      await sync('one-endpoint', () => cluster.setSlice(target, 0));
      const revertCall = rec.last();
      const sampler = sampleChildPeakRss([toolName]);
      floor.push(await floorRun(changeCall));
      toolSmallRss = Math.max(toolSmallRss, sampler.stop());
      await floorRun(revertCall);
    }

    // The proxy's peak: the model, the first sync and the changes; taken before the cleanup and floor runs below,
    // whose iptables-save of a whole large table (cleanup) and replayed input would otherwise be charged to us.
    const base = {
      mode,
      services,
      endpointsPerService: ctx.endpointsPerService,
      peakRssMiB: peakRssMiB(),
      rssBeforeSyncMiB: rssBeforeSync,
    };

    // The full sync's floor starts, like the sync did, from empty tables (the sync's restore also found our empty
    // top-level chains, made by its base-chain step: no rules, no measurable difference). Once, like the sync.
    await clean();
    await sleep(SETTLE_MS);
    const sampler = sampleChildPeakRss([toolName]);
    const fullFloor = await floorRun(fullCall);
    const toolFullRss = sampler.stop();

    const ms = (n: number | undefined): string => (n ?? 0).toFixed(1);
    const phaseText = (p: IptablesKernelPhases | undefined): string =>
      `kernel: save ${ms(p?.saveMs)} + restore ${ms(p?.restoreMs)}; ours: base chains ${ms(p?.jumpsMs)}, ` +
      `lock probe ${ms(p?.lockMs)}`;
    const medianPhases: IptablesKernelPhases = {
      lockMs: median(partialPhases.map((p) => p.lockMs)),
      jumpsMs: median(partialPhases.map((p) => p.jumpsMs)),
      saveMs: median(partialPhases.map((p) => p.saveMs)),
      restoreMs: median(partialPhases.map((p) => p.restoreMs)),
    };
    console.error(
      `${what} ms by phase: full sync [${phaseText(fullPhases)}] floor ${ms(fullFloor)}; ` +
        `one-endpoint, medians [${phaseText(medianPhases)}] floor ${ms(median(floor))}`,
    );
    return [
      rowFrom(base, 'full', [first], [fullFloor], toolFullRss),
      rowFrom(base, 'one-endpoint', changes, floor, toolSmallRss),
    ];
  } finally {
    await clean();
    rmSync(lockFile, { force: true });
  }
}

function variants(): IptablesVariant[] {
  const raw = process.env.KPTS_BENCH_IPTABLES_VARIANTS ?? 'legacy,nft';
  return raw
    .split(',')
    .map((s) => s.trim())
    .filter((s): s is IptablesVariant => s === 'legacy' || s === 'nft' || s === 'auto');
}

const NFT_VARIANT_MAX_SERVICES = Number(process.env.KPTS_BENCH_IPTABLES_NFT_MAX ?? '1000');

/**
 * One module per back end (KPTS_BENCH_IPTABLES_VARIANTS), so bench/main.ts gives each (back end, size) a process
 * of its own. iptables-nft stops at KPTS_BENCH_IPTABLES_NFT_MAX Services (default 1,000): iptables-nft-restore of
 * ~430,000 rules ran for over 8 minutes here without finishing (the scaling trouble of k/k #96018); legacy
 * iptables shows the mode's own cost at that size.
 */
export const iptablesBenches: readonly BenchModule[] = variants().map((variant) => ({
  mode: 'iptables',
  label: `iptables (${variant})`,
  ...(variant === 'nft' ? { maxServices: NFT_VARIANT_MAX_SERVICES } : {}),
  async run(ctx: BenchContext): Promise<BenchRow[]> {
    const rows: BenchRow[] = [];
    for (const n of ctx.sizes) rows.push(...(await runSize(ctx, variant, n)));
    return rows;
  },
}));

/** Every back end's rows, in this one process (bench/main.ts runs each in its own). */
export async function benchIptables(ctx: BenchContext): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  for (const m of iptablesBenches)
    rows.push(...(await m.run({ ...ctx, sizes: ctx.sizes.filter((n) => n <= (m.maxServices ?? Infinity)) })));
  return rows;
}

// Run alone (`npm run build && node dist/bench/iptables.js`): this mode's rows in their own private namespace, as
// JSON lines, every back end and size in this one process (so a later run's peak RSS includes the earlier ones';
// `KPTS_BENCH_MODES=iptables node dist/bench/main.js` gives each its own process and prints the table).
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const ns = `kpts${randomBytes(3).toString('hex')}-bench`;
  execFileSync('ip', ['netns', 'add', ns]);
  try {
    const sizes = (process.env.KPTS_BENCH_SIZES ?? '1000,10000')
      .split(',')
      .map((s) => Number(s.trim()))
      .filter((n) => Number.isInteger(n) && n > 0);
    const rows = await benchIptables(benchContext(netnsCommandRunner(ns), sizes));
    for (const r of rows) console.log(JSON.stringify(r));
  } finally {
    execFileSync('ip', ['netns', 'del', ns]);
  }
}
