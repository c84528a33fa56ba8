// How every mode's benchmark times a sync and turns runs into a row, in one place so the modes are measured by the
// same rules (stated in bench/main.ts's header): a sync is timed from the moment its API objects are handed to the
// change trackers until backend.sync() has resolved; the kernel tool's own run time is taken out of that, and the
// rest is ours.
import type { CommandRunner } from 'kube-proxy-ts/netfilter/command.js';
import type { BackendSyncResult, ProxyBackend } from 'kube-proxy-ts/sync/backend.js';
import type { Clock } from 'kube-proxy-ts/util/clock.js';
import { systemClock } from 'kube-proxy-ts/util/clock.js';
import type { BenchPostSync } from './post-sync.js';
import type { BenchContext, BenchRow, SyncKind } from './types.js';
import type { BenchCluster } from './workload.js';

/** One-endpoint repeats per (mode, size): the same for every mode. Odd, so the median is one run's value. */
export const REPEATS = 9;
export const ENDPOINTS_PER_SERVICE = 10;

export function benchContext(commands: CommandRunner, sizes: readonly number[]): BenchContext {
  return { commands, sizes, endpointsPerService: ENDPOINTS_PER_SERVICE, repeats: REPEATS };
}

/**
 * The system clock with sub-millisecond now(): the backends time their kernel tools with their clock (iptables'
 * restore and lock waits), and Date.now()'s whole milliseconds are too coarse for a 5 ms restore.
 */
export const benchClock: Clock = Object.freeze({
  ...systemClock,
  now: () => performance.timeOrigin + performance.now(),
});

/**
 * After a large restore or flush the kernel may still be freeing the old ruleset (nf_tables does it in a worker);
 * every mode's first sync and full-sync floor start after this pause, so neither pays for the other's leftovers.
 */
export const SETTLE_MS = 1000;

export const peakRssMiB = (): number => process.resourceUsage().maxRSS / 1024;

export function median(xs: readonly number[]): number {
  if (xs.length === 0) throw new Error('median of no runs');
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? (s[mid] ?? 0) : ((s[mid - 1] ?? 0) + (s[mid] ?? 0)) / 2;
}

/** One timed sync, split as bench/main.ts's header says. */
export interface SyncSample {
  /** Objects handed to the trackers → backend.sync() resolved, ms. */
  readonly totalMs: number;
  /** Of total: the change trackers (parsing, fingerprinting, update) and checkout, ms. */
  readonly modelMs: number;
  /** Of total: the kernel tools' own run time, ms (each mode says which tools). */
  readonly kernelMs: number;
  /** total − kernel, ms: the model, the backend's render/diff/serialize/parse, lock probes, process glue. */
  readonly ownMs: number;
  readonly operations: number;
  readonly result: BackendSyncResult;
  /**
   * Objects handed to the trackers → the proxier's post-sync work done (metrics, health, health-check servers):
   * when the agent's next sync could start, ms. Only when the run was given a BenchPostSync.
   */
  readonly postSyncDoneMs?: number;
  /** Of postSyncDoneMs: the post-sync step alone (after backend.sync() resolved), ms. */
  readonly postSyncStepMs?: number;
}

/** A run that did not do what its row claims to measure: the bench fails rather than print a wrong number. */
export class BenchKindError extends Error {
  override readonly name = 'BenchKindError';
}

/**
 * Times what a user waits for: `handIn` gives the trackers their API objects (BenchCluster.load or setSlice), the
 * cluster checks the change out, and the backend syncs; the clock stops when sync() resolves. `kind` is what the
 * run must have been: the backend decides full or partial on its own (the request asks for neither, as the
 * proxier's does between hourly resyncs) and a result of the other kind throws. `kernelOf` reads the kernel tools'
 * time for this sync from the mode's backend. With `post`, the proxier's post-sync step runs after the sync (its
 * checkout record before it, as the proxier's), timed on as postSyncDoneMs; total stops before it.
 */
