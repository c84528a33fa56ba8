// The agent-process bench's logic (bench/api-server.ts, bench/agent-process.ts's log reading, bench/nft-monitor.ts's
// line match, bench/agent-table.ts): the API server must page and frame exactly as the agent's own parsers read
// (list-page.ts, watch-event.ts), or the bench would time an agent that relists or drops events. Its timings are
// the bench's business, not a test's.
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, test } from 'node:test';
import { parseListPage } from 'kube-proxy-ts/kube/list-page.js';
import { decodeWatchLine } from 'kube-proxy-ts/kube/watch-event.js';
import type { ApiObject } from '../../bench/api-server.js';
import {
  BenchApiServer,
  Collection,
  continueToken,
  listPage,
  objectKey,
  selectedName,
  watchLine,
} from '../../bench/api-server.js';
import { parseRecord, syncRecord } from '../../bench/agent-process.js';
import type { AgentRow } from '../../bench/agent-table.js';
import { agentMarkdown, histogramTotals, median } from '../../bench/agent-table.js';
import { lastEndpointAddress, nodeObject, serviceObject, sliceObject } from '../../bench/agent-workload.js';
import { addsAddress } from '../../bench/nft-monitor.js';

function collectionOf(n: number): Collection {
  const c = new Collection();
  for (let i = 0; i < n; i++)
    c.put(
      `ns/o${i}`,
      JSON.stringify({ metadata: { name: `o${i}`, namespace: 'ns', resourceVersion: String(i + 1) } }),
    );
  return c;
}

/** Follows continue tokens as the agent's reflector does; returns the names in order and the page count. */
function listAll(c: Collection, limit: number, rv: number): { names: string[]; pages: number } {
  const names: string[] = [];
  let cont = '';
  let pages = 0;
  for (;;) {
    const a = listPage(c, { limit: String(limit), ...(cont ? { continue: cont } : {}) }, rv);
    assert.equal(a.status, 200);
    const parsed = parseListPage<ApiObject>(a.body, true);
    assert.ok(parsed.ok, a.body.slice(0, 200));
    pages += 1;
    assert.equal(parsed.page.resourceVersion, String(rv));
    for (const item of parsed.page.items) names.push(item.ok ? item.object.metadata.name : '!');
    cont = parsed.page.continueToken;
    if (cont === '') return { names, pages };
  }
}

describe('listPage', () => {
  test('pages of `limit` in order, every object once, the last page without a continue token', () => {
    const { names, pages } = listAll(collectionOf(1234), 500, 7);
    assert.equal(pages, 3);
    assert.deepEqual(
      names,
      Array.from({ length: 1234 }, (_, i) => `o${i}`),
    );
  });

  test('an exact multiple of the limit ends without an empty page', () => {
    assert.equal(listAll(collectionOf(1000), 500, 7).pages, 2);
  });

  test('no limit: everything in one page', () => {
    const { names, pages } = listAll(collectionOf(3), 0, 7);
    assert.deepEqual([names, pages], [['o0', 'o1', 'o2'], 1]);
  });

  test('a continue token from before a write has expired (410); a garbled one is a bad request', () => {
    const c = collectionOf(10);
    assert.equal(listPage(c, { limit: '5', continue: continueToken(7, 5) }, 8).status, 410);
    assert.equal(listPage(c, { limit: '5', continue: 'bm9wZQ' }, 8).status, 400);
    assert.equal(listPage(c, { limit: '-1' }, 8).status, 400);
  });

  test('fieldSelector metadata.name=X: that object alone, or none', () => {
    const c = new Collection();
    c.put('node-a', JSON.stringify({ metadata: { name: 'node-a' } }));
    c.put('node-b', JSON.stringify({ metadata: { name: 'node-b' } }));
    const one = JSON.parse(listPage(c, { fieldSelector: 'metadata.name=node-b' }, 3).body) as {
      items: ApiObject[];
    };
    assert.deepEqual(
      one.items.map((o) => o.metadata.name),
      ['node-b'],
    );
    const none = JSON.parse(listPage(c, { fieldSelector: 'metadata.name=x' }, 3).body) as {
      items: unknown[];
    };
    assert.deepEqual(none.items, []);
    assert.equal(selectedName('spec.clusterIP!=None'), undefined);
  });

  test('a replaced object keeps its place in the list', () => {
    const c = collectionOf(3);
    assert.equal(
      c.put('ns/o1', JSON.stringify({ metadata: { name: 'o1', namespace: 'ns', resourceVersion: '99' } })),
      false,
    );
    assert.deepEqual(listAll(c, 2, 1).names, ['o0', 'o1', 'o2']);
  });
});

