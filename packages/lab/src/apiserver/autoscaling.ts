// HorizontalPodAutoscaler: one stored object in autoscaling/v2's shape, served through autoscaling/v2 and v1 as
// kube-apiserver serves it (pkg/apis/autoscaling/v1/conversion.go): v1 has one metric, targetCPUUtilizationPercentage,
// and keeps what it cannot say (other metrics, behavior, conditions) in annotations, so that a v1 client's update
// does not lose them. Upstream writes those annotations in v1's own metric shape; the lab writes v2's, since no
// client reads them but the lab itself. Defaults and validation are upstream's (pkg/apis/autoscaling/v2/defaults.go,
// pkg/apis/autoscaling/validation), for the fields the lab's controller reads.
import { arr, child, cloneJson, isObject, num, str, type JsonObject } from './json.js';
import { cause, type StatusCause } from './status.js';
import type { Strategy } from './strategy.js';
import { apiVersionOf, type ResourceType } from './resources.js';

export const AUTOSCALING_V1 = 'autoscaling/v1';
export const AUTOSCALING_V2 = 'autoscaling/v2';
/** upstream's DefaultCPUUtilization: the metric an HPA without one gets. */
const DEFAULT_CPU_UTILIZATION = 80;

const METRICS_ANNOTATION = 'autoscaling.alpha.kubernetes.io/metrics';
const BEHAVIOR_ANNOTATION = 'autoscaling.alpha.kubernetes.io/behavior';
const CONDITIONS_ANNOTATION = 'autoscaling.alpha.kubernetes.io/conditions';
const CURRENT_METRICS_ANNOTATION = 'autoscaling.alpha.kubernetes.io/current-metrics';
const V1_ANNOTATIONS = [
  METRICS_ANNOTATION,
  BEHAVIOR_ANNOTATION,
  CONDITIONS_ANNOTATION,
  CURRENT_METRICS_ANNOTATION,
];

export const isHpaV1 = (t: ResourceType): boolean =>
  t.names.kind === 'HorizontalPodAutoscaler' && apiVersionOf(t) === AUTOSCALING_V1;

/** The v2 metric that v1's targetCPUUtilizationPercentage stands for. */
const cpuUtilizationMetric = (percent: number): JsonObject => ({
  type: 'Resource',
  resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: percent } },
});

const isCpuUtilization = (m: unknown): boolean =>
  str(m, 'type') === 'Resource' &&
  str(child(m, 'resource'), 'name') === 'cpu' &&
  str(child(child(m, 'resource'), 'target'), 'type') === 'Utilization';

