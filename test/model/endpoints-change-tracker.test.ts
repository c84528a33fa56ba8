import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { recordingChangeMetrics } from '../../packages/agent/src/model/change-metrics.js';
import { EndpointsChangeTracker } from '../../packages/agent/src/model/endpoints-change-tracker.js';
import type { EndpointsMap } from '../../packages/agent/src/model/endpoint-slice-cache.js';
import { sliceRemnant } from '../../packages/agent/src/model/endpoint-slice-cache.js';
import type { EndpointSlice } from '../../packages/agent/src/api/objects.js';
import type { Endpoint } from '../../packages/agent/src/model/endpoint.js';
import type { SkippedObject } from '../../packages/agent/src/model/service-change-tracker.js';
import { FakeClock } from '../../packages/agent/src/util/clock.js';
import { ep, key, slice } from './fixtures.js';

const CREATED = Date.UTC(2025, 0, 1, 12, 0, 0);
const TRIGGER = 'endpoints.kubernetes.io/last-change-trigger-time';

function newTracker(family: 'IPv4' | 'IPv6' = 'IPv4') {
  const metrics = recordingChangeMetrics();
  const skipped: SkippedObject[] = [];
  const clock = new FakeClock(CREATED);
  const tracker = new EndpointsChangeTracker({
    family,
    nodeName: 'node-a',
    metrics,
    now: () => clock.now(),
    onSkip: (s) => skipped.push(s),
  });
  return { tracker, metrics, skipped };
}

describe('§2.2 EndpointsChangeTracker.endpointSliceUpdate', () => {
  const cases: readonly { name: string; addressType: string; reason: RegExp }[] = [
    { name: 'IPv6 slice in the IPv4 tracker', addressType: 'IPv6', reason: /addressType "IPv6" is not IPv4/ },
    { name: 'FQDN slice', addressType: 'FQDN', reason: /addressType "FQDN" is not IPv4/ },
    { name: 'no addressType', addressType: '', reason: /addressType "" is not IPv4/ },
  ];
  for (const c of cases) {
    test(`§2.2.1 wrong address type (${c.name}) → false, nothing counted, reason reported`, () => {
      const { tracker, metrics, skipped } = newTracker();
      assert.equal(
        tracker.endpointSliceUpdate(
          slice('s1', { addressType: c.addressType, endpoints: [ep('198.18.1.1')] }),
          false,
        ),
        false,
      );
      assert.equal(metrics.endpointChangesTotal, 0);
      assert.equal(tracker.pending, 0);
      assert.equal(skipped.length, 1);
      assert.equal(skipped[0]?.kind, 'EndpointSlice');
      assert.equal(skipped[0]?.name, 'ns/s1');
      assert.match(skipped[0]?.reason ?? '', c.reason);
      // The other family's and FQDN slices are ordinary; a slice with no addressType is broken.
      assert.equal(skipped[0]?.routine, c.addressType === '' ? undefined : true);
    });
  }

  test('§2.2.2 no service-name label → false, nothing counted, reason reported; others still used', () => {
    const { tracker, metrics, skipped } = newTracker();
    assert.equal(
      tracker.endpointSliceUpdate(slice('orphan', { labels: {}, endpoints: [ep('198.18.1.1')] }), false),
      false,
    );
    assert.equal(metrics.endpointChangesTotal, 0);
    assert.match(skipped[0]?.reason ?? '', /label kubernetes\.io\/service-name is missing/);
    assert.equal(skipped[0]?.routine, undefined);
    assert.equal(tracker.endpointSliceUpdate(slice('good', { endpoints: [ep('198.18.1.2')] }), false), true);
    const live: EndpointsMap = new Map();
    tracker.checkout(live);
    assert.deepEqual(
      (live.get(key('ns', 'svc', 'http')) ?? []).map((e) => e.endpoint),
      ['198.18.1.2:80'],
    );
  });

  test('objects that are not slices at all are refused without throwing', () => {
    const { tracker, metrics, skipped } = newTracker();
    for (const bad of [
      null,
      5,
      'x',
      {},
      { addressType: 'IPv4' },
      { addressType: 'IPv4', metadata: { name: 's' } },
    ]) {
      assert.equal(tracker.endpointSliceUpdate(bad as never, false), false);
    }
    assert.equal(metrics.endpointChangesTotal, 0);
    assert.equal(skipped.length, 6);
  });

  test('§2.2.3 total counts every accepted event, even no-ops; §2.2.6 returns whether this call changed something', () => {
    const { tracker, metrics } = newTracker();
    const s = slice('s1', { endpoints: [ep('198.18.1.1')] });
    assert.equal(tracker.endpointSliceUpdate(s, false), true);
    assert.equal(tracker.endpointSliceUpdate(structuredClone(s), false), false);
    assert.equal(metrics.endpointChangesTotal, 2);
    assert.equal(metrics.endpointChangesPending, 1);
    assert.equal(tracker.pending, 1);
  });

  test('§10.6 endpoint_changes_pending counts changed slice events, not Services', () => {
    const { tracker, metrics } = newTracker();
    tracker.endpointSliceUpdate(slice('s1', { endpoints: [ep('198.18.1.1')] }), false);
    tracker.endpointSliceUpdate(slice('s1', { endpoints: [ep('198.18.1.2')], rv: '2' }), false);
    tracker.endpointSliceUpdate(slice('s2', { endpoints: [ep('198.18.1.3')] }), false);
    assert.equal(metrics.endpointChangesPending, 3);
    assert.equal(tracker.pending, 3);
  });
});

