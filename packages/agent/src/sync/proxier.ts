// One family's proxier: it feeds API events into the two change trackers, asks the runner for a sync when
// something is pending, and in each sync checks the changes out, decides full or partial, hands the snapshot to
// the backend, and reports the outcome (metrics, health, service health checks, conntrack: src/sync/post-sync.ts).
// It knows nothing of nft or iptables: the backend does (src/sync/backend.ts).
import type { EndpointSlice, Node, Service, ServiceCIDR } from '../api/objects.js';
import { serviceCIDRsOf } from '../model/service-cidrs.js';
import { nodeTopology } from '../model/node-facts.js';
import type { EndpointsMap } from '../model/endpoint-slice-cache.js';
import { EndpointsChangeTracker } from '../model/endpoints-change-tracker.js';
import type { FeatureGates } from '../model/feature-gates.js';
import { DEFAULT_FEATURE_GATES } from '../model/feature-gates.js';
import type { IPFamily } from '../model/ip.js';
import type { SkippedObject } from '../model/service-change-tracker.js';
import { ServiceChangeTracker } from '../model/service-change-tracker.js';
import { HealthCheckIndexedServicePortMap } from '../model/service-health-state.js';
import type { NodeTopology } from '../model/topology.js';
import type { BackendSyncResult, ProxyBackend, ProxySnapshot } from './backend.js';
import { BackendSyncError } from './backend.js';
import type { Clock, TimerHandle } from '../util/clock.js';
import type { Logger } from '../util/logger.js';
import type { ProxyMetrics } from './metrics.js';
import { PostSync } from './post-sync.js';
import type { ConntrackSink, ProxyHealthSink, ServiceHealthSink } from './post-sync.js';
import { BoundedFrequencyRunner } from './runner.js';
import { errorMessage } from '../util/error-message.js';

/** Problems of one object logged one by one; past this, one line says the rest are not logged. */
export const MAX_PROBLEMS_LOGGED_PER_OBJECT = 5;

/** Upstream's proxyutil.FullSyncPeriod: with no events, a full sync still runs at least this often. */
export const FULL_SYNC_PERIOD_MS = 60 * 60 * 1000;

export type { ConntrackSink, ProxyHealthSink, ServiceHealthSink } from './post-sync.js';

export interface ProxierOptions {
  readonly family: IPFamily;
  readonly nodeName: string;
  readonly backend: ProxyBackend;
  readonly clock: Clock;
  readonly metrics: ProxyMetrics;
  readonly logger: Logger;
  /** ms */
  readonly minSyncPeriod: number;
  /** ms */
  readonly syncPeriod: number;
  readonly featureGates?: FeatureGates;
  readonly health?: ProxyHealthSink;
  readonly serviceHealth?: ServiceHealthSink;
  readonly conntrack?: ConntrackSink;
  /**
   * Checked every syncPeriod; false means someone flushed our rules (iptables canary). The check marks the
   * backend's next sync full itself; the proxier then runs it.
   */
  readonly canary?: () => Promise<boolean>;
}

export interface ProxierSyncEvent {
  readonly full: boolean;
  readonly ok: boolean;
  readonly error?: unknown;
  readonly result?: BackendSyncResult;
  readonly changedServices: number;
  readonly startedAt: number;
  readonly finishedAt: number;
}

export class Proxier {
  readonly family: IPFamily;
  private readonly opts: ProxierOptions;
  private readonly serviceChanges: ServiceChangeTracker;
  private readonly endpointsChanges: EndpointsChangeTracker;
  private readonly serviceMap = new HealthCheckIndexedServicePortMap();
  private readonly endpointsMap: EndpointsMap = new Map();
  private readonly runner: BoundedFrequencyRunner;
  private topology: NodeTopology;
  /** From ServiceCIDR objects; undefined until the API server has shown it serves them. */
  private serviceCIDRs: readonly string[] | undefined;
  private servicesSynced = false;
  private endpointSlicesSynced = false;
  /** When the last full sync started (the hourly resync asks for the next one). */
  private lastFullSync = 0;
  private readonly postSync: PostSync;
  private canaryTimer: TimerHandle | undefined;
  private stopped = false;
  private readonly listeners: ((e: ProxierSyncEvent) => void)[] = [];
  private readonly skipped = new Set<string>();
  /** Problems logged per object (kind + name), to bound what one huge bad object writes. */
  private readonly problemsLogged = new Map<string, number>();

