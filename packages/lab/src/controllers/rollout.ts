// The arithmetic of a Deployment's rollout, as upstream's deployment controller does it (pkg/controller/deployment:
// rolling.go, recreate.go, util/deployment_util.go), on plain numbers so that each step can be tested alone. A
// ReplicaSet is seen as its wanted size (spec.replicas) and how many of its Pods are available; the functions say
// what size each should get next, and the controller writes it.

/** One ReplicaSet as the rollout reads it. */
export interface ReplicaSetCount {
  readonly name: string;
  /** spec.replicas */
  readonly replicas: number;
  /** status.availableReplicas */
  readonly available: number;
}

/** The rolling-update bounds for a Deployment of `replicas`, in Pods. */
export interface RollingBounds {
  readonly maxSurge: number;
  readonly maxUnavailable: number;
}

/**
 * An IntOrString of a rolling update (maxSurge, maxUnavailable) as a number of Pods out of `total`: a percentage
 * rounded up or down as the caller says (upstream's intstr.GetScaledValueFromIntOrPercent). Undefined: not a value.
 */
export function scaledValue(value: unknown, total: number, roundUp: boolean): number | undefined {
  if (typeof value === 'number' && Number.isInteger(value)) return value;
  if (typeof value !== 'string') return undefined;
  const percent = /^(\d+)%$/.exec(value);
  if (percent) {
    const exact = (Number(percent[1]) * total) / 100;
    return roundUp ? Math.ceil(exact) : Math.floor(exact);
  }
  return /^\d+$/.test(value) ? Number(value) : undefined;
}

/**
 * maxSurge rounded up and maxUnavailable rounded down, 25% each when absent; both zero would never move, so
 * maxUnavailable becomes 1 (upstream's ResolveFenceposts), and it is never more than the Deployment's size
 * (MaxUnavailable).
 */
export function rollingBounds(
  rollingUpdate: { readonly maxSurge?: unknown; readonly maxUnavailable?: unknown },
  replicas: number,
): RollingBounds {
  const maxSurge = scaledValue(rollingUpdate.maxSurge ?? '25%', replicas, true) ?? 0;
  let maxUnavailable = scaledValue(rollingUpdate.maxUnavailable ?? '25%', replicas, false) ?? 0;
  if (maxSurge === 0 && maxUnavailable === 0) maxUnavailable = 1;
  return { maxSurge, maxUnavailable: Math.min(maxUnavailable, replicas) };
}

const total = (sets: readonly ReplicaSetCount[], field: 'replicas' | 'available'): number =>
  sets.reduce((n, rs) => n + rs[field], 0);

/**
 * The new ReplicaSet's next size: up toward the Deployment's size while all ReplicaSets together stay within
 * replicas + maxSurge (upstream's NewRSNewReplicas, rolling case).
 */
export function newReplicaSetSize(
  replicas: number,
  bounds: RollingBounds,
  newRS: ReplicaSetCount,
  all: readonly ReplicaSetCount[],
): number {
  if (newRS.replicas >= replicas) return replicas;
  const room = replicas + bounds.maxSurge - total(all, 'replicas');
  if (room <= 0) return newRS.replicas;
  return newRS.replicas + Math.min(room, replicas - newRS.replicas);
}

/**
 * How far the old ReplicaSets may shrink now, oldest first, and to what (name → new size; only changes). First
 * Pods that are not available anyway (they cost no availability), within what the unavailability budget leaves;
 * then available ones, while available Pods stay at least replicas - maxUnavailable (upstream's
 * reconcileOldReplicaSets, cleanupUnhealthyReplicas, scaleDownOldReplicaSetsForRollingUpdate).
 */
export function oldReplicaSetSizes(
  replicas: number,
  bounds: RollingBounds,
  newRS: ReplicaSetCount,
  oldestFirst: readonly ReplicaSetCount[],
): Map<string, number> {
  const sizes = new Map<string, number>();
  if (total(oldestFirst, 'replicas') === 0) return sizes;
  const minAvailable = replicas - bounds.maxUnavailable;
  const newUnavailable = newRS.replicas - newRS.available;
  const maxScaledDown = total([...oldestFirst, newRS], 'replicas') - minAvailable - newUnavailable;
  if (maxScaledDown <= 0) return sizes;
  // The unhealthy first: an old Pod that is not available can go without lowering availability.
  let cleaned = 0;
  const afterCleanup = oldestFirst.map((rs) => {
    const unhealthy = Math.max(0, rs.replicas - rs.available);
    const cut = Math.min(maxScaledDown - cleaned, unhealthy);
    cleaned += cut;
    if (cut > 0) sizes.set(rs.name, rs.replicas - cut);
    return { ...rs, replicas: rs.replicas - cut };
  });
  const available = total([...afterCleanup, newRS], 'available');
  let budget = available - minAvailable;
  for (const rs of afterCleanup) {
    if (budget <= 0) break;
    if (rs.replicas === 0) continue;
    const cut = Math.min(rs.replicas, budget);
    budget -= cut;
    sizes.set(rs.name, rs.replicas - cut);
  }
  return sizes;
}

/** A rollout is complete when every Pod is updated and available and no old one is left (DeploymentComplete). */
export function rolloutComplete(
  replicas: number,
  status: { readonly replicas: number; readonly updatedReplicas: number; readonly availableReplicas: number },
): boolean {
  return (
    status.updatedReplicas === replicas &&
    status.replicas === replicas &&
    status.availableReplicas === replicas
  );
}
