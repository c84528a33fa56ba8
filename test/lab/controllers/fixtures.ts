// Objects the controller tests share: the Deployment `web` they scale, roll out and put behind Services.
import type { JsonObject } from '../../../packages/lab/src/apiserver/json.js';

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
