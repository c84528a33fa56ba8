// A Service's /status subresource as kube-apiserver serves it: the status changes, the spec never does (upstream's
// serviceStatusStrategy resets .spec only), and the request's labels and annotations are kept, so a status patch
// that annotates is seen by watchers, as upstream's "should complete a service status lifecycle" test expects.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startApiServer } from '../../../packages/lab/src/apiserver/index.js';
import { child, str, type JsonObject } from '../../../packages/lab/src/apiserver/json.js';
import { resourceByKind } from '../../../packages/lab/src/apiserver/resources.js';

const SVC = resourceByKind('Service');

function mustValue(
  r: { ok: true; value: JsonObject } | { ok: false; error: { message: string } },
): JsonObject {
  if (!r.ok) assert.fail(r.error.message);
  return r.value;
}

test('a Service status patch keeps its annotation and changes no spec; a status update sets conditions', async () => {
  const s = await startApiServer({ tls: false });
  try {
    const created = mustValue(
      s.registry.create(SVC, 'default', {
        metadata: { name: 'st', labels: { 'test-service-static': 'true' } },
        spec: { ports: [{ port: 80 }] },
      }),
    );
    const clusterIP = str(child(created, 'spec'), 'clusterIP');
    const patched = mustValue(
      s.registry.patch(
        SVC,
        'default',
        'st',
        'merge',
        {
          metadata: { annotations: { patchedstatus: 'true' } },
          spec: { clusterIP: '198.19.9.9' },
          status: { loadBalancer: { ingress: [{ ip: '198.18.250.1' }] } },
        },
        'status',
      ),
    );
    assert.deepEqual(child(patched, 'metadata').annotations, { patchedstatus: 'true' });
    assert.deepEqual(child(patched, 'metadata').labels, { 'test-service-static': 'true' });
    assert.equal(str(child(patched, 'spec'), 'clusterIP'), clusterIP);
    assert.deepEqual(child(patched, 'status').loadBalancer, { ingress: [{ ip: '198.18.250.1' }] });

    const current = mustValue(s.registry.get(SVC, 'default', 'st'));
    const condition = { type: 'StatusUpdate', status: 'True', reason: 'E2E', message: 'Set from e2e test' };
    const updated = mustValue(
      s.registry.update(
        SVC,
        'default',
        'st',
        { ...current, status: { ...child(current, 'status'), conditions: [condition] } },
        'status',
      ),
    );
    assert.deepEqual(child(updated, 'status').conditions, [condition]);
    assert.deepEqual(child(updated, 'metadata').annotations, { patchedstatus: 'true' });
  } finally {
    await s.stop();
  }
});
