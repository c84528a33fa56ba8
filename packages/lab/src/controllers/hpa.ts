// The HorizontalPodAutoscaler controller, as upstream's (pkg/controller/podautoscaler/horizontal.go): every sync
// period (15 s, --horizontal-pod-autoscaler-sync-period) each HPA reads its target's scale subresource (size and
// selector), the Pods it selects and their usage from the metrics source (the lab's metrics.k8s.io figures), works
// out the replicas each metric asks for, stabilizes and rate-limits that by its behavior (hpa-recommendation.ts),
// writes the new size through the target's scale subresource, and reports in its status (currentReplicas,
// desiredReplicas, currentMetrics, lastScaleTime, the AbleToScale / ScalingActive / ScalingLimited conditions) and
// in Events (SuccessfulRescale, FailedGetScale, FailedGetResourceMetric). Resource and ContainerResource metrics
// only: the lab has no custom or external metrics API, and says so in the condition.
import type { Clock, TimerHandle } from 'kube-proxy-ts/util/clock.js';
import type { Logger } from 'kube-proxy-ts/util/logger.js';
import { arr, child, num, str, type JsonObject } from '../apiserver/json.js';
import { rfc3339, type Registry } from '../apiserver/registry.js';
import { apiVersionOf, resourceByKind, RESOURCES, type ResourceType } from '../apiserver/resources.js';
import { labelsOf, matchesLabels, parseLabelSelector } from '../apiserver/selectors.js';
import type { EventRecorder } from './events.js';
import {
  behaviorOf,
  DEFAULT_DOWNSCALE_WINDOW_SECONDS,
  DEFAULT_TOLERANCE,
  limitRate,
  normalizeWithoutBehavior,
  recordScale,
  resourceReplicas,
  ScalingHistory,
  stabilize,
  type Limited,
  type MetricTargetValue,
  type Outcome,
  type PodSample,
} from './hpa-recommendation.js';
import { isPodReady } from './pods.js';
import { formatQuantity, parseQuantity } from './quantity.js';

const HPA = resourceByKind('HorizontalPodAutoscaler');
const POD = resourceByKind('Pod');
export const DEFAULT_HPA_SYNC_PERIOD_MS = 15_000;
const meta = (o: unknown): JsonObject => child(o, 'metadata');

/** One container's usage: CPU in millicores, memory in bytes. */
export interface ContainerUsage {
  readonly cpu: number;
  readonly memory: number;
}

/** The resource metrics API as the controller reads it: each container's usage, undefined when not measured. */
export type PodMetricsSource = (
  namespace: string,
  pod: string,
) => Readonly<Record<string, ContainerUsage>> | undefined;

export interface HpaControllerOptions {
  readonly registry: Registry;
  readonly clock: Clock;
  readonly logger: Logger;
  /** The horizontal-pod-autoscaler's recorder. */
  readonly recorder: EventRecorder;
  /** Without one, every resource metric fails as it does on a cluster without metrics-server. */
  readonly metrics?: PodMetricsSource;
  /** Default 15 s. */
  readonly syncPeriodMs?: number;
  /** The scale-down window of an HPA that names none (default 300 s). */
  readonly downscaleWindowSeconds?: number;
  readonly tolerance?: number;
}

interface MetricResult {
  readonly replicas: number;
  /** "cpu resource utilization (percentage of request)": what a rescale's reason names. */
  readonly name: string;
  readonly status: JsonObject;
}

interface Condition {
  readonly type: 'AbleToScale' | 'ScalingActive' | 'ScalingLimited';
  readonly status: 'True' | 'False';
  readonly reason: string;
  readonly message: string;
}

const GOT_SCALE: Condition = {
  type: 'AbleToScale',
  status: 'True',
  reason: 'SucceededGetScale',
  message: "the HPA controller was able to get the target's current scale",
};

/** The HPA's resource metric (Resource or ContainerResource) in the units the calculator works in. */
interface ResourceMetric {
  readonly field: 'resource' | 'containerResource';
  readonly resource: string;
  readonly container?: string;
  readonly target: MetricTargetValue;
}

/** Millicores for CPU, bytes for anything else. */
const toUnits = (resource: string, q: unknown): number | undefined => {
  const v = parseQuantity(q);
  return v === undefined ? undefined : resource === 'cpu' ? v * 1000 : v;
};

