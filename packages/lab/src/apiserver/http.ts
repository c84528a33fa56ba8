// The HTTP face of the API server: authentication, routing of Kubernetes' URL space onto the registry, content
// negotiation (JSON, YAML bodies, Table output), body limits, and watch streams. Every failure answers with a
// Status object; nothing a client sends can throw past this file.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { timingSafeEqual } from 'node:crypto';
import { parse as parseYaml } from 'yaml';
import type { Clock } from 'kube-proxy-ts/util/clock.js';
import type { Logger } from 'kube-proxy-ts/util/logger.js';
import type { Duplex } from 'node:stream';
import type { Kubelet, StreamingKubelet } from '../controllers/pod-lifecycle.js';
import { rejectUpgrade, serveRemoteCommand } from './remotecommand.js';
import { apiGroup, apiGroupList, apiResourceList, apiVersions, SERVER_VERSION } from './discovery.js';
import { isObject, num, str, type JsonObject } from './json.js';
import { patchTypeOf } from './patch.js';
import { servePodLog } from './pod-log.js';
import { decodeProtobuf } from './protobuf.js';
import { OPENAPI_V2_PROTOBUF_TYPE, openapiGroupVersion, openapiRoot, openapiV2Protobuf } from './openapi.js';
import type { DeleteOptions, ListResult, Registry, Subresource } from './registry.js';
import { apiVersionOf, findResource, type ResourceType } from './resources.js';
import {
  parseFieldSelector,
  parseLabelSelector,
  type FieldSelector,
  type LabelSelector,
} from './selectors.js';
import { errors, statusObject, type ApiError, type Result } from './status.js';
import { renderTable, type IncludeObject } from './tables.js';
import { parseResourceVersion, startWatch, type ActiveWatch } from './watch.js';

export interface HttpOptions {
  readonly token: string;
  readonly registry: Registry;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly maxBodyBytes: number;
  readonly bookmarkIntervalMs: number;
  readonly maxWatchBufferedBytes: number;
  readonly serverAddress: () => string;
  /** The kubelet behind pods/log (and exec, attach); without one those answer that no kubelet runs the Pod. */
  readonly kubelet?: Kubelet & Partial<StreamingKubelet>;
  /** Streaming subresources (exec, attach) and other routes served outside the registry, tried first. */
  readonly extraRoutes?: ExtraRoute;
}

/** Answers a request (true) or leaves it to the registry (false); `parts` are the decoded path segments. */
export type ExtraRoute = (req: IncomingMessage, res: ServerResponse, parts: readonly string[]) => boolean;

type Verb = 'get' | 'list' | 'watch' | 'create' | 'update' | 'patch' | 'delete' | 'deletecollection';

interface ResourceRoute {
  readonly type: ResourceType;
  readonly namespace?: string;
  readonly name?: string;
  readonly sub: Subresource;
  readonly watchPrefix: boolean;
}

/** Maps a path below /api/v1 or /apis/<g>/<v> to a resource, namespace, name and subresource. */
export function routeResource(
  group: string,
  version: string,
  rest: readonly string[],
): ResourceRoute | undefined {
  let parts = [...rest];
  let watchPrefix = false;
  if (parts[0] === 'watch') {
    watchPrefix = true;
    parts = parts.slice(1);
  }
  let namespace: string | undefined;
  if (parts[0] === 'namespaces' && parts.length >= 3) {
    const inner = findResource(group, version, parts[2] ?? '');
    if (inner?.namespaced) {
      namespace = parts[1];
      parts = parts.slice(2);
    }
  }
  const [res, name, sub, ...extra] = parts;
  if (!res || extra.length > 0) return undefined;
  const type = findResource(group, version, res);
  if (!type) return undefined;
  if (sub !== undefined && !(type.subresources as readonly string[]).includes(sub)) return undefined;
  if (type.namespaced && namespace === undefined && name !== undefined) return undefined;
  return { type, namespace, name, sub: sub as Subresource, watchPrefix };
}

function acceptsTable(accept: string): boolean {
  return accept.split(',').some((part) => part.includes('as=Table') && part.includes('g=meta.k8s.io'));
}

const ok200 = 200;

function sendJson(res: ServerResponse, code: number, body: unknown): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  const text = JSON.stringify(body);
  res.writeHead(code, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}

function sendError(res: ServerResponse, err: ApiError): void {
  sendJson(res, err.code, statusObject(err));
}

