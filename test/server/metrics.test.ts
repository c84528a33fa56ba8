import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createProxyMetrics } from '../../packages/agent/src/server/metrics.js';
import type { ProxyMetrics } from '../../packages/agent/src/sync/metrics.js';
import { bucketBounds, parseExposition } from './exposition.js';
import type { Family } from './exposition.js';

// Expected values written out from upstream-model.md §6, not taken from the implementation.
const SYNC_BOUNDS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384].map(
  (ms) => ms / 1000,
);
const NETWORK_PROGRAMMING_BOUNDS: number[] = [0, 0.25, 0.5];
for (let s = 1; s <= 59; s++) NETWORK_PROGRAMMING_BOUNDS.push(s);
for (let s = 60; s <= 115; s += 5) NETWORK_PROGRAMMING_BOUNDS.push(s);
for (let s = 120; s <= 300; s += 30) NETWORK_PROGRAMMING_BOUNDS.push(s);

interface Expected {
  readonly type: 'counter' | 'gauge' | 'histogram';
  /** Label names on each sample (le excluded), in printed order. */
  readonly labels: readonly string[];
  readonly buckets?: readonly number[];
}

const COMMON: Record<string, Expected> = {
  kubeproxy_sync_proxy_rules_duration_seconds: {
    type: 'histogram',
    labels: ['ip_family'],
    buckets: SYNC_BOUNDS,
  },
  kubeproxy_sync_full_proxy_rules_duration_seconds: {
    type: 'histogram',
    labels: ['ip_family'],
    buckets: SYNC_BOUNDS,
  },
  kubeproxy_sync_partial_proxy_rules_duration_seconds: {
    type: 'histogram',
    labels: ['ip_family'],
    buckets: SYNC_BOUNDS,
  },
  kubeproxy_sync_proxy_rules_last_timestamp_seconds: { type: 'gauge', labels: ['ip_family'] },
  kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds: { type: 'gauge', labels: ['ip_family'] },
  kubeproxy_network_programming_duration_seconds: {
    type: 'histogram',
    labels: ['ip_family'],
    buckets: NETWORK_PROGRAMMING_BOUNDS,
  },
  kubeproxy_sync_proxy_rules_endpoint_changes_pending: { type: 'gauge', labels: [] },
  kubeproxy_sync_proxy_rules_endpoint_changes_total: { type: 'counter', labels: [] },
  kubeproxy_sync_proxy_rules_service_changes_pending: { type: 'gauge', labels: [] },
  kubeproxy_sync_proxy_rules_service_changes_total: { type: 'counter', labels: [] },
  kubeproxy_sync_proxy_rules_no_local_endpoints_total: {
    type: 'gauge',
    labels: ['ip_family', 'traffic_policy'],
  },
  kubeproxy_proxy_healthz_total: { type: 'counter', labels: ['code'] },
  kubeproxy_proxy_livez_total: { type: 'counter', labels: ['code'] },
  kubeproxy_conntrack_reconciler_sync_duration_seconds: { type: 'histogram', labels: ['ip_family'] },
  kubeproxy_conntrack_reconciler_deleted_entries_total: { type: 'counter', labels: ['ip_family'] },
};

const IPTABLES_ONLY: Record<string, Expected> = {
  kubeproxy_sync_proxy_rules_iptables_restore_failures_total: { type: 'counter', labels: ['ip_family'] },
  kubeproxy_sync_proxy_rules_iptables_partial_restore_failures_total: {
    type: 'counter',
    labels: ['ip_family'],
  },
  kubeproxy_sync_proxy_rules_iptables_total: { type: 'gauge', labels: ['ip_family', 'table'] },
  kubeproxy_sync_proxy_rules_iptables_last: { type: 'gauge', labels: ['ip_family', 'table'] },
  kubeproxy_iptables_restore_duration_seconds: { type: 'histogram', labels: ['ip_family'] },
  kubeproxy_iptables_lock_wait_seconds: { type: 'histogram', labels: ['ip_family'] },
  kubeproxy_iptables_ct_state_invalid_dropped_packets_total: { type: 'counter', labels: [] },
  kubeproxy_iptables_localhost_nodeports_accepted_packets_total: { type: 'counter', labels: [] },
};

const NFTABLES_ONLY: Record<string, Expected> = {
  kubeproxy_sync_proxy_rules_nftables_sync_failures_total: { type: 'counter', labels: ['ip_family'] },
  kubeproxy_sync_proxy_rules_nftables_cleanup_failures_total: { type: 'counter', labels: ['ip_family'] },
};

/** Calls every method once per family, so that every labelled series exists. */
function driveAll(m: ProxyMetrics): void {
  m.serviceChange();
  m.serviceChange();
  m.servicesPending(3);
  m.endpointChange();
  m.endpointsPending(5);
  for (const family of ['IPv4', 'IPv6'] as const) {
    m.syncDuration(family, 0.003, true);
    m.syncDuration(family, 0.0005, false);
    m.lastSyncTimestamp(family, 1_700_000_000);
    m.lastQueuedTimestamp(family, 1_700_000_001);
    m.networkProgrammingDuration(family, 0.3);
    m.noLocalEndpoints(family, 'internal', 1);
    m.noLocalEndpoints(family, 'external', 2);
    m.nftablesSyncFailure(family);
    m.nftablesCleanupFailure(family);
    m.iptablesRestoreFailure(family);
    m.iptablesPartialRestoreFailure(family);
    m.iptablesRules(family, 'nat', 40, 7);
    m.iptablesRules(family, 'filter', 10, 0);
    m.iptablesRestoreDuration(family, 0.02);
    m.iptablesLockWait(family, 0);
    m.conntrackReconcile(family, 0.01, 4);
  }
  m.healthzResponse(200);
  m.healthzResponse(503);
  m.livezResponse(200);
}