function resourceMetricOf(m: unknown): Outcome<ResourceMetric> {
  const type = str(m, 'type');
  if (type !== 'Resource' && type !== 'ContainerResource')
    return { ok: false, error: `${type ?? ''} metrics are not served by the lab (resource metrics only)` };
  const field = type === 'Resource' ? 'resource' : 'containerResource';
  const source = child(m, field);
  const resource = str(source, 'name') ?? '';
  const target = child(source, 'target');
  const utilization = num(target, 'averageUtilization');
  const average = toUnits(resource, target.averageValue);
  const metric =
    str(target, 'type') === 'Utilization' && utilization !== undefined
      ? { type: 'Utilization' as const, averageUtilization: utilization }
      : str(target, 'type') === 'AverageValue' && average !== undefined && average > 0
        ? { type: 'AverageValue' as const, averageValue: average }
        : undefined;
  if (!metric) return { ok: false, error: `invalid target for the ${resource} metric` };
  const container = str(source, 'container');
  return { ok: true, value: { field, resource, ...(container ? { container } : {}), target: metric } };
}

export class HorizontalPodAutoscalerController {
  private readonly histories = new Map<string, ScalingHistory>();
  private timer: TimerHandle | undefined;
  private stopped = false;
  private readonly unsubscribe: () => void;

  constructor(private readonly o: HpaControllerOptions) {
    // A deleted HPA's history goes with it; one made again under the same name starts afresh, as upstream.
    this.unsubscribe = o.registry.store.subscribe((ev) => {
      if (ev.resource.names.kind === 'HorizontalPodAutoscaler' && ev.type === 'DELETED')
        this.histories.delete(str(meta(ev.object), 'uid') ?? '');
    });
    this.schedule();
  }

  stop(): void {
    this.stopped = true;
    this.unsubscribe();
    if (this.timer) this.o.clock.clearTimeout(this.timer);
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = this.o.clock.setTimeout(() => {
      this.syncAll();
      this.schedule();
    }, this.o.syncPeriodMs ?? DEFAULT_HPA_SYNC_PERIOD_MS);
  }

  /** One round over every HPA; one that fails is logged and the others go on. */
  syncAll(): void {
    for (const hpa of this.o.registry.store.list(HPA)) {
      if (str(meta(hpa), 'deletionTimestamp')) continue;
      try {
        this.reconcile(hpa);
      } catch (e) {
        this.o.logger.error('hpa sync failed', { hpa: this.key(hpa), error: String(e) });
      }
    }
  }

  private key(hpa: JsonObject): string {
    return `${str(meta(hpa), 'namespace') ?? ''}/${str(meta(hpa), 'name') ?? ''}`;
  }

  private reconcile(hpa: JsonObject): void {
    const spec = child(hpa, 'spec');
    const namespace = str(meta(hpa), 'namespace') ?? '';
    const ref = child(spec, 'scaleTargetRef');
    const target = this.targetType(ref);
    const scale = target ? this.o.registry.getScale(target, namespace, str(ref, 'name') ?? '') : undefined;
    if (!target || !scale?.ok) {
      const why = !target
        ? `no scale subresource for ${str(ref, 'apiVersion') ?? ''} ${str(ref, 'kind') ?? ''}`
        : scale && !scale.ok
          ? scale.error.message
          : '';
      this.warn(hpa, 'FailedGetScale', why);
      this.writeStatus(hpa, { current: num(child(hpa, 'status'), 'currentReplicas') ?? 0 }, [
        {
          type: 'AbleToScale',
          status: 'False',
          reason: 'FailedGetScale',
          message: `the HPA controller was unable to get the target's current scale: ${why}`,
        },
      ]);
      return;
    }
    const current = num(child(scale.value, 'spec'), 'replicas') ?? 0;
    const selector = str(child(scale.value, 'status'), 'selector') ?? '';
    const min = num(spec, 'minReplicas') ?? 1;
    const max = num(spec, 'maxReplicas') ?? min;
    const conditions: Condition[] = [];
    let desired: number;
    let reason = '';
    let metricStatuses: JsonObject[] = [];
    if (current === 0 && min !== 0) {
      this.writeStatus(hpa, { current, desired: 0 }, [
        {
          type: 'ScalingActive',
          status: 'False',
          reason: 'ScalingDisabled',
          message: 'scaling is disabled since the replica count of the target is zero',
        },
      ]);
      return;
    } else if (current > max) {
      [desired, reason] = [max, 'Current number of replicas above Spec.MaxReplicas'];
    } else if (current < min) {
      [desired, reason] = [min, 'Current number of replicas below Spec.MinReplicas'];
    } else {
      const computed = this.computeForMetrics(hpa, current, namespace, selector);
      metricStatuses = computed.statuses;
      if (!computed.ok) {
        this.writeStatus(hpa, { current, metrics: metricStatuses }, [GOT_SCALE, computed.condition]);
        return;
      }
      conditions.push({
        type: 'ScalingActive',
        status: 'True',
        reason: 'ValidMetricFound',
        message: `the HPA was able to successfully calculate a replica count from ${computed.name}`,
      });
      reason =
        computed.replicas > current
          ? `${computed.name} above target`
          : computed.replicas < current
            ? 'All metrics below target'
            : '';
      const normalized = this.normalize(hpa, current, computed.replicas, { min, max });
      conditions.push(...normalized.conditions);
      desired = normalized.replicas;
    }
    this.rescale(hpa, target, scale.value, current, desired, reason, metricStatuses, conditions);
  }

