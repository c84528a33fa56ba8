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

/** The fields a 422 Invalid names as its causes. */
function invalidFields(body: unknown): string[] {
  return (assertStatus(body, 422, 'Invalid').details?.causes ?? []).map((c) => c.field);
}

const SERVICES = '/api/v1/namespaces/default/services';
const CONFIGMAPS = '/api/v1/namespaces/default/configmaps';

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
  const createService = (name: string, spec: Record<string, unknown>) =>
    call(server, 'POST', SERVICES, service(name, spec));
  const createConfigMap = (name: string) =>
    call(server, 'POST', CONFIGMAPS, JSON.stringify({ metadata: { name } }));

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
    const r = await call(server, 'POST', CONFIGMAPS, '{"metadata": {"name": "x"');
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
    const r = await call(server, 'PUT', CONFIGMAPS, '{}');
    assert.equal(r.status, 405);
    assertStatus(r.body, 405, 'MethodNotAllowed');
    await createConfigMap('cm');
    const p = await call(server, 'PATCH', `${CONFIGMAPS}/cm`, '{}', {
      'content-type': 'text/plain',
    });
    assert.equal(p.status, 415);
    assertStatus(p.body, 415, 'UnsupportedMediaType');
  });

  test('invalid names are 422 with a metadata.name cause', async () => {
    for (const name of ['Bad_Name', '1starts-with-digit', 'a'.repeat(64)]) {
      const r = await createService(name, {});
      assert.equal(r.status, 422, name);
      assert.ok(invalidFields(r.body).includes('metadata.name'), JSON.stringify(r.body));
    }
  });

  test('a ClusterIP outside the service CIDR, or taken, is 422', async () => {
    const out = await createService('outside', { clusterIP: '10.0.0.1' });
    assert.equal(out.status, 422);
    assert.ok(invalidFields(out.body).includes('spec.clusterIPs'));
    const first = await createService('first', { clusterIP: '198.19.7.7' });
    assert.equal(first.status, 201);
    const dup = await createService('second', { clusterIP: '198.19.7.7' });
    assert.equal(dup.status, 422);
  });

  test('a duplicate NodePort is 422', async () => {
    const spec = { type: 'NodePort', ports: [{ port: 80, nodePort: 30080 }] };
    assert.equal((await createService('np1', spec)).status, 201);
    const dup = await createService('np2', spec);
    assert.equal(dup.status, 422);
    assert.ok(invalidFields(dup.body).includes('spec.ports[0].nodePort'));
    const range = await createService('np3', { type: 'NodePort', ports: [{ port: 80, nodePort: 80 }] });
    assert.equal(range.status, 422);
  });

  test('a 10 MB body is 413', async () => {
    const big = JSON.stringify({ metadata: { name: 'big' }, data: { x: 'a'.repeat(10 * 1024 * 1024) } });
    const r = await call(server, 'POST', CONFIGMAPS, big);
    assert.equal(r.status, 413);
    assertStatus(r.body, 413, 'RequestEntityTooLarge');
  });

  test('a stale resourceVersion is 409, a second create 409 AlreadyExists', async () => {
    const created = await createConfigMap('cc');
    const rv = (created.body as { metadata: { resourceVersion: string } }).metadata.resourceVersion;
    /** Replaces cc, as of resourceVersion rv, with data a=`a`. */
    const replace = (a: string) =>
      call(
        server,
        'PUT',
        `${CONFIGMAPS}/cc`,
        JSON.stringify({ metadata: { name: 'cc', resourceVersion: rv }, data: { a } }),
      );
    const ok = await replace('1');
    assert.equal(ok.status, 200);
    const stale = await replace('2');
    assert.equal(stale.status, 409);
    assertStatus(stale.body, 409, 'Conflict');
    const again = await createConfigMap('cc');
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
