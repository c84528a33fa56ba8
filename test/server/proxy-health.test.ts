import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Node } from '../../packages/agent/src/api/objects.js';
import { ProxyHealth, nodeEligibility } from '../../packages/agent/src/server/proxy-health.js';
import { createProxyHealthServer } from '../../packages/agent/src/server/proxy-health-server.js';
import { formatRFC3339Nano } from '../../packages/agent/src/server/rfc3339.js';
import { SILENT_LOGGER } from '../../packages/agent/src/util/logger.js';
import { createProxyMetrics } from '../../packages/agent/src/server/metrics.js';
import { parseExposition } from './exposition.js';
import { whileListening } from './listening.js';
import { FakeClock } from '../../packages/agent/src/util/clock.js';

const SYNC_PERIOD_MS = 30_000; // upstream default; timeout 60 s
const T0 = Date.UTC(2026, 0, 2, 3, 4, 5);
const NODE: Node = { metadata: { name: 'node-a' } };

function setup() {
  const clock = new FakeClock(T0);
  const codes = { healthz: [] as number[], livez: [] as number[] };
  const health = new ProxyHealth({
    clock,
    syncPeriodMs: SYNC_PERIOD_MS,
    metrics: { healthzResponse: (c) => codes.healthz.push(c), livezResponse: (c) => codes.livez.push(c) },
  });
  health.syncNode(NODE);
  return { clock, health, codes };
}

function body(answer: { body: string }): Record<string, unknown> {
  return JSON.parse(answer.body) as Record<string, unknown>;
}

describe('formatRFC3339Nano', () => {
  test('Go time.Time JSON layout: UTC, fraction without trailing zeros, zero time when unset', () => {
    assert.equal(formatRFC3339Nano(T0), '2026-01-02T03:04:05Z');
    assert.equal(formatRFC3339Nano(T0 + 1234), '2026-01-02T03:04:06.234Z');
    assert.equal(formatRFC3339Nano(T0 + 1200), '2026-01-02T03:04:06.2Z');
    assert.equal(formatRFC3339Nano(undefined), '0001-01-01T00:00:00Z');
  });
});

describe('nodeEligibility', () => {
  test('known, not deleted, not tainted for removal', () => {
    assert.equal(nodeEligibility(NODE).eligible, true);
    assert.equal(nodeEligibility(undefined).eligible, false);
    assert.equal(
      nodeEligibility({ metadata: { name: 'n', deletionTimestamp: '2026-01-02T00:00:00Z' } }).eligible,
      false,
    );
    const tainted: Node = {
      metadata: { name: 'n' },
      spec: {
        taints: [{ key: 'ToBeDeletedByClusterAutoscaler', value: '1700000000', effect: 'NoSchedule' }],
      },
    };
    assert.equal(nodeEligibility(tainted).eligible, false);
    const otherTaint: Node = {
      metadata: { name: 'n' },
      spec: { taints: [{ key: 'x', effect: 'NoSchedule' }] },
    };
    assert.equal(nodeEligibility(otherTaint).eligible, true);
    // Bad shapes from the wire are read defensively.
    assert.equal(
      nodeEligibility({ metadata: { name: 'n' }, spec: { taints: 'nope' } } as unknown as Node).eligible,
      true,
    );
  });
});

