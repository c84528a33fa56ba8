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

const systemTimers = new Map<number, ReturnType<typeof setTimeout>>();
let nextSystemTimerId = 1;

export const systemClock: Clock = Object.freeze({
  now: () => Date.now(),
  setTimeout(fn: () => void, ms: number): TimerHandle {
    const id = nextSystemTimerId++;
    const timer = setTimeout(
      () => {
        systemTimers.delete(id);
        fn();
      },
      Math.max(0, ms),
    );
    // A pending timer alone never keeps the process alive: servers, sockets and child processes do that, so a
    // command (or a test) ends when its real work ends, not when its last retry or bookmark timer would fire.
    timer.unref();
    systemTimers.set(id, timer);
    return { id };
  },
  clearTimeout(handle: TimerHandle): void {
    const t = systemTimers.get(handle.id);
    if (t !== undefined) {
      clearTimeout(t);
      systemTimers.delete(handle.id);
    }
  },
});

interface FakeTimer {
  readonly id: number;
  readonly due: number;
  readonly fn: () => void;
}

/** A clock that only moves when told; timers fire, in due order, inside advance(). */
export class FakeClock implements Clock {
  #now: number;
  #nextId = 1;
  // Few timers are ever pending (a runner holds three), so a scan beats a heap here.
  readonly #timers = new Map<number, FakeTimer>();

  constructor(startMs = 0) {
    this.#now = startMs;
  }

  now(): number {
    return this.#now;
  }

  setTimeout(fn: () => void, ms: number): TimerHandle {
    const id = this.#nextId++;
    this.#timers.set(id, { id, due: this.#now + Math.max(0, ms), fn });
    return { id };
  }

  clearTimeout(handle: TimerHandle): void {
    this.#timers.delete(handle.id);
  }

  /** Moves time forward by ms, firing every timer that falls due (including timers set by fired timers). */
  advance(ms: number): void {
    const target = this.#now + Math.max(0, ms);
    for (;;) {
      let next: FakeTimer | undefined;
      for (const t of this.#timers.values()) {
        // Earliest due first; equal due times fire in the order they were set.
        if (
          t.due <= target &&
          (next === undefined || t.due < next.due || (t.due === next.due && t.id < next.id))
        ) {
          next = t;
        }
      }
      if (next === undefined) break;
      this.#timers.delete(next.id);
      this.#now = next.due;
      next.fn();
    }
    this.#now = target;
  }

  /** Number of timers not yet fired. */
  get pendingTimers(): number {
    return this.#timers.size;
  }
}
