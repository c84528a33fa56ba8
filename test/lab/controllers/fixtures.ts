// What the controller tests share: the control plane in process on a FakeClock, a kubelet the test drives, and the
// Deployment `web` they scale, roll out and put behind Services.
import { FakeClock } from '../../../packages/agent/src/util/clock.js';
import {
  startApiServer,
  type ApiServer,
  type ApiServerOptions,
} from '../../../packages/lab/src/apiserver/index.js';
import type { JsonObject } from '../../../packages/lab/src/apiserver/json.js';
import { resourceByKind } from '../../../packages/lab/src/apiserver/resources.js';
import type { PodLifecycle, PodStatusReport } from '../../../packages/lab/src/controllers/pod-lifecycle.js';

export const DEPLOY = resourceByKind('Deployment');

/** A kubelet plug whose reports the test sends; start() resolves at once, as the lab's does with init containers. */
export function drivenLifecycle(): {
  lifecycle: PodLifecycle;
  report: (r: PodStatusReport) => void;
  started: Promise<void>;
} {
  let send: (r: PodStatusReport) => void = () => undefined;
  let startedNow: () => void = () => undefined;
  const started = new Promise<void>((resolve) => (startedNow = resolve));
  return {
    lifecycle: {
      start: (_pod, report) => {
        send = report ?? send;
        startedNow();
        return Promise.resolve();
      },
      stop: () => Promise.resolve(),
    },
    report: (r) => send(r),
    started,
  };
}

/** Where every controller test's clock starts. */
export const START = Date.parse('2025-03-01T12:00:00Z');

/**
 * The API server and its controllers without TLS, on a FakeClock at START, with one node `n1` unless `options`
 * says otherwise; stopped after `fn`, also when `fn` fails.
 */
export async function withControlPlane(
  options: ApiServerOptions,
  fn: (s: ApiServer, clock: FakeClock) => Promise<void>,
): Promise<void> {
  const clock = new FakeClock(START);
  const s = await startApiServer({ tls: false, clock, nodes: [{ name: 'n1' }], ...options });
  try {
    await fn(s, clock);
  } finally {
    await s.stop();
  }
}

export interface WebDeploymentOptions {
  /** Merged into the one container, `c` of image `i`: its ports, its resources. */
  readonly container?: JsonObject;
  readonly strategy?: JsonObject;
  /** The Pod template's annotations: a new value is a new template, as `kubectl rollout restart` makes one. */
  readonly annotations?: Record<string, string>;
}

/** Deployment `web` in the request's namespace: `replicas` Pods labelled app=web. */
export function webDeployment(replicas: number, o: WebDeploymentOptions = {}): JsonObject {
  return {
    metadata: { name: 'web' },
    spec: {
      replicas,
      selector: { matchLabels: { app: 'web' } },
      ...(o.strategy ? { strategy: o.strategy } : {}),
      template: {
        metadata: { labels: { app: 'web' }, ...(o.annotations ? { annotations: o.annotations } : {}) },
        spec: { containers: [{ name: 'c', image: 'i', ...o.container }] },
      },
    },
  };
}
