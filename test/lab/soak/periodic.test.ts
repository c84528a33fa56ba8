// The samplers' loop: runs one at a time, again after each ends, and stop() waits for the run in progress and
// ends the loop.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Periodic } from '../../../packages/lab/src/soak/periodic.js';

test('Periodic: never two runs at once; stop waits for the current run and no run starts after it', async () => {
  let runs = 0;
  let inFlight = 0;
  let most = 0;
  let third: () => void = () => undefined;
  const reachedThird = new Promise<void>((resolve) => (third = resolve));
  let release: () => void = () => undefined;
  const loop = new Periodic(0, async () => {
    runs++;
    inFlight++;
    most = Math.max(most, inFlight);
    if (runs === 3) {
      third();
      await new Promise<void>((resolve) => (release = resolve));
    }
    inFlight--;
  });
  loop.start();
  await reachedThird;
  let stopped = false;
  const stopping = loop.stop().then(() => (stopped = true));
  await Promise.resolve();
  assert.equal(stopped, false, 'stop waits for the run in progress');
  release();
  await stopping;
  assert.equal(inFlight, 0);
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(runs, 3, 'no run after stop');
  assert.equal(most, 1);
});