describe('ProxyHealth', () => {
  test('healthy while booting: no family has reported', () => {
    const { clock, health } = setup();
    const h = health.healthzAnswer();
    assert.equal(h.status, 200);
    // Healthy ⇒ lastUpdated is now; no family ⇒ no status object (Go omitempty).
    assert.deepEqual(body(h), {
      lastUpdated: '2026-01-02T03:04:05Z',
      currentTime: '2026-01-02T03:04:05Z',
      nodeEligible: true,
      healthy: true,
    });
    clock.advance(10 * 60_000);
    assert.equal(health.livezAnswer().status, 200);
  });

  test('a queued update older than 2 × syncPeriod turns /healthz and /livez 503; updated() heals', () => {
    const { clock, health, codes } = setup();
    health.updated('IPv4'); // sync loop start, T0
    clock.advance(1_000);
    health.queuedUpdate('IPv4'); // T0+1s
    clock.advance(59_999); // 1 ms short of the 60 s timeout
    assert.equal(health.healthzAnswer().status, 200);
    assert.equal(health.livezAnswer().status, 200);
    clock.advance(1); // exactly 60 s: "≥ timeout" is late
    const hz = health.healthzAnswer();
    const lz = health.livezAnswer();
    assert.equal(hz.status, 503);
    assert.equal(lz.status, 503);
    assert.deepEqual(body(hz), {
      lastUpdated: '2026-01-02T03:04:05Z', // the last sync, not now, because unhealthy
      currentTime: '2026-01-02T03:05:06Z',
      nodeEligible: true,
      healthy: false,
      status: { IPv4: { lastUpdated: '2026-01-02T03:04:05Z', healthy: false } },
    });
    assert.deepEqual(body(lz), {
      lastUpdated: '2026-01-02T03:04:05Z',
      currentTime: '2026-01-02T03:05:06Z',
      healthy: false,
      status: { IPv4: { lastUpdated: '2026-01-02T03:04:05Z', healthy: false } },
    });
    clock.advance(500);
    health.updated('IPv4');
    const healed = health.healthzAnswer();
    assert.equal(healed.status, 200);
    assert.deepEqual(body(healed).status, { IPv4: { lastUpdated: '2026-01-02T03:05:06.5Z', healthy: true } });
    assert.equal(health.livezAnswer().status, 200);
    assert.deepEqual(codes, { healthz: [200, 503, 200], livez: [200, 503, 200] });
  });

  test('the timeout runs from the oldest pending update, not the newest', () => {
    const { clock, health } = setup();
    health.updated('IPv4');
    health.queuedUpdate('IPv4');
    clock.advance(30_000);
    health.queuedUpdate('IPv4'); // does not move the pending time
    clock.advance(30_000);
    assert.equal(health.isHealthy(), false);
  });

  test('families that never called updated() do not count', () => {
    const { clock, health } = setup();
    health.updated('IPv4');
    health.queuedUpdate('IPv6'); // IPv6 never synced (still booting)
    clock.advance(10 * 60_000);
    const h = health.healthzAnswer();
    assert.equal(h.status, 200);
    assert.deepEqual(Object.keys(body(h).status as object), ['IPv4']);
    // Once IPv6 has synced, its late update does count.
    health.updated('IPv6');
    health.queuedUpdate('IPv6');
    clock.advance(60_000);
    const late = body(health.livezAnswer());
    assert.equal(late.healthy, false);
    assert.deepEqual(late.status, {
      IPv4: { lastUpdated: '2026-01-02T03:04:05Z', healthy: true },
      IPv6: { lastUpdated: '2026-01-02T03:14:05Z', healthy: false },
    });
  });

  test('node not eligible: /healthz 503 with nodeEligible false, /livez still 200', () => {
    const { health } = setup();
    health.updated('IPv4');
    health.syncNode({ metadata: { name: 'node-a', deletionTimestamp: '2026-01-02T03:00:00Z' } });
    const hz = health.healthzAnswer();
    assert.equal(hz.status, 503);
    assert.equal(body(hz).nodeEligible, false);
    assert.equal(body(hz).healthy, true, 'the body reports proxy health; eligibility is its own field');
    assert.equal(body(hz).lastUpdated, '2026-01-02T03:04:05Z');
    const lz = health.livezAnswer();
    assert.equal(lz.status, 200);
    assert.equal('nodeEligible' in body(lz), false);
    health.syncNode(undefined); // Node deleted / unknown
    assert.equal(health.healthzAnswer().status, 503);
    health.syncNode(NODE);
    assert.equal(health.healthzAnswer().status, 200);
  });
});

describe('proxy health metrics', () => {
  test('answers are counted in kubeproxy_proxy_healthz_total and _livez_total by code', async () => {
    const clock = new FakeClock(T0);
    const metrics = createProxyMetrics({ mode: 'nftables', processMetrics: false });
    const health = new ProxyHealth({ clock, syncPeriodMs: SYNC_PERIOD_MS, metrics });
    health.syncNode(NODE);
    health.healthzAnswer();
    health.healthzAnswer();
    health.syncNode(undefined);
    health.healthzAnswer();
    health.livezAnswer();
    const samples = [...parseExposition(await metrics.registry.metrics()).values()].flatMap((f) => f.samples);
    const v = (name: string, code: string) =>
      samples.find((s) => s.name === name && s.labels.code === code)?.value;
    assert.equal(v('kubeproxy_proxy_healthz_total', '200'), 2);
    assert.equal(v('kubeproxy_proxy_healthz_total', '503'), 1);
    assert.equal(v('kubeproxy_proxy_livez_total', '200'), 1);
    assert.equal(v('kubeproxy_proxy_livez_total', '503'), undefined);
  });
});

describe('proxy health server', () => {
  test('serves /healthz and /livez with JSON and nosniff headers; other paths 404', async () => {
    const { clock, health } = setup();
    const created = createProxyHealthServer({
      bindAddress: '127.0.0.1:0',
      health,
      clock,
      logger: SILENT_LOGGER,
      hardFail: true,
    });
    await whileListening(created, async (base) => {
      health.updated('IPv4');
      health.queuedUpdate('IPv4');
      let res = await fetch(`${base}/healthz`);
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('content-type'), 'application/json');
      assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
      assert.equal(((await res.json()) as { healthy: boolean }).healthy, true);
      clock.advance(60_000);
      res = await fetch(`${base}/healthz`);
      assert.equal(res.status, 503);
      await res.arrayBuffer();
      res = await fetch(`${base}/livez`);
      assert.equal(res.status, 503);
      assert.equal(res.headers.get('content-type'), 'application/json');
      await res.arrayBuffer();
      res = await fetch(`${base}/nope`);
      assert.equal(res.status, 404);
      await res.arrayBuffer();
    });
  });
});
