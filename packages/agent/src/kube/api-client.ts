// GET requests to the API server with node:http(s), so that a watch is a plain streamed response we control
// (abort, idle watchdog, keepalive), authenticated by the config's credentials (request-auth.ts): every request asks
// them for headers (token files and exec plugins refreshed as they go) and the TLS agent (CA, client cert,
// skip-verify).
import http from 'node:http';
import type { IncomingHttpHeaders, IncomingMessage, OutgoingHttpHeaders } from 'node:http';
import https from 'node:https';
import type { Clock } from '../util/clock.js';
import type { ClientConfig } from './client-config.js';
import { tokenBucket } from './rate-limiter.js';
import type { RateLimiter } from './rate-limiter.js';
import { isResourceVersionUnavailable, parseStatus } from './watch-event.js';
import type { ApiStatus } from './watch-event.js';

export interface ApiResponse {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  /** The body as it streams; the caller reads or destroys it. */
  readonly body: IncomingMessage;
}

export interface ApiClient {
  readonly server: URL;
  /** Resolves when the response headers arrive (any status); rejects on a network error or an abort. */
  get(path: string, query: Readonly<Record<string, string>>, signal: AbortSignal): Promise<ApiResponse>;
  /** POST of a JSON body (the agent creates Events, nothing else); answers as get does. */
  post(path: string, body: unknown, signal: AbortSignal): Promise<ApiResponse>;
}

/** network: no usable response; status: an HTTP error; gone: 410, our resourceVersion is too old; stream-error:
 * a watch ERROR event other than 410; watchdog: the connection went silent. */
export type ApiErrorKind =
  'network' | 'status' | 'too-large' | 'decode' | 'gone' | 'stream-error' | 'watchdog';

/** A failed request, classified the way the reflector acts on it. */
export class ApiError extends Error {
  constructor(
    readonly kind: ApiErrorKind,
    message: string,
    readonly status?: number,
    readonly retryAfterMs?: number,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

export interface ApiClientDeps {
  readonly clock: Clock;
  readonly userAgent?: string;
  /** Replaces the qps/burst token bucket (tests). */
  readonly rateLimiter?: RateLimiter;
}

const USER_AGENT = 'kube-proxy-ts';

function flattenHeaders(
  headers: OutgoingHttpHeaders | readonly string[] | undefined,
): Record<string, string> {
  const out: Record<string, string> = {};
  if (!headers || Array.isArray(headers)) return out;
  for (const [name, value] of Object.entries(headers as OutgoingHttpHeaders)) {
    if (typeof value === 'string' || typeof value === 'number') out[name] = String(value);
    else if (Array.isArray(value)) out[name] = value.join(', ');
  }
  return out;
}

export function createApiClient(config: ClientConfig, deps: ApiClientDeps): ApiClient {
  const plain = config.server.protocol === 'http:';
  const authSource = config.auth;
  const limiter = deps.rateLimiter ?? tokenBucket(config.qps, config.burst, deps.clock);
  const httpAgent = new http.Agent({ keepAlive: true });
  const base = config.server.href.replace(/\/$/, '');

  const send = async (
    method: 'GET' | 'POST',
    path: string,
    query: Readonly<Record<string, string>>,
    body: string | undefined,
    signal: AbortSignal,
  ): Promise<ApiResponse> => {
    // A list's later pages (`continue`) ride on the token its first page took: the list is one request to the
    // limiter, as in upstream, whose informers' first list (resourceVersion=0, served from the watch cache)
    // comes back whole in one response. Paging here only bounds what is held at once; at 100,000 EndpointSlices
    // charging each of the 200 pages at the default 5 qps would hold a start for 40 s.
    if (query.continue === undefined) await limiter.acquire(signal);
    const opts: https.RequestOptions = { headers: {} };
    await authSource.applyToHTTPSOptions(opts);
    const headers: Record<string, string> = {
      ...flattenHeaders(opts.headers),
      accept: 'application/json',
      'user-agent': deps.userAgent ?? USER_AGENT,
      ...(body !== undefined
        ? { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) }
        : {}),
    };
    if (typeof opts.auth === 'string' && opts.auth !== '')
      headers.authorization = `Basic ${Buffer.from(opts.auth).toString('base64')}`;
    // The credentials keep one TLS agent (and its connections) for as long as their material is the same.
    const tlsAgent = opts.agent instanceof http.Agent ? opts.agent : undefined;
    const qs = new URLSearchParams(query).toString();
    const url = `${base}${path}${qs === '' ? '' : `?${qs}`}`;
    const request = plain ? http.request : https.request;
    return new Promise<ApiResponse>((resolve, reject) => {
      const req = request(url, { method, headers, agent: plain ? httpAgent : tlsAgent, signal }, (res) =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: res }),
      );
      // A half-open connection must not stay quiet forever: TCP keepalive under the reflector's own watchdog.
      req.on('socket', (socket) => socket.setKeepAlive(true, 30_000));
      req.on('error', (err) =>
        reject(signal.aborted ? signal.reason : new ApiError('network', `${method} ${path}: ${err.message}`)),
      );
      req.end(body);
    });
  };
  return {
    server: config.server,
    get: (path, query, signal) => send('GET', path, query, undefined, signal),
    post: (path, body, signal) => send('POST', path, {}, JSON.stringify(body), signal),
  };
}

/** Reads a whole body, failing (and closing the stream) past maxBytes. */
export async function readBody(res: ApiResponse, maxBytes: number, onBytes?: () => void): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of res.body as AsyncIterable<Buffer>) {
    onBytes?.();
    size += chunk.length;
    if (size > maxBytes) {
      res.body.destroy();
      throw new ApiError('too-large', `response exceeds ${maxBytes} bytes`);
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, size).toString('utf8');
}

/** Turns a non-2xx response into an ApiError, reading the Status body (bounded) for its message. */
export async function statusError(res: ApiResponse, what: string): Promise<ApiError> {
  let status: ApiStatus = {};
  try {
    status = parseStatus(JSON.parse(await readBody(res, 64 * 1024)));
  } catch {
    res.body.destroy();
  }
  const detail = status.message ?? status.reason ?? http.STATUS_CODES[res.status] ?? 'error';
  const retryAfter = Number(res.headers['retry-after']);
  return new ApiError(
    isResourceVersionUnavailable({ ...status, code: res.status }) ? 'gone' : 'status',
    `${what}: HTTP ${res.status}: ${detail}`,
    res.status,
    Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter * 1000 : undefined,
  );
}