  private rescale(
    hpa: JsonObject,
    target: ResourceType,
    scale: JsonObject,
    current: number,
    desired: number,
    reason: string,
    metrics: JsonObject[],
    conditions: Condition[],
  ): void {
    if (desired === current) {
      this.writeStatus(hpa, { current, desired: current, metrics }, conditions);
      return;
    }
    const name = str(meta(scale), 'name') ?? '';
    const body = {
      apiVersion: 'autoscaling/v1',
      kind: 'Scale',
      metadata: { name, namespace: str(meta(scale), 'namespace') },
      spec: { replicas: desired },
    };
    const r = this.o.registry.update(target, str(meta(hpa), 'namespace') ?? '', name, body, 'scale');
    if (!r.ok) {
      this.warn(hpa, 'FailedRescale', `New size: ${desired}; reason: ${reason}; error: ${r.error.message}`);
      this.writeStatus(hpa, { current, desired: current, metrics }, [
        ...conditions.filter((c) => c.type !== 'AbleToScale'),
        {
          type: 'AbleToScale',
          status: 'False',
          reason: 'FailedUpdateScale',
          message: `the HPA controller was unable to update the target scale: ${r.error.message}`,
        },
      ]);
      return;
    }
    this.o.recorder.event(hpa, {
      type: 'Normal',
      reason: 'SuccessfulRescale',
      message: `New size: ${desired}; reason: ${reason}`,
    });
    const behavior = behaviorOf(child(hpa, 'spec'), this.downscaleWindow);
    if (behavior) recordScale(this.history(hpa), behavior, this.o.clock.now(), current, desired);
    this.writeStatus(hpa, { current, desired, metrics, scaled: true }, [
      ...conditions.filter((c) => c.type !== 'AbleToScale'),
      {
        type: 'AbleToScale',
        status: 'True',
        reason: 'SucceededRescale',
        message: `the HPA controller was able to update the target scale to ${desired}`,
      },
    ]);
  }

  private get downscaleWindow(): number {
    return this.o.downscaleWindowSeconds ?? DEFAULT_DOWNSCALE_WINDOW_SECONDS;
  }

  /**
   * The HPA's recommendations and scale events. A new one starts with the current size as a recommendation made
   * now (upstream's recordInitialRecommendation), so an HPA just created, or a controller just restarted, does
   * not shrink its target before a whole scale-down window has passed.
   */
  private history(hpa: JsonObject, current?: number): ScalingHistory {
    const uid = str(meta(hpa), 'uid') ?? '';
    let h = this.histories.get(uid);
    if (!h) {
      this.histories.set(uid, (h = new ScalingHistory()));
      if (current !== undefined) h.recommendations.push({ value: current, at: this.o.clock.now() });
    }
    return h;
  }

