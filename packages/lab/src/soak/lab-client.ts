// The soak's way to the lab's API server: plain JSON requests and a watch, over HTTPS with the lab's CA and
// token (from its state file), as any client outside the lab process would. Churn at tens of writes a second is
// too fast for one kubectl process per change, so the soak writes through this; the writes are the ones the
// walkthrough's kubectl commands send (scale, delete, rollout restart's annotation, a status patch).
import https from 'node:https';
import { LineSplitter } from 'kube-proxy-ts/kube/ndjson.js';

export interface LabApi {
  request(method: string, path: string, body?: unknown, contentType?: string): Promise<unknown>;
  /**
   * Streams a watch's events until `signal` aborts; re-watches from the last version when the server ends it.
   * When that version is gone (an ERROR event: 410 Expired), lists again: `RESET` first (forget what you have),
   * then every object as ADDED, then the watch from the new list's version.
   */
  watch(path: string, onEvent: (type: string, object: unknown) => void, signal: AbortSignal): Promise<void>;
}

export class LabApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export interface LabApiOptions {
  /** What a watch waits for before it re-watches after the server ended it; default 200 ms. */
  beforeRewatch?: () => Promise<void>;
}

export function labApi(
  server: { url: string; token: string; caPem: string },
  options: LabApiOptions = {},
): LabApi {
  const beforeRewatch =
    options.beforeRewatch ?? (() => new Promise<void>((resolve) => setTimeout(resolve, 200)));
  const agent = new https.Agent({ keepAlive: true, ca: server.caPem, maxSockets: 16 });
  const base = server.url.replace(/\/$/, '');
  const headers = { authorization: `Bearer ${server.token}`, accept: 'application/json' };

  const request = (method: string, path: string, body?: unknown, contentType = 'application/json') =>
    new Promise<unknown>((resolve, reject) => {
      const payload = body === undefined ? undefined : JSON.stringify(body);
      const req = https.request(
        `${base}${path}`,
        {
          method,
          agent,
          headers: { ...headers, ...(payload !== undefined ? { 'content-type': contentType } : {}) },
          timeout: 30_000,
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (b: Buffer) => chunks.push(b));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            let json: unknown;
            try {
              json = text === '' ? undefined : JSON.parse(text);
            } catch {
              json = text;
            }
            const status = res.statusCode ?? 0;
            if (status >= 200 && status < 300) return resolve(json);
            const message =
              typeof json === 'object' && json !== null && 'message' in json ? String(json.message) : text;
            reject(new LabApiError(status, `${method} ${path}: ${status} ${message}`));
          });
          res.on('error', reject);
        },
      );
      req.on('timeout', () => req.destroy(new Error(`${method} ${path}: no answer in 30 s`)));
      req.on('error', reject);
      req.end(payload);
    });

  const watchOnce = (path: string, version: string, onLine: (line: string) => void, signal: AbortSignal) =>
    new Promise<void>((resolve) => {
      const sep = path.includes('?') ? '&' : '?';
      const req = https.request(
        `${base}${path}${sep}watch=1&allowWatchBookmarks=true&resourceVersion=${version}`,
        { method: 'GET', agent, headers, signal },
        (res) => {
          const lines = new LineSplitter(16 << 20);
          res.on('data', (b: Buffer) => {
            for (const item of lines.push(b)) if (item.kind === 'line') onLine(item.text);
          });
          res.on('end', () => resolve());
          res.on('error', () => resolve());
        },
      );
      req.on('error', () => resolve());
      req.end();
    });

  return {
    request,
    async watch(path, onEvent, signal) {
      const list = async (): Promise<string> => {
        const l = (await request('GET', path)) as {
          metadata?: { resourceVersion?: string };
          items?: unknown[];
        };
        for (const item of l.items ?? []) onEvent('ADDED', item);
        return l.metadata?.resourceVersion ?? '0';
      };
      let version = await list();
      while (!signal.aborted) {
        let expired = false;
        await watchOnce(
          path,
          version,
          (line) => {
            let ev: { type?: string; object?: { metadata?: { resourceVersion?: string } } };
            try {
              ev = JSON.parse(line) as typeof ev;
            } catch {
              return;
            }
            // 410 Expired (our version fell out of the server's history), or another error: list again.
            if (ev.type === 'ERROR') {
              expired = true;
              return;
            }
            const rv = ev.object?.metadata?.resourceVersion;
            if (rv !== undefined) version = rv;
            if (ev.type !== undefined && ev.type !== 'BOOKMARK') onEvent(ev.type, ev.object);
          },
          signal,
        );
        if (signal.aborted) break;
        if (expired) {
          onEvent('RESET', undefined);
          version = await list().catch(() => version);
        } else await beforeRewatch();
      }
    },
  };
}
