// Watch fan-out: 50 concurrent watch clients through 5,000 changes; each must see every change exactly once and
// in resourceVersion order. Plain HTTP here (tls: false) to spend the shared CPU on the server, not on TLS.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request, type ClientRequest } from 'node:http';
import { startApiServer } from '../../../packages/lab/src/apiserver/index.js';
import { resourceByKind } from '../../../packages/lab/src/apiserver/resources.js';
import { onRecords } from '../../helpers/stream.js';
import { waitFor } from '../../helpers/wait-for.js';

const CLIENTS = 50;
const CHANGES = 5000;
const CM = resourceByKind('ConfigMap');

interface Seen {
  readonly type: string;
  readonly name: string;
  readonly rv: number;
}

test(`${CLIENTS} watchers each see all ${CHANGES} changes in order`, async () => {
  const server = await startApiServer({ tls: false });
  const requests: ClientRequest[] = [];
  try {
    const startRv = server.store.resourceVersion;
    const seen: Seen[][] = Array.from({ length: CLIENTS }, () => []);
    await Promise.all(
      seen.map(
        (events) =>
          new Promise<void>((resolve, reject) => {
            const req = request(
              `${server.url}/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=${startRv}`,
              { headers: { authorization: `Bearer ${server.token}` } },
              (res) => {
                assert.equal(res.statusCode, 200);
                onRecords(res, '\n', (line) => {
                  const ev = JSON.parse(line) as {
                    type: string;
                    object: { metadata: { name: string; resourceVersion: string } };
                  };
                  events.push({
                    type: ev.type,
                    name: ev.object.metadata.name,
                    rv: Number(ev.object.metadata.resourceVersion),
                  });
                });
                resolve();
              },
            );
            req.on('error', reject);
            req.end();
            requests.push(req);
          }),
      ),
    );

    // 5,000 changes (creates, updates, deletes), yielding to the event loop between batches as clients would.
    const expected: Seen[] = [];
    for (let i = 0; i < CHANGES; i++) {
      const name = `cm-${i % 400}`;
      const existing = server.store.get(CM, 'default', name);
      let r;
      if (!existing)
        r = server.registry.create(CM, 'default', { metadata: { name }, data: { i: String(i) } });
      else if (i % 7 === 0) r = server.registry.delete(CM, 'default', name);
      else r = server.registry.update(CM, 'default', name, { metadata: { name }, data: { i: String(i) } });
      assert.ok(r.ok, `change ${i}`);
      const type = !existing ? 'ADDED' : i % 7 === 0 ? 'DELETED' : 'MODIFIED';
      expected.push({ type, name, rv: server.store.resourceVersion });
      if (i % 100 === 99) await new Promise((r2) => setImmediate(r2));
    }
    await waitFor(
      'every client to see every change',
      () => (seen.every((s) => s.length >= CHANGES) ? true : undefined),
      { timeoutMs: 30_000 },
    ).catch(() => undefined); // the assertions below say which client missed what
    for (const [i, events] of seen.entries()) {
      assert.equal(events.length, CHANGES, `client ${i} saw ${events.length}`);
      assert.deepEqual(events, expected, `client ${i}`);
    }
  } finally {
    for (const r of requests) r.destroy();
    await server.stop();
  }
});
