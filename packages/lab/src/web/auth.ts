// Who may use the lab's web view: whoever holds its token. The page drives the lab (kubectl as the lab's admin,
// traces as root), so another local user must not: the server listens on 127.0.0.1 only, and every request needs
// the token, given once in the printed URL (?token=…), then carried by a cookie. Cookies are shared by every port
// of 127.0.0.1, and a page from another port is "same site", so a request that changes something must also carry
// the token in a header, which only our own page (served after the check) knows and a foreign page cannot set
// without a CORS preflight we never answer. The Host header must name us too, so a DNS-rebound name cannot reach
// the server from a browser.
import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

export const TOKEN_HEADER = 'x-lab-token';

export function newWebToken(): string {
  return randomBytes(24).toString('hex');
}

/** The cookie's name carries the port: two labs' pages (or another server on 127.0.0.1) never swap cookies. */
export function cookieName(port: number): string {
  return `kpts_lab_web_${port}`;
}

function sameToken(given: string | undefined, token: string): boolean {
  if (given === undefined) return false;
  const a = Buffer.from(given);
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
}

function cookies(header: string | undefined): Map<string, string> {
  const out = new Map<string, string>();
  for (const part of (header ?? '').split(';')) {
    const i = part.indexOf('=');
    if (i > 0) out.set(part.slice(0, i).trim(), part.slice(i + 1).trim());
  }
  return out;
}

export type AuthResult =
  /** Allowed; `setCookie` when the token came in the URL (the response sets it and drops it from the URL). */
  | { readonly ok: true; readonly fromQuery: boolean }
  | { readonly ok: false; readonly status: 401 | 403; readonly reason: string };

export function authorize(req: IncomingMessage, token: string, port: number): AuthResult {
  const host = (req.headers.host ?? '').toLowerCase();
  if (host !== `127.0.0.1:${port}` && host !== `localhost:${port}`)
    return {
      ok: false,
      status: 403,
      reason: `Host ${JSON.stringify(host)} is not this server (127.0.0.1:${port})`,
    };
  const url = new URL(req.url ?? '/', `http://127.0.0.1:${port}`);
  const bearer = /^Bearer\s+(\S+)$/i.exec(req.headers.authorization ?? '')?.[1];
  const header = req.headers[TOKEN_HEADER];
  const headerToken = typeof header === 'string' ? header : undefined;
  const changes = req.method !== 'GET' && req.method !== 'HEAD';
  if (changes) {
    if (sameToken(bearer, token) || sameToken(headerToken, token)) return { ok: true, fromQuery: false };
    return {
      ok: false,
      status: 401,
      reason: `a ${req.method ?? ''} request needs the token in the ${TOKEN_HEADER} header (the page sends it)`,
    };
  }
  if (sameToken(url.searchParams.get('token') ?? undefined, token)) return { ok: true, fromQuery: true };
  if (sameToken(cookies(req.headers.cookie).get(cookieName(port)), token) || sameToken(bearer, token))
    return { ok: true, fromQuery: false };
  return {
    ok: false,
    status: 401,
    reason: 'no valid token: open the URL that `kube-proxy-ts lab web` prints (it carries the token)',
  };
}

export function sessionCookie(port: number, token: string): string {
  return `${cookieName(port)}=${token}; Path=/; HttpOnly; SameSite=Strict`;
}
