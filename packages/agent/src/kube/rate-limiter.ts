// clientConnection.qps / burst: a token bucket in front of every request to the API server, as client-go's
// flowcontrol limiter does (watches included: client-go throttles Watch() too). qps ≤ 0 disables limiting. A paged
// list is one request to it: api-client.ts lets the pages after the first pass.
import type { Clock, TimerHandle } from '../util/clock.js';

export interface RateLimiter {
  /** Resolves when a request may be sent; rejects with the signal's reason if it is aborted while waiting. */
  acquire(signal?: AbortSignal): Promise<void>;
}

export const UNLIMITED: RateLimiter = { acquire: () => Promise.resolve() };

export function tokenBucket(qps: number, burst: number, clock: Clock): RateLimiter {
  if (!(qps > 0)) return UNLIMITED;
  const capacity = Math.max(1, Math.floor(burst));
  const msPerToken = 1000 / qps;
  let tokens = capacity;
  let refilledAt = clock.now();
  // Waiters are served strictly in arrival order; each reserves a token, so tokens may go negative (debt).
  const refill = (): void => {
    const now = clock.now();
    tokens = Math.min(capacity, tokens + (now - refilledAt) / msPerToken);
    refilledAt = now;
  };
  return {
    acquire(signal?: AbortSignal): Promise<void> {
      if (signal?.aborted) return Promise.reject(signal.reason);
      refill();
      tokens -= 1;
      if (tokens >= 0) return Promise.resolve();
      const waitMs = -tokens * msPerToken;
      return new Promise<void>((resolve, reject) => {
        const handle: TimerHandle = clock.setTimeout(() => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        }, waitMs);
        const onAbort = (): void => {
          clock.clearTimeout(handle);
          tokens += 1; // give the reservation back
          reject(signal?.reason);
        };
        signal?.addEventListener('abort', onAbort, { once: true });
      });
    },
  };
}
