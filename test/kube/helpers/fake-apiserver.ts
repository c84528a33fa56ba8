// A controllable list/watch API server on 127.0.0.1 for the reflector tests. It keeps objects per collection path
// with a global resourceVersion counter and an event history, and can: serve paginated lists (limit/continue),
// stream watch events from a resourceVersion, send bookmarks, answer 410 (status or ERROR event), cut connections,
// go silent without closing, restart with new resourceVersions, and be down for a while. Every request is recorded
// so that tests can assert what the client asked for (resourceVersion, selectors, headers).
import http from 'node:http';
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import https from 'node:https';
import type { Socket } from 'node:net';
import { Waiters } from './recorder.js';

export interface FakeObject {
  readonly metadata: {
    readonly name: string;
    readonly namespace?: string;
    readonly resourceVersion?: string;
  };
  readonly [field: string]: unknown;
}

export interface RecordedRequest {
  /** create: a POST (the agent writes Events), answered 201 with its body; nothing is stored. */
  readonly kind: 'list' | 'watch' | 'create';
  readonly path: string;
  readonly query: Readonly<Record<string, string>>;
  readonly headers: IncomingHttpHeaders;
  /** The CN of the client certificate, when one was presented. */
  readonly clientCN?: string;
  /** A create's JSON body. */
  readonly body?: unknown;
}

interface HistoryEvent {
  readonly rv: number;
  readonly path: string;
  readonly type: 'ADDED' | 'MODIFIED' | 'DELETED';
  readonly object: FakeObject;
}

interface Watcher {
  readonly path: string;
  readonly res: ServerResponse;
  muted: boolean;
}

export interface FakeApiServerOptions {
  /** Serve HTTPS; with `clientCa`, require a client certificate signed by it. */
  readonly tls?: {
    readonly key: string | Buffer;
    readonly cert: string | Buffer;
    readonly clientCa?: string | Buffer;
  };
  /** When set, requests without "Authorization: Bearer <token>" get 401. */
  readonly token?: string;
  /** First resourceVersion minus one. */
  readonly startRv?: number;
}

function keyOf(obj: FakeObject): string {
  return obj.metadata.namespace ? `${obj.metadata.namespace}/${obj.metadata.name}` : obj.metadata.name;
}

function stamp(obj: FakeObject, rv: number): FakeObject {
  return { ...obj, metadata: { ...obj.metadata, resourceVersion: String(rv) } };
}

function status(code: number, reason: string, message: string, causes?: string[]): string {
  return JSON.stringify({
    kind: 'Status',
    apiVersion: 'v1',
    status: 'Failure',
    code,
    reason,
    message,
    ...(causes ? { details: { causes: causes.map((r) => ({ reason: r, message })) } } : {}),
  });
}

export class FakeApiServer {
  readonly requests: RecordedRequest[] = [];
  /** How a watch from a compacted resourceVersion is refused: HTTP 410, or 200 then an ERROR event (as real servers do). */
  goneMode: 'status' | 'event' = 'event';
  /** The next N requests carrying a continue token get 410 Expired. */
  expireNextContinue = 0;
  /** Answer the next N requests (any kind) with this HTTP status. */
  failNext: { count: number; code: number } = { count: 0, code: 500 };
  /** Refuse every watch as too old (a broken server), to check that relists back off. */
  watchAlwaysGone = false;
  /** Raw items appended to the first page of every list of a path (malformed-object tests). */
  readonly extraListItems = new Map<string, unknown[]>();

  private rv: number;
  private compactedRv: number;
  private readonly objects = new Map<string, Map<string, FakeObject>>();
  private history: HistoryEvent[] = [];
  private readonly watchers = new Set<Watcher>();
  private readonly sockets = new Set<Socket>();
  private readonly waiters = new Waiters();
  private server: http.Server;
  private port = 0;

  private constructor(private readonly options: FakeApiServerOptions) {
    this.rv = options.startRv ?? 100;
    this.compactedRv = this.rv;
    this.server = this.makeServer();
  }

  static async start(options: FakeApiServerOptions = {}): Promise<FakeApiServer> {
    const s = new FakeApiServer(options);
    await s.up();
    return s;
  }

  get url(): string {
    return `${this.options.tls ? 'https' : 'http'}://127.0.0.1:${this.port}`;
  }

  get resourceVersion(): string {
    return String(this.rv);
  }

  get openWatches(): number {
    return this.watchers.size;
  }

  // ---- state changes (each is one event, sent to live watchers) ----

  add(path: string, obj: FakeObject): FakeObject {
    return this.record(path, 'ADDED', obj);
  }

  update(path: string, obj: FakeObject): FakeObject {
    return this.record(path, 'MODIFIED', obj);
  }

  remove(path: string, key: string): FakeObject {
    const existing = this.collection(path).get(key);
    if (!existing) throw new Error(`fake: no ${key} in ${path}`);
    return this.record(path, 'DELETED', existing);
  }

