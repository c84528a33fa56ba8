// The server pieces fit the seams the proxier calls (src/sync/proxier.ts); a mismatch fails type-checking.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ProxyHealthSink, ServiceHealthSink } from '../../packages/agent/src/sync/proxier.js';
import type { ProxyMetrics } from '../../packages/agent/src/sync/metrics.js';
import { ProxyHealth } from '../../packages/agent/src/server/proxy-health.js';
import { ServiceHealthServers } from '../../packages/agent/src/server/service-health.js';
import { createProxyMetrics } from '../../packages/agent/src/server/metrics.js';
import { SILENT_LOGGER } from '../../packages/agent/src/util/logger.js';
import { FakeClock } from '../../packages/agent/src/util/clock.js';

test('ProxyHealth, ServiceHealthServers and the prom-client metrics implement the proxier-facing contracts', async () => {
  const health: ProxyHealthSink = new ProxyHealth({ clock: new FakeClock(), syncPeriodMs: 30_000 });
  const services: ServiceHealthSink = new ServiceHealthServers({
    proxyHealth: { isHealthy: () => true },
    logger: SILENT_LOGGER,
  });
  const metrics: ProxyMetrics = createProxyMetrics({ mode: 'iptables', processMetrics: false });
  health.updated('IPv4');
  await services.updateServices(new Map());
  await services.updateEndpoints(new Map());
  metrics.serviceChange();
  assert.ok(health && services && metrics);
});
