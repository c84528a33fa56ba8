// The proxier's contract (upstream-model.md §5): first sync only after both caches synced; full at start, after a
// failure, on a topology change and hourly, partial otherwise with exactly the changed Services; coalescing under
// minSyncPeriod; and what is reported after a successful sync.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { EndpointSlice, Node, Service } from '../../packages/agent/src/api/objects.js';
import type { IPFamily } from '../../packages/agent/src/model/ip.js';
import type {
  BackendSyncResult,
  ProxyBackend,
  ProxySnapshot,
  SyncRequest,
} from '../../packages/agent/src/sync/backend.js';
import { BackendSyncError } from '../../packages/agent/src/sync/backend.js';
import { FakeClock } from '../../packages/agent/src/util/clock.js';
import { SILENT_LOGGER } from '../../packages/agent/src/util/logger.js';
import { NO_PROXY_METRICS } from '../../packages/agent/src/sync/metrics.js';
import type { ProxyMetrics } from '../../packages/agent/src/sync/metrics.js';
import { FULL_SYNC_PERIOD_MS, Proxier } from '../../packages/agent/src/sync/proxier.js';
import type { ProxierOptions, ProxierSyncEvent } from '../../packages/agent/src/sync/proxier.js';
import { settle } from '../helpers/settle.js';

/**
 * Keeps the one "next sync is full" flag as a real backend does (set at start, after a failure and on
 * requestFullSync) and records what it was asked and what it did.
 */
class RecordingBackend implements ProxyBackend {
  readonly mode = 'nftables' as const;
  readonly family: IPFamily = 'IPv4';
  readonly calls: { full: boolean; requested: boolean; changed: string[]; ports: number }[] = [];
  failNext = false;
  fullRequests = 0;
  private needFullSync = true;
  requestFullSync(): void {
    this.fullRequests++;
    this.needFullSync = true;
  }
  async sync(snapshot: ProxySnapshot, request: SyncRequest): Promise<BackendSyncResult> {
    const requested = request.full === true;
    const full = requested || this.needFullSync;
    this.needFullSync = true;
    this.calls.push({
      full,
      requested,
      changed: [...request.changedServices].sort(),
      ports: snapshot.serviceMap.size,
    });
    if (this.failNext) {
      this.failNext = false;
      throw new BackendSyncError('nftables IPv4 sync: nft: boom', { full, cause: new Error('nft: boom') });
    }
    this.needFullSync = false;
    return {
      full,
      noLocalEndpointsInternal: 1,
      noLocalEndpointsExternal: 2,
      timings: { ownMs: 0, kernelMs: 0 },
      operations: 1,
    };
  }
}

function service(name: string, ip: string, protocol = 'TCP'): Service {
  return {
    metadata: { name, namespace: 'ns' },
    spec: { clusterIP: ip, ports: [{ name: 'p', port: 80, protocol }] },
  };
}

function slice(svc: string, ips: string[], rv = '1', protocol = 'TCP'): EndpointSlice {
  return {
    metadata: {
      name: `${svc}-1`,
      namespace: 'ns',
      resourceVersion: rv,
      labels: { 'kubernetes.io/service-name': svc },
      annotations: { 'endpoints.kubernetes.io/last-change-trigger-time': new Date(1_000_500).toISOString() },
    },
    addressType: 'IPv4',
    endpoints: ips.map((ip) => ({ addresses: [ip], nodeName: 'node-a' })),
    ports: [{ name: 'p', port: 8080, protocol }],
  };
}

interface Recorded {
  readonly calls: string[];
}

function recordingMetrics(rec: Recorded): ProxyMetrics {
  return {
    ...NO_PROXY_METRICS,
    syncDuration: (_f, _s, full) => void rec.calls.push(`syncDuration full=${full}`),
    networkProgrammingDuration: (_f, s) => void rec.calls.push(`programming ${s}`),
    noLocalEndpoints: (_f, p, n) => void rec.calls.push(`noLocal ${p}=${n}`),
  };
}

