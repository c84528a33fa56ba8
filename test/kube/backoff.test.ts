import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DEFAULT_BACKOFF, exponentialBackoff } from '../../packages/agent/src/kube/backoff.js';
import { FakeClock } from '../../packages/agent/src/util/clock.js';

test('defaults are client-go reflector backoff: 800 ms doubling to 30 s, jitter 1, reset after 2 min', () => {
  assert.deepEqual(DEFAULT_BACKOFF, {
    initialMs: 800,
    maxMs: 30_000,
    factor: 2,
    jitter: 1,
    resetAfterMs: 120_000,
  });
});

test('doubles up to the cap without jitter', () => {
  const clock = new FakeClock();
  const b = exponentialBackoff({ ...DEFAULT_BACKOFF, jitter: 0 }, clock, () => 0.5);
  const delays = Array.from({ length: 8 }, () => {
    const d = b.next();
    clock.advance(d);
    return d;
  });
  assert.deepEqual(delays, [800, 1600, 3200, 6400, 12800, 25600, 30000, 30000]);
});

test('jitter stretches each delay by up to (1 + jitter), never past the cap', () => {
  const clock = new FakeClock();
  const low = exponentialBackoff(DEFAULT_BACKOFF, clock, () => 0);
  const high = exponentialBackoff(DEFAULT_BACKOFF, clock, () => 0.999);
  assert.equal(low.next(), 800);
  assert.ok(Math.abs(high.next() - 800 * 1.999) < 1e-9);
  for (let i = 0; i < 10; i++) assert.ok(high.next() <= 30_000);
});

test('resets to the initial delay after a healthy period longer than resetAfterMs', () => {
  const clock = new FakeClock();
  const b = exponentialBackoff({ ...DEFAULT_BACKOFF, jitter: 0 }, clock);
  b.next();
  b.next();
  clock.advance(60_000);
  assert.equal(b.next(), 3200, 'a failure within the period keeps climbing');
  clock.advance(120_001);
  assert.equal(b.next(), 800);
  b.next();
  b.reset();
  assert.equal(b.next(), 800);
});

test('outages closer together than resetAfterMs compound, as client-go: a node grows deafer with each', () => {
  // Two failed tries per 3-s outage, one outage every 90 s (the long soak's schedule, proxies not restarted):
  // the first retry after each outage waits 0.8 s, 3.2 s, 12.8 s, then the cap.
  const clock = new FakeClock();
  const b = exponentialBackoff({ ...DEFAULT_BACKOFF, jitter: 0 }, clock);
  const firstRetries: number[] = [];
  for (let outage = 0; outage < 4; outage++) {
    firstRetries.push(b.next());
    b.next();
    clock.advance(90_000);
  }
  assert.deepEqual(firstRetries, [800, 3200, 12_800, 30_000]);
});
