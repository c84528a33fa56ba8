// The web view's HTTP server: 127.0.0.1 only, every request checked by auth.ts, the page's few files (held in
// memory, all local: no request ever leaves the host), the SSE feed, and the three things the page asks for
// (an experiment, an explanation, a trace). A bad request gets a JSON error the page shows; nothing a page sends
// can stop the server.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { authorize, sessionCookie } from './auth.js';
import type { EventHub } from './hub.js';
import { ActionError } from './actions.js';
import type { WebAsset } from './assets.js';

export interface WebHandlers {
  run(experiment: string): Promise<unknown>;
  explain(namespace: string, name: string): Promise<unknown>;
  trace(from: string, to: string): Promise<unknown>;
}

export interface WebServerOptions {
  readonly token: string;
  /** Default 0: a free port. */
  readonly port?: number;
  readonly hub: EventHub;
  readonly assets: ReadonlyMap<string, WebAsset>;
  /** The page; `{{TOKEN}}` in it is replaced by the token (the page sends it back on every POST). */
  readonly indexHtml: string;
  readonly handlers: WebHandlers;
  readonly pingMs?: number;
}

export interface WebServer {
  readonly port: number;
  /** http://127.0.0.1:PORT/?token=… : what `lab up` and `lab web` print. */
  readonly url: string;
  close(): Promise<void>;
}

const HEADERS = {
  'cache-control': 'no-store',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
} as const;

function send(
  res: ServerResponse,
  status: number,
  type: string,
  body: string | Buffer,
  extra: Record<string, string> = {},
): void {
  res.writeHead(status, { ...HEADERS, 'content-type': type, ...extra });
  res.end(body);
}

function sendJson(res: ServerResponse, status: number, value: unknown): void {
  send(res, status, 'application/json; charset=utf-8', JSON.stringify(value));
}

const MAX_BODY = 64 * 1024;

function readJson(req: IncomingMessage): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (b: Buffer) => {
      size += b.length;
      if (size > MAX_BODY) {
        reject(new ActionError(`request body over ${MAX_BODY} bytes`));
        req.destroy();
      } else chunks.push(b);
    });
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      if (text.trim() === '') return resolve({});
      try {
        const v = JSON.parse(text) as unknown;
        if (typeof v === 'object' && v !== null && !Array.isArray(v)) resolve(v as Record<string, unknown>);
        else reject(new ActionError('the request body must be a JSON object'));
      } catch {
        reject(new ActionError('the request body is not JSON'));
      }
    });
    req.on('error', reject);
  });
}

function field(body: Record<string, unknown>, name: string): string {
  const v = body[name];
  if (typeof v !== 'string' || v.trim() === '') throw new ActionError(`"${name}" is missing`);
  if (v.length > 300) throw new ActionError(`"${name}" is too long`);
  return v.trim();
}

export async function startWebServer(o: WebServerOptions): Promise<WebServer> {
  let port = 0;
  const sockets = new Set<Socket>();
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const auth = authorize(req, o.token, port);
    if (!auth.ok)
      return send(res, auth.status, 'text/plain; charset=utf-8', `${auth.status}: ${auth.reason}\n`);
    const url = new URL(req.url ?? '/', `http://127.0.0.1:${port}`);
    if (auth.fromQuery) {
      // The token leaves the address bar (and the history); the cookie carries it from now on.
      url.searchParams.delete('token');
      return send(res, 303, 'text/plain; charset=utf-8', 'see /\n', {
        location: `${url.pathname}${url.search}`,
        'set-cookie': sessionCookie(port, o.token),
      });
    }
    if (req.method === 'GET' || req.method === 'HEAD') {
      if (url.pathname === '/')
        return send(res, 200, 'text/html; charset=utf-8', o.indexHtml.replace('{{TOKEN}}', o.token));
      if (url.pathname === '/events') return events(req, res);
      if (url.pathname === '/favicon.ico') return send(res, 204, 'image/x-icon', '');
      const asset = o.assets.get(url.pathname);
      if (asset) return send(res, 200, asset.type, asset.body);
      return send(res, 404, 'text/plain; charset=utf-8', `404: ${url.pathname}\n`);
    }
    if (req.method !== 'POST')
      return send(res, 405, 'text/plain; charset=utf-8', '405\n', { allow: 'GET, POST' });
    try {
      const body = await readJson(req);
      let result: unknown;
      const run = /^\/api\/run\/([\w-]+)$/.exec(url.pathname);
      if (run?.[1] !== undefined) result = await o.handlers.run(run[1]);
      else if (url.pathname === '/api/explain')
        result = await o.handlers.explain(field(body, 'namespace'), field(body, 'name'));
      else if (url.pathname === '/api/trace')
        result = await o.handlers.trace(field(body, 'from'), field(body, 'to'));
      else throw new ActionError(`no such action: ${url.pathname}`, 404);
      sendJson(res, 200, result);
    } catch (e) {
      const status = e instanceof ActionError ? e.status : 500;
      sendJson(res, status, { error: e instanceof Error ? e.message : String(e) });
    }
  };
  const events = (req: IncomingMessage, res: ServerResponse): void => {
    res.writeHead(200, {
      ...HEADERS,
      'content-type': 'text/event-stream; charset=utf-8',
      connection: 'keep-alive',
    });
    res.flushHeaders();
    const detach = o.hub.attach({
      write: (chunk) => res.write(chunk),
      buffered: () => res.writableLength,
      end: () => res.end(),
    });
    req.on('close', detach);
  };
  const server: Server = createServer((req, res) => {
    handle(req, res).catch((e: unknown) => {
      if (!res.headersSent) sendJson(res, 500, { error: e instanceof Error ? e.message : String(e) });
      else res.end();
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port ?? 0, '127.0.0.1', () => resolve());
  });
  port = (server.address() as AddressInfo).port;
  const ping = setInterval(() => o.hub.ping(), o.pingMs ?? 15_000);
  ping.unref();
  return {
    port,
    url: `http://127.0.0.1:${port}/?token=${o.token}`,
    close: async () => {
      clearInterval(ping);
      o.hub.close();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const s of sockets) s.destroy();
      await closed;
    },
  };
}
