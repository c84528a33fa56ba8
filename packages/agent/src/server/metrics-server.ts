// The metrics server on metricsBindAddress (default 127.0.0.1:10249), upstream's serveMetrics: /metrics (Prometheus
// text), /healthz (the generic "ok", which says only that the process serves HTTP), /proxyMode (the mode as plain
// text), /configz (the effective configuration as JSON). Profiling and the feature-gated /flagz, /statusz and
// /metrics/slis are not served.
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { Registry } from 'prom-client';
import type { ProxyMode } from '../config/proxy-mode.js';
import type { Logger } from '../util/logger.js';
import { NOT_FOUND, requestPath, textAnswer, writeAnswer } from './http-answer.js';
import type { HttpAnswer } from './http-answer.js';
import { createBoundServer } from './retrying-server.js';
import type { BoundServerOptions, CreateServerResult } from './retrying-server.js';

/** The name under which kube-proxy registers its configuration with configz, so /configz reads the same. */
export const CONFIGZ_KEY = 'kubeproxy.config.k8s.io';

/** The component kube-proxy-ts registers beside kube-proxy's, for what it adds (the nftables layout). */
export const CONFIGZ_EXTENSION_KEY = 'kube-proxy-ts';

export interface MetricsHandlerOptions {
  readonly registry: Registry;
  readonly mode: ProxyMode;
  /** The effective configuration, read on each /configz request (upstream's internal shape: configz.ts). */
  readonly configz: () => unknown;
  /** What kube-proxy-ts adds, under its own /configz key so that upstream's object stays as upstream prints it. */
  readonly configzExtension?: () => unknown;
  readonly logger: Logger;
}

async function answer(req: IncomingMessage, o: MetricsHandlerOptions): Promise<HttpAnswer> {
  switch (requestPath(req)) {
    case '/metrics':
      return {
        status: 200,
        headers: { 'Content-Type': o.registry.contentType },
        body: await o.registry.metrics(),
      };
    case '/healthz':
      return textAnswer(200, 'ok');
    case '/proxyMode':
      return textAnswer(200, o.mode);
    case '/configz':
      return {
        status: 200,
        headers: { 'Content-Type': 'application/json', 'X-Content-Type-Options': 'nosniff' },
        body: JSON.stringify({
          [CONFIGZ_KEY]: o.configz(),
          ...(o.configzExtension !== undefined ? { [CONFIGZ_EXTENSION_KEY]: o.configzExtension() } : {}),
        }),
      };
    default:
      return NOT_FOUND;
  }
}

export function metricsHandler(o: MetricsHandlerOptions): RequestListener {
  return (req: IncomingMessage, res: ServerResponse) => {
    answer(req, o).then(
      (a) => writeAnswer(res, a),
      (e: unknown) => {
        o.logger.error('metrics request failed', { path: requestPath(req), error: String(e) });
        writeAnswer(res, textAnswer(500, 'internal error\n'));
      },
    );
  };
}

export interface MetricsServerOptions extends MetricsHandlerOptions, BoundServerOptions {}

/** Builds the metrics server on metricsBindAddress; call start() on it. */
export function createMetricsServer(o: MetricsServerOptions): CreateServerResult {
  return createBoundServer('metrics', 'metricsBindAddress', metricsHandler(o), o);
}
