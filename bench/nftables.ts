// nftables mode benchmark, once per ruleset layout (upstream's, and flat: --nftables-layout) and per way of reaching
// nft (--nft-executor: the `nft` command, a process per transaction, or libnftables in this process): the first
// (full) sync and a one-endpoint-change sync for N Services × E endpoints, timed from handing the objects to the
// trackers until the sync resolved (bench/measure.ts), split into our own work and nft's, beside the floor (nft
// alone applying the same transaction text the same way: `nft -f`, or the library; for the flat layout's cold
// start, which is cut into several transactions, the same transactions one after another).
//
// The bench process runs inside the bench's namespace (bench/main.ts starts it with `ip netns exec`), as an agent
// runs inside its node's: the command is forked directly, and the library's socket is in that namespace.
import { setTimeout as sleep } from 'node:timers/promises';
import { NftablesBackend } from 'kube-proxy-ts/backends/nftables/backend.js';
import type { NftablesLayout } from 'kube-proxy-ts/backends/nftables/layout.js';
import { NFTABLES_LAYOUT_BY_NAME } from 'kube-proxy-ts/backends/nftables/layouts.js';
import type { NftablesLayoutName } from 'kube-proxy-ts/config/nftables-layout.js';
import type { CommandRunner } from 'kube-proxy-ts/netfilter/command.js';
import { NftElementsExecutor } from 'kube-proxy-ts/netfilter/nft/elements-executor.js';
import type { NftExecutor, NftInvoker } from 'kube-proxy-ts/netfilter/nft/executor.js';
import { commandInvoker, NftCommandExecutor } from 'kube-proxy-ts/netfilter/nft/executor.js';
import { loadLibnftables } from 'kube-proxy-ts/netfilter/nft/libnftables.js';
import { libraryInvoker } from 'kube-proxy-ts/netfilter/nft/library-executor.js';
import { NetlinkElements } from 'kube-proxy-ts/netfilter/nft/netlink/elements.js';
import type { NftOperation } from 'kube-proxy-ts/netfilter/nft/objects.js';
import { serializeOperations } from 'kube-proxy-ts/netfilter/nft/serialize.js';
import type { BackendSyncResult, ProxySnapshot } from 'kube-proxy-ts/sync/backend.js';
import { sampleChildPeakRss } from './child-rss.js';
import type { ScrapeSample, SyncSample } from './measure.js';
import { benchClock, peakRssMiB, rowFrom, scrapeColumns, SETTLE_MS, timedSync } from './measure.js';
import { BenchPostSync } from './post-sync.js';
import type { BenchContext, BenchModule, BenchRow, SyncKind } from './types.js';
import { BenchCluster, NFTABLES_BENCH_NODE } from './workload.js';

/** Leaves no kube-proxy table (nft 1.0.6 has no `destroy`: add, then delete). */
const EMPTY_TABLE = 'add table ip kube-proxy\ndelete table ip kube-proxy\n';

const NODE = NFTABLES_BENCH_NODE;

/** How the measured backend reaches nft: the command (`nft -f`) or libnftables in this process. */
export type NftBenchExecutor = 'cli' | 'library';

/**
 * Remembers the text of every transaction applied since forget() so the floor can replay exactly the same texts
 * (a sync is one transaction, but the flat layout's cold start is several).
 */
function recording(base: NftInvoker): {
  invoker: NftInvoker;
  last: () => string;
  sinceForget: () => readonly string[];
  forget: () => void;
} {
  let texts: string[] = [];
  return {
    invoker: {
      applyText: (text, checkOnly) => {
        if (!checkOnly) texts.push(text);
        return base.applyText(text, checkOnly);
      },
      listJson: (args, terse) => base.listJson(args, terse),
    },
    last: () => texts[texts.length - 1] ?? '',
    sinceForget: () => texts,
    forget: () => void (texts = []),
  };
}

/**
 * What the bench measures for an executor: the command's rows run every transaction as `nft -f`; the library's as
 * an agent's in-process executor does (choose-executor.ts): element-only transactions over nf_tables netlink,
 * the rest through libnftables. Transactions the netlink path takes have no text; the wrapper below remembers
 * the text of the small ones (a change's) for their floor, written after the clock stopped.
 */
function measuredExecutor(
  executor: NftBenchExecutor,
  rec: ReturnType<typeof recording>,
): { executor: NftExecutor; netlinkTexts: () => string[] } {
  const ref = { family: 'ip', table: 'kube-proxy' } as const;
  const base = new NftCommandExecutor(ref, rec.invoker);
  if (executor === 'cli') return { executor: base, netlinkTexts: () => [] };
  const elements = NetlinkElements.open();
  if ('error' in elements) throw new Error(`the library rows need a netlink socket: ${elements.error}`);
  const inner = new NftElementsExecutor(base, elements);
  const small: NftOperation[][] = [];
  const wrapper: NftExecutor = {
    ref,
    run: async (tx) => {
      const before = inner.counts.netlinkTransactions;
      const stats = await inner.run(tx);
      if (inner.counts.netlinkTransactions > before && tx.size <= SMALL_TRANSACTION)
        small.push([...tx.operations]);
      return stats;
    },
    list: () => inner.list(),
    listElements: (kind, name) => inner.listElements(kind, name),
    useDeclarations: (d) => inner.useDeclarations(d),
    writesElementsOf: (set) => inner.writesElementsOf(set),
    coldStartChunk: inner.coldStartChunk,
  };
  return {
    executor: wrapper,
    netlinkTexts: () => small.splice(0).map((ops) => serializeOperations(ref, ops)),
  };
}