  constructor(opts: ProxierOptions) {
    this.opts = opts;
    this.family = opts.family;
    this.topology = { nodeName: opts.nodeName };
    const onSkip = (s: SkippedObject): void => this.logSkip(s);
    const featureGates = opts.featureGates ?? DEFAULT_FEATURE_GATES;
    this.serviceChanges = new ServiceChangeTracker({ family: opts.family, metrics: opts.metrics, onSkip });
    this.endpointsChanges = new EndpointsChangeTracker({
      family: opts.family,
      nodeName: opts.nodeName,
      metrics: opts.metrics,
      featureGates,
      now: () => opts.clock.now(),
      onSkip,
    });
    // The post-sync step reads the family, metrics, logger and the three sinks of these same options.
    this.postSync = new PostSync(opts);
    this.runner = new BoundedFrequencyRunner({
      name: `sync-runner-${opts.family}`,
      fn: () => this.syncProxyRules(),
      minInterval: opts.minSyncPeriod,
      retryInterval: opts.syncPeriod,
      maxInterval: FULL_SYNC_PERIOD_MS,
      clock: opts.clock,
    });
  }

  /** Whether both caches have synced, so syncs may run. */
  get initialized(): boolean {
    return this.servicesSynced && this.endpointSlicesSynced;
  }

  onSync(listener: (e: ProxierSyncEvent) => void): void {
    this.listeners.push(listener);
  }

  // --- API events -------------------------------------------------------------------------------------------

  onServiceAdd(svc: Service): void {
    this.onServiceUpdate(undefined, svc);
  }

  onServiceUpdate(previous: Service | undefined, current: Service | undefined): void {
    if (this.serviceChanges.update(previous, current) && this.initialized) this.sync();
  }

  onServiceDelete(svc: Service): void {
    this.onServiceUpdate(svc, undefined);
  }

  onServicesSynced(): void {
    this.servicesSynced = true;
    if (this.initialized) this.sync();
  }

  onEndpointSliceAdd(slice: EndpointSlice): void {
    if (this.endpointsChanges.endpointSliceUpdate(slice, false) && this.initialized) this.sync();
  }

  onEndpointSliceUpdate(_previous: EndpointSlice, current: EndpointSlice): void {
    this.onEndpointSliceAdd(current);
  }

  onEndpointSliceDelete(slice: EndpointSlice): void {
    if (this.endpointsChanges.endpointSliceUpdate(slice, true) && this.initialized) this.sync();
  }

  onEndpointSlicesSynced(): void {
    this.endpointSlicesSynced = true;
    if (this.initialized) this.sync();
  }

  /** The cluster's ServiceCIDR objects changed (upstream OnServiceCIDRsChanged): this family's ranges, synced. */
  onServiceCIDRs(objects: readonly ServiceCIDR[]): void {
    const cidrs = serviceCIDRsOf(objects, this.family);
    if (this.serviceCIDRs !== undefined && cidrs.join(',') === this.serviceCIDRs.join(',')) return;
    this.serviceCIDRs = cidrs;
    if (this.initialized) this.sync();
  }

  /** The Node's topology labels changed (upstream OnTopologyChange): the next sync is a full one. */
  onNode(node: Node): void {
    const topology = nodeTopology(this.opts.nodeName, node);
    if (topology.zone === this.topology.zone) return;
    this.topology = topology;
    this.opts.backend.requestFullSync();
    if (this.initialized) this.sync();
  }

  // --- loop ---------------------------------------------------------------------------------------------------

