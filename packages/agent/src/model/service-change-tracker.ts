// Accumulates Service changes between syncs (upstream pkg/proxy/servicechangetracker.go).
import type { Service } from '../api/objects.js';
import { NO_CHANGE_METRICS } from './change-metrics.js';
import type { ChangeMetrics } from './change-metrics.js';
import { deepEqual } from './deep-equal.js';
import type { IPFamily } from './ip.js';
import { servicePortsFromService } from './service-port.js';
import type { ServicePort } from './service-port.js';
import { describeValue, objectName } from './unknown.js';

/** Live map of service ports: servicePortKey → ServicePort. */
export type ServicePortMap = Map<string, ServicePort>;

export interface UpdateServiceMapResult {
  /** "ns/name" of every Service whose ports changed since the last checkout. */
  readonly updatedServices: ReadonlySet<string>;
  /**
   * Ports that left the map (their Service deleted, or the port removed from it), as they were: the conntrack
   * reconciler needs their frontends, which the map no longer has (upstream #141371's DeletedServices).
   */
  readonly deletedServicePorts: readonly ServicePort[];
}

/** A Service (or part of one) that was not used, and why; the caller logs it once and counts it. */
export interface SkippedObject {
  readonly kind: 'Service' | 'EndpointSlice';
  /** "ns/name" when known, else a best-effort description. */
  readonly name: string;
  readonly reason: string;
  /**
   * An ordinary object this proxier does not handle (headless or ExternalName Services, the other family's
   * Services and slices, FQDN slices): log at debug verbosity. Unset for broken objects, which deserve a warning.
   */
  readonly routine?: boolean;
}

export interface ServiceChangeTrackerOptions {
  readonly family: IPFamily;
  readonly metrics?: ChangeMetrics;
  readonly onSkip?: (skipped: SkippedObject) => void;
}

interface ServiceChange {
  readonly previous: ReadonlyMap<string, ServicePort>;
  current: ReadonlyMap<string, ServicePort>;
}

// The port map of an absent (or skipped) Service: every add's `previous`, every delete's `current`. One shared
// read-only map rather than an empty Map (~200 bytes) per pending Service.
const NO_PORTS: ReadonlyMap<string, ServicePort> = new Map();

export class ServiceChangeTracker {
  readonly #family: IPFamily;
  readonly #metrics: ChangeMetrics;
  readonly #onSkip: (skipped: SkippedObject) => void;
  readonly #items = new Map<string, ServiceChange>();
  /**
   * "ns/name" → the ports the last checkout applied for it: one ServicePort (most Services have one port; no
   * array for them), or all of them. Services with none are absent. The same objects as the live map's.
   */
  readonly #applied = new Map<string, ServicePort | readonly ServicePort[]>();

  constructor(options: ServiceChangeTrackerOptions) {
    this.#family = options.family;
    this.#metrics = options.metrics ?? NO_CHANGE_METRICS;
    this.#onSkip = options.onSkip ?? (() => {});
  }

  /**
   * Records a change (add: prev undefined; delete: cur undefined). Counts service_changes_total on every call
   * with an object, collapses changes that end where they started, sets service_changes_pending to the number of
   * Services with a net change, and returns true if *anything* is pending.
   *
   * `previous` only names the Service (a delete has nothing else): what the Service had is what the last checkout
   * applied for it, which this tracker records. So an informer's store need keep no Service spec for an update's
   * `old` or a relist's delete, and what is removed is what was programmed, whatever the object says now (a
   * Service that leaves the watch carrying another proxy's service-proxy-name label loses the ports it had).
   */
  update(previous: Service | undefined, current: Service | undefined): boolean {
    if (previous === undefined && current === undefined) return false;
    this.#metrics.serviceChange();
    const nn = objectName(current) ?? objectName(previous);
    if (nn === undefined) {
      this.#onSkip({
        kind: 'Service',
        name: describeValue(current ?? previous),
        reason: 'metadata.namespace or metadata.name is missing',
      });
      return this.#items.size > 0;
    }
    const name = `${nn.namespace}/${nn.name}`;
    let change = this.#items.get(name);
    if (change === undefined) {
      // The first change since checkout fixes `previous`: the ports applied for the Service. Their problems were
      // reported when they arrived.
      change = { previous: this.#appliedPorts(name), current: NO_PORTS };
      this.#items.set(name, change);
    }
    change.current = this.#portMap(name, current);
    if (deepEqual(change.previous, change.current)) this.#items.delete(name);
    this.#metrics.servicesPending(this.#items.size);
    return this.#items.size > 0;
  }

  /** Number of Services with a net change. */
  get pending(): number {
    return this.#items.size;
  }

  /** Applies every accumulated change to `live`, empties the tracker, sets pending to 0. */
  checkout(live: ServicePortMap): UpdateServiceMapResult {
    const updatedServices = new Set<string>();
    const deletedServicePorts: ServicePort[] = [];
    for (const [name, change] of this.#items) {
      updatedServices.add(name);
      for (const [key, sp] of change.previous) {
        if (change.current.has(key)) continue;
        live.delete(key);
        deletedServicePorts.push(sp);
      }
      for (const [key, sp] of change.current) live.set(key, sp);
      this.#record(name, change.current);
    }
    this.#items.clear();
    this.#metrics.servicesPending(0);
    return { updatedServices, deletedServicePorts };
  }

  /** What the last checkout applied for the Service, as a port map (a fresh one: a pending change holds it). */
  #appliedPorts(name: string): ReadonlyMap<string, ServicePort> {
    const applied = this.#applied.get(name);
    if (applied === undefined) return NO_PORTS;
    const ports = 'key' in applied ? [applied] : applied;
    return new Map(ports.map((sp) => [sp.key, sp]));
  }

  #record(name: string, ports: ReadonlyMap<string, ServicePort>): void {
    if (ports.size === 0) this.#applied.delete(name);
    else if (ports.size === 1) this.#applied.set(name, ports.values().next().value as ServicePort);
    else this.#applied.set(name, [...ports.values()]);
  }

  #portMap(name: string, svc: Service | undefined): ReadonlyMap<string, ServicePort> {
    if (svc === undefined) return NO_PORTS;
    const r = servicePortsFromService(svc, this.#family);
    if (r.skipped !== undefined) {
      this.#onSkip({ kind: 'Service', name, reason: r.skipped, ...(r.routine ? { routine: true } : {}) });
    }
    for (const reason of r.problems) this.#onSkip({ kind: 'Service', name, reason });
    if (r.ports.length === 0) return NO_PORTS;
    const out: ServicePortMap = new Map();
    for (const sp of r.ports) out.set(sp.key, sp);
    return out;
  }
}
