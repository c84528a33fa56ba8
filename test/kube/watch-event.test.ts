import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseListPage } from '../../packages/agent/src/kube/list-page.js';
import type { KubeObject } from '../../packages/agent/src/kube/object-identity.js';
import { decodeWatchLine, isResourceVersionUnavailable } from '../../packages/agent/src/kube/watch-event.js';

const ev = (type: string, object: unknown) => JSON.stringify({ type, object });

test('watch lines decode to typed events, keyed namespace/name (or name when cluster-scoped)', () => {
  const added = decodeWatchLine<KubeObject>(
    ev('ADDED', { metadata: { name: 'a', namespace: 'ns', resourceVersion: '5' } }),
    true,
  );
  assert.ok(added.ok && added.event.type === 'ADDED');
  assert.deepEqual(added.event.id, { key: 'ns/a', resourceVersion: '5' });
  const node = decodeWatchLine<KubeObject>(
    ev('MODIFIED', { metadata: { name: 'n1', resourceVersion: '6' } }),
    false,
  );
  assert.ok(node.ok && node.event.type === 'MODIFIED' && node.event.id.key === 'n1');
  const bm = decodeWatchLine<KubeObject>(
    ev('BOOKMARK', { kind: 'Service', metadata: { resourceVersion: '77' } }),
    true,
  );
  assert.deepEqual(bm, { ok: true, event: { type: 'BOOKMARK', resourceVersion: '77' } });
});

test('ERROR events carry the Status; 410, Expired and "too large resource version" mean relist', () => {
  const e = decodeWatchLine<KubeObject>(
    ev('ERROR', { kind: 'Status', code: 410, reason: 'Expired', message: 'too old' }),
    true,
  );
  assert.ok(e.ok && e.event.type === 'ERROR');
  assert.deepEqual(e.event.status, { code: 410, reason: 'Expired', message: 'too old' });
  assert.ok(isResourceVersionUnavailable(e.event.status));
  assert.ok(isResourceVersionUnavailable({ code: 500, reason: 'Expired' }));
  assert.ok(isResourceVersionUnavailable({ code: 504, causes: ['ResourceVersionTooLarge'] }));
  assert.ok(!isResourceVersionUnavailable({ code: 500, reason: 'InternalError', message: 'etcd down' }));
});

test('bad lines are rejected with a reason and a hint naming the object when possible', () => {
  const cases: [string, boolean, string][] = [
    ['{not json', true, 'line is not JSON'],
    ['"a string"', true, 'watch event is not an object'],
    [ev('ADDED', 'x'), true, 'ADDED event: object is a string, not an object'],
    [
      ev('ADDED', { metadata: { name: 'a', resourceVersion: '1' } }),
      true,
      'ADDED event: metadata.namespace is missing or not a string',
    ],
    [
      ev('ADDED', { metadata: { name: 'a', namespace: 'ns', resourceVersion: 1 } }),
      true,
      'ADDED event: metadata.resourceVersion is missing or not a string',
    ],
    [
      ev('ADDED', { metadata: { name: 'n', namespace: 'ns', resourceVersion: '1' } }),
      false,
      'ADDED event: metadata.namespace is set on a cluster-scoped object',
    ],
    [ev('BOOKMARK', { metadata: {} }), true, 'BOOKMARK event without metadata.resourceVersion'],
    [ev('PATCHED', {}), true, 'unknown watch event type "PATCHED"'],
  ];
  for (const [line, namespaced, reason] of cases) {
    const d = decodeWatchLine<KubeObject>(line, namespaced);
    assert.ok(!d.ok, line);
    assert.ok(d.reason.startsWith(reason), `${d.reason} starts with ${reason}`);
  }
  const hinted = decodeWatchLine<KubeObject>(
    ev('DELETED', { metadata: { name: 'svc', namespace: 'prod' } }),
    true,
  );
  assert.ok(!hinted.ok && hinted.hint === 'prod/svc');
});

test('list pages: metadata, continue token, items: null, and bad items next to good ones', () => {
  const page = parseListPage<KubeObject>(
    JSON.stringify({
      metadata: { resourceVersion: '10', continue: 'tok' },
      items: [{ metadata: { name: 'a', namespace: 'ns', resourceVersion: '3' } }, null],
    }),
    true,
  );
  assert.ok(page.ok);
  assert.equal(page.page.resourceVersion, '10');
  assert.equal(page.page.continueToken, 'tok');
  assert.deepEqual(
    page.page.items.map((i) => i.ok),
    [true, false],
  );
  const empty = parseListPage<KubeObject>('{"metadata":{"resourceVersion":"4"},"items":null}', true);
  assert.ok(empty.ok && empty.page.items.length === 0 && empty.page.continueToken === '');
  for (const [body, reason] of [
    ['[]', 'list body is not an object'],
    ['{"items":[]}', 'list metadata is missing'],
    ['{"metadata":{},"items":[]}', 'list metadata.resourceVersion is missing or not a string'],
    ['{"metadata":{"resourceVersion":"1"},"items":{}}', 'list items is not an array'],
  ] as const) {
    const r = parseListPage<KubeObject>(body, true);
    assert.ok(!r.ok);
    assert.equal(r.reason, reason);
  }
});
