// After an API server outage each node hears again when its EndpointSlice changes counter rises past what it had
// received by the outage's end (a restarted process counts from zero); the sync that follows ends the node's
// deaf window. A node that does not hear again within a minute of the outage's end is reported.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { NodePoint } from '../../../packages/lab/src/soak/node-sampler.js';
import {
  notBackInTime,
  outageRecoveries,
  outageRecovery,
  OUTAGE_RECOVERY_LIMIT_MS,
} from '../../../packages/lab/src/soak/outages.js';

const T0 = 1_000_000;
const OUTAGE_MS = 3000;

/** One sample a second from T0: [endpoint changes received, last sync (ms after T0)]. */
function points(samples: [number, number][]): NodePoint[] {
  return samples.map(([endpointChanges, lastSync], i) => ({
    t: T0 + i * 1000,
    pendingEndpoints: 0,
    pendingServices: 0,
    syncs: i,
    lastSyncMs: T0 + lastSync,
    endpointChanges,
  }));
}

/** `n` samples alike, for points(). */
function times(n: number, sample: [number, number]): [number, number][] {
  return Array.from({ length: n }, () => sample);
}

describe('soak outage recovery', () => {
  test('a node deaf past the outage hears again when its changes counter moves, and syncs after', () => {
    // Outage at 1 s for 3 s; changes stand at 50 from 1 s until 7 s (backoff), then the backlog arrives.
    const p = points([[40, 0], ...times(6, [50, 900]), [80, 900], [81, 7400]]);
    assert.deepEqual(outageRecovery('control-plane', p, T0 + 1000, OUTAGE_MS), {
      node: 'control-plane',
      at: T0 + 1000,
      heardAt: T0 + 7000,
      syncedAt: T0 + 7400,
    });
  });

  test('a counter that moved during the outage is not hearing again: only a rise after its end counts', () => {
    // Changes still arriving as the cut happens (45 at 1 s), then none until 5 s.
    const p = points([[40, 0], ...times(4, [45, 900]), [46, 4800]]);
    assert.equal(outageRecovery('worker', p, T0 + 1000, OUTAGE_MS).heardAt, T0 + 5000);
  });

  test('a proxy restarted while deaf hears again with its first list, counted from zero', () => {
    const p = points([
      [40, 0],
      ...times(4, [50, 900]),
      [0, 0], // the new process, not yet listed
      [30, 6200], // listed: fewer than before, but it heard
    ]);
    const r = outageRecovery('worker', p, T0 + 1000, OUTAGE_MS);
    assert.equal(r.heardAt, T0 + 6000);
    assert.equal(r.syncedAt, T0 + 6200);
  });

  test('a node that never hears again is not back in time once a minute has passed within the run', () => {
    const deaf = points([[40, 0], ...times(5, [50, 900])]);
    const r = outageRecovery('worker', deaf, T0 + 1000, OUTAGE_MS);
    assert.deepEqual(r, { node: 'worker', at: T0 + 1000 });
    const deadline = T0 + 1000 + OUTAGE_MS + OUTAGE_RECOVERY_LIMIT_MS;
    assert.equal(notBackInTime(r, OUTAGE_MS, deadline - 1), false, 'the run ended too soon to tell');
    assert.equal(notBackInTime(r, OUTAGE_MS, deadline), true);
    assert.equal(notBackInTime({ ...r, heardAt: deadline + 1 }, OUTAGE_MS, deadline + 10_000), true);
    assert.equal(notBackInTime({ ...r, heardAt: T0 + 9000 }, OUTAGE_MS, deadline + 10_000), false);
  });

  test('every outage for every node, in outage order', () => {
    const a = { points: points([...times(5, [1, 0]), ...times(4, [2, 5100]), [3, 9500]]) };
    const b = { points: points([...times(4, [1, 0]), ...times(6, [5, 4200]), [6, 10100]]) };
    const r = outageRecoveries(
      new Map([
        ['a', a],
        ['b', b],
      ]),
      [T0 + 500, T0 + 5000],
      OUTAGE_MS,
    );
    assert.deepEqual(
      r.map((x) => `${x.node} ${(x.at - T0) / 1000} heard ${((x.heardAt ?? 0) - T0) / 1000}`),
      ['a 0.5 heard 5', 'b 0.5 heard 4', 'a 5 heard 9', 'b 5 heard 10'],
    );
  });
});
