// What the proxier does after the backend has programmed the kernel (upstream: the end of syncProxyRules): the
// sync's metrics, proxy health, the per-Service health-check servers and the UDP conntrack cleanup. Everything
// here is in proportion to what the sync's checkout changed, never a walk of the cluster: the next sync cannot
// start before this is done, and on a cluster of 100,000 Services a walk would cost more than the sync itself.
import type { EndpointsMap } from '../model/endpoint-slice-cache.js';
import type { UpdateEndpointsMapResult } from '../model/endpoints-change-tracker.js';
import type { IPFamily } from '../model/ip.js';
import type { UpdateServiceMapResult } from '../model/service-change-tracker.js';
import type { ServicePort } from '../model/service-port.js';
import { PendingServiceHealthChanges } from '../model/service-health-state.js';
import type { HealthCheckIndexedServicePortMap } from '../model/service-health-state.js';
import { errorMessage } from '../util/error-message.js';
import type { Logger } from '../util/logger.js';
import type { BackendSyncResult } from './backend.js';
import type { ProxyMetrics } from './metrics.js';

/** The proxy health server's side of a sync (src/server): QueuedUpdate and Updated per family. */
export interface ProxyHealthSink {
  queuedUpdate(family: IPFamily): void;
  updated(family: IPFamily): void;
}

/**
 * The per-Service health-check servers (src/server), given what changed: "ns/name" → the new value, 0 meaning
 * none. Called after every successful sync, with no changes too: a port that could not be opened is tried again.
 */
export interface ServiceHealthSink {
  /** Services whose healthCheckNodePort may have changed: the port now, 0 when the Service has none. */
  updateServices(changes: ReadonlyMap<string, number>): void | Promise<void>;
  /** Services whose count of local ready endpoints may have changed: the count now, 0 when none. */
  updateEndpoints(changes: ReadonlyMap<string, number>): void | Promise<void>;
}

/** The UDP conntrack reconciler (src/netfilter/conntrack): runs after a successful sync that needs it. */
export interface ConntrackSink {
  reconcile(
    family: IPFamily,
    serviceMap: ReadonlyMap<string, ServicePort>,
    endpointsMap: EndpointsMap,
    /** UDP ports deleted since the last pass (their frontends are no longer in serviceMap). */
    deletedServicePorts: readonly ServicePort[],
  ): Promise<void>;
}

export interface PostSyncOptions {
  readonly family: IPFamily;
  readonly metrics: ProxyMetrics;
  readonly logger: Logger;
  readonly health?: ProxyHealthSink;
  readonly serviceHealth?: ServiceHealthSink;
  readonly conntrack?: ConntrackSink;
}

/** One successful sync, as the proxier saw it. Times in ms since the epoch, on the proxier's clock. */
export interface SyncedOutcome {
  readonly result: BackendSyncResult;
  readonly startedAt: number;
  readonly finishedAt: number;
  /** From the endpoints tracker's checkout: when each changed Service's change was made. */
  readonly lastChangeTriggerTimes: ReadonlyMap<string, readonly number[]>;
}

/** The live maps the sync programmed. */
export interface SyncedMaps {
  readonly serviceMap: HealthCheckIndexedServicePortMap;
  readonly endpointsMap: EndpointsMap;
}

export class PostSync {
  readonly #o: PostSyncOptions;
  readonly #serviceHealth = new PendingServiceHealthChanges();
  #conntrackCleanupPending = false;
  /** UDP ports deleted since the last conntrack pass, by key (a port deleted and re-added is live again). */
  readonly #deletedUdpPorts = new Map<string, ServicePort>();

  constructor(options: PostSyncOptions) {
    this.#o = options;
  }

  /** Records what a checkout changed; kept until a sync succeeds (a failed sync loses none of it). */
  checkedOut(
    services: UpdateServiceMapResult,
    endpoints: UpdateEndpointsMapResult,
    serviceMap: HealthCheckIndexedServicePortMap,
  ): void {
    if (endpoints.conntrackCleanupRequired) this.#conntrackCleanupPending = true;
    // A deleted UDP Service's flows keep their DNAT while the client sends (upstream #141371): clean them too.
    for (const sp of services.deletedServicePorts) {
      if (sp.protocol !== 'UDP') continue;
      this.#deletedUdpPorts.set(sp.key, sp);
      this.#conntrackCleanupPending = true;
    }
    // A port deleted and added back is live again (walking the few deleted ports, not the whole map).
    for (const key of this.#deletedUdpPorts.keys())
      if (serviceMap.has(key)) this.#deletedUdpPorts.delete(key);
    this.#serviceHealth.record(services.updatedServices, serviceMap, endpoints.localReadyEndpoints);
  }

  /** Reports a successful sync: metrics, proxy health, the health-check servers, then conntrack if needed. */
  async synced(outcome: SyncedOutcome, maps: SyncedMaps): Promise<void> {
    const { family, metrics, health, serviceHealth } = this.#o;
    const { result, startedAt, finishedAt } = outcome;
    metrics.syncDuration(family, (finishedAt - startedAt) / 1000, result.full);
    metrics.lastSyncTimestamp(family, finishedAt / 1000);
    for (const times of outcome.lastChangeTriggerTimes.values()) {
      for (const t of times) metrics.networkProgrammingDuration(family, (finishedAt - t) / 1000);
    }
    metrics.noLocalEndpoints(family, 'internal', result.noLocalEndpointsInternal);
    metrics.noLocalEndpoints(family, 'external', result.noLocalEndpointsExternal);
    health?.updated(family);

    const changes = this.#serviceHealth.take();
    if (serviceHealth) {
      await serviceHealth.updateServices(changes.healthCheckNodePorts);
      await serviceHealth.updateEndpoints(changes.localReadyEndpoints);
    }
    await this.#reconcileConntrack(maps);
  }

  async #reconcileConntrack(maps: SyncedMaps): Promise<void> {
    const { conntrack, family, logger } = this.#o;
    if (!this.#conntrackCleanupPending || !conntrack) return;
    this.#conntrackCleanupPending = false;
    const deleted = [...this.#deletedUdpPorts.values()];
    this.#deletedUdpPorts.clear();
    try {
      await conntrack.reconcile(family, maps.serviceMap, maps.endpointsMap, deleted);
    } catch (error) {
      logger.error('conntrack cleanup failed', { ipFamily: family, error: errorMessage(error) });
    }
  }
}