function setup(extra: Partial<ProxierOptions> = {}) {
  const clock = new FakeClock(1_000_000);
  const backend = new RecordingBackend();
  const rec: Recorded = { calls: [] };
  const health: string[] = [];
  const conntrack: string[] = [];
  const proxier = new Proxier({
    family: 'IPv4',
    nodeName: 'node-a',
    backend,
    clock,
    metrics: recordingMetrics(rec),
    logger: SILENT_LOGGER,
    minSyncPeriod: 1_000,
    syncPeriod: 30_000,
    health: {
      queuedUpdate: (f) => void health.push(`queued ${f}`),
      updated: (f) => void health.push(`updated ${f}`),
    },
    conntrack: { reconcile: async (f) => void conntrack.push(f) },
    ...extra,
  });
  return { clock, backend, rec, health, conntrack, proxier };
}

/**
 * Runs `trigger` and resolves with the sync it causes, once the runner is done with that sync: nextSync() resolves
 * inside the sync, and the runner arms its min-interval, retry and max timers just after it, which must happen
 * before the test moves the clock (as it would in real time).
 */
async function syncAfter(proxier: Proxier, trigger: () => void): Promise<ProxierSyncEvent> {
  const synced = proxier.nextSync();
  trigger();
  const event = await synced;
  await settle();
  return event;
}