  /** Stabilization and rate, with behavior or by the older rules; AbleToScale and ScalingLimited say which bound. */
  private normalize(
    hpa: JsonObject,
    current: number,
    desired: number,
    bounds: { min: number; max: number },
  ): { replicas: number; conditions: Condition[] } {
    const now = this.o.clock.now();
    const history = this.history(hpa, current);
    const behavior = behaviorOf(child(hpa, 'spec'), this.downscaleWindow);
    let stabilized: Limited;
    let limited: Limited;
    if (behavior) {
      stabilized = stabilize(history, now, current, desired, behavior);
      limited = limitRate(history, now, current, stabilized.replicas, bounds, behavior);
    } else
      ({ stabilized, limited } = normalizeWithoutBehavior(
        history,
        now,
        current,
        desired,
        bounds,
        this.downscaleWindow,
      ));
    const able: Condition =
      stabilized.replicas !== desired
        ? { type: 'AbleToScale', status: 'True', reason: stabilized.reason, message: stabilized.message }
        : {
            type: 'AbleToScale',
            status: 'True',
            reason: 'ReadyForNewScale',
            message: 'recommended size matches current size',
          };
    const limitedCondition: Condition = {
      type: 'ScalingLimited',
      status: limited.replicas === stabilized.replicas ? 'False' : 'True',
      reason: limited.reason,
      message: limited.message,
    };
    return { replicas: limited.replicas, conditions: [able, limitedCondition] };
  }

  /** The resource type of a scaleTargetRef, when it has a scale subresource. */
  private targetType(ref: JsonObject): ResourceType | undefined {
    const kind = str(ref, 'kind');
    const apiVersion = str(ref, 'apiVersion');
    return RESOURCES.find(
      (r) =>
        r.names.kind === kind &&
        r.subresources.includes('scale') &&
        (!apiVersion || apiVersionOf(r) === apiVersion),
    );
  }

  /** The largest replica count any metric asks for, with each metric's status (computeReplicasForMetrics). */
  private computeForMetrics(
    hpa: JsonObject,
    current: number,
    namespace: string,
    selectorText: string,
  ):
    | { ok: true; replicas: number; name: string; statuses: JsonObject[] }
    | { ok: false; statuses: JsonObject[]; condition: Condition } {
    const parsed = parseLabelSelector(selectorText);
    const pods =
      'error' in parsed || selectorText === ''
        ? []
        : this.o.registry.store
            .list(POD, namespace)
            .filter((p) => matchesLabels(parsed.selector, labelsOf(p)));
    const statuses: JsonObject[] = [];
    let best: MetricResult | undefined;
    let firstError: { reason: string; message: string } | undefined;
    for (const m of arr(child(hpa, 'spec'), 'metrics')) {
      const r = this.metricReplicas(m, current, namespace, pods);
      if (r.ok) {
        statuses.push(r.value.status);
        if (!best || r.value.replicas > best.replicas) best = r.value;
      } else {
        statuses.push({ type: '' });
        firstError ??= { reason: `FailedGet${str(m, 'type') ?? ''}Metric`, message: r.error };
        this.warn(hpa, firstError.reason, r.error);
      }
    }
    if (best) return { ok: true, replicas: best.replicas, name: best.name, statuses };
    const error = firstError ?? { reason: 'InvalidMetricSourceType', message: 'no metrics to compute from' };
    this.warn(
      hpa,
      'FailedComputeMetricsReplicas',
      `invalid metrics (${arr(child(hpa, 'spec'), 'metrics').length} invalid out of ${arr(child(hpa, 'spec'), 'metrics').length}), first error is: ${error.message}`,
    );
    return {
      ok: false,
      statuses,
      condition: {
        type: 'ScalingActive',
        status: 'False',
        reason: error.reason,
        message: `the HPA was unable to compute the replica count: ${error.message}`,
      },
    };
  }

  private metricReplicas(
    m: unknown,
    current: number,
    namespace: string,
    pods: readonly JsonObject[],
  ): Outcome<MetricResult> {
    const metric = resourceMetricOf(m);
    if (!metric.ok) return metric;
    const { resource, target, field } = metric.value;
    const samples: PodSample[] = [];
    for (const p of pods) {
      const sample = this.sample(p, namespace, metric.value);
      if (!sample.ok) return sample;
      samples.push(sample.value);
    }
    if (!this.o.metrics)
      return {
        ok: false,
        error: `failed to get ${resource} utilization: unable to get metrics for resource ${resource}: no metrics returned from resource metrics API`,
      };
    const r = resourceReplicas(current, samples, target, this.o.tolerance ?? DEFAULT_TOLERANCE);
    if (!r.ok) return { ok: false, error: `failed to get ${resource} utilization: ${r.error}` };
    const name =
      target.type === 'Utilization'
        ? `${resource} resource utilization (percentage of request)`
        : `${resource} resource`;
    const status: JsonObject = {
      type: str(m, 'type'),
      [field]: {
        name: resource,
        ...(metric.value.container ? { container: metric.value.container } : {}),
        current: {
          ...(r.value.utilization !== undefined ? { averageUtilization: r.value.utilization } : {}),
          averageValue: formatQuantity(resource, r.value.averageValue),
        },
      },
    };
    return { ok: true, value: { replicas: r.value.replicas, name, status } };
  }

