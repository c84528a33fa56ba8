// The EndpointSlice controller, in process on a FakeClock, with Pods that linger while terminating: conditions
// from Pod state, zone hints, the split at maxEndpointsPerSlice, named target ports, the trigger-time annotation,
// and no writes for an unchanged Service.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { FakeClock } from '../../../packages/agent/src/util/clock.js';
import type { ApiServer } from '../../../packages/lab/src/apiserver/index.js';
import { resourceByKind } from '../../../packages/lab/src/apiserver/resources.js';
import { lingeringPodLifecycle } from '../../../packages/lab/src/controllers/pod-lifecycle.js';
import type { EndpointSlice } from '../../../packages/agent/src/api/objects.js';
import { DEPLOY, webDeployment, withControlPlane } from './fixtures.js';

const SVC = resourceByKind('Service');
const POD = resourceByKind('Pod');
const SLICE = resourceByKind('EndpointSlice');

/** Pods with a named port, for the Services' named targetPorts. */
const deployment = (replicas: number): object =>
  webDeployment(replicas, { container: { ports: [{ name: 'http', containerPort: 8080 }] } });

const slices = (s: ApiServer): EndpointSlice[] =>
  // The controller's slices (default/kubernetes has the API server's own, which no controller manages).
  (s.store.list(SLICE, 'default') as unknown as EndpointSlice[]).filter(
    (x) => x.metadata.labels?.['endpointslice.kubernetes.io/managed-by'] !== undefined,
  );
const endpoints = (s: ApiServer) => slices(s).flatMap((x) => x.endpoints ?? []);

const withServer = (
  fn: (s: ApiServer, clock: FakeClock) => Promise<void>,
  maxEndpointsPerSlice = 100,
): Promise<void> =>
  withControlPlane(
    {
      podLifecycle: lingeringPodLifecycle,
      maxEndpointsPerSlice,
      nodes: [
        { name: 'n1', zone: 'zone-a' },
        { name: 'n2', zone: 'zone-b' },
      ],
    },
    fn,
  );

test('endpoints follow Pods: ready, then terminating but serving, then gone after the grace period', () =>
  withServer(async (s, clock) => {
    assert.ok(s.registry.create(DEPLOY, 'default', deployment(2)).ok);
    assert.ok(
      s.registry.create(SVC, 'default', {
        metadata: { name: 'web' },
        spec: {
          selector: { app: 'web' },
          ports: [{ name: 'http', port: 80, targetPort: 'http' }],
          trafficDistribution: 'PreferClose',
        },
      }).ok,
    );
    await s.idle();
    const all = slices(s);
    assert.equal(all.length, 1);
    const slice = all[0] as EndpointSlice;
    assert.equal(slice.metadata.labels?.['kubernetes.io/service-name'], 'web');
    assert.equal(
      slice.metadata.labels?.['endpointslice.kubernetes.io/managed-by'],
      'endpointslice-controller.k8s.io',
    );
    assert.deepEqual(slice.ports, [{ name: 'http', protocol: 'TCP', port: 8080 }]);
    // Trigger time: the newest change that caused the write, on the fake clock (no time has passed).
    assert.equal(
      slice.metadata.annotations?.['endpoints.kubernetes.io/last-change-trigger-time'],
      '2025-03-01T12:00:00Z',
    );
    const eps = endpoints(s);
    assert.equal(eps.length, 2);
    for (const e of eps) {
      assert.deepEqual(e.conditions, { ready: true, serving: true, terminating: false });
      assert.match(e.addresses?.[0] ?? '', /^198\.18\.1[01]\.\d+$/);
      const zone = e.nodeName === 'n1' ? 'zone-a' : 'zone-b';
      assert.equal(e.zone, zone);
      assert.deepEqual(e.hints, { forZones: [{ name: zone }] });
    }
    assert.deepEqual(eps.map((e) => e.nodeName).sort(), ['n1', 'n2']);

    // Delete one Pod with a 30 s grace period: it stays, terminating and still serving, not ready.
    const victim = eps[0]?.targetRef?.name ?? '';
    clock.advance(5000);
    assert.ok(s.registry.delete(POD, 'default', victim, { gracePeriodSeconds: 30 }).ok);
    await s.idle();
    const term = endpoints(s).find((e) => e.targetRef?.name === victim);
    assert.deepEqual(term?.conditions, { ready: false, serving: true, terminating: true });
    assert.equal(
      slices(s)[0]?.metadata.annotations?.['endpoints.kubernetes.io/last-change-trigger-time'],
      '2025-03-01T12:00:05Z',
    );
    // The Deployment replaced it meanwhile.
    assert.equal(endpoints(s).filter((e) => e.conditions?.ready).length, 2);
    clock.advance(29_000);
    await s.idle();
    assert.ok(endpoints(s).some((e) => e.targetRef?.name === victim));
    clock.advance(1000);
    await s.idle();
    assert.ok(!endpoints(s).some((e) => e.targetRef?.name === victim));
    assert.equal(endpoints(s).length, 2);
  }));

