// nftables mode benchmark: full sync and a one-endpoint-change sync for N Services × E endpoints, each split into
// our own work and nft's, beside the floor (`nft -f` alone applying the same transaction text).
import { NftablesBackend } from '../src/backends/nftables/backend.js';
import type { CommandRunner } from '../src/netfilter/command.js';
import { nodePortAddressesFor } from '../src/model/nodeport-addresses.js';
import type { BackendSyncResult, NodeNetworkConfig } from '../src/sync/backend.js';
import { masqueradeMarkFor } from '../src/sync/backend.js';
import { systemClock } from '../src/util/clock.js';
import { sampleChildPeakRss } from './child-rss.js';
import type { BenchContext, BenchModule, BenchRow } from './types.js';
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

/** Remembers the stdin of the last `nft -f -` so the floor can replay exactly the same text. */
function recording(base: CommandRunner): {
  runner: CommandRunner;
  last: () => string;
  forget: () => void;
} {
  let last = '';
  return {
    runner: {
      run: (cmd, args, options) => {
        if (cmd === 'nft' && args.includes('-f') && !args.includes('-c')) last = options?.stdin ?? '';
        return base.run(cmd, args, options);
      },
    },
    last: () => last,
    forget: () => void (last = ''),
  };
}

async function time(commands: CommandRunner, text: string): Promise<number> {
  const t0 = performance.now();
  const r = await commands.run('nft', ['-f', '-'], { stdin: text });
  const ms = performance.now() - t0;
  if (r.code !== 0) throw new Error(`floor run failed: ${r.stderr.slice(0, 300)}`);
  return ms;
}

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? 0;
}

const peakRssMiB = (): number => process.resourceUsage().maxRSS / 1024;

/** Full syncs per size (each from an empty table, with a new backend); the median is reported. */
const FULL_REPEATS = 5;

async function runSize(ctx: BenchContext, services: number): Promise<BenchRow[]> {
  const rec = recording(ctx.commands);
  const newBackend = (): NftablesBackend =>
    new NftablesBackend({ node: NODE, commands: rec.runner, clock: systemClock });
  const cluster = new BenchCluster(NODE.nodeName, ctx.endpointsPerService);
  let backend = newBackend();
  const sync = (full: boolean): Promise<BackendSyncResult> =>
    backend.sync(cluster.snapshot, cluster.checkout(full));
  cluster.load(services);
  const rssBeforeSync = peakRssMiB();

  // A cold start, FULL_REPEATS times: empty table, new backend, full sync; then the floor, the same text applied
  // by `nft -f` alone to the same empty table. The floor leaves the table exactly as the sync did, so the
  // partial syncs below continue from the state the last backend knows.
  const fullOwn: number[] = [];
  const fullKernel: number[] = [];
  const fullFloor: number[] = [];
  let fullOps = 0;
  let nftFullRss = 0;
  let firstSyncRss = 0;
  for (let r = 0; r < FULL_REPEATS; r++) {
    await ctx.commands.run('nft', ['-f', '-'], { stdin: EMPTY_TABLE });
    if (r > 0) backend = newBackend();
    const full = await sync(true);
    // What a proxy holds at its peak: the model plus one cold full sync (later repeats and the floor runs are
    // the benchmark's own doing).
    if (r === 0) firstSyncRss = peakRssMiB();
    fullOwn.push(full.timings.ownMs);
    fullKernel.push(full.timings.kernelMs);
    fullOps = full.operations;
    await ctx.commands.run('nft', ['-f', '-'], { stdin: EMPTY_TABLE });
    const sampler = sampleChildPeakRss(['nft']);
    fullFloor.push(await time(ctx.commands, rec.last()));
    nftFullRss = Math.max(nftFullRss, sampler.stop());
    rec.forget();
  }

  // One endpoint of one Service changes (and changes back), repeatedly; the middle Service.
  const target = Math.floor(services / 2);
  const own: number[] = [];
  const kernel: number[] = [];
  const floor: number[] = [];
  let operations = 0;
  let nftSmallRss = 0;
  for (let r = 0; r < ctx.repeats; r++) {
    cluster.setSlice(target, r + 1);
    const change = await sync(false);
    const changeText = rec.last();
    cluster.setSlice(target, 0);
    await sync(false);
    const revertText = rec.last();
    own.push(change.timings.ownMs);
    kernel.push(change.timings.kernelMs);
    operations = change.operations;
    const sampler = sampleChildPeakRss(['nft']);
    floor.push(await time(ctx.commands, changeText));
    nftSmallRss = Math.max(nftSmallRss, sampler.stop());
    await time(ctx.commands, revertText);
  }

  const rss = firstSyncRss;
  const row = {
    mode: 'nftables',
    services,
    endpointsPerService: ctx.endpointsPerService,
    peakRssMiB: rss,
    rssBeforeSyncMiB: rssBeforeSync,
  };
  return [
    {
      ...row,
      sync: 'full',
      ownMs: median(fullOwn),
      kernelMs: median(fullKernel),
      floorMs: median(fullFloor),
      operations: fullOps,
      toolPeakRssMiB: nftFullRss,
    },
    {
      ...row,
      sync: 'one-endpoint',
      ownMs: median(own),
      kernelMs: median(kernel),
      floorMs: median(floor),
      operations,
      toolPeakRssMiB: nftSmallRss,
    },
  ];
}

export const nftablesBench: BenchModule = {
  mode: 'nftables',
  async run(ctx) {
    const rows: BenchRow[] = [];
    for (const n of ctx.sizes) rows.push(...(await runSize(ctx, n)));
    await ctx.commands.run('nft', ['-f', '-'], {
      stdin: 'add table ip kube-proxy\ndelete table ip kube-proxy\n',
    });
    return rows;
  },
};
