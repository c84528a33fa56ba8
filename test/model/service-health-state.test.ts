// The health-check state kept from each checkout's changes equals what the proxier used to compute by walking the
// whole cluster after every sync (kept below as the oracle), through random sequences of Service and slice changes,
// failed syncs included.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { EndpointSliceEndpoint, Service } from '../../packages/agent/src/api/objects.js';
import type { Endpoint } from '../../packages/agent/src/model/endpoint.js';
import type { EndpointsMap } from '../../packages/agent/src/model/endpoint-slice-cache.js';
import { EndpointsChangeTracker } from '../../packages/agent/src/model/endpoints-change-tracker.js';
import { ServiceChangeTracker } from '../../packages/agent/src/model/service-change-tracker.js';
import {
  applyServiceHealthChanges,
  HealthCheckIndexedServicePortMap,
  PendingServiceHealthChanges,
} from '../../packages/agent/src/model/service-health-state.js';
import type { ServicePort } from '../../packages/agent/src/model/service-port.js';
import {
  namespacedNameString,
  servicePortNameFromKey,
} from '../../packages/agent/src/model/service-port-name.js';
import { ep, service, slice } from './fixtures.js';

/** The oracle: every Service port walked, as the proxier did after each sync. */
function healthCheckNodePortsByWalk(serviceMap: ReadonlyMap<string, ServicePort>): Map<string, number> {
  const ports = new Map<string, number>();
  for (const sp of serviceMap.values()) {
    if (sp.healthCheckNodePort !== 0) ports.set(sp.serviceName, sp.healthCheckNodePort);
  }
  return ports;
}

/** The oracle: every endpoint walked ("ns/name" → distinct local ready IPs), as the proxier did after each sync. */
function localReadyEndpointsByWalk(
  endpointsMap: ReadonlyMap<string, readonly Endpoint[]>,
): Map<string, number> {
  const ips = new Map<string, Set<string>>();
  for (const [key, eps] of endpointsMap) {
    for (const e of eps) {
      if (!e.isLocal || !e.ready || e.terminating) continue;
      const n = servicePortNameFromKey(key);
      if (n === undefined) continue;
      const service = namespacedNameString(n);
      let set = ips.get(service);
      if (set === undefined) ips.set(service, (set = new Set()));
      set.add(e.ip);
    }
  }
  return new Map([...ips].map(([s, set]) => [s, set.size]));
}

/** A small deterministic generator (mulberry32), so a failing sequence can be replayed from its seed. */
function random(seed: number): (n: number) => number {
  let a = seed >>> 0;
  return (n) => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return Math.floor((((t ^ (t >>> 14)) >>> 0) / 4294967296) * n);
  };
}

const NAMESPACES = ['a', 'b'];
const NAMES = ['web', 'db', 'dns', 'api'];
const PORT_NAMES = ['http', 'https', 'metrics'];

function randomService(r: (n: number) => number, ns: string, name: string, index: number): Service {
  const ports = PORT_NAMES.slice(0, 1 + r(PORT_NAMES.length)).map((p, i) => ({
    name: p,
    port: 80 + i,
    protocol: r(4) === 0 ? ('UDP' as const) : ('TCP' as const),
    nodePort: 30100 + index * 4 + i,
  }));
  const kind = r(4);
  if (kind === 0)
    return service(ns, name, { type: 'ClusterIP', clusterIP: `198.18.128.${index + 1}`, ports });
  return service(ns, name, {
    type: 'LoadBalancer',
    clusterIP: `198.18.128.${index + 1}`,
    ports,
    // ETP Cluster (no health check), or Local with one of a few ports (several Services may share one).
    externalTrafficPolicy: kind === 1 ? 'Cluster' : 'Local',
    ...(kind === 1 ? {} : { healthCheckNodePort: 30000 + r(3) }),
  });
}

function randomEndpoints(r: (n: number) => number): EndpointSliceEndpoint[] {
  return Array.from({ length: r(5) }, () =>
    ep(`198.19.0.${1 + r(6)}`, {
      nodeName: r(3) === 0 ? 'node-b' : 'node-a',
      conditions: [
        { ready: true },
        { ready: false, serving: true, terminating: true },
        { ready: false, serving: false, terminating: false },
        {},
      ][r(4)],
    }),
  );
}

interface World {
  readonly services: ServiceChangeTracker;
  readonly endpoints: EndpointsChangeTracker;
  readonly serviceMap: HealthCheckIndexedServicePortMap;
  readonly endpointsMap: EndpointsMap;
  readonly objects: Map<string, Service>;
}

/** One random API event: a Service added, changed or deleted, or one of a Service's two slices. */
function randomEvent(r: (n: number) => number, w: World, rv: number): void {
  const index = r(NAMESPACES.length * NAMES.length);
  const ns = NAMESPACES[index % NAMESPACES.length] ?? 'a';
  const name = NAMES[Math.floor(index / NAMESPACES.length)] ?? 'web';
  const id = `${ns}/${name}`;
  if (r(2) === 0) {
    const previous = w.objects.get(id);
    const current = r(5) === 0 ? undefined : randomService(r, ns, name, index);
    if (current) w.objects.set(id, current);
    else w.objects.delete(id);
    w.services.update(previous, current);
    return;
  }
  const s = slice(`${name}-${r(2)}`, {
    ns,
    service: name,
    rv: String(rv),
    ports: PORT_NAMES.filter(() => r(2) === 0).map((p, i) => ({ name: p, port: 8080 + i, protocol: 'TCP' })),
    endpoints: randomEndpoints(r),
  });
  w.endpoints.endpointSliceUpdate(s, r(5) === 0);
}