  /** A BOOKMARK at the current resourceVersion to every live, unmuted watcher of `path`. */
  bookmark(path: string): string {
    const line = JSON.stringify({
      type: 'BOOKMARK',
      object: { kind: 'Bookmark', metadata: { resourceVersion: String(this.rv) } },
    });
    for (const w of this.watchers) if (w.path === path && !w.muted) w.res.write(`${line}\n`);
    return String(this.rv);
  }

  /** Raw bytes to every live, unmuted watcher of `path` (malformed lines, odd chunking). */
  /** Whether a watch of `path` is open now (sendRaw reaches only those). */
  watching(path: string): boolean {
    return [...this.watchers].some((w) => w.path === path && !w.muted);
  }

  sendRaw(path: string, text: string): void {
    for (const w of this.watchers) if (w.path === path && !w.muted) w.res.write(text);
  }

  /** Forget history up to now: a watch from any earlier resourceVersion is answered with 410. */
  compact(): void {
    this.compactedRv = this.rv;
    this.history = [];
  }

  // ---- connection faults ----

  /** Destroys the sockets of all open watches (no clean end). */
  cutWatches(): void {
    for (const w of this.watchers) w.res.socket?.destroy();
    this.watchers.clear();
  }

  /** Ends all open watches cleanly, as a server does when timeoutSeconds runs out. */
  closeWatches(): void {
    for (const w of this.watchers) w.res.end();
    this.watchers.clear();
  }

  /** Open watches stay open but receive nothing more; new watches work normally. */
  silenceWatches(): void {
    for (const w of this.watchers) w.muted = true;
  }

  /** Stops listening and drops every connection. */
  async down(): Promise<void> {
    for (const w of this.watchers) w.res.socket?.destroy();
    this.watchers.clear();
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.server = this.makeServer();
  }

