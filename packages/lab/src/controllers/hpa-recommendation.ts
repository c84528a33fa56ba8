// What a HorizontalPodAutoscaler recommends, as upstream's pkg/controller/podautoscaler computes it, on plain values
// so that each step can be tested with a clock and numbers of one's choosing:
//  1. the replica calculator (replica_calculator.go): ceil(ready Pods × usage / target), unless the ratio is within
//     the tolerance (10%); unready and unmeasured Pods are counted as 0% on a scale-up and as 100% on a scale-down,
//     and a change that would turn the direction round is no change;
//  2. stabilization (horizontal.go): the recommendations of the last window seconds bound the new one, the
//     highest of scale-down's window and the lowest of scale-up's;
//  3. rate (horizontal.go): each policy allows so many Pods (or percent) per periodSeconds, counted from the scale
//     events of that period; selectPolicy picks the largest change (Max), the smallest (Min), or none (Disabled);
//     the result stays within minReplicas and maxReplicas.
// An HPA without `behavior` keeps upstream's older rules: only a scale-down window (the controller's, 300 s by
// default), and a scale-up of at most max(2 × current, 4).

export type SelectPolicy = 'Max' | 'Min' | 'Disabled';

export interface ScalingPolicy {
  readonly type: 'Pods' | 'Percent';
  readonly value: number;
  readonly periodSeconds: number;
}

export interface ScalingRules {
  readonly stabilizationWindowSeconds: number;
  readonly selectPolicy: SelectPolicy;
  readonly policies: readonly ScalingPolicy[];
}

export interface Behavior {
  readonly scaleUp: ScalingRules;
  readonly scaleDown: ScalingRules;
}

/** upstream's tolerance (--horizontal-pod-autoscaler-tolerance): a usage ratio within 10% of 1 changes nothing. */
export const DEFAULT_TOLERANCE = 0.1;
/** --horizontal-pod-autoscaler-downscale-stabilization */
export const DEFAULT_DOWNSCALE_WINDOW_SECONDS = 300;

/** The defaults apiserver fills into a behavior that is given (GenerateHPAScaleUpRules / ScaleDownRules). */
const DEFAULT_SCALE_UP: ScalingRules = {
  stabilizationWindowSeconds: 0,
  selectPolicy: 'Max',
  policies: [
    { type: 'Pods', value: 4, periodSeconds: 15 },
    { type: 'Percent', value: 100, periodSeconds: 15 },
  ],
};
const DEFAULT_SCALE_DOWN_POLICIES: readonly ScalingPolicy[] = [
  { type: 'Percent', value: 100, periodSeconds: 15 },
];

type Json = { readonly [key: string]: unknown };
const obj = (v: unknown): Json =>
  typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Json) : {};
const int = (v: unknown): number | undefined =>
  typeof v === 'number' && Number.isInteger(v) ? v : undefined;

function rulesOf(raw: unknown, fallback: ScalingRules): ScalingRules {
  const r = obj(raw);
  const select = r.selectPolicy;
  const policies = Array.isArray(r.policies)
    ? r.policies.map(obj).flatMap((p): ScalingPolicy[] => {
        const type = p.type === 'Pods' || p.type === 'Percent' ? p.type : undefined;
        const value = int(p.value);
        const period = int(p.periodSeconds);
        return type && value !== undefined && period !== undefined
          ? [{ type, value, periodSeconds: period }]
          : [];
      })
    : fallback.policies;
  return {
    stabilizationWindowSeconds: int(r.stabilizationWindowSeconds) ?? fallback.stabilizationWindowSeconds,
    selectPolicy:
      select === 'Min' || select === 'Disabled' || select === 'Max' ? select : fallback.selectPolicy,
    policies,
  };
}

/** The behavior of an HPA's spec, or undefined when it has none (the older rules apply). */
export function behaviorOf(
  spec: unknown,
  downscaleWindowSeconds = DEFAULT_DOWNSCALE_WINDOW_SECONDS,
): Behavior | undefined {
  const raw = obj(spec).behavior;
  if (typeof raw !== 'object' || raw === null) return undefined;
  const b = obj(raw);
  return {
    scaleUp: rulesOf(b.scaleUp, DEFAULT_SCALE_UP),
    scaleDown: rulesOf(b.scaleDown, {
      stabilizationWindowSeconds: downscaleWindowSeconds,
      selectPolicy: 'Max',
      policies: DEFAULT_SCALE_DOWN_POLICIES,
    }),
  };
}

