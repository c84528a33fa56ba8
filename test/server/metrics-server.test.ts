import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createMetricsServer } from '../../packages/agent/src/server/metrics-server.js';
import type { MetricsServerOptions } from '../../packages/agent/src/server/metrics-server.js';
import { createProxyMetrics } from '../../packages/agent/src/server/metrics.js';
import type {
  CreateServerResult,
  ServerFatalError,
} from '../../packages/agent/src/server/retrying-server.js';
import { recordingLogger } from '../../packages/agent/src/util/logger.js';
import { parseExposition } from './exposition.js';
import { occupyPort, whileListening } from './listening.js';
import { FakeClock } from '../../packages/agent/src/util/clock.js';

/** A metrics server on 127.0.0.1:0 of an iptables proxy's registry, with `o` overriding any option. */
function metricsServer(o: Partial<MetricsServerOptions> = {}): CreateServerResult {
  return createMetricsServer({
    bindAddress: '127.0.0.1:0',
    registry: createProxyMetrics({ mode: 'iptables', processMetrics: false }).registry,
    mode: 'iptables',
    configz: () => ({}),
    clock: new FakeClock(),
    logger: recordingLogger(),
    hardFail: false,
    ...o,
  });
}

async function get(url: string): Promise<{ status: number; type: string | null; text: string }> {
  const res = await fetch(url);
  return { status: res.status, type: res.headers.get('content-type'), text: await res.text() };
}

describe('metrics server', () => {
  test('/metrics, /healthz, /proxyMode, /configz', async () => {
    const metrics = createProxyMetrics({ mode: 'nftables', processMetrics: false });
    metrics.syncDuration('IPv4', 0.01, true);
    const created = metricsServer({
      registry: metrics.registry,
      mode: 'nftables',
      configz: () => ({ mode: 'nftables', metricsBindAddress: '127.0.0.1:10249' }),
    });
    await whileListening(created, async (base) => {
      const m = await get(`${base}/metrics`);
      assert.equal(m.status, 200);
      assert.match(m.type ?? '', /^text\/plain; version=0\.0\.4/);
      const fams = parseExposition(m.text);
      assert.equal(fams.get('kubeproxy_sync_proxy_rules_duration_seconds')?.type, 'histogram');
      assert.equal(fams.has('kubeproxy_sync_proxy_rules_iptables_total'), false);

      assert.deepEqual(await get(`${base}/healthz`), {
        status: 200,
        type: 'text/plain; charset=utf-8',
        text: 'ok',
      });
      assert.deepEqual(await get(`${base}/proxyMode`), {
        status: 200,
        type: 'text/plain; charset=utf-8',
        text: 'nftables',
      });
      const c = await get(`${base}/configz`);
      assert.equal(c.status, 200);
      assert.equal(c.type, 'application/json');
      assert.deepEqual(JSON.parse(c.text), {
        'kubeproxy.config.k8s.io': { mode: 'nftables', metricsBindAddress: '127.0.0.1:10249' },
      });
      assert.equal((await get(`${base}/debug/pprof/`)).status, 404);
    });
  });

  test('a failed bind is logged and retried every 5 s on the clock', async () => {
    const clock = new FakeClock();
    const logger = recordingLogger();
    const held = await occupyPort();
    const created = metricsServer({ bindAddress: `127.0.0.1:${held.port}`, clock, logger });
    assert.ok(created.ok);
    const server = created.server;
    try {
      assert.equal(await server.start(), 'retrying');
      const failure = logger.records.find((r) => r.level === 'error');
      assert.equal(failure?.fields.code, 'EADDRINUSE');
      assert.equal(failure?.fields.address, `127.0.0.1:${held.port}`);
      assert.equal(clock.pendingTimers, 1);

      clock.advance(4_999); // not yet
      assert.equal(server.attempts, 1);
      await held.release();
      clock.advance(1); // 5 s after the failure: second attempt, now free
      assert.equal(server.attempts, 2);
      const bound = await server.listening();
      assert.equal(bound.port, held.port);
      assert.equal((await get(`http://127.0.0.1:${held.port}/proxyMode`)).text, 'iptables');
      assert.equal(clock.pendingTimers, 0);
    } finally {
      await server.stop();
      await held.release();
    }
  });

  test('with bindAddressHardFail a failed bind is reported as fatal, not retried', async () => {
    const clock = new FakeClock();
    const held = await occupyPort();
    const fatal: ServerFatalError[] = [];
    const created = metricsServer({
      bindAddress: `127.0.0.1:${held.port}`,
      clock,
      hardFail: true,
      onFatal: (e) => fatal.push(e),
    });
    assert.ok(created.ok);
    try {
      assert.equal(await created.server.start(), 'fatal');
      assert.equal(fatal.length, 1);
      assert.equal(fatal[0]!.server, 'metrics');
      assert.equal(fatal[0]!.code, 'EADDRINUSE');
      assert.equal(clock.pendingTimers, 0);
    } finally {
      await created.server.stop();
      await held.release();
    }
  });

  test('a malformed bind address is an error value', () => {
    const created = metricsServer({ bindAddress: 'localhost' });
    assert.equal(created.ok, false);
  });
});