/** A change's transaction: a few operations (kept for the floor); a cold start's chunks are far larger. */
const SMALL_TRANSACTION = 1000;

/**
 * The texts `nft -f` would be given for a cold start of `snapshot`: the same backend and layout over an invoker
 * that only records (the table reads as absent, so the cold start is cut into the same chunks).
 */
async function coldStartTexts(layout: NftablesLayout, snapshot: ProxySnapshot): Promise<string[]> {
  const texts: string[] = [];
  const invoker: NftInvoker = {
    applyText: (text) => {
      texts.push(text);
      return Promise.resolve({ code: 0, stdout: '', stderr: '' });
    },
    listJson: () => Promise.resolve({ code: 1, stdout: '', stderr: 'Error: No such file or directory\n' }),
  };
  const backend = new NftablesBackend({
    node: NODE,
    commands: { run: () => Promise.reject(new Error('no commands in the floor')) },
    clock: benchClock,
    layout,
    executor: new NftCommandExecutor({ family: 'ip', table: 'kube-proxy' }, invoker),
  });
  await backend.sync(snapshot, { full: true, changedServices: new Set() });
  return texts;
}

/** nft reached as `executor` says: the command through `commands`, or a libnftables context of its own. */
function invokerFor(executor: NftBenchExecutor, commands: CommandRunner): NftInvoker {
  if (executor === 'cli') return commandInvoker(commands);
  const lib = loadLibnftables();
  if ('error' in lib) throw new Error(`the library rows need libnftables: ${lib.error}`);
  return libraryInvoker(lib.newContext(), commands);
}

async function time(nft: NftInvoker, text: string): Promise<number> {
  const t0 = performance.now();
  const r = await nft.applyText(text, false);
  const ms = performance.now() - t0;
  if (r.code !== 0) throw new Error(`floor run failed: ${r.stderr.slice(0, 300)}`);
  return ms;
}

/** nft's own run: the backend's kernelMs is `nft -f` applying the transaction, plus, on a full sync, waiting on
 * the listing nft prints while we render (and a stale-chain deletion's `nft -f` when one is due). */
const nftKernelMs = (result: BackendSyncResult): number => result.timings.kernelMs;

/** The rows' mode column for a layout and executor: nftables, nftables-flat, nftables-flat-library, … */
export function nftablesModeLabel(layout: NftablesLayoutName, executor: NftBenchExecutor = 'cli'): string {
  return (
    (layout === 'upstream' ? 'nftables' : `nftables-${layout}`) + (executor === 'library' ? '-library' : '')
  );
}

/** One size's rows, with the agent's post-sync step and /metrics served beside the backend (bench/post-sync.ts). */
async function runSize(
  ctx: BenchContext,
  services: number,
  layout: NftablesLayout,
  executor: NftBenchExecutor,
): Promise<BenchRow[]> {
  const post = await BenchPostSync.start();
  try {
    return await runSizeWith(ctx, services, layout, executor, post);
  } finally {
    await post.close();
  }
}