// --- 1. the replica calculator ---

/** One Pod of the target as the calculator reads it. */
export interface PodSample {
  readonly name: string;
  /** Terminating or failed: left out altogether. */
  readonly ignored: boolean;
  /** Pending, or (for CPU) not ready: its usage is not trusted. */
  readonly unready: boolean;
  /** Its usage (millicores, bytes), undefined when the metrics have none. */
  readonly usage: number | undefined;
  /** Its request of the resource (same unit), undefined when a container has none. */
  readonly request: number | undefined;
}

export type MetricTargetValue =
  | { readonly type: 'Utilization'; readonly averageUtilization: number }
  | { readonly type: 'AverageValue'; readonly averageValue: number };

export interface ResourceRecommendation {
  readonly replicas: number;
  /** Percent of the requests, for a Utilization target. */
  readonly utilization?: number;
  /** The average usage of the measured Pods. */
  readonly averageValue: number;
}

export type Outcome<T> =
  { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: string };

/** usage / target for a set of (usage, request) pairs, and the figures the status shows. */
function usageRatio(
  samples: readonly { usage: number; request: number }[],
  target: MetricTargetValue,
): { ratio: number; utilization?: number; average: number } {
  const usage = samples.reduce((n, s) => n + s.usage, 0);
  const average = samples.length > 0 ? usage / samples.length : 0;
  if (target.type === 'AverageValue') return { ratio: average / target.averageValue, average };
  const requests = samples.reduce((n, s) => n + s.request, 0);
  // upstream keeps the utilization an integer percent, and the ratio follows from it.
  const utilization = requests > 0 ? Math.floor((usage * 100) / requests) : 0;
  return { ratio: utilization / target.averageUtilization, utilization, average };
}

/** The replica count one resource metric asks for (upstream's GetResourceReplicas / GetRawResourceReplicas). */
export function resourceReplicas(
  current: number,
  pods: readonly PodSample[],
  target: MetricTargetValue,
  tolerance = DEFAULT_TOLERANCE,
): Outcome<ResourceRecommendation> {
  const counted = pods.filter((p) => !p.ignored);
  if (counted.length === 0)
    return { ok: false, error: 'no pods returned by selector while calculating replica count' };
  const missingRequest =
    target.type === 'Utilization' ? counted.find((p) => p.request === undefined) : undefined;
  if (missingRequest)
    return { ok: false, error: `missing request for the resource in Pod ${missingRequest.name}` };
  const measured = counted.filter((p) => !p.unready && p.usage !== undefined);
  if (measured.length === 0)
    return { ok: false, error: 'did not receive metrics for targeted pods (pods might be unready)' };
  const sample = (p: PodSample, usage = p.usage ?? 0): { usage: number; request: number } => ({
    usage,
    request: p.request ?? 0,
  });
  const first = usageRatio(
    measured.map((p) => sample(p)),
    target,
  );
  const figures = { utilization: first.utilization, averageValue: first.average };
  const within = (r: number): boolean => Math.abs(1 - r) <= tolerance;
  const unready = counted.filter((p) => p.unready);
  const missing = counted.filter((p) => !p.unready && p.usage === undefined);
  const scaleUpWithUnready = unready.length > 0 && first.ratio > 1;
  if (!scaleUpWithUnready && missing.length === 0) {
    const replicas = within(first.ratio) ? current : Math.ceil(first.ratio * measured.length);
    return { ok: true, value: { replicas, ...figures } };
  }
  // Pods without a trusted figure: 0 on a scale-up, the request (or the target, if higher) on a scale-down.
  const fallback = (p: PodSample): number => {
    if (first.ratio >= 1) return 0;
    if (target.type === 'AverageValue') return target.averageValue;
    return ((p.request ?? 0) * Math.max(100, target.averageUtilization)) / 100;
  };
  const filled = [
    ...measured.map((p) => sample(p)),
    ...missing.filter(() => first.ratio !== 1).map((p) => sample(p, fallback(p))),
    ...(scaleUpWithUnready ? unready.map((p) => sample(p, 0)) : []),
  ];
  const next = usageRatio(filled, target).ratio;
  const turned = (first.ratio < 1 && next > 1) || (first.ratio > 1 && next < 1);
  if (within(next) || turned) return { ok: true, value: { replicas: current, ...figures } };
  const replicas = Math.ceil(next * filled.length);
  if ((next < 1 && replicas > current) || (next > 1 && replicas < current))
    return { ok: true, value: { replicas: current, ...figures } };
  return { ok: true, value: { replicas, ...figures } };
}