export async function timedSync(
  what: string,
  cluster: BenchCluster,
  backend: ProxyBackend,
  kind: SyncKind,
  handIn: () => void,
  kernelOf: (result: BackendSyncResult) => number,
  post?: BenchPostSync,
): Promise<SyncSample> {
  const t0 = performance.now();
  handIn();
  const checkout = cluster.checkoutChanges();
  post?.checkedOut(cluster, checkout);
  const t1 = performance.now();
  const result = await backend.sync(cluster.snapshot, checkout.request);
  const t2 = performance.now();
  await post?.synced(cluster, result, performance.timeOrigin + t1, performance.timeOrigin + t2);
  const t3 = performance.now();
  if (result.full !== (kind !== 'one-endpoint')) {
    throw new BenchKindError(
      `${what}: a ${kind} run's sync was ${result.full ? 'a full one' : 'a partial one'}; its numbers would ` +
        `measure the wrong thing`,
    );
  }
  const totalMs = t2 - t0;
  const kernelMs = kernelOf(result);
  return {
    totalMs,
    modelMs: t1 - t0,
    kernelMs,
    ownMs: totalMs - kernelMs,
    operations: result.operations,
    result,
    ...(post ? { postSyncDoneMs: t3 - t0, postSyncStepMs: t3 - t2 } : {}),
  };
}

/** What a mode's rows for one size share. */
export interface RowBase {
  readonly mode: string;
  readonly services: number;
  readonly endpointsPerService: number;
  readonly peakRssMiB: number;
  readonly rssBeforeSyncMiB?: number;
}

/** A row from its runs: every timing is the median of that quantity's per-run values (floor: of its own runs). */
export function rowFrom(
  base: RowBase,
  sync: SyncKind,
  samples: readonly SyncSample[],
  floors: readonly number[],
  toolPeakRssMiB?: number,
): BenchRow {
  const m = (f: (s: SyncSample) => number): number => median(samples.map(f));
  const postSync = samples.flatMap((s) => (s.postSyncDoneMs === undefined ? [] : [s.postSyncDoneMs]));
  const step = samples.flatMap((s) => (s.postSyncStepMs === undefined ? [] : [s.postSyncStepMs]));
  return {
    ...base,
    sync,
    runs: samples.length,
    totalMs: m((s) => s.totalMs),
    ownMs: m((s) => s.ownMs),
    modelMs: m((s) => s.modelMs),
    kernelMs: m((s) => s.kernelMs),
    floorMs: median(floors),
    operations: m((s) => s.operations),
    ...(toolPeakRssMiB === undefined ? {} : { toolPeakRssMiB }),
    ...(postSync.length === samples.length && postSync.length > 0
      ? { postSyncMs: median(postSync), postSyncStepMs: median(step) }
      : {}),
  };
}

/** One GET /metrics, ms: the round trip, the server's answer within it, and this process's CPU time meanwhile. */
export interface ScrapeSample {
  readonly ms: number;
  readonly answerMs: number;
  readonly cpuMs: number;
}

/**
 * /metrics timed beside a row, ms: the server's answer (median and slowest), the round trip and the process's CPU
 * time of the idle scrapes (medians); the busy scrapes' round trip (median and slowest).
 */
export function scrapeColumns(
  idle: readonly ScrapeSample[],
  busy: readonly ScrapeSample[],
): Partial<BenchRow> {
  const ms = (xs: readonly ScrapeSample[]): number[] => xs.map((x) => x.ms);
  const answer = idle.map((x) => x.answerMs);
  return {
    ...(idle.length > 0
      ? {
          scrapeAnswerMs: median(answer),
          scrapeAnswerMaxMs: Math.max(...answer),
          scrapeMs: median(ms(idle)),
          scrapeCpuMs: median(idle.map((x) => x.cpuMs)),
        }
      : {}),
    ...(busy.length > 0 ? { busyScrapeMs: median(ms(busy)), busyScrapeMaxMs: Math.max(...ms(busy)) } : {}),
  };
}
