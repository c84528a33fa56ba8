// Jittered exponential backoff for retrying the API server, shaped like client-go's reflector backoff
// (800 ms doubling to 30 s, jitter 1.0, reset once nothing has failed for 2 minutes).
import type { Clock } from '../util/clock.js';

export interface BackoffConfig {
  readonly initialMs: number;
  readonly maxMs: number;
  readonly factor: number;
  /** The delay d becomes d × (1 + jitter × random), then is capped at maxMs. */
  readonly jitter: number;
  /** After this long without a failure the next delay starts again from initialMs. */
  readonly resetAfterMs: number;
}

export const DEFAULT_BACKOFF: BackoffConfig = {
  initialMs: 800,
  maxMs: 30_000,
  factor: 2,
  jitter: 1,
  resetAfterMs: 120_000,
};

export interface Backoff {
  /** The delay to wait before the next attempt; each call counts as one more failure. */
  next(): number;
  /** Forget past failures (a healthy period was observed directly). */
  reset(): void;
}

export function exponentialBackoff(
  config: BackoffConfig,
  clock: Clock,
  random: () => number = Math.random,
): Backoff {
  let step = 0;
  let lastFailureAt: number | undefined;
  return {
    next(): number {
      const now = clock.now();
      if (lastFailureAt !== undefined && now - lastFailureAt > config.resetAfterMs) step = 0;
      lastFailureAt = now;
      const base = Math.min(config.maxMs, config.initialMs * config.factor ** step);
      step += 1;
      return Math.min(config.maxMs, base * (1 + config.jitter * random()));
    },
    reset(): void {
      step = 0;
      lastFailureAt = undefined;
    },
  };
}
