// ProxyMetrics on prom-client, under upstream's names (pkg/proxy/metrics): what operators' dashboards and alerts
// query. Names, types, label names and bucket bounds are upstream's; help texts are the ones upstream's metrics
// reference shows. Registration follows the mode, as upstream's RegisterMetrics(mode) does: iptables-only metrics
// exist only in iptables mode, nftables-only ones only in nftables mode.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Metric } from 'prom-client';
import type { IPFamily } from '../model/ip.js';
import type { ProxyMode } from '../config/proxy-mode.js';
import type { IptablesTable, ProxyMetrics, TrafficPolicyKind } from '../sync/metrics.js';
import {
  CONNTRACK_RECONCILE_BUCKETS,
  IPTABLES_LOCK_WAIT_BUCKETS,
  IPTABLES_RESTORE_BUCKETS,
  NETWORK_PROGRAMMING_BUCKETS,
  SYNC_DURATION_BUCKETS,
} from './buckets.js';
import { ScrapedCounter } from './scraped-counter.js';

/** Reads one nfacct counter's packet count at scrape time; undefined when it cannot be read (nothing is emitted). */
export type NfacctReader = (counter: string) => Promise<number | undefined>;

/** The nfacct objects iptables mode creates (pkg/proxy/util/nfacct), and the metric each one backs. */
export const NFACCT_COUNTERS = Object.freeze({
  ctStateInvalidDroppedPkts: 'ct_state_invalid_dropped_pkts',
  localhostNodePortsAcceptedPkts: 'localhost_nps_accepted_pkts',
} as const);

export interface ProxyMetricsOptions {
  readonly mode: ProxyMode;
  /** Where to register; a new Registry when absent. */
  readonly registry?: Registry;
  /** iptables mode: source of the two nfacct-backed counters. Without it those metrics are not registered. */
  readonly nfacctReader?: NfacctReader;
  /** Process and runtime metrics (process_*, nodejs_*) via collectDefaultMetrics; default true. */
  readonly processMetrics?: boolean;
}

export interface PrometheusProxyMetrics extends ProxyMetrics {
  readonly mode: ProxyMode;
  readonly registry: Registry;
}

const IP_FAMILY = 'ip_family';
// Label names are listed in the order Go's client prints them (sorted), so the text matches upstream's byte for byte.
const FAMILY_LABELS = [IP_FAMILY] as const;

/** A metric's options, unregistered: createProxyMetrics registers only the metrics of the mode. */
function unregistered<L extends string = never>(name: string, help: string, labelNames: readonly L[] = []) {
  return { name, help, labelNames, registers: [] };
}
function familyHistogram(name: string, help: string, buckets: readonly number[]): Histogram<'ip_family'> {
  return new Histogram({ ...unregistered(name, help, FAMILY_LABELS), buckets: [...buckets] });
}
function familyCounter(name: string, help: string): Counter<'ip_family'> {
  return new Counter(unregistered(name, help, FAMILY_LABELS));
}
function familyGauge(name: string, help: string): Gauge<'ip_family'> {
  return new Gauge(unregistered(name, help, FAMILY_LABELS));
}

