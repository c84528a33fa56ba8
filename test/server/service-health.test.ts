import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ServiceHealthServers } from '../../packages/agent/src/server/service-health.js';
import { recordingLogger } from '../../packages/agent/src/util/logger.js';
import { occupyPort } from './listening.js';

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((resolve) => s.listen({ host: '127.0.0.1', port: 0 }, resolve));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}

async function ask(port: number, path = '/', method = 'GET') {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, { method });
  return {
    status: res.status,
    type: res.headers.get('content-type'),
    nosniff: res.headers.get('x-content-type-options'),
    weight: res.headers.get('x-load-balancing-endpoint-weight'),
    body: await res.text(),
  };
}

async function refused(port: number): Promise<boolean> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}/`);
    await res.arrayBuffer();
    return false;
  } catch {
    return true;
  }
}

describe('ServiceHealthServers', () => {
  test('open, answer 200/503 with header and body, move to a new port, close', async () => {
    let healthy = true;
    const servers = new ServiceHealthServers({
      nodeAddresses: ['127.0.0.1'],
      proxyHealth: { isHealthy: () => healthy },
      logger: recordingLogger(),
    });
    const [p1, p2] = [await freePort(), await freePort()];
    try {
      let r = await servers.syncServicesReport(new Map([['ns1/web', p1]]));
      assert.deepEqual(r, { opened: ['ns1/web'], closed: [], failed: [] });

      // No local endpoints yet: 503, weight 0.
      let a = await ask(p1, '/anything', 'POST');
      assert.equal(a.status, 503);
      assert.equal(a.weight, '0');
      assert.equal(a.type, 'application/json');
      assert.equal(a.nosniff, 'nosniff');

      servers.syncEndpoints(new Map([['ns1/web', 2]]));
      a = await ask(p1);
      assert.equal(a.status, 200);
      assert.equal(a.weight, '2');
      assert.equal(
        a.body,
        '{\n\t"service": {\n\t\t"namespace": "ns1",\n\t\t"name": "web"\n\t},\n\t"localEndpoints": 2,\n\t"serviceProxyHealthy": true\n}',
      );

      // Proxy unhealthy: 503 even with endpoints.
      healthy = false;
      a = await ask(p1, '/healthz', 'HEAD');
      assert.equal(a.status, 503);
      assert.equal(a.weight, '2');
      a = await ask(p1);
      assert.equal(JSON.parse(a.body).serviceProxyHealthy, false);
      healthy = true;

      // Endpoints map without the Service: counts 0.
      servers.syncEndpoints(new Map());
      assert.equal((await ask(p1)).status, 503);
      servers.syncEndpoints(new Map([['ns1/web', 1]]));

      // Port moved.
      r = await servers.syncServicesReport(new Map([['ns1/web', p2]]));
      assert.deepEqual(r, { opened: ['ns1/web'], closed: ['ns1/web'], failed: [] });
      assert.equal(await refused(p1), true);
      assert.equal((await ask(p2)).status, 200);
      assert.deepEqual(servers.listening(), new Map([['ns1/web', p2]]));

      // Unchanged map: nothing opened or closed.
      r = await servers.syncServicesReport(new Map([['ns1/web', p2]]));
      assert.deepEqual(r, { opened: [], closed: [], failed: [] });

      // Service gone.
      r = await servers.syncServicesReport(new Map());
      assert.deepEqual(r, { opened: [], closed: ['ns1/web'], failed: [] });
      assert.equal(await refused(p2), true);
    } finally {
      await servers.close();
    }
  });

  test('a port already in use is reported, logged, and retried on the next sync', async () => {
    const logger = recordingLogger();
    const servers = new ServiceHealthServers({
      nodeAddresses: ['127.0.0.1'],
      proxyHealth: { isHealthy: () => true },
      logger,
    });
    const blocker = await occupyPort();
    const busy = blocker.port;
    const other = await freePort();
    try {
      const wanted = new Map([
        ['ns/busy', busy],
        ['ns/free', other],
      ]);
      let r = await servers.syncServicesReport(wanted);
      assert.deepEqual(r.opened, ['ns/free'], 'one failure does not stop the others');
      assert.equal(r.failed.length, 1);
      assert.equal(r.failed[0]!.service, 'ns/busy');
      assert.equal(r.failed[0]!.error.code, 'EADDRINUSE');
      assert.ok(logger.records.some((l) => l.level === 'error' && l.fields.service === 'ns/busy'));
      assert.deepEqual(servers.listening(), new Map([['ns/free', other]]));

      await blocker.release();
      servers.syncEndpoints(new Map([['ns/busy', 3]]));
      r = await servers.syncServicesReport(wanted);
      assert.deepEqual(r, { opened: ['ns/busy'], closed: [], failed: [] });
      const a = await ask(busy);
      assert.equal(a.status, 200);
      assert.equal(a.weight, '3');
    } finally {
      await servers.close();
      await blocker.release();
    }
  });
  test('updates: only the changed Services are touched, 0 removes, failures are retried on an empty update', async () => {
    const servers = new ServiceHealthServers({
      nodeAddresses: ['127.0.0.1'],
      proxyHealth: { isHealthy: () => true },
      logger: recordingLogger(),
    });
    const blocker = await occupyPort();
    const [p1, p2] = [await freePort(), await freePort()];
    try {
      let r = await servers.updateServicesReport(
        new Map([
          ['ns/a', p1],
          ['ns/b', blocker.port],
        ]),
      );
      assert.deepEqual(r.opened, ['ns/a']);
      assert.deepEqual(
        r.failed.map((f) => f.service),
        ['ns/b'],
      );
      servers.updateEndpoints(new Map([['ns/a', 2]]));
      servers.updateEndpoints(new Map([['ns/b', 1]]));
      assert.equal((await ask(p1)).weight, '2', 'a later update of other Services leaves a count alone');

      // Nothing changed, but the port is free now: the next update opens it.
      await blocker.release();
      r = await servers.updateServicesReport(new Map());
      assert.deepEqual(r, { opened: ['ns/b'], closed: [], failed: [] });
      assert.equal((await ask(blocker.port)).weight, '1');

      // One update hands a's port to c and moves a: the close comes first, so c can take it.
      r = await servers.updateServicesReport(
        new Map([
          ['ns/c', p1],
          ['ns/a', p2],
        ]),
      );
      assert.deepEqual(r, { opened: ['ns/c', 'ns/a'], closed: ['ns/a'], failed: [] });
      assert.deepEqual(
        servers.listening(),
        new Map([
          ['ns/b', blocker.port],
          ['ns/c', p1],
          ['ns/a', p2],
        ]),
      );

      // 0: no health check any more, and no local endpoints.
      servers.updateEndpoints(new Map([['ns/a', 0]]));
      assert.equal((await ask(p2)).status, 503);
      r = await servers.updateServicesReport(new Map([['ns/b', 0]]));
      assert.deepEqual(r, { opened: [], closed: ['ns/b'], failed: [] });
      assert.equal(await refused(blocker.port), true);
    } finally {
      await servers.close();
      await blocker.release();
    }
    assert.deepEqual(servers.listening(), new Map());
  });
});
