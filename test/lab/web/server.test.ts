// The web view's server without a lab: auth (401 without the token, 403 for a foreign Host, the URL's token
// traded for a cookie, POSTs needing the header), the SSE feed (a snapshot first, then the events published),
// and bad requests answered with a message while the server keeps serving.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { ActionError } from '../../../packages/lab/src/web/actions.js';
import { EventHub, type WebSnapshot } from '../../../packages/lab/src/web/hub.js';
import { startWebServer, type WebServer } from '../../../packages/lab/src/web/http.js';
import { cookieName } from '../../../packages/lab/src/web/auth.js';
import { onRecords } from '../../helpers/stream.js';
import { httpCall as call, type HttpReply } from '../../helpers/http-call.js';

const TOKEN = 'a'.repeat(48);

/** Reads SSE messages from /events until `count` arrived. */
function readEvents(
  port: number,
  cookie: string,
  count: number,
): Promise<{ event: string; data: unknown }[]> {
  return new Promise((resolve, reject) => {
    const got: { event: string; data: unknown }[] = [];
    const req = request({ host: '127.0.0.1', port, path: '/events', headers: { cookie } }, (res) => {
      assert.equal(res.statusCode, 200);
      assert.match(String(res.headers['content-type']), /^text\/event-stream/);
      onRecords(res, '\n\n', (msg) => {
        if (msg.startsWith(':')) return;
        const event = /^event: (.*)$/m.exec(msg)?.[1] ?? '';
        const data = /^data: (.*)$/m.exec(msg)?.[1] ?? 'null';
        got.push({ event, data: JSON.parse(data) as unknown });
        if (got.length === count) {
          req.destroy();
          resolve(got);
        }
      });
    });
    req.on('error', (e) => (got.length >= count ? undefined : reject(e)));
    req.end();
  });
}

