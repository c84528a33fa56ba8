// Bad requests get Kubernetes Status errors with the right code and reason, and the server keeps serving.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startApiServer, type ApiServer } from '../../../packages/lab/src/apiserver/index.js';
import { call } from './client.js';

type Status = {
  kind: string;
  status: string;
  code: number;
  reason: string;
  details?: { causes?: { field: string }[] };
};

function assertStatus(body: unknown, code: number, reason: string): Status {
  const s = body as Status;
  assert.equal(s.kind, 'Status');
  assert.equal(s.status, 'Failure');
  assert.equal(s.code, code);
  assert.equal(s.reason, reason);
  return s;
}

const service = (name: string, spec: Record<string, unknown>): string =>
  JSON.stringify({
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name },
    spec: { ports: [{ port: 80 }], ...spec },
  });

describe('API errors', () => {
  let server: ApiServer;
  before(async () => {
    server = await startApiServer({});
  });
  after(() => server.stop());

  test('a missing or wrong token is 401', async () => {
    const none = await call(server, 'GET', '/api/v1/namespaces', undefined, { authorization: '' });
    assert.equal(none.status, 401);
    assertStatus(none.body, 401, 'Unauthorized');
    const wrong = await call(server, 'GET', '/api/v1/namespaces', undefined, {
      authorization: `Bearer ${server.token}x`,
    });
    assert.equal(wrong.status, 401);
  });

  test('malformed JSON is 400', async () => {
    const r = await call(
      server,
      'POST',
      '/api/v1/namespaces/default/configmaps',
      '{"metadata": {"name": "x"',
    );
    assert.equal(r.status, 400);
    assertStatus(r.body, 400, 'BadRequest');
  });

  test('unknown kinds and paths are 404', async () => {
    for (const path of [
      '/api/v1/foos',
      '/apis/example.com/v1/widgets',
      '/api/v2/pods',
      '/apis/apps/v1/namespaces/default/gadgets/x',
    ]) {
      const r = await call(server, 'GET', path);
      assert.equal(r.status, 404, path);
      assertStatus(r.body, 404, 'NotFound');
    }
    const missing = await call(server, 'GET', '/api/v1/namespaces/default/services/nope');
    assertStatus(missing.body, 404, 'NotFound');
  });

  test('a wrong method is 405, an unknown body type 415', async () => {
    const r = await call(server, 'PUT', '/api/v1/namespaces/default/configmaps', '{}');
    assert.equal(r.status, 405);
    assertStatus(r.body, 405, 'MethodNotAllowed');
    await call(
      server,
      'POST',
      '/api/v1/namespaces/default/configmaps',
      JSON.stringify({ metadata: { name: 'cm' } }),
    );
    const p = await call(server, 'PATCH', '/api/v1/namespaces/default/configmaps/cm', '{}', {
      'content-type': 'text/plain',
    });
    assert.equal(p.status, 415);
    assertStatus(p.body, 415, 'UnsupportedMediaType');
  });

  test('invalid names are 422 with a metadata.name cause', async () => {
    for (const name of ['Bad_Name', '1starts-with-digit', 'a'.repeat(64)]) {
      const r = await call(server, 'POST', '/api/v1/namespaces/default/services', service(name, {}));
      assert.equal(r.status, 422, name);
      const s = assertStatus(r.body, 422, 'Invalid');
      assert.ok(
        s.details?.causes?.some((c) => c.field === 'metadata.name'),
        JSON.stringify(s),
      );
    }
  });

  test('a ClusterIP outside the service CIDR, or taken, is 422', async () => {
    const out = await call(
      server,
      'POST',
      '/api/v1/namespaces/default/services',
      service('outside', { clusterIP: '10.0.0.1' }),
    );
    assert.equal(out.status, 422);
    assert.ok(
      assertStatus(out.body, 422, 'Invalid').details?.causes?.some((c) => c.field === 'spec.clusterIPs'),
    );
    const first = await call(
      server,
      'POST',
      '/api/v1/namespaces/default/services',
      service('first', { clusterIP: '198.19.7.7' }),
    );
    assert.equal(first.status, 201);
    const dup = await call(
      server,
      'POST',
      '/api/v1/namespaces/default/services',
      service('second', { clusterIP: '198.19.7.7' }),
    );
    assert.equal(dup.status, 422);
  });

  test('a duplicate NodePort is 422', async () => {
    const spec = { type: 'NodePort', ports: [{ port: 80, nodePort: 30080 }] };
    assert.equal(
      (await call(server, 'POST', '/api/v1/namespaces/default/services', service('np1', spec))).status,
      201,
    );
    const dup = await call(server, 'POST', '/api/v1/namespaces/default/services', service('np2', spec));
    assert.equal(dup.status, 422);
    assert.ok(
      assertStatus(dup.body, 422, 'Invalid').details?.causes?.some(
        (c) => c.field === 'spec.ports[0].nodePort',
      ),
    );
    const range = await call(
      server,
      'POST',
      '/api/v1/namespaces/default/services',
      service('np3', { type: 'NodePort', ports: [{ port: 80, nodePort: 80 }] }),
    );
    assert.equal(range.status, 422);
  });

  test('a 10 MB body is 413', async () => {
    const big = JSON.stringify({ metadata: { name: 'big' }, data: { x: 'a'.repeat(10 * 1024 * 1024) } });
    const r = await call(server, 'POST', '/api/v1/namespaces/default/configmaps', big);
    assert.equal(r.status, 413);
    assertStatus(r.body, 413, 'RequestEntityTooLarge');
  });

  test('a stale resourceVersion is 409, a second create 409 AlreadyExists', async () => {
    const created = await call(
      server,
      'POST',
      '/api/v1/namespaces/default/configmaps',
      JSON.stringify({ metadata: { name: 'cc' } }),
    );
    const rv = (created.body as { metadata: { resourceVersion: string } }).metadata.resourceVersion;
    const ok = await call(
      server,
      'PUT',
      '/api/v1/namespaces/default/configmaps/cc',
      JSON.stringify({ metadata: { name: 'cc', resourceVersion: rv }, data: { a: '1' } }),
    );
    assert.equal(ok.status, 200);
    const stale = await call(
      server,
      'PUT',
      '/api/v1/namespaces/default/configmaps/cc',
      JSON.stringify({ metadata: { name: 'cc', resourceVersion: rv }, data: { a: '2' } }),
    );
    assert.equal(stale.status, 409);
    assertStatus(stale.body, 409, 'Conflict');
    const again = await call(
      server,
      'POST',
      '/api/v1/namespaces/default/configmaps',
      JSON.stringify({ metadata: { name: 'cc' } }),
    );
    assertStatus(again.body, 409, 'AlreadyExists');
  });

  test('bad selectors are 400; the server still answers afterwards', async () => {
    const r = await call(server, 'GET', '/api/v1/services?fieldSelector=spec.nope%3Dx');
    assertStatus(r.body, 400, 'BadRequest');
    const l = await call(server, 'GET', '/api/v1/services?labelSelector=a%20in%20(b');
    assertStatus(l.body, 400, 'BadRequest');
    const v = await call(server, 'GET', '/version');
    assert.equal(v.status, 200);
    assert.equal((v.body as { major: string }).major, '1');
  });
});
