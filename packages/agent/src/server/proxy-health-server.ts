// The proxy health server on healthzBindAddress (default 0.0.0.0:10256): /healthz and /livez answered from a
// ProxyHealth. Any other path is 404, as on upstream's mux. Binding retries like the metrics server.
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { NOT_FOUND, requestPath, writeAnswer } from './http-answer.js';
import type { ProxyHealth } from './proxy-health.js';
import { createBoundServer } from './retrying-server.js';
import type { BoundServerOptions, CreateServerResult } from './retrying-server.js';

export function proxyHealthHandler(health: ProxyHealth): RequestListener {
  return (req: IncomingMessage, res: ServerResponse) => {
    const path = requestPath(req);
    if (path === '/healthz') writeAnswer(res, health.healthzAnswer());
    else if (path === '/livez') writeAnswer(res, health.livezAnswer());
    else writeAnswer(res, NOT_FOUND);
  };
}

export interface ProxyHealthServerOptions extends BoundServerOptions {
  readonly health: ProxyHealth;
}

/** Builds the proxy health server on healthzBindAddress; call start() on it. */
export function createProxyHealthServer(o: ProxyHealthServerOptions): CreateServerResult {
  return createBoundServer('healthz', 'healthzBindAddress', proxyHealthHandler(o.health), o);
}
