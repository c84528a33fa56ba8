// The shape every mode's benchmark module shares, so bench/main.ts can print all modes in one table. The
// accounting behind the numbers is in bench/main.ts's header and bench/measure.ts.
import type { CommandRunner } from 'kube-proxy-ts/netfilter/command.js';

export interface BenchContext {
  /** Runs commands inside the benchmark's private network namespace. */
  readonly commands: CommandRunner;
  readonly sizes: readonly number[];
  readonly endpointsPerService: number;
  /** Repetitions of the one-endpoint change, the same for every mode; each timing is the median of its runs. */
  readonly repeats: number;
}

/**
 * 'full': the process's first sync (every Service loaded, empty tables), cold, one run. 'one-endpoint': a change.
 * 'restart' (nftables): a new backend's first sync on the table 'full' wrote, one run: it reads the table back and
 * writes only what differs.
 */
export type SyncKind = 'full' | 'one-endpoint' | 'restart';

export interface BenchRow {
  readonly mode: string;
  readonly services: number;
  readonly endpointsPerService: number;
  readonly sync: SyncKind;
  /** Runs behind the timings (1 for the full row, the context's repeats for one-endpoint). */
  readonly runs: number;
  /** What the user waits for: API objects handed to the trackers → backend.sync() resolved. Median of runs. */
  readonly totalMs: number;
  /** total − kernel tool time (median of per-run values): everything of the wait that is ours. */
  readonly ownMs: number;
  /** Of own: the change trackers (parsing, fingerprinting, update) and checkout (median of per-run values). */
  readonly modelMs: number;
  /** The kernel tools' own run time (median of per-run values); which tools, each mode's module says. */
  readonly kernelMs: number;
  /** The kernel tool alone applying the same text from the same starting state: the floor. */
  readonly floorMs: number;
  readonly operations: number;
  /** Peak resident set of this process after the first sync and the one-endpoint runs (not the floors), MiB. */
  readonly peakRssMiB: number;
  /** Peak resident set once the objects are in the trackers, before the first sync (the model's share), MiB. */
  readonly rssBeforeSyncMiB?: number;
  /** Peak resident set of the kernel tool's process (nft, iptables-restore) during the floor runs, MiB. */
  readonly toolPeakRssMiB?: number;
  /**
   * Objects handed to the trackers → the proxier's post-sync work done (metrics, health, health-check servers),
   * when the next sync could start; median of runs. Modes that run the post-sync step only.
   */
  readonly postSyncMs?: number;
  /** Of postSyncMs: the post-sync step alone, after backend.sync() resolved (median of runs). */
  readonly postSyncStepMs?: number;
  /**
   * GET /metrics over HTTP with the agent idle (right after a change's post-sync work): the server's answer
   * (request handed to the handler → response handed to the OS), median and slowest, and the round trip, median, ms.
   */
  readonly scrapeAnswerMs?: number;
  readonly scrapeAnswerMaxMs?: number;
  readonly scrapeMs?: number;
  /** The CPU time this process spent on an idle scrape (server and client), median, ms: what load cannot inflate. */
  readonly scrapeCpuMs?: number;
  /** GET /metrics sent as a change is handed in, so answered while that sync runs: median and slowest, ms. */
  readonly busyScrapeMs?: number;
  readonly busyScrapeMaxMs?: number;
}

export interface BenchModule {
  /** What KPTS_BENCH_MODES selects ('nftables', 'iptables'). */
  readonly mode: string;
  /** The rows' mode column, and which module a per-run child process runs; `mode` when absent. */
  readonly label?: string;
  /** Sizes above this are skipped, with a line on stderr saying so. */
  readonly maxServices?: number;
  /** Sizes this module also runs when KPTS_BENCH_SIZES is not given (beyond the default sizes). */
  readonly defaultExtraSizes?: readonly number[];
  run(ctx: BenchContext): Promise<BenchRow[]>;
}
