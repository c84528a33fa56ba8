// The bounded-frequency runner (upstream pkg/proxy/runner): runs `fn` when asked, never more often than
// minInterval measured from the *end* of one run to the *start* of the next, coalescing requests; retries a
// failed run after retryInterval; runs at least every maxInterval. Single-flight: a run never overlaps another.
import type { Clock } from './clock.js';

export interface BoundedFrequencyRunnerOptions {
  readonly name: string;
  readonly fn: () => Promise<void>;
  /** minSyncPeriod, ms. */
  readonly minInterval: number;
  /** syncPeriod, ms: the delay before retrying after a failed run. */
  readonly retryInterval: number;
  /** ms; upstream's FullSyncPeriod is one hour. */
  readonly maxInterval: number;
  readonly clock: Clock;
}

export interface RunnerEventMap {
  /** A run finished; error is set when fn rejected. */
  'run:done': { readonly startedAt: number; readonly finishedAt: number; readonly error?: unknown };
}

export declare class BoundedFrequencyRunner {
  constructor(options: BoundedFrequencyRunnerOptions);
  /** Requests a run; coalesces with other requests; dropped (as upstream) before loop() has started. */
  run(): void;
  /** Starts the loop (the first run happens on the first request or at maxInterval). */
  loop(): void;
  /** Stops the loop; resolves when a run in flight has finished. */
  stop(): Promise<void>;
  on<K extends keyof RunnerEventMap>(event: K, listener: (e: RunnerEventMap[K]) => void): void;
  /** Resolves after the next run finishes (test helper for awaiting a run). */
  nextRun(): Promise<RunnerEventMap['run:done']>;
}
