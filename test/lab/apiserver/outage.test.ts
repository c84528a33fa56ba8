// `lab apiserver-restart`'s API server side (ApiServer.outage): down as a restarting kube-apiserver is, then the
// same objects served again on the same port: watches end, connections in the window are refused, and
// resourceVersions continue, so clients re-watch from where they were.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { startApiServer } from '../../../packages/lab/src/apiserver/index.js';
import { resourceByKind } from '../../../packages/lab/src/apiserver/resources.js';

const CM = resourceByKind('ConfigMap');

/** One GET; resolves with the status and body, or with the connection's error code. */
function get(
  url: string,
  token: string,
  path: string,
): Promise<{ status?: number; body?: string; error?: string }> {
  return new Promise((resolve) => {
    const req = request(`${url}${path}`, { headers: { authorization: `Bearer ${token}` } }, (res) => {
      let body = '';
      res.on('data', (b: Buffer) => (body += b.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', (e: NodeJS.ErrnoException) => resolve({ error: e.code ?? e.message }));
    req.end();
  });
}

/** Opens a watch; resolves `ended` when the server ends its stream. */
function watch(url: string, token: string, path: string): { opened: Promise<void>; ended: Promise<void> } {
  let opened: () => void = () => undefined;
  const openedP = new Promise<void>((r) => (opened = r));
  const ended = new Promise<void>((resolve) => {
    const req = request(`${url}${path}`, { headers: { authorization: `Bearer ${token}` } }, (res) => {
      opened();
      res.resume();
      res.on('close', () => resolve());
    });
    req.on('error', () => resolve());
    req.end();
  });
  return { opened: openedP, ended };
}

test('outage: the watch ends, a request in the window is refused, then the same objects are served', async () => {
  const server = await startApiServer({ tls: false });
  try {
    const created = server.registry.create(CM, 'default', { metadata: { name: 'a' }, data: { v: '1' } });
    assert.ok(created.ok);
    const path = '/api/v1/namespaces/default/configmaps';
    const before = JSON.parse((await get(server.url, server.token, `${path}/a`)).body ?? '{}') as {
      metadata: { resourceVersion: string };
    };
    const w = watch(
      server.url,
      server.token,
      `${path}?watch=1&resourceVersion=${before.metadata.resourceVersion}`,
    );
    await w.opened;

    const down = server.outage(2000);
    await w.ended;
    const refused = await get(server.url, server.token, `${path}/a`);
    assert.equal(refused.error, 'ECONNREFUSED', 'a connection while down is refused');
    await down;

    const after = await get(server.url, server.token, `${path}/a`);
    assert.equal(after.status, 200);
    const again = JSON.parse(after.body ?? '{}') as { metadata: { resourceVersion: string } };
    assert.equal(
      again.metadata.resourceVersion,
      before.metadata.resourceVersion,
      'the same object, same version',
    );
    const next = server.registry.create(CM, 'default', { metadata: { name: 'b' } });
    assert.ok(next.ok);
    assert.ok(
      Number(server.store.resourceVersion) > Number(before.metadata.resourceVersion),
      'resourceVersions continue',
    );
  } finally {
    await server.stop();
  }
});

test('outage: stop() while down ends it, and the listener stays closed', async () => {
  const server = await startApiServer({ tls: false });
  const down = server.outage(500);
  await new Promise((resolve) => setImmediate(resolve));
  await server.stop();
  const r = await get(server.url, server.token, '/api/v1/namespaces');
  assert.equal(r.error, 'ECONNREFUSED');
  // The outage's own timer runs out after stop(): it must not listen again.
  await down;
  const later = await get(server.url, server.token, '/api/v1/namespaces');
  assert.equal(later.error, 'ECONNREFUSED', 'still closed after the outage would have ended');
});
