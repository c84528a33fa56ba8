import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Service } from '../../packages/agent/src/api/objects.js';
import { recordingChangeMetrics } from '../../packages/agent/src/model/change-metrics.js';
import { ServiceChangeTracker } from '../../packages/agent/src/model/service-change-tracker.js';
import type { ServicePortMap, SkippedObject } from '../../packages/agent/src/model/service-change-tracker.js';
import { key, service } from './fixtures.js';

function newTracker() {
  const metrics = recordingChangeMetrics();
  const skipped: SkippedObject[] = [];
  const tracker = new ServiceChangeTracker({ family: 'IPv4', metrics, onSkip: (s) => skipped.push(s) });
  return { tracker, metrics, skipped };
}

const v1 = service('ns', 'a', { clusterIP: '198.18.0.1', ports: [{ name: 'http', port: 80 }] }, '1');

/** A tracker whose map `live` already holds v1's ports: v1 added, then checked out. */
function trackerWithV1() {
  const t = newTracker();
  const live: ServicePortMap = new Map();
  t.tracker.update(undefined, v1);
  t.tracker.checkout(live);
  return { ...t, live };
}
const v2 = service('ns', 'a', { clusterIP: '198.18.0.1', ports: [{ name: 'http', port: 8080 }] }, '2');
const b1 = service('ns', 'b', {
  clusterIP: '198.18.0.2',
  ports: [{ name: 'dns', port: 53, protocol: 'UDP' }],
});

