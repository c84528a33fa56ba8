import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fetchProxySettings, metricValue } from '../../../packages/lab/src/cluster/metrics.js';
import type { CommandRunner } from '../../../packages/agent/src/netfilter/command.js';

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

test('fetchProxySettings: the mode and periods the proxy runs, from its /configz in its node', async () => {
  const asked: string[][] = [];
  const answer = (stdout: string, code = 0): CommandRunner => ({
    run: (cmd, args) => {
      asked.push([cmd, ...args]);
      return Promise.resolve({ code, stdout, stderr: '' });
    },
  });
  const body = JSON.stringify({
    'kubeproxy.config.k8s.io': {
      Mode: 'ipvs',
      IPTables: { SyncPeriod: '1m0s', MinSyncPeriod: '10s' },
      IPVS: { SyncPeriod: '30s', MinSyncPeriod: '1s', Scheduler: 'rr' },
    },
  });
  const s = await fetchProxySettings(answer(body), 'lab-worker');
  assert.equal(s?.mode, 'ipvs');
  assert.equal(s?.minSyncPeriodSeconds, 1, "the running mode's block, not iptables'");
  assert.equal(s?.syncPeriodSeconds, 30);
  assert.deepEqual(asked[0]?.slice(0, 4), ['ip', 'netns', 'exec', 'lab-worker']);
  assert.match(asked[0]?.at(-1) ?? '', /^http:\/\/127\.0\.0\.1:10249\/configz$/);
  assert.equal(await fetchProxySettings(answer('', 7), 'lab-worker'), undefined, 'not answering: unknown');
  assert.equal(await fetchProxySettings(answer('{"Mode":"ipvs"}'), 'lab-worker'), undefined, 'not configz');
});