describe('§2.2 trigger times', () => {
  const at = (iso: string) =>
    slice('s1', { endpoints: [ep('198.18.1.1')], annotations: { [TRIGGER]: iso }, rv: iso });

  test('buffered only when after the tracker was created; RFC3339 with optional fraction', () => {
    const { tracker } = newTracker();
    tracker.endpointSliceUpdate(at('2025-01-01T12:00:05Z'), false);
    tracker.endpointSliceUpdate(at('2025-01-01T12:00:06.250Z'), false);
    tracker.endpointSliceUpdate(at('2025-01-01T14:00:07.5+02:00'), false);
    tracker.endpointSliceUpdate(at('2025-01-01T11:59:59Z'), false); // §10.6 before the tracker started: dropped
    tracker.endpointSliceUpdate(at('2025-01-01T12:00:00Z'), false); // exactly at creation: not after, dropped
    tracker.endpointSliceUpdate(at('yesterday'), false); // unparsable: ignored
    tracker.endpointSliceUpdate(at('2025-13-01T12:00:09Z'), false); // invalid month: ignored
    const r = tracker.checkout(new Map());
    assert.deepEqual(r.lastChangeTriggerTimes.get('ns/svc'), [
      CREATED + 5000,
      CREATED + 6250,
      CREATED + 7500,
    ]);
    // Moved out at checkout.
    assert.equal(tracker.checkout(new Map()).lastChangeTriggerTimes.size, 0);
  });

  test('§10.6 a removal drops the buffered trigger times of that Service only', () => {
    const { tracker } = newTracker();
    tracker.endpointSliceUpdate(at('2025-01-01T12:00:05Z'), false);
    tracker.endpointSliceUpdate(
      slice('o1', {
        service: 'other',
        endpoints: [ep('198.18.2.1')],
        annotations: { [TRIGGER]: '2025-01-01T12:00:08Z' },
      }),
      false,
    );
    tracker.endpointSliceUpdate(at('2025-01-01T12:00:05Z'), true);
    const r = tracker.checkout(new Map());
    assert.equal(r.lastChangeTriggerTimes.has('ns/svc'), false);
    assert.deepEqual(r.lastChangeTriggerTimes.get('ns/other'), [CREATED + 8000]);
  });

  test('a no-op event buffers nothing', () => {
    const { tracker } = newTracker();
    const s = at('2025-01-01T12:00:05Z');
    tracker.endpointSliceUpdate(s, false);
    tracker.checkout(new Map());
    tracker.endpointSliceUpdate(structuredClone(s), false);
    assert.equal(tracker.checkout(new Map()).lastChangeTriggerTimes.size, 0);
  });
});