/** Reads the body up to the limit; past it, keeps draining (so the client reads our 413) but stores nothing. */
function readBody(req: IncomingMessage, maxBytes: number): Promise<Buffer | 'too-large'> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let tooLarge = false;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > maxBytes) {
        tooLarge = true;
        chunks.length = 0;
        // A client that keeps sending far past the limit is cut off.
        if (size > maxBytes * 16) req.destroy();
      } else chunks.push(c);
    });
    req.on('end', () => resolve(tooLarge ? 'too-large' : Buffer.concat(chunks)));
    req.on('error', reject);
    req.on('close', () => {
      if (tooLarge) resolve('too-large');
    });
  });
}

/** A request body by its content type: JSON, YAML or (not for a patch) protobuf. */
function decodeBody(buf: Buffer, contentType: string, patch: boolean, kind: string): Result<unknown> {
  const base = (contentType.split(';')[0] ?? '').trim().toLowerCase();
  const text = buf.toString('utf8');
  if (base === 'application/vnd.kubernetes.protobuf' && !patch) {
    const d = decodeProtobuf(buf, kind);
    if (!('error' in d)) return { ok: true, value: d.value };
    const error = d.unsupported
      ? { ...errors.unsupportedMediaType(base), message: d.error }
      : errors.badRequest(d.error);
    return { ok: false, error };
  }
  if (patch) {
    if (!patchTypeOf(contentType)) return { ok: false, error: errors.unsupportedMediaType(base) };
  } else if (base === 'application/yaml' || base === 'application/x-yaml') {
    try {
      return { ok: true, value: parseYaml(text) as unknown };
    } catch (e) {
      return { ok: false, error: errors.badRequest(`error decoding YAML: ${String(e)}`) };
    }
  } else if (base !== '' && base !== 'application/json' && base !== '*/*') {
    return { ok: false, error: errors.unsupportedMediaType(base) };
  }
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch (e) {
    return {
      ok: false,
      error: errors.badRequest(
        `the body of the request was malformed: ${e instanceof Error ? e.message : String(e)}`,
      ),
    };
  }
}

function selectors(
  q: URLSearchParams,
  type: ResourceType,
): Result<{ labelSelector?: LabelSelector; fieldSelector?: FieldSelector }> {
  let labelSelector: LabelSelector | undefined;
  let fieldSelector: FieldSelector | undefined;
  const ls = q.get('labelSelector');
  if (ls) {
    const p = parseLabelSelector(ls);
    if ('error' in p)
      return { ok: false, error: errors.badRequest(`unable to parse requirement: ${p.error}`) };
    labelSelector = p.selector;
  }
  const fs = q.get('fieldSelector');
  if (fs) {
    const p = parseFieldSelector(fs, type.fieldSelectors);
    if ('error' in p) return { ok: false, error: errors.badRequest(p.error) };
    fieldSelector = p.selector;
  }
  return { ok: true, value: { labelSelector, fieldSelector } };
}

function listBody(
  type: ResourceType,
  r: ListResult,
  table: boolean,
  include: IncludeObject,
  now: number,
): unknown {
  const meta = {
    resourceVersion: r.resourceVersion,
    ...(r.continueToken ? { continue: r.continueToken, remainingItemCount: r.remainingItemCount } : {}),
  };
  if (table) return renderTable(type, r.items, meta, now, include);
  return { kind: type.names.listKind, apiVersion: apiVersionOf(type), metadata: meta, items: r.items };
}

function deleteOptions(q: URLSearchParams, body: unknown): DeleteOptions {
  const grace = q.get('gracePeriodSeconds') ?? (isObject(body) ? num(body, 'gracePeriodSeconds') : undefined);
  const policy = q.get('propagationPolicy') ?? (isObject(body) ? str(body, 'propagationPolicy') : undefined);
  const pre = isObject(body) && isObject(body.preconditions) ? body.preconditions : undefined;
  return {
    ...(grace !== undefined && grace !== null && !Number.isNaN(Number(grace))
      ? { gracePeriodSeconds: Number(grace) }
      : {}),
    ...(policy === 'Orphan' || policy === 'Background' || policy === 'Foreground'
      ? { propagationPolicy: policy }
      : {}),
    ...(pre ? { preconditions: { uid: str(pre, 'uid'), resourceVersion: str(pre, 'resourceVersion') } } : {}),
  };
}