describe('Proxier', () => {
  test('nothing syncs until both caches have synced; then one full sync with everything', async () => {
    const { backend, proxier } = setup();
    proxier.start();
    proxier.onServiceAdd(service('a', '198.19.0.1'));
    proxier.onEndpointSliceAdd(slice('a', ['198.18.10.2']));
    proxier.onServicesSynced();
    await settle();
    assert.equal(backend.calls.length, 0, 'no sync before EndpointSlices are synced');
    await syncAfter(proxier, () => proxier.onEndpointSlicesSynced());
    assert.deepEqual(backend.calls, [{ full: true, requested: false, changed: ['ns/a'], ports: 1 }]);
  });

  test('later changes are partial, name exactly the changed Services, and coalesce within minSyncPeriod', async () => {
    const { clock, backend, proxier } = setup();
    proxier.start();
    proxier.onServiceAdd(service('a', '198.19.0.1'));
    proxier.onServiceAdd(service('b', '198.19.0.2'));
    proxier.onServicesSynced();
    await syncAfter(proxier, () => proxier.onEndpointSlicesSynced());
    assert.equal(backend.calls.length, 1);
    // Three slice events for one Service and one for another, all inside minSyncPeriod: one partial sync.
    proxier.onEndpointSliceAdd(slice('a', ['198.18.10.2'], '1'));
    proxier.onEndpointSliceUpdate(
      slice('a', ['198.18.10.2'], '1'),
      slice('a', ['198.18.10.2', '198.18.10.3'], '2'),
    );
    proxier.onEndpointSliceAdd(slice('b', ['198.18.10.4'], '1'));
    await settle();
    assert.equal(backend.calls.length, 1, 'held by minSyncPeriod');
    await syncAfter(proxier, () => clock.advance(1_000));
    assert.deepEqual(backend.calls[1], {
      full: false,
      requested: false,
      changed: ['ns/a', 'ns/b'],
      ports: 2,
    });
    // Nothing changes: no further sync.
    clock.advance(10_000);
    await settle();
    assert.equal(backend.calls.length, 2);
  });

  test('a failed sync is retried after syncPeriod as a full sync', async () => {
    const { clock, backend, proxier, rec } = setup();
    proxier.start();
    proxier.onServicesSynced();
    await syncAfter(proxier, () => proxier.onEndpointSlicesSynced());
    clock.advance(1_000);
    backend.failNext = true;
    await syncAfter(proxier, () => proxier.onServiceAdd(service('a', '198.19.0.1')));
    assert.deepEqual(backend.calls[1], { full: false, requested: false, changed: ['ns/a'], ports: 1 });
    clock.advance(29_000);
    await settle();
    assert.equal(backend.calls.length, 2, 'no retry before syncPeriod');
    await syncAfter(proxier, () => clock.advance(1_000));
    // The backend's own flag makes the retry full; the proxier only reports what it did.
    assert.deepEqual(backend.calls[2], { full: true, requested: false, changed: [], ports: 1 });
    assert.equal(backend.fullRequests, 0, 'a failure needs no second request from the proxier');
    assert.deepEqual(
      rec.calls.filter((c) => c.startsWith('syncDuration')),
      ['syncDuration full=true', 'syncDuration full=true'],
      'the retry is recorded as the full sync it was',
    );
  });

  test('a topology change forces a full sync; an unchanged zone does not sync', async () => {
    const { clock, backend, proxier } = setup();
    proxier.start();
    proxier.onServicesSynced();
    await syncAfter(proxier, () => proxier.onEndpointSlicesSynced());
    clock.advance(1_000);
    const node = (zone: string): Node => ({
      metadata: { name: 'node-a', labels: { 'topology.kubernetes.io/zone': zone } },
    });
    await syncAfter(proxier, () => proxier.onNode(node('z1')));
    assert.equal(backend.fullRequests, 1, 'the proxier asks the backend once');
    assert.deepEqual(backend.calls.at(-1), { full: true, requested: false, changed: [], ports: 0 });
    const count = backend.calls.length;
    clock.advance(1_000);
    proxier.onNode(node('z1'));
    await settle();
    assert.equal(backend.calls.length, count);
    assert.equal(backend.fullRequests, 1);
  });

  test('with no events a full sync still runs hourly', async () => {
    const { clock, backend, proxier } = setup();
    proxier.start();
    proxier.onServicesSynced();
    await syncAfter(proxier, () => proxier.onEndpointSlicesSynced());
    clock.advance(FULL_SYNC_PERIOD_MS - 1);
    await settle();
    assert.equal(backend.calls.length, 1);
    await syncAfter(proxier, () => clock.advance(1));
    assert.deepEqual(
      backend.calls.map((c) => [c.full, c.requested]),
      [
        [true, false],
        [true, true],
      ],
      "the first is full by the backend's own flag, the hourly one by request",
    );
  });

  test('after success: metrics, healthz Updated, trigger-time latency; conntrack only for UDP endpoint changes', async () => {
    const { clock, rec, health, conntrack, proxier } = setup();
    proxier.start();
    proxier.onServiceAdd(service('tcp', '198.19.0.1'));
    proxier.onServiceAdd(service('udp', '198.19.0.2', 'UDP'));
    proxier.onServicesSynced();
    await syncAfter(proxier, () => proxier.onEndpointSlicesSynced());
    assert.deepEqual(conntrack, [], 'no endpoint changes yet');
    assert.ok(rec.calls.includes('syncDuration full=true'));
    assert.ok(rec.calls.includes('noLocal internal=1') && rec.calls.includes('noLocal external=2'));
    assert.deepEqual(health.slice(0, 2), ['updated IPv4', 'queued IPv4']);
    assert.equal(health.at(-1), 'updated IPv4');

    clock.advance(1_000);
    await syncAfter(proxier, () => proxier.onEndpointSliceAdd(slice('tcp', ['198.18.10.2'])));
    assert.deepEqual(conntrack, [], 'TCP endpoint changes need no conntrack cleanup');
    // The slice's trigger time is 1,000.5 s; the sync finished at 1,001 s (fake clock): 0.5 s of latency.
    assert.ok(rec.calls.includes('programming 0.5'), rec.calls.join('\n'));

    clock.advance(1_000);
    await syncAfter(proxier, () => proxier.onEndpointSliceAdd(slice('udp', ['198.18.10.3'], '1', 'UDP')));
    assert.deepEqual(conntrack, ['IPv4']);
  });

  test('a deleted UDP Service triggers a conntrack pass given its ports (upstream #141371); TCP does not', async () => {
    const passes: string[][] = [];
    const { clock, proxier } = setup({
      conntrack: {
        reconcile: async (_f, serviceMap, _e, deleted) =>
          void passes.push([
            ...deleted.map((sp) => `${sp.nameString} ${sp.clusterIP}`),
            `live=${serviceMap.size}`,
          ]),
      },
    });
    proxier.start();
    const udp = service('udp', '198.19.0.2', 'UDP');
    const tcp = service('tcp', '198.19.0.1');
    proxier.onServiceAdd(tcp);
    proxier.onServiceAdd(udp);
    proxier.onServicesSynced();
    await syncAfter(proxier, () => proxier.onEndpointSlicesSynced());
    clock.advance(1_000);
    await syncAfter(proxier, () => proxier.onServiceDelete(tcp));
    assert.deepEqual(passes, [], 'a deleted TCP Service needs no conntrack pass');
    clock.advance(1_000);
    // The Service alone: its EndpointSlice may go in a later sync, or never had endpoints.
    await syncAfter(proxier, () => proxier.onServiceDelete(udp));
    assert.equal(passes.length, 1);
    assert.match(passes[0]![0]!, /^ns\/udp:.* 198\.19\.0\.2$/);
    assert.equal(passes[0]![1], 'live=0');
    clock.advance(1_000);
    await syncAfter(proxier, () => proxier.onServiceAdd(service('other', '198.19.0.3', 'UDP')));
    assert.equal(passes.length, 1, 'the deleted ports were handed over once');
  });
  test('health-check servers get only what changed; a failed sync hands its changes to the next', async () => {
    const updates: string[] = [];
    const show = (kind: string, m: ReadonlyMap<string, number>): string =>
      `${kind} ${[...m].map(([s, n]) => `${s}=${n}`).join(',')}`;
    const { clock, backend, proxier } = setup({
      serviceHealth: {
        updateServices: (m) => void updates.push(show('services', m)),
        updateEndpoints: (m) => void updates.push(show('endpoints', m)),
      },
    });
    const lb = (name: string, hc: number): Service => ({
      metadata: { name, namespace: 'ns' },
      spec: {
        type: 'LoadBalancer',
        clusterIP: '198.19.0.9',
        externalTrafficPolicy: 'Local',
        healthCheckNodePort: hc,
        ports: [{ name: 'p', port: 80, protocol: 'TCP', nodePort: 30080 }],
      },
    });
    proxier.start();
    proxier.onServiceAdd(lb('lb', 30001));
    proxier.onServiceAdd(service('plain', '198.19.0.1'));
    proxier.onEndpointSliceAdd(slice('lb', ['198.18.10.2', '198.18.10.3']));
    proxier.onServicesSynced();
    await syncAfter(proxier, () => proxier.onEndpointSlicesSynced());
    // ns/plain has no health-check port and never had one: no 0 is handed over for it (the servers hold nothing).
    assert.deepEqual(updates.splice(0), ['services ns/lb=30001', 'endpoints ns/lb=2']);

    // A sync with no Service changes still calls (a port that failed to open is retried there).
    clock.advance(1_000);
    await syncAfter(proxier, () => proxier.onEndpointSliceAdd(slice('plain', ['198.18.10.4'])));
    assert.deepEqual(updates.splice(0), ['services ', 'endpoints ns/plain=1']);

    // The port changes, but the sync fails: nothing is reported until a sync succeeds, then all of it.
    clock.advance(1_000);
    backend.failNext = true;
    await syncAfter(proxier, () => proxier.onServiceUpdate(lb('lb', 30001), lb('lb', 30002)));
    assert.deepEqual(updates, []);
    clock.advance(1_000);
    proxier.onEndpointSliceDelete(slice('lb', ['198.18.10.2', '198.18.10.3']));
    await syncAfter(proxier, () => clock.advance(29_000));
    assert.deepEqual(updates.splice(0), ['services ns/lb=30002', 'endpoints ns/lb=0']);

    clock.advance(1_000);
    await syncAfter(proxier, () => proxier.onServiceDelete(lb('lb', 30002)));
    assert.deepEqual(updates.splice(0), ['services ns/lb=0', 'endpoints ']);
  });
});