// --- 2 and 3: stabilization and rate, over the HPA's own history ---

interface Timestamped {
  readonly value: number;
  readonly at: number;
}

/** What the controller remembers of one HPA between syncs (upstream keeps the same, in memory, per HPA key). */
export class ScalingHistory {
  recommendations: Timestamped[] = [];
  scaleUpEvents: Timestamped[] = [];
  scaleDownEvents: Timestamped[] = [];
}

export interface Limited {
  readonly replicas: number;
  readonly reason: string;
  readonly message: string;
}

/** The message of each reason a recommendation was bounded, as upstream writes them into the HPA's conditions. */
const MESSAGES = {
  ScaleUpStabilized:
    'recent recommendations were lower than current one, applying the lowest recent recommendation',
  ScaleDownStabilized:
    'recent recommendations were higher than current one, applying the highest recent recommendation',
  ScaleUpLimit: 'the desired replica count is increasing faster than the maximum scale rate',
  ScaleDownLimit: 'the desired replica count is decreasing faster than the maximum scale rate',
  TooManyReplicas: 'the desired replica count is more than the maximum replica count',
  TooFewReplicas: 'the desired replica count is less than the minimum replica count',
  DesiredWithinRange: 'the desired count is within the acceptable range',
} as const;

const limitedBy = (reason: keyof typeof MESSAGES, replicas: number): Limited => ({
  replicas,
  reason,
  message: MESSAGES[reason],
});

/** Records `value` in place of the oldest sample no window needs any more, or at the end. */
function record(list: Timestamped[], value: number, now: number, stale: (t: Timestamped) => boolean): void {
  const i = list.findIndex(stale);
  if (i >= 0) list[i] = { value, at: now };
  else list.push({ value, at: now });
}

/**
 * The recommendation within the last windows' bounds: no lower than the lowest of scale-up's window (so a short
 * spike does not scale up), no higher than the highest of scale-down's (so a dip does not scale down), starting
 * from the current size (upstream's stabilizeRecommendationWithBehaviors). Records the raw recommendation.
 */
export function stabilize(
  history: ScalingHistory,
  now: number,
  current: number,
  desired: number,
  behavior: Behavior,
): Limited {
  const upCutoff = now - behavior.scaleUp.stabilizationWindowSeconds * 1000;
  const downCutoff = now - behavior.scaleDown.stabilizationWindowSeconds * 1000;
  let up = desired;
  let down = desired;
  for (const r of history.recommendations) {
    if (r.at > upCutoff) up = Math.min(up, r.value);
    if (r.at > downCutoff) down = Math.max(down, r.value);
  }
  const replicas = Math.min(Math.max(current, up), down);
  record(history.recommendations, desired, now, (r) => r.at < upCutoff && r.at < downCutoff);
  return limitedBy(desired >= current ? 'ScaleUpStabilized' : 'ScaleDownStabilized', replicas);
}

/** Replicas added (or removed) by the scale events of the last `periodSeconds`. */
function changeInPeriod(events: readonly Timestamped[], periodSeconds: number, now: number): number {
  const cutoff = now - periodSeconds * 1000;
  return events.filter((e) => e.at > cutoff).reduce((n, e) => n + e.value, 0);
}

/** The size at the start of the last `periodSeconds`: the current one without that period's scale events. */
function sizeAtPeriodStart(
  history: ScalingHistory,
  now: number,
  current: number,
  periodSeconds: number,
): number {
  return (
    current -
    changeInPeriod(history.scaleUpEvents, periodSeconds, now) +
    changeInPeriod(history.scaleDownEvents, periodSeconds, now)
  );
}

/** How one direction's policies step from a size, and which of their proposals is the largest change. */
interface Direction {
  readonly step: (start: number, policy: ScalingPolicy) => number;
  /** selectPolicy Max: the largest change. */
  readonly furthest: (...sizes: number[]) => number;
  /** selectPolicy Min: the smallest change. */
  readonly nearest: (...sizes: number[]) => number;
}

const SCALE_UP: Direction = {
  // Rounded up: a percentage of a small count must still allow one more Pod.
  step: (start, p) => (p.type === 'Pods' ? start + p.value : Math.ceil(start * (1 + p.value / 100))),
  furthest: Math.max,
  nearest: Math.min,
};

