// One HTTP request to a server the test started on loopback, answered in full: status, headers, body, and the
// client's own port (what a server that echoes the client address must report).
import { request } from 'node:http';
import { request as httpsRequest } from 'node:https';

export interface HttpReply {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: string;
  /** The client side's port of the connection the request went over. */
  readonly localPort: number;
}

export interface HttpCall {
  readonly method?: string;
  readonly headers?: Record<string, string>;
  readonly body?: string;
  /** HTTPS, accepting any certificate: the servers under test present self-signed ones. */
  readonly tls?: boolean;
}

/** `path` on 127.0.0.1:`port`, on a connection of its own (no agent keeps it for the next request). */
export function httpCall(port: number, path: string, o: HttpCall = {}): Promise<HttpReply> {
  return new Promise((resolve, reject) => {
    const make = o.tls === true ? httpsRequest : request;
    const req = make(
      {
        host: '127.0.0.1',
        port,
        path,
        method: o.method ?? 'GET',
        headers: o.headers ?? {},
        agent: false,
        rejectUnauthorized: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (b: Buffer) => chunks.push(b));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: Buffer.concat(chunks).toString('utf8'),
            localPort: req.socket?.localPort ?? -1,
          }),
        );
      },
    );
    req.on('error', reject);
    req.end(o.body);
  });
}