describe('§2.1 ServiceChangeTracker.update', () => {
  test('§2.1.1 both undefined → false, nothing counted', () => {
    const { tracker, metrics } = newTracker();
    assert.equal(tracker.update(undefined, undefined), false);
    assert.equal(metrics.serviceChangesTotal, 0);
  });

  test('§2.1.2 total counts every call with an object, even no-ops and skipped Services', () => {
    const { tracker, metrics, skipped } = trackerWithV1();
    tracker.update(v1, v1); // no-op: v1 is what was applied
    const headless = service('ns', 'h', { clusterIP: 'None', ports: [{ port: 80 }] });
    tracker.update(undefined, headless); // skipped
    assert.equal(metrics.serviceChangesTotal, 3, 'the add before the checkout, the no-op, the skipped one');
    assert.equal(metrics.serviceChangesPending, 0);
    assert.equal(tracker.pending, 0);
    assert.deepEqual(skipped, [
      { kind: 'Service', name: 'ns/h', reason: 'headless Service (spec.clusterIP "None")', routine: true },
    ]);
  });

  test('§2.1.3 a metadata-only update (new resourceVersion) is not a change: port maps are compared', () => {
    const { tracker } = trackerWithV1();
    assert.equal(tracker.update(v1, { ...v1, metadata: { ...v1.metadata, resourceVersion: '7' } }), false);
  });

  test('§2.1.4 add then delete collapses; pending = number of entries', () => {
    const { tracker, metrics } = newTracker();
    assert.equal(tracker.update(undefined, v1), true);
    assert.equal(tracker.update(undefined, b1), true);
    assert.equal(metrics.serviceChangesPending, 2);
    assert.equal(tracker.update(v1, undefined), true); // b still pending: returns true
    assert.equal(metrics.serviceChangesPending, 1);
    assert.equal(tracker.update(b1, undefined), false);
    assert.equal(metrics.serviceChangesPending, 0);
    assert.equal(metrics.serviceChangesTotal, 4);
  });

  test('§2.1.3 the first change fixes previous; a change back to it collapses', () => {
    const { tracker } = trackerWithV1();
    assert.equal(tracker.update(v1, v2), true);
    // The `prev` passed later is ignored: previous stays v1, so v2 → v1 collapses.
    assert.equal(tracker.update(v2, v1), false);
    assert.equal(tracker.pending, 0);
  });

  test('§2.1.6 returns true if anything is pending, not only from this call', () => {
    const { tracker } = newTracker();
    tracker.update(undefined, v1);
    assert.equal(tracker.update(b1, b1), true);
  });

  test('§10.5 a Service that turns skipped counts as a change (its ports go away)', () => {
    const { tracker, live } = trackerWithV1();
    const external = service('ns', 'a', {
      type: 'ExternalName',
      externalName: 'x.example',
      clusterIP: '198.18.0.1',
    });
    assert.equal(tracker.update(v1, external), true);
    const r = tracker.checkout(live);
    assert.deepEqual([...r.updatedServices], ['ns/a']);
    assert.equal(live.size, 0);
  });

  // Upstream's e2e "should implement service.kubernetes.io/service-proxy-name": the label is applied by the
  // watch's selector, so a Service labelled after the proxy had it arrives as DELETED carrying the label.
  test('a Service that leaves the watch with service-proxy-name (DELETED, labelled) has its ports removed', () => {
    const { tracker, live } = trackerWithV1();
    const labelled = {
      ...v1,
      metadata: { ...v1.metadata, labels: { 'service.kubernetes.io/service-proxy-name': 'foo-bar' } },
    } as Service;
    assert.equal(tracker.update(labelled, undefined), true, 'the deletion is a change');
    assert.deepEqual([...tracker.checkout(live).updatedServices], ['ns/a']);
    assert.equal(live.size, 0, 'nothing of it is left to program');
    // Unlabelled again, it comes back as an ADDED.
    tracker.update(undefined, v1);
    tracker.checkout(live);
    assert.equal(live.get(key('ns', 'a', 'http'))?.port, 80);
  });

  test('bad input never throws: invalid clusterIP, wrong types, no name; other Services still used', () => {
    const { tracker, skipped, metrics } = newTracker();
    const invalid = service('ns', 'bad', { clusterIP: '300.1.1.1', ports: [{ port: 80 }] });
    const weird = {
      metadata: { namespace: 'ns', name: 'weird' },
      spec: { clusterIP: '198.18.0.9', ports: [{ port: 'x' }, { port: 81, protocol: 'ICMP' }, { port: 82 }] },
    } as unknown as Service;
    const nameless = { metadata: {}, spec: { clusterIP: '198.18.0.3' } } as unknown as Service;
    assert.doesNotThrow(() => {
      tracker.update(undefined, invalid);
      tracker.update(undefined, weird);
      tracker.update(undefined, nameless);
      tracker.update(undefined, null as unknown as Service);
      tracker.update(undefined, v1);
    });
    assert.equal(metrics.serviceChangesTotal, 5);
    const reasons = skipped.map((s) => `${s.name}: ${s.reason}`).join('\n');
    assert.match(reasons, /ns\/bad: invalid spec\.clusterIP "300\.1\.1\.1"/);
    assert.match(reasons, /ns\/weird: spec\.ports\[0\]\.port "x" is not a port number/);
    assert.match(reasons, /ns\/weird: spec\.ports\[1\]\.protocol "ICMP" is unknown/);
    assert.match(reasons, /metadata\.namespace or metadata\.name is missing/);
    // Broken objects are warnings, not routine skips.
    assert.equal(skipped.find((x) => x.name === 'ns/bad')?.routine, undefined);
    const live: ServicePortMap = new Map();
    tracker.checkout(live);
    assert.deepEqual([...live.keys()].sort(), [key('ns', 'a', 'http'), key('ns', 'weird', '')].sort());
  });
});

describe('§2.1 checkout', () => {
  test('overwrites live with current, deletes previous-only keys, reports the names, resets pending', () => {
    const { tracker, metrics } = newTracker();
    const live: ServicePortMap = new Map();
    tracker.update(undefined, v1);
    tracker.update(undefined, b1);
    let r = tracker.checkout(live);
    assert.deepEqual([...r.updatedServices].sort(), ['ns/a', 'ns/b']);
    assert.equal(live.get(key('ns', 'a', 'http'))?.port, 80);
    assert.equal(metrics.serviceChangesPending, 0);
    assert.equal(tracker.pending, 0);
    const renamed = service('ns', 'a', { clusterIP: '198.18.0.1', ports: [{ name: 'web', port: 80 }] }, '3');
    tracker.update(v1, renamed);
    r = tracker.checkout(live);
    assert.deepEqual([...r.updatedServices], ['ns/a']);
    assert.equal(live.has(key('ns', 'a', 'http')), false);
    assert.equal(live.get(key('ns', 'a', 'web'))?.port, 80);
    assert.ok(live.has(key('ns', 'b', 'dns', 'UDP')));
    tracker.update(b1, undefined);
    tracker.checkout(live);
    assert.deepEqual([...live.keys()], [key('ns', 'a', 'web')]);
  });
});
