import { test } from 'node:test';
import assert from 'node:assert/strict';
import { metricValue, syncSettingsOfConfigz } from '../../../packages/lab/src/cluster/metrics.js';

const TEXT = `# HELP kubeproxy_sync_proxy_rules_endpoint_changes_pending Pending proxy rules Endpoint changes
# TYPE kubeproxy_sync_proxy_rules_endpoint_changes_pending gauge
kubeproxy_sync_proxy_rules_endpoint_changes_pending 14
kubeproxy_sync_proxy_rules_duration_seconds_count{ip_family="IPv4"} 3
kubeproxy_sync_proxy_rules_duration_seconds_count{ip_family="IPv6"} 2
kubeproxy_proxy_healthz_total{code="200"} 7
kubeproxy_proxy_healthz_total{code="503"} 1
odd_label{a="x\\"y\\\\z"} 1e3
no_limit +Inf
`;

test('metricValue sums the series of a name, optionally filtered by labels', () => {
  assert.equal(metricValue(TEXT, 'kubeproxy_sync_proxy_rules_endpoint_changes_pending'), 14);
  assert.equal(metricValue(TEXT, 'kubeproxy_sync_proxy_rules_duration_seconds_count'), 5);
  assert.equal(
    metricValue(TEXT, 'kubeproxy_sync_proxy_rules_duration_seconds_count', { ip_family: 'IPv6' }),
    2,
  );
  assert.equal(metricValue(TEXT, 'kubeproxy_proxy_healthz_total', { code: '503' }), 1);
  assert.equal(metricValue(TEXT, 'kubeproxy_sync_proxy_rules'), undefined, 'a prefix is not a name');
  assert.equal(metricValue(TEXT, 'missing'), undefined);
});

test('metricValue reads the text as doctor does: escaped label values, exponents, +Inf', () => {
  assert.equal(metricValue(TEXT, 'odd_label', { a: 'x"y\\z' }), 1000);
  assert.equal(metricValue(TEXT, 'no_limit'), Infinity, 'the lab once dropped +Inf samples');
});

test('syncSettingsOfConfigz: the running mode and its own section’s sync periods', () => {
  const configz = {
    Mode: 'ipvs',
    IPTables: { MinSyncPeriod: '10s', SyncPeriod: '1m0s' },
    IPVS: { MinSyncPeriod: '1s', SyncPeriod: '30s', Scheduler: 'rr' },
    NFTables: { MinSyncPeriod: '1s', SyncPeriod: '30s' },
  };
  assert.deepEqual(syncSettingsOfConfigz(configz), { mode: 'ipvs', minSyncPeriod: '1s', syncPeriod: '30s' });
  assert.deepEqual(syncSettingsOfConfigz({ ...configz, Mode: '' }), {
    mode: 'iptables',
    minSyncPeriod: '10s',
    syncPeriod: '1m0s',
  });
  assert.deepEqual(syncSettingsOfConfigz({ Mode: 'nftables' }), { mode: 'nftables' });
  assert.equal(syncSettingsOfConfigz({ mode: 'nftables' }), undefined, 'not upstream’s configz: no Mode');
});