/** The verb of a request on a resource route, or the error that refuses it. */
function requestVerb(method: string, route: ResourceRoute, q: URLSearchParams): Verb | ApiError {
  const { type, name, sub } = route;
  const namespace = route.namespace ?? (type.namespaced ? undefined : '');
  const isWatch = route.watchPrefix || q.get('watch') === 'true' || q.get('watch') === '1';
  let verb: Verb;
  if (method === 'GET') verb = isWatch ? 'watch' : name === undefined ? 'list' : 'get';
  else if (method === 'POST' && name === undefined) verb = 'create';
  else if (method === 'PUT' && name !== undefined) verb = 'update';
  else if (method === 'PATCH' && name !== undefined) verb = 'patch';
  else if (method === 'DELETE') verb = name === undefined ? 'deletecollection' : 'delete';
  else
    return errors.methodNotAllowed(
      method,
      name === undefined ? `the collection ${type.resource}` : `${type.resource}/${name}`,
    );
  if (sub !== undefined && !['get', 'update', 'patch'].includes(verb))
    return errors.methodNotAllowed(method, `${type.resource}/${sub}`);
  if (type.namespaced && namespace === undefined && ['create', 'delete', 'deletecollection'].includes(verb))
    return errors.noRoute();
  return verb;
}

const WRITES: readonly Verb[] = ['create', 'update', 'patch', 'delete', 'deletecollection'];
/** Verbs whose body is required (a delete's is optional). */
const BODY_REQUIRED: readonly Verb[] = ['create', 'update', 'patch'];

/** The decoded path segments of a request's URL. */
function pathParts(url: URL): string[] {
  return url.pathname
    .split('/')
    .filter((p) => p !== '')
    .map(decodeURIComponent);
}

/** The API server's HTTP side: discovery, OpenAPI, resources (with watches), pods/log, exec and attach. */
class ApiHandler {
  readonly watches = new Set<ActiveWatch>();
  private readonly expected: Buffer;

  constructor(private readonly opts: HttpOptions) {
    this.expected = Buffer.from(`Bearer ${opts.token}`);
  }

