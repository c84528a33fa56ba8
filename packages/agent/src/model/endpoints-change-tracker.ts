// Accumulates EndpointSlice changes between syncs (upstream pkg/proxy/endpointschangetracker.go).
import type { EndpointSlice } from '../api/objects.js';
import { ANNOTATION_LAST_CHANGE_TRIGGER_TIME } from '../api/objects.js';
import { NO_CHANGE_METRICS } from './change-metrics.js';
import type { ChangeMetrics } from './change-metrics.js';
import type { Endpoint } from './endpoint.js';
import { EndpointSliceCache, sliceIdentity } from './endpoint-slice-cache.js';
import type { EndpointsMap } from './endpoint-slice-cache.js';
import type { FeatureGates } from './feature-gates.js';
import type { IPFamily } from './ip.js';
import { parseRFC3339 } from './rfc3339.js';
import { servicePortNameFromKey } from './service-port-name.js';
import type { SkippedObject } from './service-change-tracker.js';
import { describeValue, field, stringField } from './unknown.js';

export interface UpdateEndpointsMapResult {
  /** "ns/name" of every Service whose endpoints changed. */
  readonly updatedServices: ReadonlySet<string>;
  /** Some changed Service has a UDP port key in its previous or current map. */
  readonly conntrackCleanupRequired: boolean;
  /** "ns/name" → last-change-trigger-times (ms since epoch) buffered since the last checkout. */
  readonly lastChangeTriggerTimes: ReadonlyMap<string, readonly number[]>;
  /**
   * Every updated Service's count of local ready endpoints after the change ("ns/name" → n, 0 when it has none
   * now): what the health-check servers need, counted from the changed Services alone.
   */
  readonly localReadyEndpoints: ReadonlyMap<string, number>;
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

function sliceDescription(slice: unknown): string {
  const meta = field(slice, 'metadata');
  const ns = stringField(meta, 'namespace');
  const name = stringField(meta, 'name');
  return name === undefined ? '<unnamed EndpointSlice>' : ns === undefined ? name : `${ns}/${name}`;
}

function hasUDPKey(m: EndpointsMap): boolean {
  for (const key of m.keys()) if (servicePortNameFromKey(key)?.protocol === 'UDP') return true;
  return false;
}

export class EndpointsChangeTracker {
  readonly #family: IPFamily;
  readonly #metrics: ChangeMetrics;
  readonly #onSkip: (skipped: SkippedObject) => void;
  readonly #createdAt: number;
  readonly #cache: EndpointSliceCache;
  #pending = 0;
  #triggerTimes = new Map<string, number[]>();

  constructor(options: EndpointsChangeTrackerOptions) {
    this.#family = options.family;
    this.#metrics = options.metrics ?? NO_CHANGE_METRICS;
    this.#onSkip = options.onSkip ?? (() => {});
    this.#createdAt = (options.now ?? Date.now)();
    this.#cache = new EndpointSliceCache({
      family: options.family,
      nodeName: options.nodeName,
      ...(options.featureGates ? { featureGates: options.featureGates } : {}),
      onProblem: (name, reason) => this.#onSkip({ kind: 'EndpointSlice', name, reason }),
    });
  }

  /**
   * Records a slice event. Wrong address type or no service-name label → false, nothing counted. Otherwise
   * endpoint_changes_total += 1; if the cache says it changes something, endpoint_changes_pending += 1 (slice
   * *events*), trigger times are buffered (or dropped for a removal). Returns whether *this* call changed something.
   */
  endpointSliceUpdate(slice: EndpointSlice, remove: boolean): boolean {
    const addressType = field(slice, 'addressType');
    if (addressType !== this.#family) {
      // The other family's slices are routine in dual-stack; FQDN slices are never proxied.
      this.#onSkip({
        kind: 'EndpointSlice',
        name: sliceDescription(slice),
        reason: `addressType ${describeValue(addressType)} is not ${this.#family}`,
        ...(addressType === 'IPv4' || addressType === 'IPv6' || addressType === 'FQDN'
          ? { routine: true }
          : {}),
      });
      return false;
    }
    const id = sliceIdentity(slice);
    if (typeof id === 'string') {
      this.#onSkip({ kind: 'EndpointSlice', name: sliceDescription(slice), reason: id });
      return false;
    }
    this.#metrics.endpointChange();
    const changed = this.#cache.updatePending(slice, remove);
    if (!changed) return false;
    this.#pending++;
    this.#metrics.endpointsPending(this.#pending);
    if (remove) {
      this.#triggerTimes.delete(id.service);
    } else {
      const annotations = field(field(slice, 'metadata'), 'annotations');
      const t = parseRFC3339(field(annotations, ANNOTATION_LAST_CHANGE_TRIGGER_TIME));
      // Times from before this tracker existed describe changes an earlier process (or none) programmed.
      if (t !== undefined && t > this.#createdAt) {
        const list = this.#triggerTimes.get(id.service);
        if (list === undefined) this.#triggerTimes.set(id.service, [t]);
        else list.push(t);
      }
    }
    return true;
  }

  /** Changed slice events since the last checkout. */
  get pending(): number {
    return this.#pending;
  }

  /** Applies the accumulated changes to `live`, sets pending to 0, returns what changed. */
  checkout(live: EndpointsMap): UpdateEndpointsMapResult {
    this.#pending = 0;
    this.#metrics.endpointsPending(0);
    const updatedServices = new Set<string>();
    const localReady = new Map<string, number>();
    let conntrackCleanupRequired = false;
    for (const [service, change] of this.#cache.checkoutChanges()) {
      updatedServices.add(service);
      // `current` is the Service's whole map (every port key it has after the change), so this is its count.
      localReady.set(service, localReadyEndpointCount(change.current.values()));
      for (const key of change.previous.keys()) live.delete(key);
      for (const [key, eps] of change.current) live.set(key, eps);
      if (!conntrackCleanupRequired && (hasUDPKey(change.previous) || hasUDPKey(change.current))) {
        conntrackCleanupRequired = true;
      }
    }
    const lastChangeTriggerTimes: ReadonlyMap<string, readonly number[]> = this.#triggerTimes;
    this.#triggerTimes = new Map();
    return {
      updatedServices,
      conntrackCleanupRequired,
      lastChangeTriggerTimes,
      localReadyEndpoints: localReady,
    };
  }
}

/**
 * One Service's local ready endpoints, from its endpoint lists (one per port): the number of distinct IPs that are
 * on this node and ready (terminating excluded). The health-check server's answer for the Service.
 */
export function localReadyEndpointCount(lists: Iterable<readonly Endpoint[]>): number {
  // Most Services have at most one local endpoint: no Set until a second distinct IP shows up.
  let first: string | undefined;
  let ips: Set<string> | undefined;
  for (const eps of lists) {
    for (const ep of eps) {
      // ready already excludes terminating endpoints (the EndpointSlice controller never marks both).
      if (!ep.isLocal || !ep.ready || ep.terminating) continue;
      if (first === undefined) first = ep.ip;
      else if (ep.ip !== first) (ips ??= new Set([first])).add(ep.ip);
    }
  }
  return ips?.size ?? (first === undefined ? 0 : 1);
}