  /** Listens (again) on the same port. */
  async up(): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(this.port, '127.0.0.1', () => resolve());
    });
    const addr = this.server.address();
    if (addr && typeof addr === 'object') this.port = addr.port;
  }

  /**
   * A restart with a new history (e.g. etcd restored elsewhere): drops every connection, renumbers resourceVersions
   * from `newBaseRv` (above or below the old ones), applies `change` to the objects, forgets all history.
   */
  restart(newBaseRv: number, change?: (objects: Map<string, Map<string, FakeObject>>) => void): void {
    for (const w of this.watchers) w.res.socket?.destroy();
    this.watchers.clear();
    for (const s of this.sockets) s.destroy();
    change?.(this.objects);
    this.rv = newBaseRv;
    for (const coll of this.objects.values())
      for (const [key, obj] of coll) coll.set(key, stamp(obj, ++this.rv));
    this.compactedRv = this.rv;
    this.history = [];
  }

  async close(): Promise<void> {
    for (const w of this.watchers) w.res.socket?.destroy();
    this.watchers.clear();
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  // ---- assertions ----

  watchesOf(path: string): RecordedRequest[] {
    return this.requests.filter((r) => r.kind === 'watch' && r.path === path);
  }

  listsOf(path: string): RecordedRequest[] {
    return this.requests.filter((r) => r.kind === 'list' && r.path === path);
  }

  waitForRequest(
    predicate: (r: RecordedRequest) => boolean,
    what: string,
    timeoutMs = 10_000,
  ): Promise<void> {
    return this.waiters.until(
      () => this.requests.some(predicate),
      what,
      timeoutMs,
      () => JSON.stringify(this.requests.map((r) => [r.kind, r.path, r.query])),
    );
  }

  /** Waits until `n` unmuted watches of `path` are open (the client is caught up and listening). */
  waitForWatchers(path: string, n: number, timeoutMs = 10_000): Promise<void> {
    const check = (): boolean => [...this.watchers].filter((w) => w.path === path && !w.muted).length >= n;
    return this.waiters.until(check, `${n} open watch(es) of ${path}`, timeoutMs, () =>
      String(this.watchers.size),
    );
  }

  // ---- internals ----

  private collection(path: string): Map<string, FakeObject> {
    let c = this.objects.get(path);
    if (!c) this.objects.set(path, (c = new Map()));
    return c;
  }

  private record(path: string, type: HistoryEvent['type'], obj: FakeObject): FakeObject {
    const stamped = stamp(obj, ++this.rv);
    if (type === 'DELETED') this.collection(path).delete(keyOf(obj));
    else this.collection(path).set(keyOf(obj), stamped);
    const event: HistoryEvent = { rv: this.rv, path, type, object: stamped };
    this.history.push(event);
    for (const w of this.watchers) if (w.path === path && !w.muted) this.send(w, event);
    return stamped;
  }

  private send(w: Watcher, e: HistoryEvent): void {
    w.res.write(`${JSON.stringify({ type: e.type, object: e.object })}\n`);
  }

  private notify(): void {
    this.waiters.notify();
  }

  private makeServer(): http.Server {
    const handler = (req: IncomingMessage, res: ServerResponse): void => this.handle(req, res);
    const tls = this.options.tls;
    const server = tls
      ? https.createServer(
          {
            key: tls.key,
            cert: tls.cert,
            ...(tls.clientCa ? { ca: tls.clientCa, requestCert: true, rejectUnauthorized: true } : {}),
          },
          handler,
        )
      : http.createServer(handler);
    const track = (socket: Socket): void => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    };
    server.on(this.options.tls ? 'secureConnection' : 'connection', track);
    return server;
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    if (req.method === 'POST') {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => this.handleRequest(req, res, Buffer.concat(chunks).toString('utf8')));
      return;
    }
    this.handleRequest(req, res, undefined);
  }

  private handleRequest(req: IncomingMessage, res: ServerResponse, posted: string | undefined): void {
    const url = new URL(req.url ?? '/', 'http://fake');
    const query = Object.fromEntries(url.searchParams);
    const watching = query.watch === 'true' || query.watch === '1';
    const kind = posted !== undefined ? 'create' : watching ? 'watch' : 'list';
    let body: unknown;
    try {
      body = posted === undefined ? undefined : (JSON.parse(posted) as unknown);
    } catch {
      body = posted;
    }
    const socket = req.socket as Socket & { getPeerCertificate?: () => { subject?: { CN?: string } } };
    const clientCN = socket.getPeerCertificate?.().subject?.CN;
    this.requests.push({
      kind,
      path: url.pathname,
      query,
      headers: req.headers,
      ...(clientCN ? { clientCN } : {}),
      ...(body !== undefined ? { body } : {}),
    });
    this.notify();
    const reply = (code: number, body: string): void => {
      res.writeHead(code, { 'content-type': 'application/json' });
      res.end(body);
    };
    if (this.options.token !== undefined && req.headers.authorization !== `Bearer ${this.options.token}`)
      return reply(401, status(401, 'Unauthorized', 'Unauthorized'));
    if (this.failNext.count > 0) {
      this.failNext.count -= 1;
      return reply(this.failNext.code, status(this.failNext.code, 'InternalError', 'injected failure'));
    }
    if (kind === 'create') return reply(201, JSON.stringify(body));
    if (watching) return this.handleWatch(url.pathname, query, res);
    return this.handleList(url.pathname, query, reply);
  }

  private handleList(
    path: string,
    query: Record<string, string>,
    reply: (code: number, body: string) => void,
  ): void {
    const all = [...this.collection(path).values()].sort((a, b) => keyOf(a).localeCompare(keyOf(b)));
    let offset = 0;
    let snapshotRv = this.rv;
    if (query.continue) {
      const token = JSON.parse(Buffer.from(query.continue, 'base64url').toString()) as {
        rv: number;
        offset: number;
      };
      if (this.expireNextContinue > 0 || token.rv < this.compactedRv) {
        this.expireNextContinue = Math.max(0, this.expireNextContinue - 1);
        return reply(410, status(410, 'Expired', 'The provided continue parameter is too old'));
      }
      offset = token.offset;
      snapshotRv = token.rv;
    }
    const limit = query.limit ? Number(query.limit) : all.length;
    const items: unknown[] = all.slice(offset, offset + limit);
    if (offset === 0) items.push(...(this.extraListItems.get(path) ?? []));
    const next = offset + limit;
    const metadata: Record<string, string> = { resourceVersion: String(snapshotRv) };
    if (next < all.length)
      metadata.continue = Buffer.from(JSON.stringify({ rv: snapshotRv, offset: next })).toString('base64url');
    reply(200, JSON.stringify({ kind: 'List', apiVersion: 'v1', metadata, items }));
  }

  private handleWatch(path: string, query: Record<string, string>, res: ServerResponse): void {
    const from = Number(query.resourceVersion ?? '');
    if (!Number.isInteger(from) || from > this.rv) {
      res.writeHead(504, { 'content-type': 'application/json' });
      res.end(
        status(504, 'Timeout', `Too large resource version: ${query.resourceVersion}, current: ${this.rv}`, [
          'ResourceVersionTooLarge',
        ]),
      );
      return;
    }
    if (from < this.compactedRv || this.watchAlwaysGone) {
      const body = status(410, 'Expired', `too old resource version: ${from} (${this.compactedRv})`);
      if (this.goneMode === 'status') {
        res.writeHead(410, { 'content-type': 'application/json' });
        res.end(body);
      } else {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(`${JSON.stringify({ type: 'ERROR', object: JSON.parse(body) as unknown })}\n`);
      }
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' });
    res.flushHeaders();
    const watcher: Watcher = { path, res, muted: false };
    for (const e of this.history) if (e.path === path && e.rv > from) this.send(watcher, e);
    this.watchers.add(watcher);
    res.on('close', () => {
      this.watchers.delete(watcher);
      this.notify();
    });
    this.notify();
  }
}