test('watchLine is one line the agent decodes as the event', () => {
  const text = JSON.stringify({ metadata: { name: 'a', namespace: 'n', resourceVersion: '9' } });
  const line = watchLine('MODIFIED', text);
  assert.ok(line.endsWith('}\n') && line.indexOf('\n') === line.length - 1);
  const e = decodeWatchLine<ApiObject>(line.trim(), true);
  assert.ok(e.ok && e.event.type === 'MODIFIED' && e.event.id.key === 'n/a', JSON.stringify(e));
});

interface Got {
  readonly status: number;
  readonly body: string;
}

function get(port: number, path: string, token = 'tok'): Promise<Got> {
  return new Promise((resolve, reject) => {
    const req = http.get(
      { host: '127.0.0.1', port, path, headers: { authorization: `Bearer ${token}` } },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (s: string) => (body += s));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
  });
}

/** Opens a watch and hands back its lines as they come; close() ends it. */
function watch(port: number, path: string): { next(): Promise<string>; close(): void } {
  const lines: string[] = [];
  const waiting: ((l: string) => void)[] = [];
  let partial = '';
  const req = http.get({ host: '127.0.0.1', port, path, headers: { authorization: 'Bearer tok' } }, (res) => {
    res.setEncoding('utf8');
    res.on('data', (s: string) => {
      const parts = (partial + s).split('\n');
      partial = parts.pop() ?? '';
      for (const l of parts) {
        const w = waiting.shift();
        if (w) w(l);
        else lines.push(l);
      }
    });
  });
  req.on('error', () => undefined);
  return {
    next: () => {
      const l = lines.shift();
      return l !== undefined ? Promise.resolve(l) : new Promise((resolve) => waiting.push(resolve));
    },
    close: () => req.destroy(),
  };
}

