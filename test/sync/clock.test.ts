import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock, systemClock } from '../../packages/agent/src/util/clock.js';

describe('FakeClock', () => {
  test('only moves when told; timers fire in due order inside advance, at their due time', () => {
    const clock = new FakeClock(1000);
    const fired: [string, number][] = [];
    clock.setTimeout(() => fired.push(['b', clock.now()]), 20);
    clock.setTimeout(() => fired.push(['a', clock.now()]), 10);
    clock.setTimeout(() => fired.push(['a2', clock.now()]), 10);
    assert.equal(clock.now(), 1000);
    assert.equal(clock.pendingTimers, 3);
    clock.advance(15);
    assert.deepEqual(fired, [
      ['a', 1010],
      ['a2', 1010],
    ]);
    assert.equal(clock.now(), 1015);
    clock.advance(5);
    assert.deepEqual(fired.at(-1), ['b', 1020]);
    assert.equal(clock.pendingTimers, 0);
  });

  test('timers set by fired timers also fire when they fall due within the same advance', () => {
    const clock = new FakeClock();
    const fired: number[] = [];
    clock.setTimeout(() => {
      fired.push(clock.now());
      clock.setTimeout(() => fired.push(clock.now()), 10);
      clock.setTimeout(() => fired.push(clock.now()), 100);
    }, 5);
    clock.advance(50);
    assert.deepEqual(fired, [5, 15]);
    assert.equal(clock.pendingTimers, 1);
  });

  test('clearTimeout cancels; a zero or negative delay fires on the next advance', () => {
    const clock = new FakeClock();
    let n = 0;
    const h = clock.setTimeout(() => n++, 10);
    clock.clearTimeout(h);
    clock.setTimeout(() => (n += 10), -5);
    clock.advance(0);
    assert.equal(n, 10);
    clock.advance(100);
    assert.equal(n, 10);
  });
});

describe('systemClock', () => {
  test('now is wall time; a cleared timer never fires', () => {
    const before = Date.now();
    const t = systemClock.now();
    assert.ok(t >= before && t <= Date.now());
    let fired = false;
    const h = systemClock.setTimeout(() => (fired = true), 0);
    systemClock.clearTimeout(h);
    return new Promise<void>((resolve) => {
      setImmediate(() => {
        assert.equal(fired, false);
        resolve();
      });
    });
  });
});
