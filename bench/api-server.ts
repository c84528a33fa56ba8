// The API server of the agent-process bench (bench/agent-run.ts): just what kube-proxy-ts asks of a real one, served
// from memory. Each object is kept as its JSON text, stamped with its uid and resourceVersion once (as a real
// server stamps them: the uid made at create and kept across updates, here one per path and key), so that a paginated
// LIST of 100,000 EndpointSlices costs this process a join of 500 strings per page, not a serialisation, and its
// own memory (not the agent's) holds the cluster.
//
// What is served: LIST with limit/continue (a continue token is the list's resourceVersion and an offset; a write
// between two pages makes it expire, 410, as a compacted etcd's would, since this server keeps no snapshots);
// WATCH from a resourceVersion (history replayed, then one `{"type":…,"object":…}` line per event, ended after
// timeoutSeconds; older than the history: an ERROR event with 410, as real servers send); the fieldSelector
// `metadata.name=X` (the agent's Node watch); POSTs (the agent's Events) answered 201 and dropped; bearer token
// auth. Anything else is 404, so the agent sees an API server without ServiceCIDRs (it then asks no more).
// Label selectors are ignored: the bench's objects carry none of the labels the agent excludes.
import { createHash } from 'node:crypto';
import http from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { performance } from 'node:perf_hooks';

/** An object as this server holds it: the API's plain JSON, whose metadata has at least a name. */
export interface ApiObject {
  readonly metadata: { readonly name: string; readonly namespace?: string; readonly [k: string]: unknown };
  readonly [field: string]: unknown;
}

export function objectKey(o: ApiObject): string {
  return o.metadata.namespace ? `${o.metadata.namespace}/${o.metadata.name}` : o.metadata.name;
}

/** The uid a real server would have given the object at its create: stable across updates, unique per path and key. */
export function objectUid(path: string, key: string): string {
  const h = createHash('sha1').update(`${path}\n${key}`).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
}

function stamped(path: string, o: ApiObject, rv: number): string {
  const metadata = { ...o.metadata, uid: objectUid(path, objectKey(o)), resourceVersion: String(rv) };
  return JSON.stringify({ ...o, metadata });
}

export function statusBody(code: number, reason: string, message: string): string {
  return JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', code, reason, message });
}

/** One collection's objects as JSON texts, in the order they were first added (the list order). */
export class Collection {
  private readonly keys: string[] = [];
  private readonly texts: string[] = [];
  private readonly index = new Map<string, number>();

  get size(): number {
    return this.texts.length;
  }

  /** Adds or replaces the object under `key`; true when it was new. */
  put(key: string, text: string): boolean {
    const at = this.index.get(key);
    if (at !== undefined) {
      this.texts[at] = text;
      return false;
    }
    this.index.set(key, this.texts.length);
    this.keys.push(key);
    this.texts.push(text);
    return true;
  }

  get(key: string): string | undefined {
    const at = this.index.get(key);
    return at === undefined ? undefined : this.texts[at];
  }

  slice(from: number, to: number): string[] {
    return this.texts.slice(from, to);
  }
}

export interface Answer {
  readonly status: number;
  readonly body: string;
}

/** `metadata.name=X` of a fieldSelector, the one field selector served; undefined when there is none. */
export function selectedName(fieldSelector: string | undefined): string | undefined {
  const m = /^metadata\.name=(.+)$/.exec(fieldSelector ?? '');
  return m?.[1];
}

export function continueToken(rv: number, offset: number): string {
  return Buffer.from(`${rv}:${offset}`).toString('base64url');
}

function parseContinue(token: string): { rv: number; offset: number } | undefined {
  const m = /^(\d+):(\d+)$/.exec(Buffer.from(token, 'base64url').toString('utf8'));
  return m ? { rv: Number(m[1]), offset: Number(m[2]) } : undefined;
}

/**
 * One page of a LIST of `coll` at resourceVersion `rv`: `limit` objects from the continue token's offset (all of
 * them without a limit), and a continue token while more remain.
 */
export function listPage(coll: Collection, query: Readonly<Record<string, string>>, rv: number): Answer {
  const name = selectedName(query.fieldSelector);
  if (name !== undefined) {
    const text = coll.get(name);
    return { status: 200, body: listBody(rv, '', text === undefined ? [] : [text]) };
  }
  let offset = 0;
  if (query.continue) {
    const token = parseContinue(query.continue);
    if (!token) return { status: 400, body: statusBody(400, 'BadRequest', 'invalid continue token') };
    if (token.rv !== rv)
      return { status: 410, body: statusBody(410, 'Expired', 'The provided continue parameter is too old') };
    offset = token.offset;
  }
  const limit = query.limit ? Number(query.limit) : 0;
  if (!Number.isInteger(limit) || limit < 0)
    return { status: 400, body: statusBody(400, 'BadRequest', `invalid limit ${query.limit}`) };
  const end = limit === 0 ? coll.size : Math.min(coll.size, offset + limit);
  const next = end < coll.size ? continueToken(rv, end) : '';
  return { status: 200, body: listBody(rv, next, coll.slice(offset, end)) };
}

function listBody(rv: number, next: string, items: readonly string[]): string {
  const meta =
    next === '' ? `{"resourceVersion":"${rv}"}` : `{"resourceVersion":"${rv}","continue":"${next}"}`;
  return `{"kind":"List","apiVersion":"v1","metadata":${meta},"items":[${items.join(',')}]}`;
}