async function runSizeWith(
  ctx: BenchContext,
  services: number,
  layout: NftablesLayout,
  executor: NftBenchExecutor,
  post: BenchPostSync,
): Promise<BenchRow[]> {
  const mode = nftablesModeLabel(layout.name, executor);
  const what = `${mode} ${services}`;
  const rec = recording(invokerFor(executor, ctx.commands));
  // The floor's own way to nft (with the library: a context of its own, as warm as the backend's).
  const floorNft = invokerFor(executor, ctx.commands);
  const measured = measuredExecutor(executor, rec);
  const backend = new NftablesBackend({
    node: NODE,
    commands: ctx.commands,
    clock: benchClock,
    layout,
    executor: measured.executor,
  });
  const cluster = new BenchCluster(NODE.nodeName, ctx.endpointsPerService);
  const sync = (kind: SyncKind, handIn: () => void): Promise<SyncSample> =>
    timedSync(what, cluster, backend, kind, handIn, nftKernelMs, post);
  const emptyTable = (): Promise<unknown> => ctx.commands.run('nft', ['-f', '-'], { stdin: EMPTY_TABLE });

  // The first sync, cold: every Service and slice handed in, empty table, a new backend in a fresh process.
  await emptyTable();
  cluster.prepare(services);
  await sleep(SETTLE_MS);
  let rssBeforeSync = 0;
  rec.forget();
  const first = await sync('full', () => {
    cluster.load(services);
    rssBeforeSync = peakRssMiB();
  });
  const commandTexts = [...rec.sinceForget()];

  // One endpoint of one Service changes (and changes back), repeatedly; the middle Service. Each change's floor
  // replays its transaction from the state the change started from (after the revert), then the revert's.
  const target = Math.floor(services / 2);
  const changes: SyncSample[] = [];
  const floor: number[] = [];
  // /metrics right after a change's post-sync work (idle), and sent as the revert is handed in (busy): the revert
  // is not reported, so the scrape it answers meanwhile changes no number of the change's row.
  const idleScrapes: ScrapeSample[] = [];
  const busyScrapes: ScrapeSample[] = [];
  let nftSmallRss = 0;
  for (let r = 0; r < ctx.repeats; r++) {
    rec.forget();
    changes.push(await sync('one-endpoint', () => cluster.setSlice(target, r + 1)));
    idleScrapes.push(await post.scrape());
    const changeText = [...rec.sinceForget(), ...measured.netlinkTexts()].join('');
    rec.forget();
    const busy = post.scrape();
    await sync('one-endpoint', () => cluster.setSlice(target, 0));
    busyScrapes.push(await busy);
    const revertText = [...rec.sinceForget(), ...measured.netlinkTexts()].join('');
    if (changeText === '' || revertText === '') throw new Error(`${what}: a change wrote no transaction`);
    const sampler = sampleChildPeakRss(['nft']);
    floor.push(await time(floorNft, changeText));
    nftSmallRss = Math.max(nftSmallRss, sampler.stop());
    await time(floorNft, revertText);
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
  // The netlink path leaves no text: its floor replays what `nft -f` would have been given for the same sync,
  // rendered now, after the peak RSS above was read (a second planner is the bench's memory, not the agent's).
  const fullTexts = executor === 'cli' ? commandTexts : await coldStartTexts(layout, cluster.snapshot);
  await emptyTable();
  await sleep(SETTLE_MS);
  const sampler = sampleChildPeakRss(['nft']);
  let fullFloor = 0;
  for (const text of fullTexts) fullFloor += await time(floorNft, text);
  const nftFullRss = sampler.stop();
  rec.forget();

  // A restart: the floor left the table exactly as the first sync wrote it; a new backend (an agent started again)
  // makes its first sync on it, reading every set back and writing only what differs. Its floor is nft alone
  // listing the table with its elements, what any reading of it through nft costs. The first backend is still in
  // this process, so the restart's RSS is not its own (the rows' peak RSS is read above, before it).
  await sleep(SETTLE_MS);
  const restartBackend = new NftablesBackend({
    node: NODE,
    commands: ctx.commands,
    clock: benchClock,
    layout,
    executor: measuredExecutor(executor, rec).executor,
  });
  const restart = await timedSync(what, cluster, restartBackend, 'restart', () => {}, nftKernelMs, post);
  const t0 = performance.now();
  const listed = await floorNft.listJson(['list', 'table', 'ip', 'kube-proxy'], false);
  const restartFloor = performance.now() - t0;
  if (listed.code !== 0) throw new Error(`restart floor: ${listed.stderr.slice(0, 300)}`);
  rec.forget();

  // With the library, nft's memory is this process's (in peak RSS); there is no nft process to sample.
  const toolRss = (mib: number): number | undefined => (executor === 'cli' ? mib : undefined);
  return [
    rowFrom(base, 'full', [first], [fullFloor], toolRss(nftFullRss)),
    {
      ...rowFrom(base, 'one-endpoint', changes, floor, toolRss(nftSmallRss)),
      ...scrapeColumns(idleScrapes, busyScrapes),
    },
    rowFrom(base, 'restart', [restart], [restartFloor]),
  ];
}

function layoutBench(
  name: NftablesLayoutName,
  executor: NftBenchExecutor,
  extra: Partial<BenchModule>,
): BenchModule {
  const layout = NFTABLES_LAYOUT_BY_NAME[name];
  return {
    mode: nftablesModeLabel(name, executor),
    ...extra,
    async run(ctx) {
      const rows: BenchRow[] = [];
      for (const n of ctx.sizes) rows.push(...(await runSize(ctx, n, layout, executor)));
      await ctx.commands.run('nft', ['-f', '-'], { stdin: EMPTY_TABLE });
      return rows;
    },
  };
}

export const nftablesBench: BenchModule = layoutBench('upstream', 'cli', {});
export const nftablesLibraryBench: BenchModule = layoutBench('upstream', 'library', {});
/** 100,000 Services by default too: the size the flat layout exists for (upstream's would take most of an hour). */
export const nftablesFlatBench: BenchModule = layoutBench('flat', 'cli', { defaultExtraSizes: [100_000] });
export const nftablesFlatLibraryBench: BenchModule = layoutBench('flat', 'library', {
  defaultExtraSizes: [100_000],
});
