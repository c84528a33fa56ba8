// Is the proxy keeping up? (upstream pkg/proxy/healthcheck/proxy_health.go). Each family's proxier reports
// queuedUpdate when a change arrives and updated when a sync succeeded; a family that has reported updated at least
// once is unhealthy while its oldest unsynced change is at least 2 × syncPeriod old. A family that never reported
// does not count, so the proxy is healthy while booting. /healthz also needs this node to be eligible for traffic;
// /livez does not (a node being drained is not a reason to restart the proxy).
import type { Node } from '../api/objects.js';
import { TAINT_TO_BE_DELETED_BY_CA } from '../api/objects.js';
import type { IPFamily } from '../model/ip.js';
import type { Clock } from '../util/clock.js';
import type { ProxyMetrics } from '../sync/metrics.js';
import type { HttpAnswer } from './http-answer.js';
import { formatRFC3339Nano } from './rfc3339.js';

export interface ProxierHealth {
  /** ms since the epoch of this family's last successful sync. */
  readonly lastUpdated: number;
  readonly healthy: boolean;
}

export interface ProxyHealthState {
  /** True when every family that has reported is keeping up. */
  readonly healthy: boolean;
  /** The most recent lastUpdated over all families; undefined before any family synced. */
  readonly lastUpdated: number | undefined;
  readonly currentTime: number;
  readonly status: ReadonlyMap<IPFamily, ProxierHealth>;
}

export interface NodeEligibility {
  readonly eligible: boolean;
  /** Why not, for logs. */
  readonly reason?: string;
}

/**
 * Whether load balancers should send traffic to this node: the Node is known, not being deleted, and not tainted
 * by the cluster autoscaler for removal. Reads the object defensively: it came from the network.
 */
export function nodeEligibility(node: Node | undefined): NodeEligibility {
  if (node === undefined || node === null || typeof node !== 'object') {
    return { eligible: false, reason: 'node not known' };
  }
  const deletion: unknown = node.metadata?.deletionTimestamp;
  if (typeof deletion === 'string' && deletion !== '') {
    return { eligible: false, reason: `node is being deleted (deletionTimestamp ${deletion})` };
  }
  const taints: unknown = node.spec?.taints;
  if (Array.isArray(taints)) {
    for (const t of taints as unknown[]) {
      if (t !== null && typeof t === 'object' && (t as { key?: unknown }).key === TAINT_TO_BE_DELETED_BY_CA) {
        return { eligible: false, reason: `node has taint ${TAINT_TO_BE_DELETED_BY_CA}` };
      }
    }
  }
  return { eligible: true };
}

export interface ProxyHealthOptions {
  readonly clock: Clock;
  /** syncPeriod in ms; the health timeout is twice this (upstream: 2 × 30 s = 60 s by default). */
  readonly syncPeriodMs: number;
  /** Counts /healthz and /livez answers by code. */
  readonly metrics?: Pick<ProxyMetrics, 'healthzResponse' | 'livezResponse'>;
}

const JSON_HEADERS = Object.freeze({
  'Content-Type': 'application/json',
  'X-Content-Type-Options': 'nosniff',
});

export class ProxyHealth {
  readonly #clock: Clock;
  readonly #timeoutMs: number;
  readonly #metrics: ProxyHealthOptions['metrics'];
  readonly #lastUpdated = new Map<IPFamily, number>();
  readonly #oldestPendingQueued = new Map<IPFamily, number>();
  #node: NodeEligibility = { eligible: false, reason: 'node not known yet' };

  constructor(options: ProxyHealthOptions) {
    this.#clock = options.clock;
    this.#timeoutMs = 2 * options.syncPeriodMs;
    this.#metrics = options.metrics;
  }

  get timeoutMs(): number {
    return this.#timeoutMs;
  }

  /** A change for `family` arrived and is not yet in the kernel. Only the oldest pending time is kept. */
  queuedUpdate(family: IPFamily): void {
    if (!this.#oldestPendingQueued.has(family)) this.#oldestPendingQueued.set(family, this.#clock.now());
  }

  /** `family`'s proxier synced successfully (also called once when its sync loop starts). */
  updated(family: IPFamily): void {
    this.#oldestPendingQueued.delete(family);
    this.#lastUpdated.set(family, this.#clock.now());
  }

  /** The Node object as last seen (undefined when deleted or not yet known). */
  syncNode(node: Node | undefined): NodeEligibility {
    this.#node = nodeEligibility(node);
    return this.#node;
  }

  nodeEligible(): boolean {
    return this.#node.eligible;
  }

  health(): ProxyHealthState {
    const now = this.#clock.now();
    const status = new Map<IPFamily, ProxierHealth>();
    let healthy = true;
    let lastUpdated: number | undefined;
    for (const [family, updatedAt] of this.#lastUpdated) {
      if (lastUpdated === undefined || updatedAt > lastUpdated) lastUpdated = updatedAt;
      const pendingSince = this.#oldestPendingQueued.get(family);
      const late = pendingSince !== undefined && now - pendingSince >= this.#timeoutMs;
      if (late) healthy = false;
      status.set(family, { lastUpdated: updatedAt, healthy: !late });
    }
    return { healthy, lastUpdated, currentTime: now, status };
  }

  isHealthy(): boolean {
    return this.health().healthy;
  }

  /** The /healthz answer: 200 iff healthy and the node is eligible. Counted in kubeproxy_proxy_healthz_total. */
  healthzAnswer(): HttpAnswer {
    const state = this.health();
    const nodeEligible = this.#node.eligible;
    const ok = state.healthy && nodeEligible;
    const status = ok ? 200 : 503;
    this.#metrics?.healthzResponse(status);
    return { status, headers: JSON_HEADERS, body: healthBody(state, ok, nodeEligible) };
  }

  /** The /livez answer: 200 iff healthy, whatever the node. Counted in kubeproxy_proxy_livez_total. */
  livezAnswer(): HttpAnswer {
    const state = this.health();
    const status = state.healthy ? 200 : 503;
    this.#metrics?.livezResponse(status);
    return { status, headers: JSON_HEADERS, body: healthBody(state, state.healthy, undefined) };
  }
}

/**
 * Upstream's JSON body, field for field and in its order. When the answer is 200, lastUpdated is "now": older
 * releases reported the time of the last sync loop run, and clients came to read a recent lastUpdated as healthy.
 * `status` is left out while empty, as Go's omitempty does.
 */
function healthBody(state: ProxyHealthState, ok: boolean, nodeEligible: boolean | undefined): string {
  const body: Record<string, unknown> = {
    lastUpdated: formatRFC3339Nano(ok ? state.currentTime : state.lastUpdated),
    currentTime: formatRFC3339Nano(state.currentTime),
  };
  if (nodeEligible !== undefined) body.nodeEligible = nodeEligible;
  body.healthy = state.healthy;
  if (state.status.size > 0) {
    // Go prints map keys sorted.
    const entries = [...state.status.entries()].sort(([a], [b]) => (a < b ? -1 : 1));
    body.status = Object.fromEntries(
      entries.map(([f, s]) => [f, { lastUpdated: formatRFC3339Nano(s.lastUpdated), healthy: s.healthy }]),
    );
  }
  return JSON.stringify(body);
}
