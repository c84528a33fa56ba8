// nftables mode benchmark, once per ruleset layout (upstream's, and flat: --nftables-layout): the first (full) sync
// and a one-endpoint-change sync for N Services × E endpoints, timed from handing the objects to the trackers until
// the sync resolved (bench/measure.ts), split into our own work and nft's, beside the floor (`nft -f` alone
// applying the same transaction text; for the flat layout's cold start, which is cut into several transactions,
// the same transactions one after another).
import { setTimeout as sleep } from 'node:timers/promises';
import { NftablesBackend } from '../src/backends/nftables/backend.js';
import type { NftablesLayout } from '../src/backends/nftables/layout.js';
import { NFTABLES_LAYOUT_BY_NAME } from '../src/backends/nftables/layouts.js';
import type { NftablesLayoutName } from '../src/config/nftables-layout.js';
import type { CommandRunner } from '../src/netfilter/command.js';
import { nodePortAddressesFor } from '../src/model/nodeport-addresses.js';
import type { BackendSyncResult, NodeNetworkConfig } from '../src/sync/backend.js';
import { masqueradeMarkFor } from '../src/sync/backend.js';
import { sampleChildPeakRss } from './child-rss.js';
import type { SyncSample } from './measure.js';
import { benchClock, peakRssMiB, rowFrom, SETTLE_MS, timedSync } from './measure.js';
import type { BenchContext, BenchModule, BenchRow, SyncKind } from './types.js';
import { BenchCluster } from './workload.js';

/** Leaves no kube-proxy table (nft 1.0.6 has no `destroy`: add, then delete). */
const EMPTY_TABLE = 'add table ip kube-proxy\ndelete table ip kube-proxy\n';

const NODE: NodeNetworkConfig = {
  family: 'IPv4',
  nodeName: 'bench-node',
  nodeIPs: ['198.18.0.2'],
  localDetector: { mode: 'ClusterCIDR', cidr: '198.19.0.0/16' },
  masqueradeMark: masqueradeMarkFor(14),
  masqueradeAll: false,
  nodePortAddresses: nodePortAddressesFor('IPv4', ['198.18.0.2/32']).value,
  hostInterfaces: new Map([['eth0', ['198.18.0.2/24']]]),
  serviceCIDRs: ['198.18.128.0/17'],
};

/**
 * Remembers the stdin of every `nft -f -` since forget() so the floor can replay exactly the same texts (a sync is
 * one transaction, but the flat layout's cold start is several).
 */
function recording(base: CommandRunner): {
  runner: CommandRunner;
  last: () => string;
  sinceForget: () => readonly string[];
  forget: () => void;
} {
  let texts: string[] = [];
  return {
    runner: {
      run: (cmd, args, options) => {
        if (cmd === 'nft' && args.includes('-f') && !args.includes('-c')) texts.push(options?.stdin ?? '');
        return base.run(cmd, args, options);
      },
    },
    last: () => texts[texts.length - 1] ?? '',
    sinceForget: () => texts,
    forget: () => void (texts = []),
  };
}

async function time(commands: CommandRunner, text: string): Promise<number> {
  const t0 = performance.now();
  const r = await commands.run('nft', ['-f', '-'], { stdin: text });
  const ms = performance.now() - t0;
  if (r.code !== 0) throw new Error(`floor run failed: ${r.stderr.slice(0, 300)}`);
  return ms;
}

/** nft's own run: the backend's kernelMs is `nft -f` applying the transaction, plus, on a full sync, waiting on
 * the listing nft prints while we render (and a stale-chain deletion's `nft -f` when one is due). */
const nftKernelMs = (result: BackendSyncResult): number => result.timings.kernelMs;

/** The rows' mode column for a layout. */
export function nftablesModeLabel(layout: NftablesLayoutName): string {
  return layout === 'upstream' ? 'nftables' : `nftables-${layout}`;
}

async function runSize(ctx: BenchContext, services: number, layout: NftablesLayout): Promise<BenchRow[]> {
  const mode = nftablesModeLabel(layout.name);
  const what = `${mode} ${services}`;
  const rec = recording(ctx.commands);
  const backend = new NftablesBackend({ node: NODE, commands: rec.runner, clock: benchClock, layout });
  const cluster = new BenchCluster(NODE.nodeName, ctx.endpointsPerService);
  const sync = (kind: SyncKind, handIn: () => void): Promise<SyncSample> =>
    timedSync(what, cluster, backend, kind, handIn, nftKernelMs);
  const emptyTable = (): Promise<unknown> => ctx.commands.run('nft', ['-f', '-'], { stdin: EMPTY_TABLE });

  // The first sync, cold: every Service and slice handed in, empty table, a new backend in a fresh process.
  await emptyTable();
  await sleep(SETTLE_MS);
  let rssBeforeSync = 0;
  rec.forget();
  const first = await sync('full', () => {
    cluster.load(services);
    rssBeforeSync = peakRssMiB();
  });
  const fullTexts = [...rec.sinceForget()];

  // One endpoint of one Service changes (and changes back), repeatedly; the middle Service. Each change's floor
  // replays its transaction from the state the change started from (after the revert), then the revert's.
  const target = Math.floor(services / 2);
  const changes: SyncSample[] = [];
  const floor: number[] = [];
  let nftSmallRss = 0;
  for (let r = 0; r < ctx.repeats; r++) {
    changes.push(await sync('one-endpoint', () => cluster.setSlice(target, r + 1)));
    const changeText = rec.last();
    await sync('one-endpoint', () => cluster.setSlice(target, 0));
    const revertText = rec.last();
    const sampler = sampleChildPeakRss(['nft']);
    floor.push(await time(ctx.commands, changeText));
    nftSmallRss = Math.max(nftSmallRss, sampler.stop());
    await time(ctx.commands, revertText);
  }

  // What a proxy holds at its peak: the model, the first sync and the changes (the floors below are ours).
  const base = {
    mode,
    services,
    endpointsPerService: ctx.endpointsPerService,
    peakRssMiB: peakRssMiB(),
    rssBeforeSyncMiB: rssBeforeSync,
  };

  // The full sync's floor: the same text(s) applied by `nft -f` alone to an empty table, once, like the sync.
  await emptyTable();
  await sleep(SETTLE_MS);
  const sampler = sampleChildPeakRss(['nft']);
  let fullFloor = 0;
  for (const text of fullTexts) fullFloor += await time(ctx.commands, text);
  const nftFullRss = sampler.stop();
  rec.forget();

  return [
    rowFrom(base, 'full', [first], [fullFloor], nftFullRss),
    rowFrom(base, 'one-endpoint', changes, floor, nftSmallRss),
  ];
}

function layoutBench(name: NftablesLayoutName, extra: Partial<BenchModule>): BenchModule {
  const layout = NFTABLES_LAYOUT_BY_NAME[name];
  return {
    mode: nftablesModeLabel(name),
    ...extra,
    async run(ctx) {
      const rows: BenchRow[] = [];
      for (const n of ctx.sizes) rows.push(...(await runSize(ctx, n, layout)));
      await ctx.commands.run('nft', ['-f', '-'], { stdin: EMPTY_TABLE });
      return rows;
    },
  };
}

export const nftablesBench: BenchModule = layoutBench('upstream', {});
/** 100,000 Services by default too: the size the flat layout exists for (upstream's would take most of an hour). */
export const nftablesFlatBench: BenchModule = layoutBench('flat', { defaultExtraSizes: [100_000] });
