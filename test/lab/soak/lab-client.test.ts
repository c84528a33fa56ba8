// The soak's client against the lab's own API server (HTTPS, its CA and token): a watch that loses its place
// (its version fell out of the server's history while it was cut off) lists again, saying RESET first, and
// misses nothing.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startApiServer, type ApiServer } from '../../../packages/lab/src/apiserver/index.js';
import { labApi } from '../../../packages/lab/src/soak/lab-client.js';
import { waitFor } from '../../helpers/wait-for.js';

function configMap(name: string): object {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'default' }, data: { k: name } };
}

/** Until the client's callbacks have made `f` true (they run on the client's own schedule). */
async function until(what: string, f: () => boolean): Promise<void> {
  await waitFor(what, () => (f() ? true : undefined), { timeoutMs: 6_000, intervalMs: 20 });
}

describe('soak lab client', () => {
  let server: ApiServer | undefined;
  after(async () => server?.stop());

  test('requests carry the token; a refused one names the status and the message', async () => {
    server = await startApiServer({ historyLimit: 5 });
    const api = labApi({ url: server.url, token: server.token, caPem: server.caPem ?? '' });
    await api.request('POST', '/api/v1/namespaces/default/configmaps', configMap('a'));
    const got = (await api.request('GET', '/api/v1/namespaces/default/configmaps/a')) as {
      data: { k: string };
    };
    assert.equal(got.data.k, 'a');
    await assert.rejects(api.request('GET', '/api/v1/namespaces/default/configmaps/nope'), /404 .*not found/);
    const stranger = labApi({ url: server.url, token: 'wrong', caPem: server.caPem ?? '' });
    await assert.rejects(stranger.request('GET', '/api/v1/namespaces'), /401/);
  });

  test('a watch whose version expired lists again: RESET, then every object', async () => {
    const s = server;
    assert.ok(s);
    // The re-watch waits until the writes are done, so its version has surely left the history (5 events).
    let writesDone: () => void = () => undefined;
    const written = new Promise<void>((resolve) => (writesDone = resolve));
    const api = labApi(
      { url: s.url, token: s.token, caPem: s.caPem ?? '' },
      { beforeRewatch: () => written },
    );
    const seen: string[] = [];
    const names = new Set<string>();
    const abort = new AbortController();
    const done = api.watch(
      '/api/v1/namespaces/default/configmaps',
      (type, obj) => {
        const name = (obj as { metadata?: { name?: string } } | undefined)?.metadata?.name;
        seen.push(`${type} ${name ?? ''}`.trim());
        if (type === 'RESET') names.clear();
        else if (type === 'DELETED' && name) names.delete(name);
        else if (name) names.add(name);
      },
      abort.signal,
    );
    await until('the first list', () => names.has('a'));
    // The watch after the list must be open before it is cut: cut earlier, it would start after some of the
    // writes, stream them, and never need the relist (seen on a loaded machine).
    await until('the watch to be open', () => s.watchCount() > 0);
    // Cut the watch and, before it comes back, write more than the history holds.
    s.dropWatches();
    for (let i = 0; i < 8; i++)
      await api.request('POST', '/api/v1/namespaces/default/configmaps', configMap(`b${i}`));
    writesDone();
    await until('every object after the relist', () => names.size === 9);
    abort.abort();
    await done;
    assert.ok(seen.includes('RESET'), `a RESET came: ${seen.join(', ')}`);
    assert.deepEqual([...names].sort(), ['a', 'b0', 'b1', 'b2', 'b3', 'b4', 'b5', 'b6', 'b7']);
  });
});