  /** Starts the sync loop (upstream SyncLoop): healthy while booting, then syncs as requested. */
  start(): void {
    this.opts.health?.updated(this.family);
    this.opts.metrics.lastQueuedTimestamp(this.family, this.opts.clock.now() / 1000);
    this.runner.loop();
    if (this.opts.canary) this.scheduleCanary();
    if (this.initialized) this.sync();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.canaryTimer) this.opts.clock.clearTimeout(this.canaryTimer);
    await this.runner.stop();
    await this.opts.backend.stop?.();
  }

  /** Requests a sync (upstream Sync()). */
  sync(): void {
    this.opts.health?.queuedUpdate(this.family);
    this.opts.metrics.lastQueuedTimestamp(this.family, this.opts.clock.now() / 1000);
    this.runner.run();
  }

  /** Forces the next sync to be full and requests it. */
  requestFullSync(): void {
    this.opts.backend.requestFullSync();
    this.sync();
  }

  /** Resolves after the next sync attempt (tests, the lab's status). */
  nextSync(): Promise<ProxierSyncEvent> {
    return new Promise((resolve) => {
      const listener = (e: ProxierSyncEvent): void => {
        const i = this.listeners.indexOf(listener);
        if (i >= 0) this.listeners.splice(i, 1);
        resolve(e);
      };
      this.listeners.push(listener);
    });
  }

  /** What the backend would be given now (for explain/diff tools). */
  snapshot(): ProxySnapshot {
    return {
      serviceMap: this.serviceMap,
      endpointsMap: this.endpointsMap,
      topology: this.topology,
      ...(this.serviceCIDRs !== undefined ? { serviceCIDRs: this.serviceCIDRs } : {}),
    };
  }

  /** One sync (upstream syncProxyRules). Rejects on failure so the runner retries after syncPeriod. */
  async syncProxyRules(): Promise<void> {
    if (!this.initialized) return;
    const { clock, backend, logger } = this.opts;
    const startedAt = clock.now();
    const services = this.serviceChanges.checkout(this.serviceMap);
    const endpoints = this.endpointsChanges.checkout(this.endpointsMap);
    this.postSync.checkedOut(services, endpoints, this.serviceMap);
    const changedServices = new Set([...services.updatedServices, ...endpoints.updatedServices]);
    // >=: the runner's max timer fires exactly one period after the last run, and that run must be full. Every
    // other reason for a full sync is the backend's to know; it says in its result which kind it ran.
    const hourly = startedAt - this.lastFullSync >= FULL_SYNC_PERIOD_MS;

    let result: BackendSyncResult;
    try {
      result = await backend.sync(this.snapshot(), { full: hourly, changedServices });
    } catch (error) {
      // The backend has already marked its next sync full.
      const full = error instanceof BackendSyncError ? error.full : hourly;
      const finishedAt = clock.now();
      logger.error('sync failed; the next sync will be a full one', {
        ipFamily: this.family,
        full,
        error: errorMessage(error),
      });
      this.emit({ full, ok: false, error, changedServices: changedServices.size, startedAt, finishedAt });
      throw error;
    }

    const finishedAt = clock.now();
    const full = result.full;
    if (full) this.lastFullSync = startedAt;
    logger.v(2, () => ({
      msg: 'synced proxy rules',
      fields: {
        ipFamily: this.family,
        full,
        changedServices: changedServices.size,
        operations: result.operations,
        ms: finishedAt - startedAt,
      },
    }));
    const { lastChangeTriggerTimes } = endpoints;
    await this.postSync.synced(
      { result, startedAt, finishedAt, lastChangeTriggerTimes },
      { serviceMap: this.serviceMap, endpointsMap: this.endpointsMap },
    );
    this.emit({ full, ok: true, result, changedServices: changedServices.size, startedAt, finishedAt });
  }

  private scheduleCanary(): void {
    if (this.stopped || !this.opts.canary) return;
    const check = this.opts.canary;
    this.canaryTimer = this.opts.clock.setTimeout(() => {
      void check()
        .then((present) => {
          // The backend saw its rules gone, has logged it and marked its next sync full: just run it.
          if (!present) this.sync();
        })
        .catch((error: unknown) => {
          this.opts.logger.error('canary check failed', { ipFamily: this.family, error: String(error) });
        })
        .finally(() => this.scheduleCanary());
    }, this.opts.syncPeriod);
  }

  private emit(e: ProxierSyncEvent): void {
    for (const l of [...this.listeners]) l(e);
  }

  /** Bad objects are logged once per (object, reason), at most a few reasons per object, and skipped. */
  private logSkip(s: SkippedObject): void {
    // Ordinary objects this proxier does not handle (headless, the other family's, FQDN slices) are not problems.
    if (s.routine) {
      this.opts.logger.v(4, () => ({
        msg: `not proxying ${s.kind}`,
        fields: { name: s.name, reason: s.reason },
      }));
      return;
    }
    const object = `${s.kind}\u0000${s.name}`;
    const logged = this.problemsLogged.get(object) ?? 0;
    // One object with 20,000 bad list entries is one problem to the operator, not 20,000 log lines.
    if (logged > MAX_PROBLEMS_LOGGED_PER_OBJECT) return;
    const key = `${object}\u0000${s.reason}`;
    if (this.skipped.has(key)) return;
    if (this.skipped.size > 10_000 || this.problemsLogged.size > 10_000) {
      this.skipped.clear();
      this.problemsLogged.clear();
    }
    this.skipped.add(key);
    this.problemsLogged.set(object, logged + 1);
    if (logged < MAX_PROBLEMS_LOGGED_PER_OBJECT) {
      this.opts.logger.warn(`skipping ${s.kind}`, { ipFamily: this.family, name: s.name, reason: s.reason });
    } else {
      this.opts.logger.warn(`skipping ${s.kind}`, {
        ipFamily: this.family,
        name: s.name,
        reason: `more than ${MAX_PROBLEMS_LOGGED_PER_OBJECT} problems; the rest are not logged`,
      });
    }
  }
}
