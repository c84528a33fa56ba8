// What the per-Service health-check servers need after each sync (upstream hands them svcPortMap.HealthCheckNodePorts()
// and endpointsMap.LocalReadyEndpoints(), both computed by walking the whole cluster every sync): here kept from
// what each checkout changed, so the work after a sync is in proportion to the change, not to the cluster.
import type { ServicePort } from './service-port.js';

/**
 * The live service-port map (servicePortKey → ServicePort) that also knows each Service's healthCheckNodePort,
 * kept as ports are set and deleted, so one Service's port is read without walking the map. Only ports that have
 * one are indexed (LoadBalancer Services with externalTrafficPolicy Local): the index stays small.
 */
export class HealthCheckIndexedServicePortMap extends Map<string, ServicePort> {
  /** Service ("ns/name") → its indexed ports' keys → healthCheckNodePort. */
  readonly #byService = new Map<string, Map<string, number>>();

  // No entries here: Map's constructor would call set() before the index above exists.
  constructor() {
    super();
  }

  override set(key: string, sp: ServicePort): this {
    this.#unindex(key);
    super.set(key, sp);
    if (sp.healthCheckNodePort !== 0) {
      let ports = this.#byService.get(sp.serviceName);
      if (ports === undefined) this.#byService.set(sp.serviceName, (ports = new Map()));
      ports.set(key, sp.healthCheckNodePort);
    }
    return this;
  }

  override delete(key: string): boolean {
    this.#unindex(key);
    return super.delete(key);
  }

  override clear(): void {
    this.#byService.clear();
    super.clear();
  }

  /** The Service's ("ns/name") healthCheckNodePort; 0 when it has none or no port in the map. */
  healthCheckNodePort(service: string): number {
    const ports = this.#byService.get(service);
    if (ports === undefined) return 0;
    // Every port of a Service carries the Service's one healthCheckNodePort; the last set is as good as any.
    let port = 0;
    for (const p of ports.values()) port = p;
    return port;
  }

  #unindex(key: string): void {
    const old = super.get(key);
    if (old === undefined || old.healthCheckNodePort === 0) return;
    const ports = this.#byService.get(old.serviceName);
    if (ports === undefined) return;
    ports.delete(key);
    if (ports.size === 0) this.#byService.delete(old.serviceName);
  }
}

/** What changed for the health-check servers: "ns/name" → the new value, 0 meaning none (remove it). */
export interface ServiceHealthChanges {
  /** Services whose healthCheckNodePort may have changed: the port now, 0 when the Service has none. */
  readonly healthCheckNodePorts: ReadonlyMap<string, number>;
  /** Services whose local ready endpoints may have changed: the count now, 0 when there are none. */
  readonly localReadyEndpoints: ReadonlyMap<string, number>;
}

/**
 * The health-check changes of every checkout since the last successful sync. A failed sync keeps them (the
 * servers go on answering for what the kernel holds), and the next successful one hands them all over.
 */
export class PendingServiceHealthChanges {
  #ports = new Map<string, number>();
  #endpoints = new Map<string, number>();
  /**
   * Services whose last recorded value is not 0. A 0 is a change only for those: for any other Service the
   * servers (which start with nothing, as this does) hold no value to remove. So a first sync of 100,000 Services
   * with no health-check port and no local endpoint records nothing, not 200,000 zeros.
   */
  readonly #withPort = new Set<string>();
  readonly #withEndpoints = new Set<string>();

  /**
   * Records one checkout: `updatedServices` from the service tracker (read back from the map it just updated),
   * `localReadyEndpoints` as the endpoints tracker's checkout counted them. A later value replaces an earlier one.
   */
  record(
    updatedServices: Iterable<string>,
    serviceMap: HealthCheckIndexedServicePortMap,
    localReadyEndpoints: ReadonlyMap<string, number>,
  ): void {
    for (const service of updatedServices)
      recordValue(this.#ports, this.#withPort, service, serviceMap.healthCheckNodePort(service));
    for (const [service, n] of localReadyEndpoints)
      recordValue(this.#endpoints, this.#withEndpoints, service, n);
  }

  /** The changes recorded since the last take, and empty again. */
  take(): ServiceHealthChanges {
    const changes = { healthCheckNodePorts: this.#ports, localReadyEndpoints: this.#endpoints };
    this.#ports = new Map();
    this.#endpoints = new Map();
    return changes;
  }
}

/** Records `value` for `service` unless it is 0 and the last value recorded was 0 too (or none): no change. */
function recordValue(
  pending: Map<string, number>,
  nonZero: Set<string>,
  service: string,
  value: number,
): void {
  if (value !== 0) nonZero.add(service);
  else if (!nonZero.delete(service)) return;
  pending.set(service, value);
}

/** Applies changes ("ns/name" → value, 0 = absent) to a whole map of the same meaning. */
export function applyServiceHealthChanges(
  target: Map<string, number>,
  changes: ReadonlyMap<string, number>,
): void {
  for (const [service, value] of changes) {
    if (value === 0) target.delete(service);
    else target.set(service, value);
  }
}
