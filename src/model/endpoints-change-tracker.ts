// Accumulates EndpointSlice changes between syncs (upstream pkg/proxy/endpointschangetracker.go).
import type { EndpointSlice } from '../kube/objects.js';
import type { ChangeMetrics } from './change-metrics.js';
import type { Endpoint } from './endpoint.js';
import type { EndpointsMap } from './endpoint-slice-cache.js';
import type { FeatureGates } from './feature-gates.js';
import type { IPFamily } from './ip.js';
import type { SkippedObject } from './service-change-tracker.js';

export interface UpdateEndpointsMapResult {
  /** "ns/name" of every Service whose endpoints changed. */
  readonly updatedServices: ReadonlySet<string>;
  /** Some changed Service has a UDP port key in its previous or current map. */
  readonly conntrackCleanupRequired: boolean;
  /** "ns/name" → last-change-trigger-times (ms since epoch) buffered since the last checkout. */
  readonly lastChangeTriggerTimes: ReadonlyMap<string, readonly number[]>;
}

export interface EndpointsChangeTrackerOptions {
  readonly family: IPFamily;
  readonly nodeName: string;
  readonly metrics?: ChangeMetrics;
  readonly featureGates?: FeatureGates;
  /** ms since epoch; trigger times at or before the tracker's creation are ignored. Default Date.now. */
  readonly now?: () => number;
  readonly onSkip?: (skipped: SkippedObject) => void;
}

export declare class EndpointsChangeTracker {
  constructor(options: EndpointsChangeTrackerOptions);
  /**
   * Records a slice event. Wrong address type or no service-name label → false, nothing counted. Otherwise
   * endpoint_changes_total += 1; if the cache says it changes something, endpoint_changes_pending += 1 (slice
   * *events*), trigger times are buffered (or dropped for a removal). Returns whether *this* call changed something.
   */
  endpointSliceUpdate(slice: EndpointSlice, remove: boolean): boolean;
  /** Changed slice events since the last checkout. */
  get pending(): number;
  /** Applies the accumulated changes to `live`, sets pending to 0, returns what changed. */
  checkout(live: EndpointsMap): UpdateEndpointsMapResult;
}

/** "ns/name" → number of distinct IPs that are local and ready (terminating excluded). */
export declare function localReadyEndpoints(
  endpointsMap: ReadonlyMap<string, readonly Endpoint[]>,
): Map<string, number>;
