// The client's rate limiter counts a paged list as one request: its first page takes a token, the pages that
// follow (`continue`) do not. Upstream's informers get their first list whole in one response, so a limiter that
// charged every page would make a large cluster's start wait on qps (200 pages at 5 qps: 40 s).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createApiClient, readBody } from '../../packages/agent/src/kube/api-client.js';
import { loadClientConfig } from '../../packages/agent/src/kube/client-config.js';
import { parseListPage } from '../../packages/agent/src/kube/list-page.js';
import type { RateLimiter } from '../../packages/agent/src/kube/rate-limiter.js';
import { systemClock } from '../../packages/agent/src/util/clock.js';
import { FakeApiServer } from './helpers/fake-apiserver.js';

const PATH = '/api/v1/services';
let server: FakeApiServer;

before(async () => {
  server = await FakeApiServer.start();
  for (let i = 0; i < 7; i++) server.add(PATH, { metadata: { namespace: 'default', name: `svc-${i}` } });
});
after(() => server.close());

test('a list of four pages takes one token; a second list takes another', async () => {
  let acquired = 0;
  const counting: RateLimiter = {
    acquire: () => {
      acquired++;
      return Promise.resolve();
    },
  };
  const loaded = loadClientConfig({ master: server.url });
  assert.ok(loaded.ok);
  const client = createApiClient(loaded.config, { clock: systemClock, rateLimiter: counting });
  const listAll = async (): Promise<number> => {
    let names = 0;
    let cont = '';
    do {
      const query: Record<string, string> = { limit: '2', ...(cont === '' ? {} : { continue: cont }) };
      const res = await client.get(PATH, query, new AbortController().signal);
      assert.equal(res.status, 200);
      const page = parseListPage(await readBody(res, 1 << 20), true);
      assert.ok(page.ok, page.ok ? '' : page.reason);
      names += page.page.items.length;
      cont = page.page.continueToken;
    } while (cont !== '');
    return names;
  };
  assert.equal(await listAll(), 7);
  assert.equal(acquired, 1, 'four pages, one token');
  assert.equal(await listAll(), 7);
  assert.equal(acquired, 2);
});