describe('lab web server', () => {
  let server: WebServer;
  const calls: string[] = [];
  const snapshot: WebSnapshot = {
    lab: {
      prefix: 'kptstest',
      nodes: [{ name: 'worker', namespace: 'kptstest-worker' }],
      startedAt: 'now',
      windowMs: 1000,
    },
    objects: [],
    samples: {},
    syncs: [],
    rulesets: [],
    experiments: [],
    runs: [],
  };
  const hub = new EventHub(() => snapshot);
  let cookie = '';

  before(async () => {
    server = await startWebServer({
      token: TOKEN,
      hub,
      assets: new Map([['/assets/app.js', { type: 'text/javascript', body: Buffer.from('// app') }]]),
      indexHtml: '<meta name="lab-token" content="{{TOKEN}}">',
      handlers: {
        run: (id) => {
          calls.push(`run ${id}`);
          if (id === 'busy') return Promise.reject(new ActionError('"x" is still running', 409));
          return Promise.resolve({ id });
        },
        explain: (ns, name) => {
          calls.push(`explain ${ns}/${name}`);
          return Promise.reject(new ActionError(`Service "${name}" not found in namespace "${ns}"`));
        },
        trace: () => Promise.reject(new Error('boom')),
      },
    });
    cookie = `${cookieName(server.port)}=${TOKEN}`;
  });
  after(() => server.close());

  test('listens on 127.0.0.1 only, and the URL carries the token', () => {
    assert.equal(server.url, `http://127.0.0.1:${server.port}/?token=${TOKEN}`);
  });

  test('every request without the token is refused with 401: the page, its files, the feed, the actions', async () => {
    for (const path of ['/', '/assets/app.js', '/events', '/nothing', '/?token=wrong']) {
      const r = await call(server.port, path);
      assert.equal(r.status, 401, path);
      assert.match(r.body, /token/);
    }
    const wrongCookie = await call(server.port, '/', {
      headers: { cookie: `${cookieName(server.port)}=${'b'.repeat(48)}` },
    });
    assert.equal(wrongCookie.status, 401);
    // Another port's cookie is not ours.
    const otherPort = await call(server.port, '/', {
      headers: { cookie: `${cookieName(server.port + 1)}=${TOKEN}` },
    });
    assert.equal(otherPort.status, 401);
    const post = await call(server.port, '/api/run/scale-12', { method: 'POST', headers: { cookie } });
    assert.equal(
      post.status,
      401,
      'the cookie alone does not allow a POST: a page on another port would send it too',
    );
    assert.deepEqual(calls, []);
  });

  test('a foreign Host header is refused (DNS rebinding)', async () => {
    const r = await call(server.port, `/?token=${TOKEN}`, {
      headers: { host: `evil.example:${server.port}` },
    });
    assert.equal(r.status, 403);
  });

  test('the token in the URL becomes a cookie and leaves the address bar; the cookie then opens the page', async () => {
    const r = await call(server.port, `/?token=${TOKEN}`);
    assert.equal(r.status, 303);
    assert.equal(r.headers.location, '/');
    const set = String(r.headers['set-cookie']);
    assert.match(set, new RegExp(`^${cookieName(server.port)}=${TOKEN};`));
    assert.match(set, /HttpOnly/);
    assert.match(set, /SameSite=Strict/);
    const page = await call(server.port, '/', { headers: { cookie } });
    assert.equal(page.status, 200);
    assert.equal(page.body, `<meta name="lab-token" content="${TOKEN}">`);
    const asset = await call(server.port, '/assets/app.js', { headers: { cookie } });
    assert.equal(asset.status, 200);
    assert.equal(asset.body, '// app');
    assert.match(String(asset.headers['content-security-policy']), /default-src 'none'/);
  });

  test('actions need the header; bad input gets a message, and the server keeps serving', async () => {
    const headers = { 'x-lab-token': TOKEN, 'content-type': 'application/json' };
    /** POSTs `body` (if any) to `path` with the header actions need. */
    const post = (path: string, body?: string): Promise<HttpReply> =>
      call(server.port, path, { method: 'POST', headers, ...(body !== undefined ? { body } : {}) });
    const ok = await post('/api/run/scale-12');
    assert.equal(ok.status, 200);
    assert.deepEqual(JSON.parse(ok.body), { id: 'scale-12' });
    const busy = await post('/api/run/busy');
    assert.equal(busy.status, 409);
    assert.deepEqual(JSON.parse(busy.body), { error: '"x" is still running' });
    const missing = await post('/api/explain', '{"namespace":"svc"}');
    assert.equal(missing.status, 400);
    assert.deepEqual(JSON.parse(missing.body), { error: '"name" is missing' });
    const notJson = await post('/api/trace', '{');
    assert.equal(notJson.status, 400);
    assert.match(notJson.body, /not JSON/);
    const unknown = await post('/api/explain', '{"namespace":"svc","name":"nope"}');
    assert.equal(unknown.status, 400);
    assert.match(JSON.parse(unknown.body).error, /Service "nope" not found/);
    const failing = await post('/api/trace', '{"from":"client","to":"web.svc"}');
    assert.equal(failing.status, 500);
    assert.deepEqual(JSON.parse(failing.body), { error: 'boom' });
    const after = await call(server.port, '/', { headers: { cookie } });
    assert.equal(after.status, 200, 'still serving');
    assert.deepEqual(calls, ['run scale-12', 'run busy', 'explain svc/nope']);
  });

  test('the feed sends a snapshot first, then what is published', async () => {
    const events = readEvents(server.port, cookie, 3);
    // The hub attaches the page once its request arrives.
    while (hub.size === 0) await new Promise((r) => setImmediate(r));
    hub.publish({ event: 'sync', data: { node: 'worker', t: 1234 } });
    hub.publish({ event: 'sample', data: { node: 'worker', sample: { t: 1, up: false } } });
    const got = await events;
    assert.deepEqual(
      got.map((e) => e.event),
      ['snapshot', 'sync', 'sample'],
    );
    assert.deepEqual(got[0]?.data, snapshot);
    assert.deepEqual(got[1]?.data, { node: 'worker', t: 1234 });
  });

  test('a page that stops reading is cut off instead of buffering without bound', () => {
    const small = new EventHub(() => snapshot, 10);
    let ended = false;
    let buffered = 0;
    small.attach({
      write: (chunk) => {
        buffered += chunk.length;
        return false;
      },
      buffered: () => buffered,
      end: () => void (ended = true),
    });
    small.publish({ event: 'sync', data: { node: 'worker', t: 1 } });
    assert.equal(ended, true);
    assert.equal(small.size, 0);
  });
});