function checkFamily(name: string, f: Family | undefined, want: Expected): void {
  assert.ok(f, `${name} missing from /metrics`);
  assert.equal(f.type, want.type, `${name} TYPE`);
  assert.ok(f.help && f.help.length > 0, `${name} has HELP`);
  assert.ok(f.samples.length > 0, `${name} has samples`);
  for (const s of f.samples) {
    const names = s.labelOrder.filter((l) => l !== 'le');
    assert.deepEqual(names, want.labels, `${name} labels on ${s.name}`);
  }
  if (want.buckets) {
    const first = f.samples[0]!;
    const labels = Object.fromEntries(Object.entries(first.labels).filter(([k]) => k !== 'le'));
    assert.deepEqual(bucketBounds(f, labels), want.buckets, `${name} bucket bounds`);
  }
}

describe('createProxyMetrics', () => {
  test('iptables mode: every upstream metric with its type, labels and buckets, and no nftables metric', async () => {
    const counters = new Map([
      ['ct_state_invalid_dropped_pkts', 17],
      ['localhost_nps_accepted_pkts', 4],
    ]);
    const m = createProxyMetrics({
      mode: 'iptables',
      processMetrics: false,
      nfacctReader: async (c) => counters.get(c),
    });
    driveAll(m);
    const fams = parseExposition(await m.registry.metrics());
    for (const [name, want] of Object.entries({ ...COMMON, ...IPTABLES_ONLY }))
      checkFamily(name, fams.get(name), want);
    for (const name of Object.keys(NFTABLES_ONLY))
      assert.equal(fams.has(name), false, `${name} in iptables mode`);
    assert.equal(NETWORK_PROGRAMMING_BOUNDS.length, 81);

    const samples = [...fams.values()].flatMap((f) => f.samples);
    const value = (name: string, labels: Record<string, string> = {}) =>
      samples.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
        ?.value;
    assert.equal(value('kubeproxy_iptables_ct_state_invalid_dropped_packets_total'), 17);
    assert.equal(value('kubeproxy_iptables_localhost_nodeports_accepted_packets_total'), 4);
    assert.equal(value('kubeproxy_sync_proxy_rules_service_changes_total'), 2);
    assert.equal(value('kubeproxy_sync_proxy_rules_endpoint_changes_pending'), 5);
    assert.equal(value('kubeproxy_sync_proxy_rules_iptables_total', { ip_family: 'IPv6', table: 'nat' }), 40);
    assert.equal(value('kubeproxy_sync_proxy_rules_iptables_last', { ip_family: 'IPv4', table: 'nat' }), 7);
    assert.equal(
      value('kubeproxy_sync_proxy_rules_no_local_endpoints_total', {
        ip_family: 'IPv4',
        traffic_policy: 'external',
      }),
      2,
    );
    assert.equal(value('kubeproxy_proxy_healthz_total', { code: '503' }), 1);
    assert.equal(value('kubeproxy_conntrack_reconciler_deleted_entries_total', { ip_family: 'IPv6' }), 4);
    // One full (3 ms) and one partial (0.5 ms) sync per family: overall count 2, full count 1, partial in le=0.001.
    assert.equal(value('kubeproxy_sync_proxy_rules_duration_seconds_count', { ip_family: 'IPv4' }), 2);
    assert.equal(value('kubeproxy_sync_full_proxy_rules_duration_seconds_count', { ip_family: 'IPv4' }), 1);
    assert.equal(
      value('kubeproxy_sync_partial_proxy_rules_duration_seconds_bucket', { ip_family: 'IPv4', le: '0.001' }),
      1,
    );
    assert.equal(
      value('kubeproxy_network_programming_duration_seconds_bucket', { ip_family: 'IPv4', le: '0.25' }),
      0,
    );
    assert.equal(
      value('kubeproxy_network_programming_duration_seconds_bucket', { ip_family: 'IPv4', le: '0.5' }),
      1,
    );
  });

  test('nftables mode: no iptables metric at all', async () => {
    const m = createProxyMetrics({ mode: 'nftables', processMetrics: false, nfacctReader: async () => 1 });
    driveAll(m);
    const text = await m.registry.metrics();
    const fams = parseExposition(text);
    for (const [name, want] of Object.entries({ ...COMMON, ...NFTABLES_ONLY }))
      checkFamily(name, fams.get(name), want);
    assert.doesNotMatch(text, /iptables/);
  });

  test('an nfacct counter that cannot be read has no sample (no invented 0)', async () => {
    const m = createProxyMetrics({
      mode: 'iptables',
      processMetrics: false,
      nfacctReader: async (c) => {
        if (c === 'localhost_nps_accepted_pkts') throw new Error('nfacct: no such object');
        return undefined;
      },
    });
    const fams = parseExposition(await m.registry.metrics());
    assert.deepEqual(fams.get('kubeproxy_iptables_ct_state_invalid_dropped_packets_total')?.samples, []);
    assert.deepEqual(fams.get('kubeproxy_iptables_localhost_nodeports_accepted_packets_total')?.samples, []);
  });

  test('process metrics come from collectDefaultMetrics', async () => {
    const m = createProxyMetrics({ mode: 'nftables' });
    const fams = parseExposition(await m.registry.metrics());
    assert.equal(fams.get('process_cpu_seconds_total')?.type, 'counter');
    assert.equal(fams.get('process_start_time_seconds')?.type, 'gauge');
  });
});
