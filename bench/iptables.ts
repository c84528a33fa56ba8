// iptables mode benchmark, in bench/types.ts's shape: a full sync and a one-endpoint-change sync for N Services × E
// endpoints, each split into our own work (render, serialize, reading iptables-save's output) and the kernel tools'
// (iptables-restore, plus the jump-rule commands on a full sync and iptables-save when stale chains are scanned),
// beside the floor: the very same iptables-restore call (binary, flags, lock file, stdin) replayed alone from the
// same starting state. Run once per back end (legacy and nft, or KPTS_BENCH_IPTABLES_VARIANTS), each with its own
// xtables lock file so no other process's lock is involved. A line per size on stderr splits kernel time by phase.
import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { randomBytes } from 'node:crypto';
import { IptablesBackend } from '../src/backends/iptables/backend.js';
import type { IptablesKernelPhases } from '../src/backends/iptables/backend.js';
import { cleanupIptables } from '../src/backends/iptables/cleanup.js';
import { nodePortAddressesFor } from '../src/model/nodeport-addresses.js';
import type { CommandOptions, CommandRunner } from '../src/netfilter/command.js';
import { netnsCommandRunner } from '../src/netfilter/command.js';
import type { IptablesVariant } from '../src/netfilter/iptables/variant.js';
import { iptablesBinaries } from '../src/netfilter/iptables/variant.js';
import type { BackendSyncResult, NodeNetworkConfig } from '../src/sync/backend.js';
import { masqueradeMarkFor } from '../src/sync/backend.js';
import { systemClock } from '../src/util/clock.js';
import type { BenchContext, BenchModule, BenchRow } from './types.js';
import { BenchCluster } from './workload.js';

const NODE: NodeNetworkConfig = {
  family: 'IPv4',
  nodeName: 'bench-node',
  nodeIPs: ['198.18.0.2'],
  localDetector: { mode: 'ClusterCIDR', cidr: '198.19.0.0/16' },
  masqueradeMark: masqueradeMarkFor(14),
  masqueradeAll: false,
  nodePortAddresses: nodePortAddressesFor('IPv4', null).value,
  hostInterfaces: new Map([['eth0', ['198.18.0.2/24']]]),
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

// After a large restore or cleanup the kernel may still be freeing the old ruleset (nf_tables does it in a
// worker); each floor and each measured sync starts after this pause, so neither pays for the other's leftovers.
const SETTLE_MS = 1000;

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? 0;
}

const peakRssMiB = (): number => process.resourceUsage().maxRSS / 1024;

async function runSize(ctx: BenchContext, variant: IptablesVariant, services: number): Promise<BenchRow[]> {
  const lockFile = `/tmp/kpts${randomBytes(3).toString('hex')}-bench-xtables.lock`;
  const bins = iptablesBinaries('IPv4', variant);
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
      clock: systemClock,
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
    const sync = (full: boolean): Promise<BackendSyncResult> =>
      backend.sync(cluster.snapshot, cluster.checkout(full));
    cluster.load(services);
    await sleep(SETTLE_MS);
    const full = await sync(true);
    const fullCall = rec.last();
    const fullPhases = backend.lastKernelPhases;

    // One endpoint of the middle Service changes (and changes back), repeatedly. Each floor replays the change's
    // restore call from the state the change started from (after the revert).
    const target = Math.floor(services / 2);
    const own: number[] = [];
    const kernel: number[] = [];
    const floor: number[] = [];
    let operations = 0;
    let partialPhases = backend.lastKernelPhases;
    for (let r = 0; r < ctx.repeats; r++) {
      cluster.setSlice(target, r + 1);
      const change = await sync(false);
      partialPhases = backend.lastKernelPhases;
      const changeCall = rec.last();
      cluster.setSlice(target, 0);
      await sync(false);
      const revertCall = rec.last();
      own.push(change.timings.ownMs);
      kernel.push(change.timings.kernelMs);
      operations = change.operations;
      floor.push(await floorRun(changeCall));
      await floorRun(revertCall);
    }

    // The proxy's peak: taken before the cleanup and floor runs below, whose iptables-save of a whole large table
    // (cleanup) and replayed input would otherwise be charged to the syncs.
    const syncPeakRssMiB = peakRssMiB();

    // The full sync's floor starts, like the sync did, from empty tables (the sync's restore also found our empty
    // top-level chains, made by its -N commands: no rules, no measurable difference).
    await clean();
    await sleep(SETTLE_MS);
    const fullFloor = await floorRun(fullCall);
    const ms = (n: number | undefined): string => (n ?? 0).toFixed(0);
    const phaseText = (p: IptablesKernelPhases | undefined): string =>
      `jumps ${ms(p?.jumpsMs)}, save ${ms(p?.saveMs)}, lock ${ms(p?.lockMs)}, restore ${ms(p?.restoreMs)}`;
    console.error(
      `iptables (${variant}) ${services} kernel ms by phase: full sync [${phaseText(fullPhases)}] floor ` +
        `${ms(fullFloor)}; one-endpoint [${phaseText(partialPhases)}] floor ${ms(median(floor))}`,
    );
    const mode = `iptables (${variant})`;
    const row = { mode, services, endpointsPerService: ctx.endpointsPerService, peakRssMiB: syncPeakRssMiB };
    return [
      {
        ...row,
        sync: 'full',
        ownMs: full.timings.ownMs,
        kernelMs: full.timings.kernelMs,
        floorMs: fullFloor,
        operations: full.operations,
      },
      {
        ...row,
        sync: 'one-endpoint',
        ownMs: median(own),
        kernelMs: median(kernel),
        floorMs: median(floor),
        operations,
      },
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

export const iptablesBench: BenchModule = {
  mode: 'iptables',
  async run(ctx) {
    const rows: BenchRow[] = [];
    for (const v of variants()) {
      for (const n of ctx.sizes) {
        if (v === 'nft' && n > NFT_VARIANT_MAX_SERVICES) {
          // iptables-nft-restore of ~430,000 rules ran for over 8 minutes here without finishing (the scaling
          // trouble of k/k #96018); legacy iptables shows the mode's own cost at that size.
          process.stderr.write(
            `iptables (nft) ${n}: skipped above ${NFT_VARIANT_MAX_SERVICES} Services (KPTS_BENCH_IPTABLES_NFT_MAX)\n`,
          );
          continue;
        }
        rows.push(...(await runSize(ctx, v, n)));
      }
    }
    return rows;
  },
};

/** The brief's entry point, for running this mode alone. */
export function benchIptables(ctx: BenchContext): Promise<BenchRow[]> {
  return iptablesBench.run(ctx);
}

// Run alone (`npm run build && node dist/bench/iptables.js`, or with tsx): this mode's rows in their own private
// namespace, as JSON lines, without the other modes. Compiled, no loader skews the peak RSS.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const ns = `kpts${randomBytes(3).toString('hex')}-bench`;
  execFileSync('ip', ['netns', 'add', ns]);
  try {
    const sizes = (process.env.KPTS_BENCH_SIZES ?? '1000,10000')
      .split(',')
      .map((s) => Number(s.trim()))
      .filter((n) => Number.isInteger(n) && n > 0);
    const rows = await benchIptables({
      commands: netnsCommandRunner(ns),
      sizes,
      endpointsPerService: 10,
      repeats: 5,
    });
    for (const r of rows) console.log(JSON.stringify(r));
  } finally {
    execFileSync('ip', ['netns', 'del', ns]);
  }
}