/** A watch event's line: `{"type":…,"object":…}` and a newline, the object's text as stored. */
export function watchLine(type: 'ADDED' | 'MODIFIED' | 'DELETED', text: string): string {
  return `{"type":"${type}","object":${text}}\n`;
}

interface Watcher {
  readonly path: string;
  readonly name: string | undefined;
  readonly res: ServerResponse;
}

interface HistoryEvent {
  readonly rv: number;
  readonly path: string;
  readonly key: string;
  readonly line: string;
}

/** What a write did: its resourceVersion, the watches it was written to, and when (performance.now(), ms). */
export interface WriteResult {
  readonly rv: number;
  readonly watchers: number;
  readonly writtenAt: number;
}

export class BenchApiServer {
  private rv = 100;
  /** Watches from before this resourceVersion cannot be served: the objects loaded up front have no history. */
  private oldestRv = 100;
  private readonly collections = new Map<string, Collection>();
  private readonly history: HistoryEvent[] = [];
  private readonly watchers = new Set<Watcher>();
  private readonly sockets = new Set<Socket>();
  private readonly server: http.Server;
  /** Per collection path: when (Date.now()) its first LIST page was asked for, and its last page last sent. */
  readonly listStarted = new Map<string, number>();
  readonly listEnded = new Map<string, number>();

  constructor(private readonly token: string) {
    this.server = http.createServer({ noDelay: true }, (req, res) => this.handle(req, res));
    this.server.on('connection', (s: Socket) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
  }

  listen(host: string, port: number): Promise<void> {
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, host, () => resolve());
    });
  }

  /** The port it listens on (listen() with port 0 picks one). */
  get port(): number {
    const a = this.server.address();
    return a !== null && typeof a === 'object' ? a.port : 0;
  }

  /** Open watches of `path`. */
  watching(path: string): number {
    return [...this.watchers].filter((w) => w.path === path).length;
  }

  /** Objects that exist from the start (no watch event, no history), each with its own resourceVersion. */
  load(path: string, objects: Iterable<ApiObject>): void {
    const coll = this.collection(path);
    for (const o of objects) coll.put(objectKey(o), stamped(path, o, ++this.rv));
    this.oldestRv = this.rv;
  }

  /** Adds or replaces one object, and sends the event to every watch of `path` at once. */
  write(path: string, o: ApiObject): WriteResult {
    const key = objectKey(o);
    const text = stamped(path, o, ++this.rv);
    const added = this.collection(path).put(key, text);
    const event: HistoryEvent = {
      rv: this.rv,
      path,
      key,
      line: watchLine(added ? 'ADDED' : 'MODIFIED', text),
    };
    this.history.push(event);
    const to = [...this.watchers].filter((w) => w.path === path && (w.name === undefined || w.name === key));
    const writtenAt = performance.now();
    for (const w of to) w.res.write(event.line);
    return { rv: this.rv, watchers: to.length, writtenAt };
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private collection(path: string): Collection {
    let c = this.collections.get(path);
    if (!c) this.collections.set(path, (c = new Collection()));
    return c;
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const reply = (a: Answer): void => {
      res.writeHead(a.status, { 'content-type': 'application/json' });
      res.end(a.body);
    };
    if (req.headers.authorization !== `Bearer ${this.token}`)
      return reply({ status: 401, body: statusBody(401, 'Unauthorized', 'Unauthorized') });
    if (req.method === 'POST') {
      req.resume();
      req.on('end', () => reply({ status: 201, body: '{}' }));
      return;
    }
    const url = new URL(req.url ?? '/', 'http://bench');
    const coll = this.collections.get(url.pathname);
    if (!coll || req.method !== 'GET')
      return reply({ status: 404, body: statusBody(404, 'NotFound', `${url.pathname} is not served`) });
    const query = Object.fromEntries(url.searchParams);
    if (query.watch === 'true' || query.watch === '1') return this.watch(url.pathname, query, res);
    const path = url.pathname;
    if (!this.listStarted.has(path)) this.listStarted.set(path, Date.now());
    const page = listPage(coll, query, this.rv);
    reply(page);
    if (page.status === 200 && !page.body.slice(0, 200).includes('"continue":'))
      this.listEnded.set(path, Date.now());
  }

  private watch(path: string, query: Record<string, string>, res: ServerResponse): void {
    const from = Number(query.resourceVersion);
    res.writeHead(200, { 'content-type': 'application/json' });
    if (!Number.isInteger(from) || from < this.oldestRv || from > this.rv) {
      const gone = statusBody(410, 'Expired', `too old resource version: ${query.resourceVersion}`);
      res.end(`{"type":"ERROR","object":${gone}}\n`);
      return;
    }
    res.flushHeaders();
    const watcher: Watcher = { path, name: selectedName(query.fieldSelector), res };
    for (const e of this.history)
      if (e.path === path && e.rv > from && (watcher.name === undefined || watcher.name === e.key))
        res.write(e.line);
    this.watchers.add(watcher);
    const seconds = Number(query.timeoutSeconds);
    const timer =
      Number.isFinite(seconds) && seconds > 0 ? setTimeout(() => res.end(), seconds * 1000) : undefined;
    res.on('close', () => {
      if (timer) clearTimeout(timer);
      this.watchers.delete(watcher);
    });
  }
}