describe('service health state kept from the changes', () => {
  for (const seed of [1, 2, 3, 4, 5, 6, 7, 8]) {
    test(`seed ${seed}: after every successful sync it equals the full walk`, () => {
      const r = random(seed);
      const w: World = {
        services: new ServiceChangeTracker({ family: 'IPv4' }),
        endpoints: new EndpointsChangeTracker({ family: 'IPv4', nodeName: 'node-a' }),
        serviceMap: new HealthCheckIndexedServicePortMap(),
        endpointsMap: new Map(),
        objects: new Map(),
      };
      const pending = new PendingServiceHealthChanges();
      // What the health-check servers hold: the changes applied as they are handed over.
      const ports = new Map<string, number>();
      const counts = new Map<string, number>();
      let checked = 0;
      let withPorts = 0;
      let withCounts = 0;
      for (let sync = 0; sync < 200; sync++) {
        for (let e = 1 + r(4); e > 0; e--) randomEvent(r, w, sync * 10 + e);
        const services = w.services.checkout(w.serviceMap);
        const endpoints = w.endpoints.checkout(w.endpointsMap);
        pending.record(services.updatedServices, w.serviceMap, endpoints.localReadyEndpoints);
        // One sync in four fails: its changes wait for the next successful one.
        if (r(4) === 0) continue;
        const changes = pending.take();
        applyServiceHealthChanges(ports, changes.healthCheckNodePorts);
        applyServiceHealthChanges(counts, changes.localReadyEndpoints);
        assert.deepEqual(ports, healthCheckNodePortsByWalk(w.serviceMap), `sync ${sync}: health-check ports`);
        assert.deepEqual(counts, localReadyEndpointsByWalk(w.endpointsMap), `sync ${sync}: local endpoints`);
        checked++;
        if (ports.size > 0) withPorts++;
        if (counts.size > 0) withCounts++;
      }
      // The sequence did exercise both sides (not a run of empty maps).
      assert.ok(checked > 100, `${checked} syncs checked`);
      assert.ok(withPorts > 50 && withCounts > 50, `${withPorts} with ports, ${withCounts} with counts`);
    });
  }

  test('a Service whose healthCheckNodePort changes, loses it, and is deleted', () => {
    const services = new ServiceChangeTracker({ family: 'IPv4' });
    const map = new HealthCheckIndexedServicePortMap();
    const pending = new PendingServiceHealthChanges();
    const lb = (hc: number | undefined): Service =>
      service('ns', 'lb', {
        type: 'LoadBalancer',
        clusterIP: '198.18.128.9',
        externalTrafficPolicy: hc === undefined ? 'Cluster' : 'Local',
        ...(hc === undefined ? {} : { healthCheckNodePort: hc }),
        ports: [
          { name: 'a', port: 80, protocol: 'TCP', nodePort: 30080 },
          { name: 'b', port: 81, protocol: 'TCP', nodePort: 30081 },
        ],
      });
    const step = (previous: Service | undefined, current: Service | undefined): [string, number][] => {
      services.update(previous, current);
      pending.record(services.checkout(map).updatedServices, map, new Map());
      return [...pending.take().healthCheckNodePorts];
    };
    assert.deepEqual(step(undefined, lb(30001)), [['ns/lb', 30001]]);
    assert.deepEqual(step(lb(30001), lb(30002)), [['ns/lb', 30002]]);
    assert.deepEqual(step(lb(30002), lb(undefined)), [['ns/lb', 0]]);
    assert.deepEqual(step(lb(undefined), lb(30003)), [['ns/lb', 30003]]);
    assert.deepEqual(step(lb(30003), undefined), [['ns/lb', 0]]);
    assert.equal(map.size, 0);
    assert.equal(map.healthCheckNodePort('ns/lb'), 0);
    // Gone and gone again: a 0 after a 0 is no change.
    assert.deepEqual(step(undefined, lb(undefined)), []);
  });

  test('a Service that never had a port or a local endpoint hands over no 0 (a first sync of many records nothing)', () => {
    const pending = new PendingServiceHealthChanges();
    const map = new HealthCheckIndexedServicePortMap();
    const names = Array.from({ length: 1000 }, (_, i) => `ns/s${i}`);
    pending.record(names, map, new Map(names.map((n) => [n, 0])));
    const first = pending.take();
    assert.equal(first.healthCheckNodePorts.size, 0);
    assert.equal(first.localReadyEndpoints.size, 0);
    // One gains a local endpoint, then loses it: both are handed over, the loss as 0.
    pending.record([], map, new Map([['ns/s7', 2]]));
    assert.deepEqual([...pending.take().localReadyEndpoints], [['ns/s7', 2]]);
    pending.record([], map, new Map([['ns/s7', 0]]));
    assert.deepEqual([...pending.take().localReadyEndpoints], [['ns/s7', 0]]);
  });

  test('a Service whose endpoints are all gone counts 0 (the server drops it)', () => {
    const endpoints = new EndpointsChangeTracker({ family: 'IPv4', nodeName: 'node-a' });
    const live: EndpointsMap = new Map();
    const counts = new Map<string, number>();
    const s = slice('web-1', { service: 'web', endpoints: [ep('198.19.0.1', { nodeName: 'node-a' })] });
    endpoints.endpointSliceUpdate(s, false);
    applyServiceHealthChanges(counts, endpoints.checkout(live).localReadyEndpoints);
    assert.deepEqual([...counts], [['ns/web', 1]]);
    endpoints.endpointSliceUpdate(s, true);
    const r = endpoints.checkout(live);
    assert.deepEqual([...r.localReadyEndpoints], [['ns/web', 0]]);
    applyServiceHealthChanges(counts, r.localReadyEndpoints);
    assert.equal(counts.size, 0);
  });
});
