// Time as an injected dependency: the runner, the proxier and the stale-chain timers read it; tests use FakeClock.

export interface TimerHandle {
  readonly id: number;
}

export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  setTimeout(fn: () => void, ms: number): TimerHandle;
  clearTimeout(handle: TimerHandle): void;
}

export declare const systemClock: Clock;

/** A clock that only moves when told; timers fire, in due order, inside advance(). */
export declare class FakeClock implements Clock {
  constructor(startMs?: number);
  now(): number;
  setTimeout(fn: () => void, ms: number): TimerHandle;
  clearTimeout(handle: TimerHandle): void;
  /** Moves time forward by ms, firing every timer that falls due (including timers set by fired timers). */
  advance(ms: number): void;
  /** Number of timers not yet fired. */
  get pendingTimers(): number;
}