describe('BenchApiServer', () => {
  const api = new BenchApiServer('tok');
  const SLICES = '/apis/discovery.k8s.io/v1/endpointslices';
  before(async () => {
    api.load('/api/v1/nodes', [nodeObject()]);
    api.load(
      SLICES,
      [0, 1, 2].map((i) => sliceObject(i, 10, 0)),
    );
    await api.listen('127.0.0.1', 0);
  });
  after(() => api.close());

  test('lists need the token; unknown paths are 404; POSTs (Events) are 201', async () => {
    assert.equal((await get(api.port, SLICES, 'wrong')).status, 401);
    assert.equal((await get(api.port, '/apis/networking.k8s.io/v1/servicecidrs?limit=1')).status, 404);
    const posted = await new Promise<number>((resolve, reject) => {
      const req = http.request(
        { host: '127.0.0.1', port: api.port, path: '/api/v1/namespaces/default/events', method: 'POST' },
        (res) => (res.resume(), resolve(res.statusCode ?? 0)),
      );
      req.setHeader('authorization', 'Bearer tok');
      req.on('error', reject);
      req.end('{}');
    });
    assert.equal(posted, 201);
  });

  test('a list, then a watch from its resourceVersion gets each later write as one event', async () => {
    const listed = await get(api.port, `${SLICES}?limit=2`);
    const page = parseListPage<ApiObject>(listed.body, true);
    assert.ok(page.ok && page.page.items.length === 2 && page.page.continueToken !== '');
    const w = watch(api.port, `${SLICES}?watch=true&resourceVersion=${page.page.resourceVersion}`);
    try {
      // Live or replayed from history (the watch may open after the write): the same one event either way.
      const changed = sliceObject(1, 10, 3);
      const result = api.write(SLICES, changed);
      const e = decodeWatchLine<ApiObject>(await w.next(), true);
      assert.ok(e.ok && e.event.type === 'MODIFIED', JSON.stringify(e));
      assert.equal(objectKey(e.event.object), objectKey(changed));
      assert.equal(e.event.id.resourceVersion, String(result.rv));
      // A uid as a real server stamps it: the listed object's, kept by the update; another object has another.
      const listedObjects = page.page.items.map((c) => (c.ok ? c.object : undefined));
      const uidOf = (o: ApiObject | undefined): unknown => o?.metadata.uid;
      const listedOne = listedObjects.find((o) => o !== undefined && objectKey(o) === objectKey(changed));
      assert.ok(typeof uidOf(listedOne) === 'string' && uidOf(listedOne) !== '');
      assert.equal(uidOf(e.event.object), uidOf(listedOne));
      assert.notEqual(uidOf(listedObjects[0]), uidOf(listedObjects[1]));
      assert.equal(
        JSON.stringify(
          (e.event.object as unknown as { endpoints: { addresses: string[] }[] }).endpoints[9]?.addresses,
        ),
        JSON.stringify([lastEndpointAddress(1, 10, 3)]),
      );
      const added = api.write(SLICES, sliceObject(7, 10, 0));
      const e2 = decodeWatchLine<ApiObject>(await w.next(), true);
      assert.ok(e2.ok && e2.event.type === 'ADDED' && e2.event.id.resourceVersion === String(added.rv));
    } finally {
      w.close();
    }
  });

  test('a watch from before the loaded objects gets an ERROR event with 410, as real servers send', async () => {
    const got = await get(api.port, `${SLICES}?watch=true&resourceVersion=1`);
    const e = decodeWatchLine<ApiObject>(got.body.trim(), true);
    assert.ok(e.ok && e.event.type === 'ERROR' && e.event.status.code === 410, got.body);
  });

  test('a Node watch with a name selector hears only that Node', async () => {
    const listed = await get(api.port, '/api/v1/nodes?fieldSelector=metadata.name%3Dbench-node');
    const page = parseListPage<ApiObject>(listed.body, false);
    assert.ok(page.ok);
    assert.deepEqual(
      page.page.items.map((i) => (i.ok ? i.object.metadata.name : '!')),
      ['bench-node'],
    );
    const w = watch(
      api.port,
      `/api/v1/nodes?watch=true&fieldSelector=metadata.name%3Dbench-node&resourceVersion=${page.page.resourceVersion}`,
    );
    try {
      api.write('/api/v1/nodes', { metadata: { name: 'other' } });
      api.write('/api/v1/nodes', nodeObject());
      const e = decodeWatchLine<ApiObject>(await w.next(), false);
      assert.ok(e.ok && e.event.type === 'MODIFIED' && e.event.id.key === 'bench-node', JSON.stringify(e));
    } finally {
      w.close();
    }
  });
});

