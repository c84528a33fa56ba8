import assert from 'node:assert/strict';
import { test } from 'node:test';
import { tokenBucket, UNLIMITED } from '../../packages/agent/src/kube/rate-limiter.js';
import { FakeClock } from '../../packages/agent/src/util/clock.js';
import { settle } from '../helpers/settle.js';

test('burst requests pass at once; the rest at qps, in arrival order', async () => {
  const clock = new FakeClock();
  const limiter = tokenBucket(5, 10, clock); // upstream's clientConnection defaults
  const granted: number[] = [];
  const acquired = Array.from({ length: 13 }, (_, i) => limiter.acquire().then(() => void granted.push(i)));
  await Promise.all(acquired.slice(0, 10));
  await settle();
  assert.deepEqual(granted, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  clock.advance(199);
  await settle();
  assert.equal(granted.length, 10);
  clock.advance(1);
  await acquired[10];
  await settle();
  assert.deepEqual(granted.slice(10), [10]);
  clock.advance(400);
  await Promise.all(acquired);
  assert.deepEqual(granted.slice(10), [10, 11, 12]);
});

test('tokens refill with time up to the burst', async () => {
  const clock = new FakeClock();
  const limiter = tokenBucket(2, 3, clock);
  for (let i = 0; i < 3; i++) await limiter.acquire();
  clock.advance(10_000); // refills to 3, not 20
  let passed = 0;
  const acquired = Array.from({ length: 5 }, () => limiter.acquire().then(() => void passed++));
  await Promise.all(acquired.slice(0, 3));
  await settle();
  assert.equal(passed, 3);
});

test('an aborted wait rejects and gives its place back', async () => {
  const clock = new FakeClock();
  const limiter = tokenBucket(1, 1, clock);
  await limiter.acquire();
  const ac = new AbortController();
  const waiting = limiter.acquire(ac.signal);
  ac.abort(new Error('stopped'));
  await assert.rejects(waiting, /stopped/);
  clock.advance(1000);
  let passed = false;
  void limiter.acquire().then(() => (passed = true));
  await settle();
  assert.ok(passed, 'the aborted reservation did not keep a token');
});

test('qps ≤ 0 disables limiting', () => {
  assert.equal(tokenBucket(0, 10, new FakeClock()), UNLIMITED);
});
