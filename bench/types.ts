// The shape every mode's benchmark module shares, so bench/main.ts can print all modes in one table.
import type { CommandRunner } from '../src/netfilter/command.js';

export interface BenchContext {
  /** Runs commands inside the benchmark's private network namespace. */
  readonly commands: CommandRunner;
  readonly sizes: readonly number[];
  readonly endpointsPerService: number;
  /** Repetitions of the small (one-endpoint) syncs; the median is reported. */
  readonly repeats: number;
}

export interface BenchRow {
  readonly mode: string;
  readonly services: number;
  readonly endpointsPerService: number;
  readonly sync: 'full' | 'one-endpoint';
  /** Our own work: render, diff, serialization. */
  readonly ownMs: number;
  /** Time in the kernel tool (nft -f / iptables-restore, and read-back on a full sync). */
  readonly kernelMs: number;
  /** The kernel tool alone applying the same text: the floor. */
  readonly floorMs: number;
  readonly operations: number;
  /** Peak resident set of this process (the model plus one cold full sync; not the benchmark's extra runs), MiB. */
  readonly peakRssMiB: number;
  /** Peak resident set before the first sync (the model's share: Services, EndpointSlices, snapshot), MiB. */
  readonly rssBeforeSyncMiB?: number;
  /** Peak resident set of the kernel tool's process (nft, iptables-restore) during the run, MiB, if sampled. */
  readonly toolPeakRssMiB?: number;
}

export interface BenchModule {
  readonly mode: string;
  run(ctx: BenchContext): Promise<BenchRow[]>;
}
