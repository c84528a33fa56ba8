// Everything the proxy reports about itself, as one interface. The proxier, the backends, the health servers and
// the conntrack reconciler call it; src/server/ implements it with prom-client under upstream's metric names
// (kubeproxy_*); tests and benchmarks pass NO_PROXY_METRICS or a recording fake.
import type { ChangeMetrics } from '../model/change-metrics.js';
import type { IPFamily } from '../model/ip.js';
import type { ConntrackMetrics } from '../netfilter/conntrack/executor.js';

export type TrafficPolicyKind = 'internal' | 'external';
export type IptablesTable = 'filter' | 'nat' | 'mangle';

/** Every metric the proxy records; kubeproxy_conntrack_reconciler_* come from ConntrackMetrics. */
export interface ProxyMetrics extends ChangeMetrics, ConntrackMetrics {
  /** kubeproxy_sync_proxy_rules_duration_seconds, plus the full or partial histogram. */
  syncDuration(family: IPFamily, seconds: number, full: boolean): void;
  /** kubeproxy_sync_proxy_rules_last_timestamp_seconds (last successful sync). */
  lastSyncTimestamp(family: IPFamily, epochSeconds: number): void;
  /** kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds. */
  lastQueuedTimestamp(family: IPFamily, epochSeconds: number): void;
  /** kubeproxy_network_programming_duration_seconds. */
  networkProgrammingDuration(family: IPFamily, seconds: number): void;
  /** kubeproxy_sync_proxy_rules_no_local_endpoints_total (a gauge upstream, despite the name). */
  noLocalEndpoints(family: IPFamily, policy: TrafficPolicyKind, count: number): void;
  /** kubeproxy_sync_proxy_rules_nftables_sync_failures_total. */
  nftablesSyncFailure(family: IPFamily): void;
  /** kubeproxy_sync_proxy_rules_nftables_cleanup_failures_total. */
  nftablesCleanupFailure(family: IPFamily): void;
  /** kubeproxy_sync_proxy_rules_iptables_restore_failures_total. */
  iptablesRestoreFailure(family: IPFamily): void;
  /** kubeproxy_sync_proxy_rules_iptables_partial_restore_failures_total. */
  iptablesPartialRestoreFailure(family: IPFamily): void;
  /** kubeproxy_sync_proxy_rules_iptables_total (rules owned) and _iptables_last (rules written last sync). */
  iptablesRules(family: IPFamily, table: IptablesTable, total: number, last: number): void;
  /** Beyond upstream: kubeproxy_iptables_restore_duration_seconds, one observation per iptables-restore run. */
  iptablesRestoreDuration(family: IPFamily, seconds: number): void;
  /** Beyond upstream: kubeproxy_iptables_lock_wait_seconds, time spent waiting for the xtables lock. */
  iptablesLockWait(family: IPFamily, seconds: number): void;
  /** kubeproxy_proxy_healthz_total{code}. */
  healthzResponse(code: number): void;
  /** kubeproxy_proxy_livez_total{code}. */
  livezResponse(code: number): void;
}

const nothing = (): void => {};

/** A ProxyMetrics that records nothing. */
export const NO_PROXY_METRICS: ProxyMetrics = Object.freeze({
  serviceChange: nothing,
  servicesPending: nothing,
  endpointChange: nothing,
  endpointsPending: nothing,
  syncDuration: nothing,
  lastSyncTimestamp: nothing,
  lastQueuedTimestamp: nothing,
  networkProgrammingDuration: nothing,
  noLocalEndpoints: nothing,
  nftablesSyncFailure: nothing,
  nftablesCleanupFailure: nothing,
  iptablesRestoreFailure: nothing,
  iptablesPartialRestoreFailure: nothing,
  iptablesRules: nothing,
  iptablesRestoreDuration: nothing,
  iptablesLockWait: nothing,
  conntrackReconcile: nothing,
  healthzResponse: nothing,
  livezResponse: nothing,
});
