// A response as a plain value: the health logic builds it without touching a socket, tests assert on it directly,
// and writeAnswer is the one place that puts it on the wire.
import type { IncomingMessage, ServerResponse } from 'node:http';

export interface HttpAnswer {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

/** The request's path, without the query. */
export function requestPath(req: IncomingMessage): string {
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  return q === -1 ? url : url.slice(0, q);
}

export function writeAnswer(res: ServerResponse, answer: HttpAnswer): void {
  res.writeHead(answer.status, {
    ...answer.headers,
    'Content-Length': String(Buffer.byteLength(answer.body)),
  });
  res.end(answer.body);
}

export function textAnswer(status: number, body: string): HttpAnswer {
  return {
    status,
    headers: { 'Content-Type': 'text/plain; charset=utf-8', 'X-Content-Type-Options': 'nosniff' },
    body,
  };
}

export const NOT_FOUND: HttpAnswer = textAnswer(404, '404 page not found\n');
