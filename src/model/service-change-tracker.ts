// Accumulates Service changes between syncs (upstream pkg/proxy/servicechangetracker.go).
import type { Service } from '../kube/objects.js';
import type { ChangeMetrics } from './change-metrics.js';
import type { IPFamily } from './ip.js';
import type { ServicePort } from './service-port.js';

/** Live map of service ports: servicePortKey → ServicePort. */
export type ServicePortMap = Map<string, ServicePort>;

export interface UpdateServiceMapResult {
  /** "ns/name" of every Service whose ports changed since the last checkout. */
  readonly updatedServices: ReadonlySet<string>;
}

/** A Service (or part of one) that was not used, and why; the caller logs it once and counts it. */
export interface SkippedObject {
  readonly kind: 'Service' | 'EndpointSlice';
  /** "ns/name" when known, else a best-effort description. */
  readonly name: string;
  readonly reason: string;
}

export interface ServiceChangeTrackerOptions {
  readonly family: IPFamily;
  readonly metrics?: ChangeMetrics;
  readonly onSkip?: (skipped: SkippedObject) => void;
}

export declare class ServiceChangeTracker {
  constructor(options: ServiceChangeTrackerOptions);
  /**
   * Records a change (add: prev undefined; delete: cur undefined). Counts service_changes_total on every call
   * with an object, collapses changes that end where they started, sets service_changes_pending to the number of
   * Services with a net change, and returns true if *anything* is pending.
   */
  update(previous: Service | undefined, current: Service | undefined): boolean;
  /** Number of Services with a net change. */
  get pending(): number;
  /** Applies every accumulated change to `live`, empties the tracker, sets pending to 0. */
  checkout(live: ServicePortMap): UpdateServiceMapResult;
}
