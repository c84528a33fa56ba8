import assert from 'node:assert/strict';
import { test } from 'node:test';
import { diffStores } from '../../packages/agent/src/kube/store-diff.js';
import type { StoredObject } from '../../packages/agent/src/kube/store-diff.js';
import type { KubeObject } from '../../packages/agent/src/kube/object-identity.js';

const obj = (name: string, rv: string): [string, StoredObject<KubeObject>] => [
  `ns/${name}`,
  { object: { metadata: { name, namespace: 'ns', resourceVersion: rv } }, resourceVersion: rv },
];

test('relist difference: adds and updates in list order, then deletes; same resourceVersion is no event', () => {
  const old = new Map([obj('a', '1'), obj('b', '2'), obj('c', '3'), obj('z', '4')]);
  const next = new Map([obj('d', '9'), obj('c', '3'), obj('a', '7')]);
  const changes = diffStores(old, next).map((c) =>
    c.type === 'update'
      ? `update ${c.key} ${c.old.metadata.resourceVersion}->${c.object.metadata.resourceVersion}`
      : `${c.type} ${c.key} ${c.object.metadata.resourceVersion}`,
  );
  assert.deepEqual(changes, ['add ns/d 9', 'update ns/a 1->7', 'delete ns/b 2', 'delete ns/z 4']);
});

test('identical stores give no events; an empty new list deletes everything', () => {
  const old = new Map([obj('a', '1'), obj('b', '2')]);
  assert.deepEqual(diffStores(old, new Map([obj('a', '1'), obj('b', '2')])), []);
  assert.deepEqual(
    diffStores(old, new Map()).map((c) => `${c.type} ${c.key}`),
    ['delete ns/a', 'delete ns/b'],
  );
});
