import assert from 'node:assert/strict';
import { test } from 'node:test';
import { summarizeHealth } from '../../packages/agent/src/kube/health.js';
import type { EndpointSlice, Node, Service } from '../../packages/agent/src/api/objects.js';
import {
  endpointSliceReflector,
  nodeReflector,
  serviceReflector,
} from '../../packages/agent/src/kube/watches.js';
import { waitForNode } from '../../packages/agent/src/kube/wait-for-node.js';
import { systemClock } from '../../packages/agent/src/util/clock.js';
import { FakeApiServer } from './helpers/fake-apiserver.js';
import type { FakeObject } from './helpers/fake-apiserver.js';
import { Recorder } from './helpers/recorder.js';
import { clientFor, FAST_TIMING, WatchedLog } from './helpers/setup.js';

test("the three watches ask for upstream's paths and selectors on both list and watch", async (t) => {
  const server = await FakeApiServer.start();
  t.after(() => server.close());
  server.add('/api/v1/nodes', {
    metadata: { name: 'node-a' },
    status: { addresses: [{ type: 'InternalIP', address: '198.18.0.2' }] },
  });
  const common = {
    client: clientFor(server),
    clock: systemClock,
    logger: new WatchedLog().logger,
    timing: FAST_TIMING,
  };
  const services = serviceReflector({ ...common, handlers: new Recorder<Service>().handlers });
  const slices = endpointSliceReflector({ ...common, handlers: new Recorder<EndpointSlice>().handlers });
  const nodeEvents = new Recorder<Node>();
  const node = nodeReflector('node-a', { ...common, handlers: nodeEvents.handlers });
  t.after(() => Promise.all([services.stop(), slices.stop(), node.stop()]));
  for (const r of [services, slices, node]) r.start();
  await server.waitForWatchers('/api/v1/services', 1);
  await server.waitForWatchers('/apis/discovery.k8s.io/v1/endpointslices', 1);
  await server.waitForWatchers('/api/v1/nodes', 1);

  const selectors = (path: string) =>
    server.requests
      .filter((r) => r.path === path)
      .map((r) => [r.kind, r.query.labelSelector ?? null, r.query.fieldSelector ?? null]);
  // upstream-model.md §1.4
  assert.deepEqual(selectors('/api/v1/services'), [
    ['list', '!service.kubernetes.io/service-proxy-name', 'spec.clusterIP!=None'],
    ['watch', '!service.kubernetes.io/service-proxy-name', 'spec.clusterIP!=None'],
  ]);
  assert.deepEqual(selectors('/apis/discovery.k8s.io/v1/endpointslices'), [
    ['list', '!service.kubernetes.io/headless', null],
    ['watch', '!service.kubernetes.io/headless', null],
  ]);
  assert.deepEqual(selectors('/api/v1/nodes'), [
    ['list', null, 'metadata.name=node-a'],
    ['watch', null, 'metadata.name=node-a'],
  ]);

  // The Node is cluster-scoped: stored under its name, which is what waitForNode looks up.
  const found = await waitForNode('node-a', { clock: systemClock, pollMs: 10, lookup: (n) => node.get(n) });
  assert.ok(found.ok);
  assert.deepEqual(found.nodeIPs, ['198.18.0.2']);

  const health = [services.health(), slices.health(), node.health()];
  assert.deepEqual(
    health.map((h) => [h.resource, h.synced, h.consecutiveFailures]),
    [
      ['services (label !service.kubernetes.io/service-proxy-name, field spec.clusterIP!=None)', true, 0],
      ['endpointslices (label !service.kubernetes.io/headless)', true, 0],
      ['nodes (field metadata.name=node-a)', true, 0],
    ],
  );
  assert.deepEqual(summarizeHealth(health, Date.now(), 60_000), { healthy: true, problems: [] });
});

test('summarizeHealth: unsynced, and failing for longer than allowed, are problems', () => {
  const base = {
    resourceVersion: '1',
    objects: 0,
    lastListAt: 0,
    lastWatchEventAt: undefined,
    counters: { lists: 1, relistsAfterGone: 0, watches: 1, watchdogAborts: 0, skippedObjects: 0 },
  };
  const summary = summarizeHealth(
    [
      {
        ...base,
        resource: 'services',
        synced: false,
        lastSuccessAt: undefined,
        consecutiveFailures: 3,
        lastError: 'ECONNREFUSED',
      },
      {
        ...base,
        resource: 'nodes',
        synced: true,
        lastSuccessAt: 1_000,
        consecutiveFailures: 2,
        lastError: 'HTTP 500',
      },
      {
        ...base,
        resource: 'endpointslices',
        synced: true,
        lastSuccessAt: 50_000,
        consecutiveFailures: 1,
        lastError: 'x',
      },
    ],
    70_000,
    30_000,
  );
  assert.equal(summary.healthy, false);
  assert.equal(summary.problems.length, 2);
  assert.match(summary.problems[0] ?? '', /^services: not synced \(ECONNREFUSED\)/);
  assert.match(summary.problems[1] ?? '', /^nodes: 2 failures since/);
});

// That a reflector with `keep` is not resynced is test/kube/reflector.test.ts's ("with keep: … no resync").
test("the Service watch's store keeps each Service's identity only: an update's old is that", async (t) => {
  const server = await FakeApiServer.start();
  t.after(() => server.close());
  const a = {
    metadata: {
      name: 'a',
      namespace: 'default',
      annotations: { 'kubectl.kubernetes.io/last-applied-configuration': '{}' },
      managedFields: [{ manager: 'kubectl', operation: 'Update' }],
    },
    spec: { clusterIP: '198.18.0.10', ports: [{ port: 80 }] },
  } as FakeObject;
  server.add('/api/v1/services', a);
  const rec = new Recorder<Service>();
  const seen: string[] = [];
  const { onUpdate } = rec.handlers;
  rec.handlers.onUpdate = (old, s) => {
    seen.push(`update: old ${JSON.stringify(old)}, new spec ${s.spec?.clusterIP}`);
    onUpdate?.(old, s);
  };
  const services = serviceReflector({
    client: clientFor(server),
    clock: systemClock,
    logger: new WatchedLog().logger,
    timing: FAST_TIMING,
    handlers: rec.handlers,
  });
  t.after(() => services.stop());
  services.start();
  await rec.waitFor((e) => e.includes('synced'), 'the list');
  await server.waitForWatchers('/api/v1/services', 1);
  server.update('/api/v1/services', { ...a, spec: { clusterIP: '198.18.0.11', ports: [{ port: 80 }] } });
  await rec.waitFor((e) => e.some((x) => x.startsWith('update default/a')), 'the update');
  assert.deepEqual(seen, [
    'update: old {"metadata":{"namespace":"default","name":"a","resourceVersion":"101"}}, new spec 198.18.0.11',
  ]);
  const stored = services.get('default/a') as unknown as Record<string, Record<string, unknown>>;
  assert.deepEqual(Object.keys(stored).sort(), ['metadata']);
  assert.deepEqual(Object.keys(stored.metadata ?? {}).sort(), ['name', 'namespace', 'resourceVersion']);
});