test('an unchanged Service does not churn its slices; a large one splits at maxEndpointsPerSlice', () =>
  withServer(async (s) => {
    assert.ok(s.registry.create(DEPLOY, 'default', deployment(7)).ok);
    assert.ok(
      s.registry.create(SVC, 'default', {
        metadata: { name: 'web' },
        spec: { selector: { app: 'web' }, ports: [{ port: 80, targetPort: 8080 }] },
      }).ok,
    );
    await s.idle();
    assert.deepEqual(
      slices(s)
        .map((x) => x.endpoints?.length)
        .sort(),
      [3, 3, 1].sort(),
    );
    const rv = s.store.resourceVersion;
    // An update that changes nothing writes nothing: no new resourceVersion, no slice writes.
    const svc = s.store.get(SVC, 'default', 'web') ?? {};
    assert.ok(s.registry.update(SVC, 'default', 'web', svc).ok);
    await s.idle();
    assert.equal(s.store.resourceVersion, rv);
    // Scaling down to 2 empties slices, which go away, and keeps the rest where they were.
    const before = new Map(
      endpoints(s).map((e) => [
        e.addresses?.[0],
        slices(s).find((x) => x.endpoints?.includes(e))?.metadata.name,
      ]),
    );
    assert.ok(s.registry.patch(DEPLOY, 'default', 'web', 'merge', { spec: { replicas: 2 } }).ok);
    await s.idle();
    // Terminating Pods linger (lingering lifecycle): they are still endpoints, not ready.
    const ready = endpoints(s).filter((e) => e.conditions?.ready);
    assert.equal(ready.length, 2);
    for (const e of endpoints(s)) {
      const name = slices(s).find((x) => x.endpoints?.includes(e))?.metadata.name;
      assert.equal(name, before.get(e.addresses?.[0]), 'endpoints stay in their slice');
    }
  }, 3));

/** The EndpointSlice controller's hint events about Service web, oldest first. */
function hintEvents(s: ApiServer): { type: string; reason: string; message: string; count: number }[] {
  return (
    s.store.list(resourceByKind('Event'), 'default') as unknown as {
      type: string;
      reason: string;
      message: string;
      count: number;
      source: { component: string };
      involvedObject: { kind: string; name: string };
    }[]
  )
    .filter((e) => e.source.component === 'endpoint-slice-controller' && e.involvedObject.name === 'web')
    .map(({ type, reason, message, count }) => ({ type, reason, message, count }));
}

/** Ready endpoints' hinted zones, counted; and how many endpoints carry any hint. */
function hintedZones(s: ApiServer): { zones: Record<string, number>; hinted: number } {
  const zones: Record<string, number> = {};
  let hinted = 0;
  for (const e of endpoints(s)) {
    if (e.hints) hinted++;
    if (!e.conditions?.ready) continue;
    for (const z of e.hints?.forZones ?? []) zones[z.name] = (zones[z.name] ?? 0) + 1;
  }
  return { zones, hinted };
}

function scale(s: ApiServer, replicas: number): void {
  const d = s.store.get(DEPLOY, 'default', 'web') as { spec: Record<string, unknown> };
  assert.ok(s.registry.update(DEPLOY, 'default', 'web', { ...d, spec: { ...d.spec, replicas } }).ok);
}

test("topology-mode Auto: hints by the zones' CPU shares, withdrawn with an event when too few endpoints, the annotation over trafficDistribution", () =>
  withServer(async (s) => {
    assert.ok(s.registry.create(DEPLOY, 'default', deployment(4)).ok);
    await s.idle(); // the Pods first: a Service seen before them would warn of zero endpoints
    assert.ok(
      s.registry.create(SVC, 'default', {
        metadata: { name: 'web', annotations: { 'service.kubernetes.io/topology-mode': 'Auto' } },
        // The annotation decides while it enables hints: PreferSameNode's node hints must not appear.
        spec: {
          selector: { app: 'web' },
          ports: [{ port: 80, targetPort: 8080 }],
          trafficDistribution: 'PreferSameNode',
        },
      }).ok,
    );
    await s.idle();
    // Two nodes with the same allocatable CPU, one per zone: two endpoints serve each zone.
    assert.deepEqual(hintedZones(s), { zones: { 'zone-a': 2, 'zone-b': 2 }, hinted: 4 });
    assert.ok(endpoints(s).every((e) => e.hints?.forNodes === undefined));
    assert.deepEqual(hintEvents(s), [
      {
        type: 'Normal',
        reason: 'TopologyAwareHintsEnabled',
        message: 'Topology Aware Hints has been enabled, addressType: IPv4',
        count: 1,
      },
    ]);

    // One ready endpoint cannot serve two zones: no endpoint keeps a hint, and the Service says why.
    scale(s, 1);
    await s.idle();
    assert.equal(endpoints(s).filter((e) => e.conditions?.ready).length, 1);
    assert.equal(hintedZones(s).hinted, 0);
    assert.deepEqual(hintEvents(s)[1], {
      type: 'Warning',
      reason: 'TopologyAwareHintsDisabled',
      message: 'Insufficient number of endpoints (1 endpoints, 2 zones), addressType: IPv4',
      count: 1,
    });

    // Back to four: enabled again (the same event, counted); then the annotation goes and trafficDistribution's
    // hints (own zone and node, on every endpoint) take over, with upstream's "disabled" event.
    scale(s, 4);
    await s.idle();
    assert.deepEqual(hintedZones(s).zones, { 'zone-a': 2, 'zone-b': 2 });
    assert.equal(hintEvents(s)[0]?.count, 2);
    const svc = s.store.get(SVC, 'default', 'web') as { metadata: Record<string, unknown> };
    assert.ok(
      s.registry.update(SVC, 'default', 'web', { ...svc, metadata: { ...svc.metadata, annotations: {} } }).ok,
    );
    await s.idle();
    for (const e of endpoints(s))
      assert.deepEqual(e.hints, {
        forZones: [{ name: e.zone ?? '' }],
        forNodes: [{ name: e.nodeName ?? '' }],
      });
    assert.deepEqual(hintEvents(s).at(-1), {
      type: 'Warning',
      reason: 'TopologyAwareHintsDisabled',
      message: 'Topology Aware Hints has been disabled, addressType: IPv4',
      count: 1,
    });
  }));
