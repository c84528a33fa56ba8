// The bounded-frequency runner (upstream pkg/proxy/runner): runs `fn` when asked, never more often than
// minInterval measured from the *end* of one run to the *start* of the next, coalescing requests; retries a
// failed run after retryInterval; runs at least every maxInterval. Single-flight: a run never overlaps another.
import type { Clock, TimerHandle } from '../util/clock.js';

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

type Listener<K extends keyof RunnerEventMap> = (e: RunnerEventMap[K]) => void;

export class BoundedFrequencyRunner {
  readonly #opts: BoundedFrequencyRunnerOptions;
  #started = false;
  #stopped = false;
  #loopDone: Promise<void> = Promise.resolve();
  // Why the loop should run next; any of them is enough, and a run satisfies all requests made before it started.
  #requested = false;
  #retryDue = false;
  #maxDue = false;
  #retryTimer: TimerHandle | undefined;
  #maxTimer: TimerHandle | undefined;
  #minTimer: TimerHandle | undefined;
  /** Resolves the loop's current wait (for a trigger, or for the min interval to pass). */
  #wake: (() => void) | undefined;
  readonly #listeners: Listener<'run:done'>[] = [];

  constructor(options: BoundedFrequencyRunnerOptions) {
    this.#opts = options;
  }

  /** Requests a run; coalesces with other requests; dropped (as upstream) before loop() has started. */
  run(): void {
    if (!this.#started || this.#stopped) return;
    this.#requested = true;
    this.#poke();
  }

  /** Starts the loop (the first run happens on the first request or at maxInterval). */
  loop(): void {
    if (this.#started) return;
    this.#started = true;
    this.#armMax();
    this.#loopDone = this.#runLoop();
  }

  /** Stops the loop; resolves when a run in flight has finished. */
  async stop(): Promise<void> {
    this.#stopped = true;
    const { clock } = this.#opts;
    for (const t of [this.#retryTimer, this.#maxTimer, this.#minTimer])
      if (t !== undefined) clock.clearTimeout(t);
    this.#retryTimer = this.#maxTimer = this.#minTimer = undefined;
    this.#poke();
    await this.#loopDone;
  }

  on<K extends keyof RunnerEventMap>(event: K, listener: (e: RunnerEventMap[K]) => void): void {
    if (event === 'run:done') this.#listeners.push(listener);
  }

  /** Resolves after the next run finishes (test helper for awaiting a run). */
  nextRun(): Promise<RunnerEventMap['run:done']> {
    return new Promise((resolve) => {
      const once: Listener<'run:done'> = (e) => {
        const i = this.#listeners.indexOf(once);
        if (i >= 0) this.#listeners.splice(i, 1);
        resolve(e);
      };
      this.#listeners.push(once);
    });
  }

  #poke(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }

  #sleep(): Promise<void> {
    return new Promise((resolve) => {
      this.#wake = resolve;
    });
  }

  #armMax(): void {
    const { clock, maxInterval } = this.#opts;
    if (this.#maxTimer !== undefined) clock.clearTimeout(this.#maxTimer);
    this.#maxTimer = clock.setTimeout(() => {
      this.#maxTimer = undefined;
      this.#maxDue = true;
      this.#poke();
    }, maxInterval);
  }

  async #runLoop(): Promise<void> {
    const { clock } = this.#opts;
    while (!this.#stopped) {
      if (!this.#requested && !this.#retryDue && !this.#maxDue) {
        await this.#sleep();
        continue;
      }
      this.#requested = this.#retryDue = this.#maxDue = false;
      const startedAt = clock.now();
      let error: unknown;
      let failed = false;
      try {
        await this.#opts.fn();
      } catch (e) {
        failed = true;
        error = e;
      }
      const finishedAt = clock.now();
      if (this.#retryTimer !== undefined) clock.clearTimeout(this.#retryTimer);
      this.#retryTimer = undefined;
      if (failed && !this.#stopped) {
        this.#retryTimer = clock.setTimeout(() => {
          this.#retryTimer = undefined;
          this.#retryDue = true;
          this.#poke();
        }, this.#opts.retryInterval);
      }
      if (!this.#stopped) this.#armMax();
      for (const l of [...this.#listeners]) {
        try {
          l(failed ? { startedAt, finishedAt, error } : { startedAt, finishedAt });
        } catch {
          // A listener's failure is its own; the loop keeps its timing.
        }
      }
      // minInterval counts from the end of this run: hold every trigger until it has passed.
      if (this.#opts.minInterval > 0 && !this.#stopped) {
        const passed = this.#sleep();
        this.#minTimer = clock.setTimeout(() => {
          this.#minTimer = undefined;
          this.#poke();
        }, this.#opts.minInterval);
        // Triggers arriving now only set flags; the poke they make must not end the wait early.
        await this.#minWait(passed);
      }
    }
  }

  /** Waits for the min timer (or stop), ignoring pokes from run() and the other timers meanwhile. */
  async #minWait(first: Promise<void>): Promise<void> {
    let wait = first;
    for (;;) {
      await wait;
      if (this.#stopped || this.#minTimer === undefined) return;
      wait = this.#sleep();
    }
  }
}
