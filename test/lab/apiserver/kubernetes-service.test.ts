// default/kubernetes as kube-apiserver makes it at start: the first address of the primary service range, port
// https 443 → 6443, labels component=apiserver and provider=kubernetes, and an EndpointSlice (mirrored into
// Endpoints) naming the first node's InternalIP of that family. Kept across a restart from a snapshot; IPv6 when
// the primary range is IPv6.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startApiServer, type ApiServer } from '../../../packages/lab/src/apiserver/index.js';
import { arr, child, isObject, str, type JsonObject } from '../../../packages/lab/src/apiserver/json.js';
import { resourceByKind } from '../../../packages/lab/src/apiserver/resources.js';

const SVC = resourceByKind('Service');
const SLICE = resourceByKind('EndpointSlice');
const ENDPOINTS = resourceByKind('Endpoints');

async function withServer(serviceCIDR: string, fn: (s: ApiServer) => Promise<void>): Promise<void> {
  const s = await startApiServer({
    tls: false,
    serviceCIDR,
    nodes: [
      { name: 'control-plane', internalIPs: ['198.18.0.10', '2001:db8::10'] },
      { name: 'worker', internalIPs: ['198.18.0.11', '2001:db8::11'] },
    ],
  });
  try {
    await fn(s);
  } finally {
    await s.stop();
  }
}

function kubernetesObjects(s: ApiServer): { svc?: JsonObject; slice?: JsonObject } {
  const svc = s.store.get(SVC, 'default', 'kubernetes');
  const slice = s.store.get(SLICE, 'default', 'kubernetes');
  return { ...(svc ? { svc } : {}), ...(slice ? { slice } : {}) };
}

test('the API server starts with default/kubernetes: first address of the range, https 443 → 6443, its slice', async () => {
  await withServer('198.19.0.0/16', async (s) => {
    const { svc, slice } = kubernetesObjects(s);
    assert.ok(svc, 'Service default/kubernetes exists');
    assert.deepEqual(child(svc, 'metadata').labels, { component: 'apiserver', provider: 'kubernetes' });
    const spec = child(svc, 'spec');
    assert.equal(str(spec, 'clusterIP'), '198.19.0.1');
    assert.equal(str(spec, 'type'), 'ClusterIP');
    assert.deepEqual(
      arr(spec, 'ports')
        .filter(isObject)
        .map((p) => [p.name, p.port, p.targetPort, p.protocol]),
      [['https', 443, 6443, 'TCP']],
    );
    assert.ok(slice, 'EndpointSlice default/kubernetes exists');
    assert.equal(str(slice, 'addressType'), 'IPv4');
    assert.equal(child(slice, 'metadata').labels?.['kubernetes.io/service-name' as never], 'kubernetes');
    assert.deepEqual(
      arr(slice, 'endpoints')
        .filter(isObject)
        .map((e) => e.addresses),
      [['198.18.0.10']],
    );
    assert.deepEqual(
      arr(slice, 'ports')
        .filter(isObject)
        .map((p) => [p.name, p.port]),
      [['https', 6443]],
    );
    const endpoints = s.store.get(ENDPOINTS, 'default', 'kubernetes');
    assert.ok(endpoints, 'Endpoints default/kubernetes');
    assert.equal(JSON.stringify(endpoints.subsets).includes('198.18.0.10'), true);
  });
});

test('a second Service does not get the kubernetes Service address', async () => {
  await withServer('198.19.0.0/16', (s) => {
    const r = s.registry.create(SVC, 'default', {
      metadata: { name: 'web' },
      spec: { selector: { app: 'web' }, ports: [{ port: 80 }] },
    });
    assert.ok(r.ok);
    assert.notEqual(str(child(r.value, 'spec'), 'clusterIP'), '198.19.0.1');
    return Promise.resolve();
  });
});

test('with an IPv6 primary range, default/kubernetes is IPv6 and its slice names the node IPv6 address', async () => {
  await withServer('2001:db8:ff::/112,198.19.0.0/16', (s) => {
    const { svc, slice } = kubernetesObjects(s);
    assert.equal(str(child(svc, 'spec'), 'clusterIP'), '2001:db8:ff::1');
    assert.equal(str(slice, 'addressType'), 'IPv6');
    assert.deepEqual(
      arr(slice, 'endpoints')
        .filter(isObject)
        .map((e) => e.addresses),
      [['2001:db8::10']],
    );
    return Promise.resolve();
  });
});

test('a server restored from a snapshot keeps the same default/kubernetes (no second create)', async () => {
  await withServer('198.19.0.0/16', async (s) => {
    const before = kubernetesObjects(s).svc;
    const restored = await startApiServer({
      tls: false,
      serviceCIDR: '198.19.0.0/16',
      restore: s.store.snapshot(),
    });
    try {
      const after = kubernetesObjects(restored).svc;
      assert.equal(child(after, 'metadata').uid, child(before, 'metadata').uid);
    } finally {
      await restored.stop();
    }
  });
});
