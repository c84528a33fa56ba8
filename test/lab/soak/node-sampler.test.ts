// A node's histograms over the soak add up across proxy restarts (a counter that goes down is a new process),
// and count only what was observed during the run.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { HISTOGRAMS, NodeSeries } from '../../../packages/lab/src/soak/node-sampler.js';

function programming(buckets: [string, number][], sum: number): string {
  const name = HISTOGRAMS.programming;
  const count = buckets[buckets.length - 1]?.[1] ?? 0;
  return [
    ...buckets.map(([le, n]) => `${name}_bucket{ip_family="IPv4",le="${le}"} ${n}`),
    `${name}_sum{ip_family="IPv4"} ${sum}`,
    `${name}_count{ip_family="IPv4"} ${count}`,
    'kubeproxy_sync_proxy_rules_endpoint_changes_pending 3',
    'kubeproxy_sync_proxy_rules_endpoint_changes_total 41',
    'kubeproxy_sync_proxy_rules_last_timestamp_seconds{ip_family="IPv4"} 1700000000.5',
    '',
  ].join('\n');
}

describe('soak node series', () => {
  test('observations before the run are left out; a restart starts a new lifetime', () => {
    const s = new NodeSeries();
    // Before the run: 10 observations (all ≤ 1 s).
    s.add(
      1,
      programming(
        [
          ['1', 10],
          ['2', 10],
          ['+Inf', 10],
        ],
        5,
      ),
    );
    // During the run: 4 more, 2 of them between 1 and 2 s.
    s.add(
      2,
      programming(
        [
          ['1', 12],
          ['2', 14],
          ['+Inf', 14],
        ],
        9,
      ),
    );
    // The proxy restarted: its counters begin again; 3 observations, all between 1 and 2 s.
    s.add(3, undefined);
    s.add(
      4,
      programming(
        [
          ['1', 0],
          ['2', 3],
          ['+Inf', 3],
        ],
        4.5,
      ),
    );
    const h = s.histogram(HISTOGRAMS.programming);
    assert.equal(h?.count, 4 + 3);
    assert.equal(h?.sum, 4 + 4.5);
    assert.equal(h?.maxBucket, 2);
    assert.equal(s.unanswered, 1);
    assert.deepEqual(s.points[0], {
      t: 1,
      pendingEndpoints: 3,
      pendingServices: 0,
      syncs: 0,
      lastSyncMs: 1700000000500,
      endpointChanges: 41,
    });
  });
});