function parseAnnotation(annotations: JsonObject, key: string): unknown {
  const text = str(annotations, key);
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** A stored (v2) HorizontalPodAutoscaler as autoscaling/v1 shows it. */
export function hpaToV1(stored: JsonObject): JsonObject {
  const spec = child(stored, 'spec');
  const status = child(stored, 'status');
  const metrics = arr(spec, 'metrics');
  const cpu = metrics.find(isCpuUtilization);
  const others = metrics.filter((m) => m !== cpu);
  const annotations: JsonObject = { ...child(child(stored, 'metadata'), 'annotations') };
  if (others.length > 0) annotations[METRICS_ANNOTATION] = JSON.stringify(others);
  if (isObject(spec.behavior)) annotations[BEHAVIOR_ANNOTATION] = JSON.stringify(spec.behavior);
  if (arr(status, 'conditions').length > 0)
    annotations[CONDITIONS_ANNOTATION] = JSON.stringify(status.conditions);
  const current = arr(status, 'currentMetrics');
  const currentCpu = current.find(
    (m) => str(m, 'type') === 'Resource' && str(child(m, 'resource'), 'name') === 'cpu',
  );
  if (current.some((m) => m !== currentCpu))
    annotations[CURRENT_METRICS_ANNOTATION] = JSON.stringify(current.filter((m) => m !== currentCpu));
  const cpuTarget = num(child(child(cpu, 'resource'), 'target'), 'averageUtilization');
  const cpuNow = num(child(child(currentCpu, 'resource'), 'current'), 'averageUtilization');
  const meta = cloneJson(child(stored, 'metadata'));
  if (Object.keys(annotations).length > 0) meta.annotations = annotations;
  return {
    apiVersion: AUTOSCALING_V1,
    kind: 'HorizontalPodAutoscaler',
    metadata: meta,
    spec: {
      scaleTargetRef: cloneJson(child(spec, 'scaleTargetRef')),
      ...(spec.minReplicas !== undefined ? { minReplicas: spec.minReplicas } : {}),
      maxReplicas: spec.maxReplicas,
      ...(cpuTarget !== undefined ? { targetCPUUtilizationPercentage: cpuTarget } : {}),
    },
    ...(stored.status !== undefined
      ? {
          status: {
            ...(status.observedGeneration !== undefined
              ? { observedGeneration: status.observedGeneration }
              : {}),
            ...(status.lastScaleTime !== undefined ? { lastScaleTime: status.lastScaleTime } : {}),
            currentReplicas: num(status, 'currentReplicas') ?? 0,
            desiredReplicas: num(status, 'desiredReplicas') ?? 0,
            ...(cpuNow !== undefined ? { currentCPUUtilizationPercentage: cpuNow } : {}),
          },
        }
      : {}),
  };
}

/** An autoscaling/v1 body in the stored (v2) shape; the annotations v1 keeps v2's fields in are read back. */
export function hpaFromV1(served: JsonObject): JsonObject {
  const out = cloneJson(served);
  const meta = child(out, 'metadata');
  const annotations = child(meta, 'annotations');
  const spec = child(served, 'spec');
  const cpu = num(spec, 'targetCPUUtilizationPercentage');
  const others = parseAnnotation(annotations, METRICS_ANNOTATION);
  const metrics = [
    ...(cpu !== undefined ? [cpuUtilizationMetric(cpu)] : []),
    ...(Array.isArray(others) ? others : []),
  ];
  const behavior = parseAnnotation(annotations, BEHAVIOR_ANNOTATION);
  const v2spec: JsonObject = {
    scaleTargetRef: cloneJson(child(spec, 'scaleTargetRef')),
    ...(spec.minReplicas !== undefined ? { minReplicas: spec.minReplicas } : {}),
    maxReplicas: spec.maxReplicas,
    ...(metrics.length > 0 ? { metrics } : {}),
    ...(isObject(behavior) ? { behavior } : {}),
  };
  out.spec = v2spec;
  if (isObject(served.status)) out.status = statusFromV1(served.status, annotations);
  for (const k of V1_ANNOTATIONS) delete annotations[k];
  if (isObject(meta.annotations) && Object.keys(annotations).length === 0) delete meta.annotations;
  out.apiVersion = AUTOSCALING_V2;
  return out;
}

function statusFromV1(status: JsonObject, annotations: JsonObject): JsonObject {
  const cpuNow = num(status, 'currentCPUUtilizationPercentage');
  const others = parseAnnotation(annotations, CURRENT_METRICS_ANNOTATION);
  const conditions = parseAnnotation(annotations, CONDITIONS_ANNOTATION);
  const currentMetrics = [
    ...(cpuNow !== undefined
      ? [{ type: 'Resource', resource: { name: 'cpu', current: { averageUtilization: cpuNow } } }]
      : []),
    ...(Array.isArray(others) ? others : []),
  ];
  const out: JsonObject = { ...status };
  delete out.currentCPUUtilizationPercentage;
  if (currentMetrics.length > 0) out.currentMetrics = currentMetrics;
  if (Array.isArray(conditions)) out.conditions = conditions;
  return out;
}

const setDefault = (obj: JsonObject, key: string, value: unknown): void => {
  if (obj[key] === undefined || obj[key] === null) obj[key] = value;
};

/**
 * upstream's GenerateHPAScaleUpRules/GenerateHPAScaleDownRules: a behavior that is given gets every missing rule
 * filled in; scale-down's window stays unset, for the controller's --horizontal-pod-autoscaler-downscale-stabilization.
 */
function behaviorDefaults(behavior: JsonObject): void {
  const up = isObject(behavior.scaleUp) ? behavior.scaleUp : (behavior.scaleUp = {});
  setDefault(up, 'stabilizationWindowSeconds', 0);
  setDefault(up, 'selectPolicy', 'Max');
  setDefault(up, 'policies', [
    { type: 'Pods', value: 4, periodSeconds: 15 },
    { type: 'Percent', value: 100, periodSeconds: 15 },
  ]);
  const down = isObject(behavior.scaleDown) ? behavior.scaleDown : (behavior.scaleDown = {});
  setDefault(down, 'selectPolicy', 'Max');
  setDefault(down, 'policies', [{ type: 'Percent', value: 100, periodSeconds: 15 }]);
}

function hpaDefaults(obj: JsonObject): void {
  const spec = isObject(obj.spec) ? obj.spec : (obj.spec = {});
  setDefault(spec, 'minReplicas', 1);
  if (arr(spec, 'metrics').length === 0) spec.metrics = [cpuUtilizationMetric(DEFAULT_CPU_UTILIZATION)];
  if (isObject(spec.behavior)) behaviorDefaults(spec.behavior);
}

const isInt = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v);

