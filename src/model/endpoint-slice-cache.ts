// Per-Service cache of EndpointSlices (upstream pkg/proxy/endpointslicecache.go): endpoints move between a
// Service's slices, so merging per slice keeps them from vanishing while one slice is updated before another.
import type { EndpointSlice } from '../kube/objects.js';
import type { Endpoint } from './endpoint.js';
import type { FeatureGates } from './feature-gates.js';
import type { IPFamily } from './ip.js';

/** servicePortKey → endpoints, sorted by endpoint string, de-duplicated; keys with no endpoints are absent. */
export type EndpointsMap = Map<string, readonly Endpoint[]>;

export interface EndpointsMapChange {
  readonly previous: EndpointsMap;
  readonly current: EndpointsMap;
}

export interface EndpointSliceCacheOptions {
  readonly family: IPFamily;
  /** This node's name; endpoints with this nodeName are local. */
  readonly nodeName: string;
  readonly featureGates?: FeatureGates;
  readonly onProblem?: (sliceName: string, reason: string) => void;
}

export declare class EndpointSliceCache {
  constructor(options: EndpointSliceCacheOptions);
  /**
   * Records a slice add/update (remove=false) or delete (remove=true) as pending. Returns whether it changes
   * anything: compared with the pending entry, else the applied one; equality is deep equality of the whole
   * object (metadata included) plus the remove flag.
   */
  updatePending(slice: EndpointSlice, remove: boolean): boolean;
  /** Moves pending into applied; returns, per Service ("ns/name") that had pending entries, its maps before and after. */
  checkoutChanges(): Map<string, EndpointsMapChange>;
}