describe('the agent log and the monitor', () => {
  test('a JSON record keeps its ts in ms and its fields; other lines are not records', () => {
    const r = parseRecord(
      '{"ts":1700000000.123,"caller":"x.js:1","v":2,"msg":"synced proxy rules","full":true,"ms":12.5,"operations":40}',
    );
    assert.ok(r);
    assert.equal(r.ts, 1700000000123);
    assert.deepEqual(syncRecord(r), { full: true, ms: 12.5, operations: 40 });
    assert.equal(syncRecord({ ...r, msg: 'listed' }), undefined);
    assert.equal(parseRecord('W1203 warning before the logger'), undefined);
    assert.equal(parseRecord('{"msg":"no ts"}'), undefined);
  });

  test('addsAddress matches an add holding the address, not a delete or a longer address', () => {
    const m = addsAddress('198.19.234.97');
    const at = 0;
    assert.ok(
      m({
        text: 'add element ip kube-proxy endpoints-tcp { 198.18.129.1 . tcp . 80 . 9 : 198.19.234.97 . 8080 }',
        at,
      }),
    );
    assert.ok(
      !m({
        text: 'delete element ip kube-proxy endpoints-tcp { 198.18.129.1 . tcp . 80 . 9 : 198.19.234.97 . 8080 }',
        at,
      }),
    );
    assert.ok(!m({ text: 'add element ip kube-proxy s { 198.19.234.970 }', at }));
    assert.ok(!m({ text: 'add element ip kube-proxy s { 1198.19.234.97 }', at }));
  });

  test('the one-endpoint change swaps the last endpoint, and the workload objects carry their kinds', () => {
    assert.notEqual(lastEndpointAddress(5, 10, 1), lastEndpointAddress(5, 10, 0));
    const s = serviceObject(40000);
    assert.equal(s.kind, 'Service');
    assert.deepEqual((s.spec as { clusterIPs: string[] }).clusterIPs, ['198.18.29.64']);
    assert.equal(sliceObject(3, 10, 0).kind, 'EndpointSlice');
  });
});

describe('the table', () => {
  test('histogramTotals sums sum and count over label sets', () => {
    const text = `# TYPE h histogram
h_bucket{ip_family="IPv4",le="0.001"} 1
h_sum{ip_family="IPv4"} 0.5
h_count{ip_family="IPv4"} 2
h_sum{ip_family="IPv6"} 0.25
h_count{ip_family="IPv6"} 1
h_other_sum 9
`;
    assert.deepEqual(histogramTotals(text, 'h'), { sum: 0.75, count: 3 });
  });

  test('median of odd and even runs; a markdown row per run, flagged when the table was gone', () => {
    assert.equal(median([3, 1, 2]), 2);
    assert.equal(median([4, 1, 2, 3]), 2.5);
    const row: AgentRow = {
      layout: 'flat',
      extraFlags: '',
      services: 1000,
      endpointsPerService: 10,
      executor: 'library',
      children: {},
      upMs: 500,
      listAskedMs: 600,
      listServedMs: 700,
      listMs: 800,
      firstSyncMs: 1000,
      firstSyncOwnMs: 200,
      peakRssMiB: 100,
      settledRssMiB: 90,
      peakRssAfterChangesMiB: 100,
      changeMs: [1, 2, 3],
      revertMs: [1, 2, 3],
      ackMs: [1.5, 0.5, 7, 2],
      doneMs: [3, 2.5, 9],
      countedMs: [2.5, 4, 3],
      scrapeMs: [1.25, 0.75],
      changeSyncMs: [1, 1, 1],
      metricsPartialMeanMs: 1,
      observerMs: [0.3],
      stopMs: 10,
      exitCode: 0,
      tableKept: false,
      restartUpMs: 500,
      restartListAskedMs: 600,
      restartListMs: 800,
      restartSyncMs: 1000,
      restartOwnMs: 200,
      restartOperations: 5,
      restartPeakRssMiB: 100,
      loadBefore: 1,
      loadAfter: 1,
    };
    const md = agentMarkdown([row]).split('\n');
    assert.equal(md.length, 3);
    assert.ok(md[2]?.startsWith('| flat | 1000 | 0.50 |') && md[2].includes('2.00 (1.00–3.00)'), md[2]);
    assert.ok(md[2]?.includes('| 2.00 | 1.8 (7.0) | 3.0 (9.0) | 3.00 (4.00) | 1.00 (1.25) |'), md[2]);
    assert.ok(md[2]?.includes('TABLE GONE'), md[2]);
    assert.ok(!agentMarkdown([{ ...row, tableKept: true }]).includes('TABLE GONE'));
  });
});