function scalingRulesCauses(rules: unknown, path: string): StatusCause[] {
  if (!isObject(rules)) return [];
  const out: StatusCause[] = [];
  const window = rules.stabilizationWindowSeconds;
  if (window !== undefined && (!isInt(window) || window < 0 || window > 3600))
    out.push(
      cause(
        `${path}.stabilizationWindowSeconds`,
        `Invalid value: ${JSON.stringify(window)}: must be greater than or equal to zero and less than or equal to 3600`,
      ),
    );
  const select = rules.selectPolicy;
  if (select !== undefined && select !== 'Max' && select !== 'Min' && select !== 'Disabled')
    out.push(
      cause(
        `${path}.selectPolicy`,
        `Unsupported value: ${JSON.stringify(select)}: supported values: "Disabled", "Max", "Min"`,
        'FieldValueNotSupported',
      ),
    );
  const policies = arr(rules, 'policies');
  if (policies.length === 0)
    out.push(
      cause(`${path}.policies`, 'Required value: must specify at least one Policy', 'FieldValueRequired'),
    );
  policies.forEach((p, i) => {
    const pp = `${path}.policies[${i}]`;
    const type = str(p, 'type');
    if (type !== 'Pods' && type !== 'Percent')
      out.push(
        cause(
          `${pp}.type`,
          `Unsupported value: ${JSON.stringify(type ?? '')}: supported values: "Percent", "Pods"`,
          'FieldValueNotSupported',
        ),
      );
    const value = num(p, 'value');
    if (!isInt(value) || value <= 0)
      out.push(
        cause(`${pp}.value`, `Invalid value: ${JSON.stringify(value ?? 0)}: must be greater than zero`),
      );
    const period = num(p, 'periodSeconds');
    if (!isInt(period) || period <= 0 || period > 1800)
      out.push(
        cause(
          `${pp}.periodSeconds`,
          `Invalid value: ${JSON.stringify(period ?? 0)}: must be greater than zero and less than or equal to 1800`,
        ),
      );
  });
  return out;
}

const METRIC_SOURCES: Readonly<Record<string, string>> = {
  Resource: 'resource',
  ContainerResource: 'containerResource',
  Pods: 'pods',
  Object: 'object',
  External: 'external',
};

function metricCauses(m: unknown, path: string): StatusCause[] {
  const type = str(m, 'type') ?? '';
  const field = METRIC_SOURCES[type];
  if (!field)
    return [
      cause(
        `${path}.type`,
        `Unsupported value: ${JSON.stringify(type)}: supported values: "ContainerResource", "External", "Object", "Pods", "Resource"`,
        'FieldValueNotSupported',
      ),
    ];
  const source = child(m, field);
  if (!isObject(isObject(m) ? m[field] : undefined))
    return [
      cause(
        `${path}.${field}`,
        `Required value: must populate information for the given metric source`,
        'FieldValueRequired',
      ),
    ];
  const out: StatusCause[] = [];
  if ((type === 'Resource' || type === 'ContainerResource') && !str(source, 'name'))
    out.push(
      cause(`${path}.${field}.name`, 'Required value: must specify a resource name', 'FieldValueRequired'),
    );
  const target = child(source, 'target');
  const targetType = str(target, 'type');
  if (targetType !== 'Utilization' && targetType !== 'Value' && targetType !== 'AverageValue')
    out.push(
      cause(
        `${path}.${field}.target.type`,
        `Unsupported value: ${JSON.stringify(targetType ?? '')}: supported values: "AverageValue", "Utilization", "Value"`,
        'FieldValueNotSupported',
      ),
    );
  const utilization = target.averageUtilization;
  if (utilization !== undefined && (!isInt(utilization) || utilization <= 0))
    out.push(
      cause(
        `${path}.${field}.target.averageUtilization`,
        `Invalid value: ${JSON.stringify(utilization)}: must be greater than 0`,
      ),
    );
  return out;
}

export const horizontalPodAutoscalerStrategy: Strategy = {
  prepareForCreate(obj) {
    hpaDefaults(obj);
    delete obj.status;
  },
  prepareForUpdate(obj) {
    hpaDefaults(obj);
  },
  validate(obj) {
    const out: StatusCause[] = [];
    const spec = child(obj, 'spec');
    const ref = child(spec, 'scaleTargetRef');
    if (!str(ref, 'kind'))
      out.push(cause('spec.scaleTargetRef.kind', 'Required value', 'FieldValueRequired'));
    if (!str(ref, 'name'))
      out.push(cause('spec.scaleTargetRef.name', 'Required value', 'FieldValueRequired'));
    const min = spec.minReplicas;
    if (min !== undefined && (!isInt(min) || min < 1))
      out.push(
        cause(
          'spec.minReplicas',
          `Invalid value: ${JSON.stringify(min)}: must be greater than or equal to 1`,
        ),
      );
    const max = spec.maxReplicas;
    if (!isInt(max) || max < 1)
      out.push(
        cause('spec.maxReplicas', `Invalid value: ${JSON.stringify(max ?? 0)}: must be greater than 0`),
      );
    else if (isInt(min) && max < min)
      out.push(
        cause('spec.maxReplicas', `Invalid value: ${max}: must be greater than or equal to \`minReplicas\``),
      );
    arr(spec, 'metrics').forEach((m, i) => out.push(...metricCauses(m, `spec.metrics[${i}]`)));
    const behavior = child(spec, 'behavior');
    out.push(...scalingRulesCauses(behavior.scaleUp, 'spec.behavior.scaleUp'));
    out.push(...scalingRulesCauses(behavior.scaleDown, 'spec.behavior.scaleDown'));
    return out;
  },
};
