// The lab's controllers, started together against one registry.
import type { Clock } from 'kube-proxy-ts/util/clock.js';
import type { Logger } from 'kube-proxy-ts/util/logger.js';
import type { Registry } from '../apiserver/registry.js';
import { DaemonSetController } from './daemonset.js';
import { DeploymentController } from './deployment.js';
import { EndpointSliceController } from './endpointslice.js';
import { EndpointsController } from './endpoints.js';
import { controlPlaneEvents, EventRecorder } from './events.js';
import { HorizontalPodAutoscalerController, type PodMetricsSource } from './hpa.js';
import { NodePicker } from './node-picker.js';
import type { PodLifecycle } from './pod-lifecycle.js';
import { PodController } from './pods.js';
import { ReplicaSetController } from './replicaset.js';
import { ServiceCIDRController } from './service-cidr.js';

export { readyPodLifecycle, lingeringPodLifecycle, type PodLifecycle } from './pod-lifecycle.js';
export type { ContainerUsage, PodMetricsSource } from './hpa.js';

export interface ControllerOptions {
  readonly registry: Registry;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly podLifecycle: PodLifecycle;
  readonly maxEndpointsPerSlice: number;
  /** Pods' usage for the HorizontalPodAutoscalers (the lab's metrics.k8s.io figures); none: their metrics fail. */
  readonly podMetrics?: PodMetricsSource;
  /** How often the HorizontalPodAutoscalers are evaluated (default 15 s, as upstream). */
  readonly hpaSyncPeriodMs?: number;
}

export interface Controllers {
  /** Resolves once no controller has work queued (the cluster has settled, until the next change or timer). */
  idle(): Promise<void>;
  stop(): void;
}

export function startControllers(o: ControllerOptions): Controllers {
  const picker = new NodePicker(o.registry.store);
  const events = controlPlaneEvents(o.registry, o.clock, o.logger);
  const pods = new PodController({
    events,
    registry: o.registry,
    clock: o.clock,
    lifecycle: o.podLifecycle,
    picker,
    logger: o.logger,
  });
  const deployments = new DeploymentController({
    registry: o.registry,
    events,
    clock: o.clock,
    logger: o.logger,
  });
  const replicaSets = new ReplicaSetController({
    registry: o.registry,
    events,
    picker,
    clock: o.clock,
    logger: o.logger,
    recorder: new EventRecorder(o.registry, o.clock, o.logger, { component: 'replicaset-controller' }),
  });
  const autoscalers = new HorizontalPodAutoscalerController({
    registry: o.registry,
    clock: o.clock,
    logger: o.logger,
    recorder: new EventRecorder(o.registry, o.clock, o.logger, { component: 'horizontal-pod-autoscaler' }),
    ...(o.podMetrics ? { metrics: o.podMetrics } : {}),
    ...(o.hpaSyncPeriodMs !== undefined ? { syncPeriodMs: o.hpaSyncPeriodMs } : {}),
  });
  const slices = new EndpointSliceController({
    registry: o.registry,
    clock: o.clock,
    logger: o.logger,
    maxEndpointsPerSlice: o.maxEndpointsPerSlice,
    events: new EventRecorder(o.registry, o.clock, o.logger, { component: 'endpoint-slice-controller' }),
  });
  const daemonSets = new DaemonSetController({ registry: o.registry, logger: o.logger, events });
  const endpoints = new EndpointsController(o.registry, o.logger);
  const serviceCIDRs = new ServiceCIDRController({ registry: o.registry, clock: o.clock, logger: o.logger });
  const queues = [
    pods.queue,
    deployments.queue,
    replicaSets.queue,
    daemonSets.queue,
    slices.queue,
    endpoints.queue,
    serviceCIDRs.queue,
  ];
  return {
    async idle() {
      // One queue's work can feed another's; settle only when all are quiet at once, after pending promise
      // callbacks (a plug's start/stop) have had their turn.
      for (let round = 0; round < 1000; round++) {
        await Promise.all(queues.map((q) => q.idle()));
        await new Promise((resolve) => setImmediate(resolve));
        if (queues.every((q) => !q.busy)) return;
      }
    },
    stop() {
      pods.stop();
      deployments.stop();
      replicaSets.stop();
      autoscalers.stop();
      daemonSets.stop();
      slices.stop();
      endpoints.stop();
      serviceCIDRs.stop();
    },
  };
}
