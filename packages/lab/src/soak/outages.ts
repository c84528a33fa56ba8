// What an API server outage did to each node's proxy. The outage cuts every watch; the proxy's reflectors retry
// with client-go's backoff (0.8 s doubling to 30 s, jittered, and reset only after 2 minutes without a failure,
// so outages closer together than that compound), and until they are back the node's rules stand still: a pod
// that dies meanwhile stays in them. The soak sees the node hear again in its metrics: under churn every
// EndpointSlice change reaches every node, so kubeproxy_sync_proxy_rules_endpoint_changes_total rises again the
// moment its EndpointSlice watch is back (or a restarted process has listed), and stands still while it is deaf.
import type { NodePoint } from './node-sampler.js';

/** One node after one outage. Times are ms since the epoch, as the samples' (one a second). */
export interface OutageRecovery {
  readonly node: string;
  /** When the outage began. */
  readonly at: number;
  /** The first sample after the outage's end that shows the node receiving EndpointSlice changes again. */
  readonly heardAt?: number;
  /** The node's first sync at or after heardAt: its rules caught up with what it missed. */
  readonly syncedAt?: number;
}

/** A node that has not heard the API server again this long after an outage's end is reported, not excused. */
export const OUTAGE_RECOVERY_LIMIT_MS = 60_000;

export function outageRecovery(
  node: string,
  points: readonly NodePoint[],
  at: number,
  outageMs: number,
): OutageRecovery {
  const end = at + outageMs;
  // Changes received until the outage ended; a new process (its counter went down) counts from zero.
  let baseline = 0;
  let previous: number | undefined;
  let heard: NodePoint | undefined;
  for (const p of points) {
    if (previous !== undefined && p.endpointChanges < previous) baseline = 0;
    previous = p.endpointChanges;
    if (p.t <= end) baseline = p.endpointChanges;
    else if (p.endpointChanges > baseline) {
      heard = p;
      break;
    }
  }
  if (heard === undefined) return { node, at };
  const heardAt = heard.t;
  const synced = points.find((p) => p.t >= heardAt && p.lastSyncMs >= heardAt);
  return { node, at, heardAt, ...(synced ? { syncedAt: synced.lastSyncMs } : {}) };
}

/** Each outage for each node, in outage order. */
export function outageRecoveries(
  nodes: ReadonlyMap<string, { readonly points: readonly NodePoint[] }>,
  outages: readonly number[],
  outageMs: number,
): OutageRecovery[] {
  return outages.flatMap((at) =>
    [...nodes].map(([node, series]) => outageRecovery(node, series.points, at, outageMs)),
  );
}

/**
 * Whether the node did not hear again in time: past OUTAGE_RECOVERY_LIMIT_MS after the outage's end, within the
 * run (an outage too close to the end to tell is not counted).
 */
export function notBackInTime(r: OutageRecovery, outageMs: number, endedAt: number): boolean {
  const deadline = r.at + outageMs + OUTAGE_RECOVERY_LIMIT_MS;
  return r.heardAt === undefined ? deadline <= endedAt : r.heardAt > deadline;
}
