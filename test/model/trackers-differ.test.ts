// §10.5: the two trackers compare different things and answer different questions.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { recordingChangeMetrics } from '../../packages/agent/src/model/change-metrics.js';
import { EndpointsChangeTracker } from '../../packages/agent/src/model/endpoints-change-tracker.js';
import { ServiceChangeTracker } from '../../packages/agent/src/model/service-change-tracker.js';
import { FakeClock } from '../../packages/agent/src/util/clock.js';
import { ep, service, slice } from './fixtures.js';

test('§10.5 trackers differ: service tracker compares port maps and returns "anything pending"', () => {
  const metrics = recordingChangeMetrics();
  const t = new ServiceChangeTracker({ family: 'IPv4', metrics });
  const a = service('ns', 'a', { clusterIP: '198.18.0.1', ports: [{ port: 80 }] }, '1');
  const b = service('ns', 'b', { clusterIP: '198.18.0.2', ports: [{ port: 80 }] }, '1');
  t.update(undefined, b);
  t.checkout(new Map());
  assert.equal(t.update(undefined, a), true);
  // b: a metadata-only change gives identical port maps, yet the call returns true because a is pending.
  assert.equal(
    t.update(b, { ...b, metadata: { ...b.metadata, resourceVersion: '2', labels: { x: 'y' } } }),
    true,
  );
  assert.equal(t.pending, 1);
  t.checkout(new Map());
  assert.equal(t.update(b, { ...b, metadata: { ...b.metadata, resourceVersion: '3' } }), false);
});

test('§10.5 trackers differ: slice tracker compares whole objects and returns "this call changed something"', () => {
  const clock = new FakeClock();
  const t = new EndpointsChangeTracker({ family: 'IPv4', nodeName: 'n', now: () => clock.now() });
  const s1 = slice('s1', { endpoints: [ep('198.18.1.1')] });
  const s2 = slice('s2', { service: 'other', endpoints: [ep('198.18.1.2')] });
  assert.equal(t.endpointSliceUpdate(s1, false), true);
  // Identical object while s1 is pending: false, although something is pending.
  assert.equal(t.endpointSliceUpdate(structuredClone(s1), false), false);
  assert.equal(t.pending, 1);
  t.endpointSliceUpdate(s2, false);
  t.checkout(new Map());
  // A label-only change (same endpoints) still counts: metadata is part of the comparison.
  assert.equal(
    t.endpointSliceUpdate(
      { ...s2, metadata: { ...s2.metadata, labels: { ...s2.metadata.labels, x: 'y' } } },
      false,
    ),
    true,
  );
});
