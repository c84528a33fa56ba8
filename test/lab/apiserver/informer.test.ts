// @kubernetes/client-node's informer against the lab API server: it lists and watches without a single error
// through a BOOKMARK, a 410 Expired (history compacted while it was disconnected) and an in-place restart.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CoreV1Api, KubeConfig, makeInformer, type V1ConfigMap } from '@kubernetes/client-node';
import { startApiServer, type ApiServer } from '../../../packages/lab/src/apiserver/index.js';
import { resourceByKind } from '../../../packages/lab/src/apiserver/resources.js';
import { waitFor } from '../../helpers/wait-for.js';

const CM = resourceByKind('ConfigMap');

/** Until the informer's callbacks have made `cond` true (they run on the informer's own schedule). */
async function until(what: string, cond: () => boolean): Promise<void> {
  await waitFor(what, () => (cond() ? true : undefined), { timeoutMs: 30_000, intervalMs: 25 });
}

test('makeInformer survives a bookmark, a 410 and a restart', { timeout: 90_000 }, async () => {
  let server: ApiServer = await startApiServer({ bookmarkIntervalMs: 100, historyLimit: 50 });
  const create = (name: string): void => {
    const r = server.registry.create(CM, 'default', { metadata: { name }, data: { v: name } });
    assert.ok(r.ok);
  };
  try {
    for (const n of ['a', 'b', 'c']) create(n);
    const kc = new KubeConfig();
    kc.loadFromString(server.kubeconfig());
    const api = kc.makeApiClient(CoreV1Api);
    let lists = 0;
    const listFn = () => {
      lists++;
      return api.listNamespacedConfigMap({ namespace: 'default' });
    };
    // The informer never asks for bookmarks itself; the query in the path is carried into its watch URL.
    const informer = makeInformer<V1ConfigMap>(
      kc,
      '/api/v1/namespaces/default/configmaps?allowWatchBookmarks=true',
      listFn,
    );
    const errors: unknown[] = [];
    const added: string[] = [];
    const deleted: string[] = [];
    informer.on('error', (e) => errors.push(e));
    informer.on('add', (o) => added.push(o.metadata?.name ?? ''));
    informer.on('delete', (o) => deleted.push(o.metadata?.name ?? ''));
    await informer.start();
    await until('initial list', () => added.length === 3);

    // A change to another kind moves the global resourceVersion; only a BOOKMARK can tell the informer.
    server.registry.create(resourceByKind('Namespace'), '', { metadata: { name: 'other' } });
    const target = String(server.store.resourceVersion);
    // makeInformer returns a ListWatch, whose latestResourceVersion() the Informer type does not declare.
    const listWatch = informer as unknown as { latestResourceVersion(): string };
    await until('bookmark', () => listWatch.latestResourceVersion() === target);
    assert.equal(lists, 1);

    // 410: with the informer's watch cut, changes happen and the history is dropped; its re-watch gets an
    // ERROR 410 event, and it relists (deleting what vanished, adding what appeared).
    // All in one turn of the event loop, so the informer cannot re-watch in between.
    server.dropWatches();
    server.registry.delete(CM, 'default', 'a');
    create('d');
    server.store.compact();
    await until('relist after 410', () => lists === 2 && added.includes('d') && deleted.includes('a'));
    assert.deepEqual(
      informer
        .list()
        .map((o) => o.metadata?.name)
        .sort(),
      ['b', 'c', 'd'],
    );

    // Restart with the informer's new watch established (a bookmark for a fresh version reached it): otherwise its
    // connection may still sit in the listener's accept queue, which the kernel resets when the listener closes, and
    // the library's informer stops for good on that error.
    server.registry.create(resourceByKind('Namespace'), '', { metadata: { name: 'other2' } });
    const beforeRestart = String(server.store.resourceVersion);
    await until('watch re-established', () => listWatch.latestResourceVersion() === beforeRestart);

    // Restart in place: same port, token, certificate and objects; the informer re-watches and keeps going.
    server = await server.restart();
    create('e');
    await until('event after restart', () => added.includes('e'));
    assert.deepEqual(
      informer
        .list()
        .map((o) => o.metadata?.name)
        .sort(),
      ['b', 'c', 'd', 'e'],
    );
    assert.deepEqual(errors, []);
    await informer.stop();
  } finally {
    await server.stop();
  }
});