const SCALE_DOWN: Direction = {
  step: (start, p) => (p.type === 'Pods' ? start - p.value : Math.trunc(start * (1 - p.value / 100))),
  // Going down, the largest change is the lowest size.
  furthest: Math.min,
  nearest: Math.max,
};

/** The size `rules` allow now, each policy stepping from the size at its period's start; current if none applies. */
function limitByPolicies(
  direction: Direction,
  history: ScalingHistory,
  now: number,
  current: number,
  rules: ScalingRules,
): number {
  if (rules.selectPolicy === 'Disabled' || rules.policies.length === 0) return current;
  const proposals = rules.policies.map((p) =>
    direction.step(sizeAtPeriodStart(history, now, current, p.periodSeconds), p),
  );
  return rules.selectPolicy === 'Min' ? direction.nearest(...proposals) : direction.furthest(...proposals);
}

type PolicyLimit = (history: ScalingHistory, now: number, current: number, rules: ScalingRules) => number;

/** The highest size the scale-up policies allow now (upstream's calculateScaleUpLimitWithScalingRules). */
export const scaleUpLimit: PolicyLimit = (...args) => limitByPolicies(SCALE_UP, ...args);

/** The lowest size the scale-down policies allow now (upstream's calculateScaleDownLimitWithBehaviors). */
export const scaleDownLimit: PolicyLimit = (...args) => limitByPolicies(SCALE_DOWN, ...args);

/** The stabilized recommendation within the policies' rate and [min, max] (convertDesiredReplicasWithBehaviorRate). */
export function limitRate(
  history: ScalingHistory,
  now: number,
  current: number,
  desired: number,
  bounds: { readonly min: number; readonly max: number },
  behavior: Behavior,
): Limited {
  if (desired > current) {
    const limit = Math.max(current, scaleUpLimit(history, now, current, behavior.scaleUp));
    const byRate = limit < bounds.max;
    const allowed = Math.min(bounds.max, limit);
    if (desired > allowed) return limitedBy(byRate ? 'ScaleUpLimit' : 'TooManyReplicas', allowed);
  } else if (desired < current) {
    const limit = Math.min(current, scaleDownLimit(history, now, current, behavior.scaleDown));
    const byRate = limit > bounds.min;
    const allowed = Math.max(bounds.min, limit);
    if (desired < allowed) return limitedBy(byRate ? 'ScaleDownLimit' : 'TooFewReplicas', allowed);
  }
  return limitedBy('DesiredWithinRange', desired);
}

/**
 * Remembers a rescale for the rate policies, reusing an entry older than the longest period (upstream's
 * storeScaleEvent with markScaleEventsOutdated).
 */
export function recordScale(
  history: ScalingHistory,
  behavior: Behavior,
  now: number,
  from: number,
  to: number,
): void {
  if (to === from) return;
  const up = to > from;
  const rules = up ? behavior.scaleUp : behavior.scaleDown;
  const longest = Math.max(0, ...rules.policies.map((p) => p.periodSeconds));
  const cutoff = now - longest * 1000;
  record(
    up ? history.scaleUpEvents : history.scaleDownEvents,
    Math.abs(to - from),
    now,
    (e) => e.at <= cutoff,
  );
}

/** The older rules, for an HPA without behavior: a scale-down window only, then at most max(2 × current, 4). */
export function normalizeWithoutBehavior(
  history: ScalingHistory,
  now: number,
  current: number,
  desired: number,
  bounds: { readonly min: number; readonly max: number },
  downscaleWindowSeconds = DEFAULT_DOWNSCALE_WINDOW_SECONDS,
): { stabilized: Limited; limited: Limited } {
  const cutoff = now - downscaleWindowSeconds * 1000;
  let highest = desired;
  for (const r of history.recommendations) if (r.at >= cutoff) highest = Math.max(highest, r.value);
  record(history.recommendations, desired, now, (r) => r.at < cutoff);
  const stabilized = limitedBy('ScaleDownStabilized', highest);
  const upLimit = Math.max(2 * current, 4);
  const max = Math.min(bounds.max, upLimit);
  const limited =
    highest < bounds.min
      ? limitedBy('TooFewReplicas', bounds.min)
      : highest > max
        ? limitedBy(bounds.max > upLimit ? 'ScaleUpLimit' : 'TooManyReplicas', max)
        : limitedBy('DesiredWithinRange', highest);
  return { stabilized, limited };
}
