import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '../../packages/agent/src/util/clock.js';
import { BoundedFrequencyRunner } from '../../packages/agent/src/sync/runner.js';
import { settle } from '../helpers/settle.js';

const HOUR = 3_600_000;

interface Deferred {
  readonly promise: Promise<void>;
  resolve(): void;
  reject(e: unknown): void;
}
function deferred(): Deferred {
  let resolve!: () => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** A runner whose fn records start times and, when `gate` is set, waits for the test to let it finish. */
function harness(opts: { min?: number; retry?: number; max?: number } = {}) {
  const clock = new FakeClock(0);
  const starts: number[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  let outcome: (() => Promise<void>) | undefined;
  const runner = new BoundedFrequencyRunner({
    name: 'sync-runner',
    clock,
    minInterval: opts.min ?? 1000,
    retryInterval: opts.retry ?? 30_000,
    maxInterval: opts.max ?? HOUR,
    fn: async () => {
      starts.push(clock.now());
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      try {
        if (outcome) await outcome();
      } finally {
        inFlight--;
      }
    },
  });
  return {
    clock,
    runner,
    starts,
    get maxInFlight() {
      return maxInFlight;
    },
    setOutcome(f: (() => Promise<void>) | undefined) {
      outcome = f;
    },
    /** Makes every run from now on wait until the returned promise is resolved (or rejected). */
    hold(): Deferred {
      const d = deferred();
      outcome = () => d.promise;
      return d;
    },
    /** Starts the loop and a run that is still in flight when this resolves: it ends when `slow` is resolved. */
    async loopWithRunInFlight(): Promise<Deferred> {
      const slow = this.hold();
      runner.loop();
      runner.run();
      await settle();
      return slow;
    },
    /** Starts the loop and a requested run that fails with `message`, and resolves with that run; later runs succeed. */
    async loopWithFailedRun(message: string): ReturnType<BoundedFrequencyRunner['nextRun']> {
      outcome = () => Promise.reject(new Error(message));
      runner.loop();
      const failed = await this.runAndWait();
      outcome = undefined;
      return failed;
    },
    /** Moves the clock by `ms` and resolves with the next run to finish (one that the move starts). */
    nextRunAfter(ms: number): ReturnType<BoundedFrequencyRunner['nextRun']> {
      const next = runner.nextRun();
      clock.advance(ms);
      return next;
    },
    /** Moves the clock by `ms`, then lets what that woke reach its next wait. */
    async advance(ms: number): Promise<void> {
      clock.advance(ms);
      await settle();
    },
    /** Requests a run and resolves with it (the next run to finish). */
    runAndWait(): ReturnType<BoundedFrequencyRunner['nextRun']> {
      const done = runner.nextRun();
      runner.run();
      return done;
    },
  };
}

describe('§5 / §10.8 BoundedFrequencyRunner on a FakeClock', () => {
  test('§10.8 run() before loop() is dropped; the first run then waits for a request or maxInterval', async () => {
    const h = harness();
    h.runner.run();
    h.runner.loop();
    await settle();
    await h.advance(HOUR - 1);
    assert.deepEqual(h.starts, []);
    await h.runner.stop();
  });

  test('a request after loop() runs immediately', async () => {
    const h = harness();
    h.runner.loop();
    const e = await h.runAndWait();
    assert.deepEqual(h.starts, [0]);
    assert.deepEqual(e, { startedAt: 0, finishedAt: 0 });
    await h.runner.stop();
  });

  test('§10.8 minInterval runs from the END of one run to the START of the next', async () => {
    const h = harness({ min: 1000 });
    const slow = h.hold();
    h.runner.loop();
    const done = h.runner.nextRun();
    h.runner.run(); // starts at 0
    await settle();
    h.clock.advance(500); // the run takes 500 ms
    slow.resolve();
    assert.deepEqual(await done, { startedAt: 0, finishedAt: 500 });
    h.setOutcome(undefined);
    h.runner.run();
    await h.advance(999); // t=1499: a start-to-start limit would have allowed a run at 1000
    assert.deepEqual(h.starts, [0]);
    assert.equal((await h.nextRunAfter(1)).startedAt, 1500); // t=1500
    await h.runner.stop();
  });

  test('requests coalesce: many requests during the wait give one run, and no burst', async () => {
    const h = harness({ min: 1000 });
    h.runner.loop();
    await h.runAndWait();
    for (let i = 0; i < 10; i++) h.runner.run();
    await settle();
    assert.equal((await h.nextRunAfter(1000)).startedAt, 1000);
    await h.advance(1000);
    await h.advance(10_000);
    assert.deepEqual(h.starts, [0, 1000]);
    // No burst: two requests at once after a long idle still give one run now and one min interval later.
    const third = h.runner.nextRun();
    h.runner.run();
    h.runner.run();
    assert.equal((await third).startedAt, 12_000);
    await settle();
    assert.deepEqual(h.starts, [0, 1000, 12_000]);
    await h.runner.stop();
  });

  test('requests made while a run is in flight cause exactly one more run, minInterval after it ends', async () => {
    const h = harness({ min: 1000 });
    const slow = await h.loopWithRunInFlight();
    h.runner.run();
    h.runner.run();
    h.clock.advance(200);
    h.setOutcome(undefined);
    const second = (async () => {
      await h.runner.nextRun();
      return h.runner.nextRun();
    })();
    slow.resolve();
    await settle();
    h.clock.advance(1000);
    assert.equal((await second).startedAt, 1200);
    await h.advance(5000);
    assert.deepEqual(h.starts, [0, 1200]);
    await h.runner.stop();
  });

  test('§10.8 a failed run retries after retryInterval; a success stops retrying', async () => {
    const h = harness({ min: 1000, retry: 30_000 });
    const e = await h.loopWithFailedRun('nft: transaction failed');
    assert.ok(e.error instanceof Error);
    assert.equal((e.error as Error).message, 'nft: transaction failed');
    await h.advance(1000);
    await h.advance(28_999); // t=29_999
    assert.deepEqual(h.starts, [0]);
    const r = await h.nextRunAfter(1); // t=30_000
    assert.equal(r.startedAt, 30_000);
    assert.equal(r.error, undefined);
    await h.advance(1000);
    await h.advance(HOUR - 1001);
    assert.deepEqual(h.starts, [0, 30_000]);
    await h.runner.stop();
  });

  test('a retry shorter than minInterval still waits for minInterval', async () => {
    const h = harness({ min: 1000, retry: 100 });
    await h.loopWithFailedRun('x');
    await h.advance(100);
    await h.advance(899);
    assert.deepEqual(h.starts, [0]);
    assert.equal((await h.nextRunAfter(1)).startedAt, 1000);
    await h.runner.stop();
  });

  test('a fn that throws synchronously counts as a failure, not a crash', async () => {
    const clock = new FakeClock();
    const runner = new BoundedFrequencyRunner({
      name: 't',
      clock,
      minInterval: 0,
      retryInterval: 10,
      maxInterval: HOUR,
      fn: () => {
        throw new Error('sync throw');
      },
    });
    runner.loop();
    const done = runner.nextRun();
    runner.run();
    assert.match(String((await done).error), /sync throw/);
    await runner.stop();
  });

  test('§10.8 with no requests a run still happens every maxInterval (hourly)', async () => {
    const h = harness({ min: 1000, max: HOUR });
    h.runner.loop();
    await h.advance(HOUR - 1);
    assert.deepEqual(h.starts, []);
    assert.equal((await h.nextRunAfter(1)).startedAt, HOUR);
    await h.advance(1000); // min wait passes
    await h.advance(HOUR - 1001);
    assert.deepEqual(h.starts, [HOUR]);
    assert.equal((await h.nextRunAfter(1)).startedAt, 2 * HOUR);
    await h.runner.stop();
  });

  test('a requested run resets the max timer', async () => {
    const h = harness({ min: 1000, max: HOUR });
    h.runner.loop();
    h.clock.advance(HOUR / 2);
    await h.runAndWait();
    await h.advance(1000);
    await h.advance(HOUR / 2); // the original hour has passed; the max timer was re-armed at the run
    assert.deepEqual(h.starts, [HOUR / 2]);
    assert.equal((await h.nextRunAfter(HOUR / 2 - 1000)).startedAt, HOUR / 2 + HOUR);
    await h.runner.stop();
  });

  test('single-flight: never two runs at once, even when fn awaits and requests keep coming', async () => {
    const h = harness({ min: 0 });
    const gates: Deferred[] = [];
    h.setOutcome(() => {
      const d = deferred();
      gates.push(d);
      return d.promise;
    });
    h.runner.loop();
    for (let round = 0; round < 5; round++) {
      h.runner.run();
      h.runner.run();
      await settle();
      h.clock.advance(10);
      h.runner.run();
      await settle();
    }
    assert.equal(h.maxInFlight, 1);
    assert.equal(h.starts.length, 1);
    // Releasing runs one at a time: each release allows exactly one more run (requests coalesced).
    gates[0]?.resolve();
    await settle();
    assert.equal(h.starts.length, 2);
    h.setOutcome(undefined);
    gates[1]?.resolve();
    await settle();
    assert.equal(h.starts.length, 2);
    assert.equal(h.maxInFlight, 1);
    await h.runner.stop();
  });

  test('stop() waits for the run in flight, then nothing runs and no timers are left', async () => {
    const h = harness({ min: 1000 });
    const slow = await h.loopWithRunInFlight();
    let stopped = false;
    const stopping = h.runner.stop().then(() => (stopped = true));
    await settle();
    assert.equal(stopped, false);
    slow.resolve();
    await stopping;
    assert.equal(stopped, true);
    h.runner.run();
    await h.advance(2 * HOUR);
    assert.deepEqual(h.starts, [0]);
    assert.equal(h.clock.pendingTimers, 0);
  });

  test('stop() during the minInterval wait returns at once', async () => {
    const h = harness({ min: 10_000 });
    h.runner.loop();
    await h.runAndWait();
    h.runner.run();
    await h.runner.stop();
    await h.advance(20_000);
    assert.deepEqual(h.starts, [0]);
  });
});