  /** One Pod as the calculator reads it; a container without a request of the resource is an error, as upstream. */
  private sample(pod: JsonObject, namespace: string, metric: ResourceMetric): Outcome<PodSample> {
    const name = str(meta(pod), 'name') ?? '';
    const phase = str(child(pod, 'status'), 'phase');
    const containers = arr(child(pod, 'spec'), 'containers').filter(
      (c) => metric.container === undefined || str(c, 'name') === metric.container,
    );
    let request = 0;
    for (const c of containers) {
      const q = toUnits(metric.resource, child(child(c, 'resources'), 'requests')[metric.resource]);
      if (q === undefined) {
        if (metric.target.type === 'Utilization')
          return {
            ok: false,
            error: `failed to get ${metric.resource} utilization: missing request for ${metric.resource} in container ${str(c, 'name') ?? ''} of Pod ${name}`,
          };
        continue;
      }
      request += q;
    }
    const usage = this.o.metrics?.(namespace, name);
    const used = usage
      ? Object.entries(usage)
          .filter(([c]) => metric.container === undefined || c === metric.container)
          .reduce(
            (n, [, u]) =>
              n + (metric.resource === 'cpu' ? u.cpu : metric.resource === 'memory' ? u.memory : 0),
            0,
          )
      : undefined;
    return {
      ok: true,
      value: {
        name,
        ignored: Boolean(str(meta(pod), 'deletionTimestamp')) || phase === 'Failed',
        // Upstream trusts CPU only from ready Pods (a starting process burns CPU it will not keep).
        unready: phase === 'Pending' || (metric.resource === 'cpu' && !isPodReady(pod)),
        usage: used,
        request,
      },
    };
  }

  private warn(hpa: JsonObject, reason: string, message: string): void {
    this.o.recorder.event(hpa, { type: 'Warning', reason, message });
  }

  /** The HPA's status; each condition keeps its lastTransitionTime while its status stays the same. */
  private writeStatus(
    hpa: JsonObject,
    s: { current: number; desired?: number; metrics?: JsonObject[]; scaled?: boolean },
    conditions: readonly Condition[],
  ): void {
    const fresh = this.o.registry.store.get(
      HPA,
      str(meta(hpa), 'namespace') ?? '',
      str(meta(hpa), 'name') ?? '',
    );
    if (!fresh) return;
    const prev = child(fresh, 'status');
    const now = rfc3339(this.o.clock.now());
    const merged = new Map<string, JsonObject>();
    for (const c of arr(prev, 'conditions')) merged.set(str(c, 'type') ?? '', c as JsonObject);
    for (const c of conditions) {
      const before = merged.get(c.type);
      const since = str(before, 'status') === c.status ? (str(before, 'lastTransitionTime') ?? now) : now;
      merged.set(c.type, { ...c, lastTransitionTime: since });
    }
    const order = ['AbleToScale', 'ScalingActive', 'ScalingLimited'];
    const status: JsonObject = {
      observedGeneration: num(meta(fresh), 'generation') ?? 1,
      ...(s.scaled
        ? { lastScaleTime: now }
        : prev.lastScaleTime !== undefined
          ? { lastScaleTime: prev.lastScaleTime }
          : {}),
      currentReplicas: s.current,
      desiredReplicas: s.desired ?? num(prev, 'desiredReplicas') ?? s.current,
      ...(s.metrics && s.metrics.length > 0 ? { currentMetrics: s.metrics } : {}),
      conditions: [...merged.values()].sort(
        (a, b) => order.indexOf(str(a, 'type') ?? '') - order.indexOf(str(b, 'type') ?? ''),
      ),
    };
    const r = this.o.registry.update(
      HPA,
      str(meta(fresh), 'namespace') ?? '',
      str(meta(fresh), 'name') ?? '',
      { ...fresh, status },
      'status',
    );
    if (!r.ok)
      this.o.logger.warn('cannot update hpa status', { hpa: this.key(fresh), error: r.error.message });
  }
}