describe('§2.2 checkout', () => {
  test('applies previous/current to the live map, reports updatedServices, resets pending', () => {
    const { tracker, metrics } = newTracker();
    const live: EndpointsMap = new Map();
    // An unrelated entry the checkout must not touch.
    const untouched: readonly Endpoint[] = [];
    live.set(key('ns', 'keep', 'x'), untouched);
    tracker.endpointSliceUpdate(
      slice('s1', { ports: [{ name: 'a', port: 80 }], endpoints: [ep('198.18.1.1')] }),
      false,
    );
    let r = tracker.checkout(live);
    assert.deepEqual([...r.updatedServices], ['ns/svc']);
    assert.equal(metrics.endpointChangesPending, 0);
    assert.equal(tracker.pending, 0);
    assert.ok(live.has(key('ns', 'svc', 'a')));
    // Port renamed: the old key goes, the new one comes.
    tracker.endpointSliceUpdate(
      slice('s1', { ports: [{ name: 'b', port: 80 }], endpoints: [ep('198.18.1.1')], rv: '2' }),
      false,
    );
    r = tracker.checkout(live);
    assert.equal(live.has(key('ns', 'svc', 'a')), false);
    assert.ok(live.has(key('ns', 'svc', 'b')));
    assert.equal(live.get(key('ns', 'keep', 'x')), untouched);
    // Removal empties the Service.
    tracker.endpointSliceUpdate(
      slice('s1', { ports: [{ name: 'b', port: 80 }], endpoints: [ep('198.18.1.1')], rv: '2' }),
      true,
    );
    r = tracker.checkout(live);
    assert.deepEqual([...r.updatedServices], ['ns/svc']);
    assert.deepEqual([...live.keys()], [key('ns', 'keep', 'x')]);
    // Nothing pending: empty result.
    r = tracker.checkout(live);
    assert.equal(r.updatedServices.size, 0);
    assert.equal(r.conntrackCleanupRequired, false);
  });

  const udp = [{ name: 'dns', port: 53, protocol: 'UDP' }];
  const tcp = [{ name: 'http', port: 80, protocol: 'TCP' }];
  const cases: readonly { name: string; before?: typeof udp; after?: typeof udp; want: boolean }[] = [
    { name: 'TCP endpoints added', after: tcp, want: false },
    { name: 'UDP endpoints added', after: udp, want: true },
    { name: 'UDP endpoints removed (UDP key only in previous)', before: udp, want: true },
    { name: 'TCP endpoints changed', before: tcp, after: tcp, want: false },
    { name: 'SCTP endpoints added', after: [{ name: 's', port: 9, protocol: 'SCTP' }], want: false },
  ];
  for (const c of cases) {
    test(`§10.10 conntrackCleanupRequired: ${c.name} → ${c.want}`, () => {
      const { tracker } = newTracker();
      const live: EndpointsMap = new Map();
      if (c.before) {
        tracker.endpointSliceUpdate(slice('s1', { ports: c.before, endpoints: [ep('198.18.1.1')] }), false);
        tracker.checkout(live);
      }
      const s = slice('s1', {
        ports: c.after ?? c.before,
        endpoints: c.after ? [ep('198.18.1.2')] : [],
        rv: '9',
      });
      tracker.endpointSliceUpdate(s, c.after === undefined);
      assert.equal(tracker.checkout(live).conntrackCleanupRequired, c.want);
    });
  }
});

describe('§2.2 burst of endpoint changes', () => {
  test('pending climbs by one per changed event, drops to 0 at checkout, total keeps counting, service counters still', () => {
    const { tracker, metrics } = newTracker();
    const pendings: number[] = [];
    let expectedTotal = 0;
    for (let i = 0; i < 30; i++) {
      const svc = `svc${i % 5}`;
      tracker.endpointSliceUpdate(
        slice(`${svc}-${i % 2}`, {
          service: svc,
          endpoints: [ep(`198.18.${i % 5}.${i + 1}`)],
          rv: String(i),
        }),
        false,
      );
      expectedTotal++;
      pendings.push(metrics.endpointChangesPending);
    }
    assert.deepEqual(
      pendings,
      Array.from({ length: 30 }, (_, i) => i + 1),
    );
    assert.equal(tracker.pending, 30);
    const r = tracker.checkout(new Map());
    assert.equal(metrics.endpointChangesPending, 0);
    assert.equal(r.updatedServices.size, 5);
    assert.equal(metrics.endpointChangesTotal, expectedTotal);
    tracker.endpointSliceUpdate(slice('svc0-0', { service: 'svc0', endpoints: [], rv: 'x' }), false);
    assert.equal(metrics.endpointChangesTotal, 31);
    assert.equal(metrics.endpointChangesPending, 1);
    assert.equal(metrics.serviceChangesTotal, 0);
    assert.equal(metrics.serviceChangesPending, 0);
  });
});

