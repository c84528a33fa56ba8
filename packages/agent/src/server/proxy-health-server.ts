// The proxy health server on healthzBindAddress (default 0.0.0.0:10256): /healthz and /livez answered from a
// ProxyHealth. Any other path is 404, as on upstream's mux. Binding retries like the metrics server.
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { Clock } from '../util/clock.js';
import type { Logger } from '../util/logger.js';
import { parseBindAddress } from './bind-address.js';
import { NOT_FOUND, writeAnswer } from './http-answer.js';
import type { CreateServerResult } from './metrics-server.js';
import type { ProxyHealth } from './proxy-health.js';
import { RetryingHttpServer } from './retrying-server.js';
import type { ServerFatalError } from './retrying-server.js';

export function proxyHealthHandler(health: ProxyHealth): RequestListener {
  return (req: IncomingMessage, res: ServerResponse) => {
    const url = req.url ?? '/';
    const path = url.split('?', 1)[0];
    if (path === '/healthz') writeAnswer(res, health.healthzAnswer());
    else if (path === '/livez') writeAnswer(res, health.livezAnswer());
    else writeAnswer(res, NOT_FOUND);
  };
}

export interface ProxyHealthServerOptions {
  /** healthzBindAddress, "host:port". */
  readonly bindAddress: string;
  readonly health: ProxyHealth;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly hardFail: boolean;
  readonly onFatal?: (error: ServerFatalError) => void;
}

export function createProxyHealthServer(o: ProxyHealthServerOptions): CreateServerResult {
  const addr = parseBindAddress(o.bindAddress);
  if (!addr.ok) return { ok: false, error: `healthzBindAddress: ${addr.error}` };
  const server = new RetryingHttpServer({
    name: 'healthz',
    host: addr.value.host,
    port: addr.value.port,
    handler: proxyHealthHandler(o.health),
    clock: o.clock,
    logger: o.logger,
    hardFail: o.hardFail,
    ...(o.onFatal ? { onFatal: o.onFatal } : {}),
  });
  return { ok: true, server };
}