  handle(req: IncomingMessage, res: ServerResponse): void {
    this.route(req, res).catch((e: unknown) => {
      this.opts.logger.error('request failed', { method: req.method, url: req.url, error: String(e) });
      if (!res.headersSent) sendError(res, errors.internal(String(e)));
      else res.destroy();
    });
  }

  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    socket.on('error', () => socket.destroy());
    try {
      if (!this.authorized(req)) return rejectUpgrade(socket, errors.unauthorized());
      const url = new URL(req.url ?? '/', 'http://localhost');
      const parts = pathParts(url);
      if (
        !serveRemoteCommand(req, socket, head, parts, url.searchParams, this.opts.registry, this.opts.kubelet)
      )
        rejectUpgrade(socket, errors.badRequest(`${url.pathname} cannot be upgraded to a stream`));
    } catch (e) {
      this.opts.logger.error('upgrade failed', { url: req.url, error: String(e) });
      socket.destroy();
    }
  }

  private authorized(req: IncomingMessage): boolean {
    const got = Buffer.from(req.headers.authorization ?? '');
    return got.length === this.expected.length && timingSafeEqual(got, this.expected);
  }

  private async route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const parts = pathParts(url);
    const path = `/${parts.join('/')}`;
    if (path === '/healthz' || path === '/livez' || path === '/readyz') {
      res.writeHead(200, { 'Content-Type': 'text/plain' });
      res.end('ok');
      return;
    }
    if (!this.authorized(req)) return sendError(res, errors.unauthorized());
    const method = req.method ?? 'GET';
    if (this.serveDiscovery(res, method, path, parts)) return;
    let routed: ResourceRoute | undefined;
    if (parts[0] === 'api' && parts[1] === 'v1') routed = routeResource('', 'v1', parts.slice(2));
    else if (parts[0] === 'apis') routed = routeResource(parts[1] ?? '', parts[2] ?? '', parts.slice(3));
    if (this.opts.extraRoutes?.(req, res, parts)) return;
    // pods/log: the kubelet's file, not the registry's object.
    if (
      parts.length === 7 &&
      parts[0] === 'api' &&
      parts[1] === 'v1' &&
      parts[2] === 'namespaces' &&
      parts[4] === 'pods' &&
      parts[6] === 'log'
    ) {
      if (method !== 'GET') return sendError(res, errors.methodNotAllowed(method, 'pods/log'));
      const pod = this.opts.registry.get(
        findResource('', 'v1', 'pods') as ResourceType,
        parts[3] ?? '',
        parts[5] ?? '',
      );
      if (!pod.ok) return sendError(res, pod.error);
      return servePodLog(req, res, pod.value, this.opts.kubelet, url.searchParams, (e) => sendError(res, e));
    }
    if (!routed) return sendError(res, errors.noRoute());
    await this.serveResource(req, res, routed, url.searchParams);
  }

  /** Discovery and OpenAPI documents; false when `path` is none of them. */
  private serveDiscovery(
    res: ServerResponse,
    method: string,
    path: string,
    parts: readonly string[],
  ): boolean {
    const discovery = (doc: object | undefined): true => {
      if (method !== 'GET') sendError(res, errors.methodNotAllowed(method, path));
      else if (!doc) sendError(res, errors.noRoute());
      else sendJson(res, 200, doc);
      return true;
    };
    if (path === '/version') return discovery(SERVER_VERSION);
    if (path === '/api') return discovery(apiVersions(this.opts.serverAddress()));
    if (path === '/apis') return discovery(apiGroupList());
    if (path === '/api/v1') return discovery(apiResourceList('', 'v1'));
    if (path === '/openapi/v2') {
      if (method !== 'GET') {
        sendError(res, errors.methodNotAllowed(method, path));
        return true;
      }
      const body = openapiV2Protobuf();
      res.writeHead(200, { 'Content-Type': OPENAPI_V2_PROTOBUF_TYPE, 'Content-Length': body.length });
      res.end(body);
      return true;
    }
    if (path === '/openapi/v3') return discovery(openapiRoot());
    if (path.startsWith('/openapi/v3/'))
      return discovery(openapiGroupVersion(path.slice('/openapi/v3/'.length)));
    if (parts[0] === 'apis' && parts.length === 2) return discovery(apiGroup(parts[1] ?? ''));
    if (parts[0] === 'apis' && parts.length === 3)
      return discovery(apiResourceList(parts[1] ?? '', parts[2] ?? ''));
    return false;
  }

  private async serveResource(
    req: IncomingMessage,
    res: ServerResponse,
    route: ResourceRoute,
    q: URLSearchParams,
  ): Promise<void> {
    const table = acceptsTable(req.headers.accept ?? '');
    const includeParam = q.get('includeObject');
    const include: IncludeObject =
      includeParam === 'None' || includeParam === 'Object' ? includeParam : 'Metadata';
    const verb = requestVerb(req.method ?? 'GET', route, q);
    if (typeof verb !== 'string') return sendError(res, verb);
    if (verb === 'watch') return this.serveWatch(req, res, route, q, table, include);
    let body: unknown;
    if (WRITES.includes(verb)) {
      const buf = await readBody(req, this.opts.maxBodyBytes);
      if (buf === 'too-large') {
        res.setHeader('Connection', 'close');
        return sendError(res, errors.tooLarge(this.opts.maxBodyBytes));
      }
      if (buf.length > 0 || BODY_REQUIRED.includes(verb)) {
        const decoded = decodeBody(
          buf,
          req.headers['content-type'] ?? '',
          verb === 'patch',
          route.type.names.kind,
        );
        if (!decoded.ok) return sendError(res, decoded.error);
        body = decoded.value;
      }
    }
    this.serveVerb(req, res, route, q, { verb, body, table, include });
  }

  /** One registry call for the verb, and its answer (a Table when the client asked for one on a read). */
  private serveVerb(
    req: IncomingMessage,
    res: ServerResponse,
    route: ResourceRoute,
    q: URLSearchParams,
    r: { verb: Exclude<Verb, 'watch'>; body: unknown; table: boolean; include: IncludeObject },
  ): void {
    const { type, name = '', sub } = route;
    const namespace = route.namespace ?? (type.namespaced ? undefined : '');
    const { verb, body, table, include } = r;
    const reg = this.opts.registry;
    const now = this.opts.clock.now();
    const single = (result: Result<JsonObject>, code = 200): void => {
      if (!result.ok) return sendError(res, result.error);
      if (table && verb === 'get') {
        const meta = { resourceVersion: str(result.value.metadata, 'resourceVersion') };
        return sendJson(res, code, renderTable(type, [result.value], meta, now, include));
      }
      sendJson(res, code, result.value);
    };
    switch (verb) {
      case 'get':
        return single(
          sub === 'scale' ? reg.getScale(type, namespace ?? '', name) : reg.get(type, namespace ?? '', name),
        );
      case 'list': {
        const sel = selectors(q, type);
        if (!sel.ok) return sendError(res, sel.error);
        const limit = Number(q.get('limit') ?? '0');
        const listed = reg.list(type, namespace, {
          ...sel.value,
          ...(limit > 0 ? { limit } : {}),
          ...(q.get('continue') ? { continueToken: q.get('continue') ?? '' } : {}),
        });
        if (!listed.ok) return sendError(res, listed.error);
        return sendJson(res, 200, listBody(type, listed.value, table, include, now));
      }
      case 'create':
        return single(reg.create(type, namespace ?? '', body), 201);
      case 'update':
        return single(reg.update(type, namespace ?? '', name, body, sub));
      case 'patch': {
        const pt = patchTypeOf(req.headers['content-type'] ?? '');
        if (!pt) return sendError(res, errors.unsupportedMediaType(req.headers['content-type'] ?? ''));
        return single(reg.patch(type, namespace ?? '', name, pt, body, sub));
      }
      case 'delete':
        return single(reg.delete(type, namespace ?? '', name, deleteOptions(q, body)));
      case 'deletecollection': {
        const sel = selectors(q, type);
        if (!sel.ok) return sendError(res, sel.error);
        const deleted = reg.deleteCollection(type, namespace, sel.value, deleteOptions(q, body));
        if (!deleted.ok) return sendError(res, deleted.error);
        return sendJson(res, 200, listBody(type, deleted.value, false, include, now));
      }
    }
  }

  private serveWatch(
    req: IncomingMessage,
    res: ServerResponse,
    route: ResourceRoute,
    q: URLSearchParams,
    table: boolean,
    include: IncludeObject,
  ): void {
    const { opts, watches } = this;
    const sel = selectors(q, route.type);
    if (!sel.ok) return sendError(res, sel.error);
    const rvText = q.get('resourceVersion') ?? undefined;
    if (parseResourceVersion(rvText) === 'invalid')
      return sendError(res, errors.badRequest(`invalid resource version "${String(rvText)}"`));
    let fieldSelector = sel.value.fieldSelector;
    // A watch on a single object by name is a watch on the collection with metadata.name.
    if (route.name !== undefined)
      fieldSelector = [...(fieldSelector ?? []), { field: 'metadata.name', op: 'eq', value: route.name }];
    res.writeHead(ok200, {
      'Content-Type': 'application/json',
      'Transfer-Encoding': 'chunked',
      'Cache-Control': 'no-cache, private',
      // A watch's connection is not reused: when the server ends a watch (timeout, restart, a slow client), the
      // client's next request opens a fresh connection instead of racing a pooled one the server is closing.
      Connection: 'close',
    });
    res.flushHeaders();
    const timeout = Number(q.get('timeoutSeconds') ?? '');
    // startWatch may close the stream before it returns (an expired version), so onClose looks the watch up late.
    const holder: { watch?: ActiveWatch } = {};
    const onClose = (): void => {
      if (holder.watch) watches.delete(holder.watch);
    };
    const active = startWatch(
      opts.registry.store,
      {
        resource: route.type,
        namespace: route.type.namespaced ? route.namespace : undefined,
        labelSelector: sel.value.labelSelector,
        fieldSelector,
        resourceVersion: rvText,
        allowWatchBookmarks: q.get('allowWatchBookmarks') === 'true',
        ...(timeout > 0 ? { timeoutSeconds: timeout } : {}),
        ...(table
          ? {
              format: `table:${include}`,
              render: (obj: JsonObject, type: string) =>
                type === 'BOOKMARK' ? obj : renderTable(route.type, [obj], {}, opts.clock.now(), include),
            }
          : {}),
      },
      {
        write: (line) => void res.write(line),
        bufferedBytes: () => res.writableLength + (res.socket?.writableLength ?? 0),
        end: () => res.end(),
        destroy: () => res.destroy(),
      },
      {
        clock: opts.clock,
        bookmarkIntervalMs: opts.bookmarkIntervalMs,
        maxBufferedBytes: opts.maxWatchBufferedBytes,
        onClose,
      },
    );
    if (!active.closed) watches.add(active);
    holder.watch = active;
    const stopOnClose = (): void => active.stop();
    req.on('close', stopOnClose);
    res.on('close', stopOnClose);
  }
}

export function createHandler(opts: HttpOptions): {
  handle: (req: IncomingMessage, res: ServerResponse) => void;
  /** The server's 'upgrade' event: pods/exec and pods/attach over WebSocket; anything else is refused. */
  upgrade: (req: IncomingMessage, socket: Duplex, head: Buffer) => void;
  closeWatches: () => void;
  watchCount: () => number;
} {
  const handler = new ApiHandler(opts);
  return {
    handle: (req, res) => handler.handle(req, res),
    upgrade: (req, socket, head) => handler.upgrade(req, socket, head),
    closeWatches() {
      for (const w of [...handler.watches]) w.stop();
      handler.watches.clear();
    },
    watchCount: () => handler.watches.size,
  };
}