/** Creates every upstream metric, registers those of `mode`, and returns the ProxyMetrics that feeds them. */
// eslint-disable-next-line max-lines-per-function -- a data table: upstream's metrics, declared one after another
export function createProxyMetrics(options: ProxyMetricsOptions): PrometheusProxyMetrics {
  const registry = options.registry ?? new Registry();
  const { mode } = options;

  const syncDuration = familyHistogram(
    'kubeproxy_sync_proxy_rules_duration_seconds',
    'SyncProxyRules latency in seconds',
    SYNC_DURATION_BUCKETS,
  );
  const syncFullDuration = familyHistogram(
    'kubeproxy_sync_full_proxy_rules_duration_seconds',
    'SyncProxyRules latency in seconds for full resyncs',
    SYNC_DURATION_BUCKETS,
  );
  const syncPartialDuration = familyHistogram(
    'kubeproxy_sync_partial_proxy_rules_duration_seconds',
    'SyncProxyRules latency in seconds for partial resyncs',
    SYNC_DURATION_BUCKETS,
  );
  const lastTimestamp = familyGauge(
    'kubeproxy_sync_proxy_rules_last_timestamp_seconds',
    'The last time proxy rules were successfully synced',
  );
  const lastQueuedTimestamp = familyGauge(
    'kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds',
    'The last time a sync of proxy rules was queued',
  );
  const networkProgramming = familyHistogram(
    'kubeproxy_network_programming_duration_seconds',
    'In Cluster Network Programming Latency in seconds',
    NETWORK_PROGRAMMING_BUCKETS,
  );
  const endpointChangesPending = new Gauge(
    unregistered(
      'kubeproxy_sync_proxy_rules_endpoint_changes_pending',
      'Pending proxy rules Endpoint changes',
    ),
  );
  const endpointChangesTotal = new Counter(
    unregistered(
      'kubeproxy_sync_proxy_rules_endpoint_changes_total',
      'Cumulative proxy rules Endpoint changes',
    ),
  );
  const serviceChangesPending = new Gauge(
    unregistered('kubeproxy_sync_proxy_rules_service_changes_pending', 'Pending proxy rules Service changes'),
  );
  const serviceChangesTotal = new Counter(
    unregistered(
      'kubeproxy_sync_proxy_rules_service_changes_total',
      'Cumulative proxy rules Service changes',
    ),
  );
  // A gauge despite the _total suffix: upstream's type, kept so existing queries keep working.
  const noLocalEndpoints = new Gauge(
    unregistered(
      'kubeproxy_sync_proxy_rules_no_local_endpoints_total',
      'Number of services with a Local traffic policy and no endpoints',
      [IP_FAMILY, 'traffic_policy'],
    ),
  );
  const healthzTotal = new Counter(
    unregistered('kubeproxy_proxy_healthz_total', 'Cumulative proxy healthz HTTP status', ['code']),
  );
  const livezTotal = new Counter(
    unregistered('kubeproxy_proxy_livez_total', 'Cumulative proxy livez HTTP status', ['code']),
  );
  const conntrackDuration = familyHistogram(
    'kubeproxy_conntrack_reconciler_sync_duration_seconds',
    'ReconcileConntrackFlowsLatency latency in seconds',
    CONNTRACK_RECONCILE_BUCKETS,
  );
  const conntrackDeleted = familyCounter(
    'kubeproxy_conntrack_reconciler_deleted_entries_total',
    'Cumulative conntrack flows deleted by conntrack reconciler',
  );

  // iptables mode only.
  const iptablesRestoreFailures = familyCounter(
    'kubeproxy_sync_proxy_rules_iptables_restore_failures_total',
    'Cumulative proxy iptables restore failures',
  );
  const iptablesPartialRestoreFailures = familyCounter(
    'kubeproxy_sync_proxy_rules_iptables_partial_restore_failures_total',
    'Cumulative proxy iptables partial restore failures',
  );
  const iptablesTotal = new Gauge(
    unregistered(
      'kubeproxy_sync_proxy_rules_iptables_total',
      'Total number of iptables rules owned by kube-proxy',
      [IP_FAMILY, 'table'],
    ),
  );
  const iptablesLast = new Gauge(
    unregistered(
      'kubeproxy_sync_proxy_rules_iptables_last',
      'Number of iptables rules written by kube-proxy in last sync',
      [IP_FAMILY, 'table'],
    ),
  );
  const iptablesRestoreDuration = familyHistogram(
    'kubeproxy_iptables_restore_duration_seconds',
    'Time one iptables-restore run took, in seconds (kube-proxy-ts; not in upstream kube-proxy)',
    IPTABLES_RESTORE_BUCKETS,
  );
  const iptablesLockWait = familyHistogram(
    'kubeproxy_iptables_lock_wait_seconds',
    'Time spent waiting for the xtables lock before an iptables run, in seconds (kube-proxy-ts; not in upstream kube-proxy)',
    IPTABLES_LOCK_WAIT_BUCKETS,
  );

  // nftables mode only.
  const nftablesSyncFailures = familyCounter(
    'kubeproxy_sync_proxy_rules_nftables_sync_failures_total',
    'Cumulative proxy nftables sync failures',
  );
  const nftablesCleanupFailures = familyCounter(
    'kubeproxy_sync_proxy_rules_nftables_cleanup_failures_total',
    'Cumulative proxy nftables cleanup failures',
  );

  const common: readonly Metric<string>[] = [
    syncDuration,
    syncFullDuration,
    syncPartialDuration,
    lastTimestamp,
    lastQueuedTimestamp,
    networkProgramming,
    endpointChangesPending,
    endpointChangesTotal,
    serviceChangesPending,
    serviceChangesTotal,
    noLocalEndpoints,
    healthzTotal,
    livezTotal,
    conntrackDuration,
    conntrackDeleted,
  ];
  for (const m of common) registry.registerMetric(m);
  if (mode === 'iptables') {
    for (const m of [
      iptablesRestoreFailures,
      iptablesPartialRestoreFailures,
      iptablesTotal,
      iptablesLast,
      iptablesRestoreDuration,
      iptablesLockWait,
    ]) {
      registry.registerMetric(m);
    }
    const read = options.nfacctReader;
    if (read) {
      registry.registerMetric(
        new ScrapedCounter(
          'kubeproxy_iptables_ct_state_invalid_dropped_packets_total',
          'packets dropped by iptables to work around conntrack problems',
          () => read(NFACCT_COUNTERS.ctStateInvalidDroppedPkts),
        ),
      );
      registry.registerMetric(
        new ScrapedCounter(
          'kubeproxy_iptables_localhost_nodeports_accepted_packets_total',
          'Number of packets accepted on nodeports of loopback interface',
          () => read(NFACCT_COUNTERS.localhostNodePortsAcceptedPkts),
        ),
      );
    }
  } else {
    registry.registerMetric(nftablesSyncFailures);
    registry.registerMetric(nftablesCleanupFailures);
  }
  if (options.processMetrics ?? true) collectDefaultMetrics({ register: registry });

  const fam = (family: IPFamily) => ({ [IP_FAMILY]: family });
  return {
    mode,
    registry,
    serviceChange: () => serviceChangesTotal.inc(),
    servicesPending: (n) => serviceChangesPending.set(n),
    endpointChange: () => endpointChangesTotal.inc(),
    endpointsPending: (n) => endpointChangesPending.set(n),
    syncDuration: (family, seconds, full) => {
      syncDuration.observe(fam(family), seconds);
      (full ? syncFullDuration : syncPartialDuration).observe(fam(family), seconds);
    },
    lastSyncTimestamp: (family, epochSeconds) => lastTimestamp.set(fam(family), epochSeconds),
    lastQueuedTimestamp: (family, epochSeconds) => lastQueuedTimestamp.set(fam(family), epochSeconds),
    networkProgrammingDuration: (family, seconds) => networkProgramming.observe(fam(family), seconds),
    noLocalEndpoints: (family: IPFamily, policy: TrafficPolicyKind, count: number) =>
      noLocalEndpoints.set({ [IP_FAMILY]: family, traffic_policy: policy }, count),
    nftablesSyncFailure: (family) => nftablesSyncFailures.inc(fam(family)),
    nftablesCleanupFailure: (family) => nftablesCleanupFailures.inc(fam(family)),
    iptablesRestoreFailure: (family) => iptablesRestoreFailures.inc(fam(family)),
    iptablesPartialRestoreFailure: (family) => iptablesPartialRestoreFailures.inc(fam(family)),
    iptablesRules: (family: IPFamily, table: IptablesTable, total: number, last: number) => {
      iptablesTotal.set({ [IP_FAMILY]: family, table }, total);
      iptablesLast.set({ [IP_FAMILY]: family, table }, last);
    },
    iptablesRestoreDuration: (family, seconds) => iptablesRestoreDuration.observe(fam(family), seconds),
    iptablesLockWait: (family, seconds) => iptablesLockWait.observe(fam(family), seconds),
    conntrackReconcile: (family, seconds, deletedEntries) => {
      conntrackDuration.observe(fam(family), seconds);
      // Adding 0 still creates the series, as upstream's Add(0) does: a pass that deleted nothing is visible.
      conntrackDeleted.inc(fam(family), Math.max(0, deletedEntries));
    },
    healthzResponse: (code) => healthzTotal.inc({ code: String(code) }),
    livezResponse: (code) => livezTotal.inc({ code: String(code) }),
  };
}
