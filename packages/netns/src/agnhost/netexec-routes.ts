// netexec's HTTP paths, as agnhost documents them. Every answer is plain text unless the path says JSON; the one
// path not served is /upload (it writes into the image's /uploads, and lab pods see the host's filesystem).
import { execFile } from 'node:child_process';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { dialAnswer } from './dial.js';
import { joinHostPort, logLine, unmapped } from './common.js';
import { parseGoDuration, parseGoInt } from './flags.js';

/** What the paths read of the running server and how they end it. */
export interface NetexecState {
  readonly hostname: string;
  readonly shellPath: string;
  /** The UDP (or SCTP) server is up: /healthz and /readyz say ready only then, as agnhost's do. */
  ready(): boolean;
  /** SIGTERM arrived: /readyz answers 503 so the endpoint leaves while /healthz keeps it alive. */
  terminating(): boolean;
  /** Ends the process with `code`: at once (graceMs 0) or after open connections close, at most graceMs. */
  exit(code: number, graceMs: number): void;
}

function send(res: ServerResponse, status: number, body: string, type = 'text/plain; charset=utf-8'): void {
  res.writeHead(status, { 'content-type': type, 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

/** Go's http.Header, from Node's raw pairs: canonical names ("X-Forwarded-For"), every value in order. */
function goHeaders(req: IncomingMessage): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) {
    const name = (req.rawHeaders[i] ?? '')
      .toLowerCase()
      .replace(/(^|-)([a-z])/g, (_m, d: string, c: string) => `${d}${c.toUpperCase()}`);
    (out[name] ??= []).push(req.rawHeaders[i + 1] ?? '');
  }
  return out;
}

/** A status code Node accepts; agnhost passes the caller's straight to Go, which takes 100..999. */
function statusOrNull(text: string): number | null | undefined {
  if (text === '') return null;
  const n = parseGoInt(text);
  if (n === undefined) return undefined;
  return n >= 100 && n <= 999 ? n : undefined;
}

/** The `code` argument of /echo and /redirect; undefined after answering agnhost's complaint about a bad one. */
function codeArgument(q: URLSearchParams, res: ServerResponse): number | null | undefined {
  const code = statusOrNull(q.get('code') ?? '');
  if (code === undefined)
    send(res, 200, `argument 'code' must be an integer or empty, got ${JSON.stringify(q.get('code'))}\n`);
  return code;
}

function shell(state: NetexecState, query: URLSearchParams, res: ServerResponse): void {
  const cmd = query.get('shellCommand') || (query.get('cmd') ?? '');
  logLine(`GET /shell?cmd=${cmd}`);
  // Go's CombinedOutput is stdout and stderr as one stream; `exec 2>&1` first gives that, in order.
  execFile(state.shellPath, ['-c', `exec 2>&1\n${cmd}`], { maxBuffer: 16 << 20 }, (err, stdout) => {
    const output: Record<string, string> = {};
    if (stdout.length > 0) output.output = stdout;
    if (err) output.error = typeof err.code === 'number' ? `exit status ${err.code}` : err.message;
    send(res, 200, JSON.stringify(output));
  });
}

/** An empty duration argument is 0; a malformed one undefined. */
function optionalDuration(text: string): number | undefined {
  if (text === '') return 0;
  try {
    return parseGoDuration(text);
  } catch {
    return undefined;
  }
}

const badDuration = (name: string, text: string): string =>
  `argument '${name}' must be a valid golang duration or empty, got ${JSON.stringify(text)}\n`;

function exitPath(state: NetexecState, query: URLSearchParams, res: ServerResponse): void {
  const codeText = query.get('code') ?? '';
  const timeoutText = query.get('timeout') ?? '';
  const waitText = query.get('wait') ?? '';
  logLine(`GET /exit?code=${codeText}&timeout=${timeoutText}&wait=${waitText}`);
  const timeout = optionalDuration(timeoutText);
  if (timeout === undefined) return send(res, 200, badDuration('timeout', timeoutText));
  const wait = optionalDuration(waitText);
  if (wait === undefined) return send(res, 200, badDuration('wait', waitText));
  const code = codeText === '' ? 0 : parseGoInt(codeText);
  if (code === undefined)
    return send(
      res,
      200,
      `argument 'code' must be an integer [0-127] or empty, got ${JSON.stringify(codeText)}\n`,
    );
  setTimeout(
    () => {
      // With no timeout agnhost exits inside the handler: the caller sees its connection end without an answer.
      if (timeout <= 0) return state.exit(code, 0);
      send(res, 200, '');
      state.exit(code, timeout);
    },
    Math.max(0, wait),
  );
}

/** Serves one request for `path` (the request's, or --http-override's). */
export function serveNetexecPath(
  state: NetexecState,
  req: IncomingMessage,
  res: ServerResponse,
  path: string,
): void {
  const url = new URL(path, 'http://netexec');
  const q = url.searchParams;
  switch (url.pathname) {
    case '/':
      return send(res, 200, `NOW: ${new Date().toISOString()}`);
    case '/clientip':
      return send(res, 200, joinHostPort(unmapped(req.socket.remoteAddress), req.socket.remotePort ?? 0));
    case '/header': {
      const key = q.get('key') ?? '';
      const headers = goHeaders(req);
      if (key === '') return send(res, 200, JSON.stringify(headers));
      const canonical = Object.keys(headers).find((k) => k.toLowerCase() === key.toLowerCase());
      return send(res, 200, canonical === undefined ? '' : (headers[canonical]?.[0] ?? ''));
    }
    case '/dial':
      void dialAnswer(q).then((a) => send(res, a.status, a.body));
      return;
    case '/echo': {
      const code = codeArgument(q, res);
      return code === undefined ? undefined : send(res, code ?? 200, q.get('msg') ?? '');
    }
    case '/exit':
      return exitPath(state, q, res);
    case '/healthz':
      return send(res, state.ready() ? 200 : 412, '');
    case '/readyz':
      if (state.terminating()) return send(res, 503, 'shutting down');
      return state.ready() ? send(res, 200, 'ok') : send(res, 412, '');
    case '/hostname':
    case '/hostName':
      return send(res, 200, state.hostname);
    case '/redirect': {
      const code = codeArgument(q, res);
      if (code === undefined) return;
      res.writeHead(code ?? 302, { location: q.get('location') ?? '' });
      return void res.end();
    }
    case '/shell':
      return shell(state, q, res);
    case '/shutdown':
      return state.exit(0, 0);
    case '/upload':
      return send(res, 501, JSON.stringify({ error: 'upload is not implemented by the lab’s agnhost' }));
    default:
      // Go's ServeMux sends every other path to "/".
      return send(res, 200, `NOW: ${new Date().toISOString()}`);
  }
}