describe('§2.2 LocalReadyEndpoints', () => {
  test('§10.7 counts distinct local ready IPs per Service across ports; terminating and remote excluded', () => {
    const { tracker } = newTracker();
    const live: EndpointsMap = new Map();
    tracker.endpointSliceUpdate(
      slice('s1', {
        ports: [
          { name: 'a', port: 80 },
          { name: 'b', port: 81 },
        ],
        endpoints: [
          ep('198.18.1.1', { nodeName: 'node-a' }),
          ep('198.18.1.2', { nodeName: 'node-a' }),
          ep('198.18.1.3', {
            nodeName: 'node-a',
            conditions: { ready: false, serving: true, terminating: true },
          }),
          ep('198.18.1.4', { nodeName: 'node-b' }),
        ],
      }),
      false,
    );
    tracker.endpointSliceUpdate(
      slice('o1', { service: 'remote-only', endpoints: [ep('198.18.2.1', { nodeName: 'node-b' })] }),
      false,
    );
    const r = tracker.checkout(live);
    assert.deepEqual([...r.localReadyEndpoints].sort(), [
      ['ns/remote-only', 0],
      ['ns/svc', 2],
    ]);
    // A later checkout counts only the Services it changed, from their whole maps.
    tracker.endpointSliceUpdate(
      slice('s2', {
        ports: [{ name: 'c', port: 82 }],
        endpoints: [ep('198.18.1.5', { nodeName: 'node-a' })],
      }),
      false,
    );
    assert.deepEqual([...tracker.checkout(live).localReadyEndpoints], [['ns/svc', 3]]);
  });
});

describe('sliceRemnant: what the store keeps of a slice', () => {
  test('keeps identity, address type and version, no endpoints; removing by it removes the whole slice', () => {
    const { tracker } = newTracker();
    const whole = slice('s1', {
      endpoints: [ep('198.18.1.1', { nodeName: 'node-a' }), ep('198.18.1.2')],
      annotations: { [TRIGGER]: '2025-01-01T12:00:01Z' },
      rv: '7',
    });
    const remnant = sliceRemnant(whole);
    assert.deepEqual(remnant, {
      metadata: {
        namespace: 'ns',
        name: 's1',
        resourceVersion: '7',
        labels: { 'kubernetes.io/service-name': 'svc' },
      },
      addressType: 'IPv4',
    });
    const live: EndpointsMap = new Map();
    tracker.endpointSliceUpdate(whole, false);
    tracker.checkout(live);
    assert.equal(live.get(key('ns', 'svc', 'http'))?.length, 2);
    // A delete found by a relist carries only the remnant.
    assert.equal(tracker.endpointSliceUpdate(remnant, true), true);
    const r = tracker.checkout(live);
    assert.equal(live.size, 0);
    assert.deepEqual([...r.updatedServices], ['ns/svc']);
  });

  test('a slice of the other family keeps its address type, so its removal is still ignored', () => {
    const { tracker } = newTracker();
    const v6 = sliceRemnant(slice('s6', { addressType: 'IPv6', endpoints: [ep('2001:db8::1')] }));
    assert.equal(v6.addressType, 'IPv6');
    assert.equal(tracker.endpointSliceUpdate(v6, true), false);
  });

  test('objects without labels, metadata or with odd fields give a remnant, never a throw', () => {
    assert.deepEqual(sliceRemnant(slice('bare', { labels: null })).metadata, {
      namespace: 'ns',
      name: 'bare',
      resourceVersion: '1',
    });
    const odd = { metadata: { name: 7, labels: 'x' }, addressType: 4 } as unknown as EndpointSlice;
    const r = sliceRemnant(odd);
    assert.deepEqual(r, { metadata: { namespace: '', name: '', resourceVersion: '' } });
    // Such a remnant names no slice: the tracker skips it, as it skipped the object.
    const { tracker, skipped } = newTracker();
    assert.equal(tracker.endpointSliceUpdate({ ...r, addressType: 'IPv4' }, true), false);
    assert.match(skipped[0]?.reason ?? '', /metadata.namespace or metadata.name is missing/);
  });
});
