// --write-config-to: the effective configuration as v1alpha1 YAML, read back to the same configuration.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { parse } from 'yaml';
import { serializeProxyConfig } from '../../packages/agent/src/config/write.js';
import { expectOk, load, loadFile } from './helpers.js';

function roundTrip(argv: readonly string[], files: Readonly<Record<string, string>> = {}): void {
  const first = expectOk(load(argv, files));
  const written = serializeProxyConfig(first.config);
  const again = expectOk(load(['--config=/written.yaml'], { '/written.yaml': written }, 'other-host'));
  assert.deepEqual(
    again.warnings.filter((w) => w.includes('strict decoding')),
    [],
    'the written file has no unknown fields',
  );
  // The node name comes from the OS hostname unless hostnameOverride is set; compare the rest.
  assert.deepEqual(
    {
      ...again.config,
      nodeName: first.config.hostnameOverride === '' ? first.config.nodeName : again.config.nodeName,
    },
    first.config,
  );
}

describe('serializeProxyConfig', () => {
  test('defaults round-trip', () => roundTrip([]));

  test('an nftables file with many settings round-trips', () => {
    const path = '/etc/kube-proxy/config.conf';
    const body = [
      'apiVersion: kubeproxy.config.k8s.io/v1alpha1',
      'kind: KubeProxyConfiguration',
      'mode: nftables',
      'hostnameOverride: Worker-3',
      'nftables:',
      '  syncPeriod: 1m30s',
      '  minSyncPeriod: 15s',
      '  masqueradeAll: true',
      '  masqueradeBit: 12',
      'iptables:',
      '  masqueradeBit: 9',
      '  localhostNodePorts: false',
      'clusterCIDR: 198.18.0.0/16,2001:db8::/48',
      'detectLocalMode: ClusterCIDR',
      'nodePortAddresses: ["198.18.0.0/15", "2001:db8::/32"]',
      'featureGates:',
      '  PreferSameTrafficDistribution: false',
      'metricsBindAddress: 0.0.0.0:10249',
      'conntrack:',
      '  maxPerCore: 0',
      '  udpTimeout: 30s',
      'logging:',
      '  format: json',
      '  verbosity: 3',
      '  vmodule:',
      '  - filePattern: proxier',
      '    verbosity: 6',
      'configSyncPeriod: 1h',
      'oomScoreAdj: -500',
      'clientConnection:',
      '  kubeconfig: /var/lib/kube-proxy/kubeconfig.conf',
      '  qps: 7.5',
      '',
    ].join('\n');
    roundTrip(['--config', path], { [path]: body });
  });

  test('an ipvs file round-trips, its periods from its own section (seed 003’s settings)', () => {
    const path = '/etc/kube-proxy/config.conf';
    const body = [
      'apiVersion: kubeproxy.config.k8s.io/v1alpha1',
      'kind: KubeProxyConfiguration',
      'mode: ipvs',
      'ipvs:',
      '  syncPeriod: 45s',
      '  minSyncPeriod: 1s',
      '  scheduler: rr',
      '  strictARP: true',
      'iptables:',
      '  minSyncPeriod: 10s',
      '',
    ].join('\n');
    roundTrip(['--config', path], { [path]: body });
    const { config } = expectOk(loadFile(body));
    assert.deepEqual([config.minSyncPeriodMs, config.syncPeriodMs], [1000, 45_000]);
  });

  test('a flags-only configuration round-trips', () => {
    roundTrip([
      '--proxy-mode=nftables',
      '--iptables-sync-period=45s',
      '--iptables-min-sync-period=500ms',
      '--masquerade-all',
      '--hostname-override=Node-9',
      '--feature-gates=SomeGate=true',
      '--ipvs-scheduler=lc',
      '-v=2',
    ]);
  });

  test('the document is v1alpha1 with Go durations, mode section holding the periods', () => {
    const { config } = expectOk(
      loadFile('mode: nftables\nnftables:\n  minSyncPeriod: 15s\n  syncPeriod: 1h\n'),
    );
    const doc: unknown = parse(serializeProxyConfig(config));
    assert.ok(typeof doc === 'object' && doc !== null);
    assert.deepEqual(
      {
        apiVersion: Reflect.get(doc, 'apiVersion'),
        kind: Reflect.get(doc, 'kind'),
        mode: Reflect.get(doc, 'mode'),
        nftables: Reflect.get(doc, 'nftables'),
        nodePortAddresses: Reflect.get(doc, 'nodePortAddresses'),
        configSyncPeriod: Reflect.get(doc, 'configSyncPeriod'),
      },
      {
        apiVersion: 'kubeproxy.config.k8s.io/v1alpha1',
        kind: 'KubeProxyConfiguration',
        mode: 'nftables',
        nftables: { masqueradeAll: false, masqueradeBit: 14, minSyncPeriod: '15s', syncPeriod: '1h0m0s' },
        nodePortAddresses: ['primary'],
        configSyncPeriod: '15m0s',
      },
    );
  });

  test('strings YAML 1.1 would read as booleans are quoted', () => {
    const { config } = expectOk(load(['--hostname-override=yes', '--pod-bridge-interface=on']));
    const text = serializeProxyConfig(config);
    assert.match(text, /hostnameOverride: "yes"/);
    roundTrip(['--hostname-override=yes', '--pod-bridge-interface=on']);
  });
});
