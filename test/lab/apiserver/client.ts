// A raw HTTPS client for tests that must see exactly what the server answers (status codes, Status bodies,
// watch lines), trusting the server's own certificate.
import { request } from 'node:https';
import type { ApiServer } from '../../../packages/lab/src/apiserver/index.js';

export interface RawResponse {
  readonly status: number;
  readonly body: unknown;
  readonly text: string;
}

export function call(
  server: ApiServer,
  method: string,
  path: string,
  body?: string | Buffer,
  headers: Record<string, string> = {},
): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${server.url}${path}`,
      {
        method,
        ca: server.caPem,
        headers: {
          authorization: `Bearer ${server.token}`,
          ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
          ...headers,
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let parsed: unknown = text;
          try {
            parsed = JSON.parse(text);
          } catch {
            // not JSON: keep the text
          }
          resolve({ status: res.statusCode ?? 0, body: parsed, text });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    if (body !== undefined) req.write(body);
    req.end();
  });
}
