// Defaults and the mode-dependent conversion, expected values from upstream-model.md §7 (the v1alpha1 table and
// the conversion rules) and §8 step 1 (platform defaults).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { expectOk, load, loadFile } from './helpers.js';

describe('defaults for a file with only apiVersion and kind', () => {
  const { config } = expectOk(loadFile(''));
  const expected: ReadonlyArray<readonly [string, unknown, unknown]> = [
    ['mode ("" → iptables at runtime)', config.mode, 'iptables'],
    ['syncPeriod 30s', config.syncPeriodMs, 30_000],
    ['minSyncPeriod 1s', config.minSyncPeriodMs, 1_000],
    ['masqueradeBit 14', config.masqueradeBit, 14],
    ['iptables.masqueradeBit 14', config.iptables.masqueradeBit, 14],
    ['nftables.masqueradeBit 14', config.nftables.masqueradeBit, 14],
    ['masqueradeAll false', config.masqueradeAll, false],
    ['localhostNodePorts true', config.iptables.localhostNodePorts, true],
    ['bindAddress', config.bindAddress, '0.0.0.0'],
    ['healthzBindAddress', config.healthzBindAddress, '0.0.0.0:10256'],
    ['metricsBindAddress', config.metricsBindAddress, '127.0.0.1:10249'],
    ['bindAddressHardFail', config.bindAddressHardFail, false],
    ['enableProfiling', config.enableProfiling, false],
    ['detectLocalMode ("" → ClusterCIDR)', config.detectLocalMode, 'ClusterCIDR'],
    ['clusterCIDRs', config.detectLocal.clusterCIDRs, []],
    ['nodePortAddresses (null: all IPs in iptables mode)', config.nodePortAddresses, []],
    ['oomScoreAdj', config.oomScoreAdj, -999],
    ['conntrack.maxPerCore', config.conntrack.maxPerCore, 32_768],
    ['conntrack.min', config.conntrack.min, 131_072],
    ['conntrack.tcpEstablishedTimeout 24h', config.conntrack.tcpEstablishedTimeoutMs, 86_400_000],
    ['conntrack.tcpCloseWaitTimeout 1h', config.conntrack.tcpCloseWaitTimeoutMs, 3_600_000],
    ['conntrack.tcpBeLiberal', config.conntrack.tcpBeLiberal, false],
    ['conntrack.udpTimeout 0', config.conntrack.udpTimeoutMs, 0],
    ['conntrack.udpStreamTimeout 0', config.conntrack.udpStreamTimeoutMs, 0],
    ['configSyncPeriod 15m', config.configSyncPeriodMs, 900_000],
    [
      'clientConnection.contentType',
      config.clientConnection.contentType,
      'application/vnd.kubernetes.protobuf',
    ],
    ['clientConnection.qps', config.clientConnection.qps, 5],
    ['clientConnection.burst', config.clientConnection.burst, 10],
    ['clientConnection.kubeconfig', config.clientConnection.kubeconfig, ''],
    ['logging.format', config.logging.format, 'text'],
    ['logging.flushFrequency 5s', config.logging.flushFrequencyMs, 5_000],
    ['logging.verbosity', config.logging.verbosity, 0],
    ['featureGates', config.featureGates, {}],
    ['PreferSameTrafficDistribution (beta, on)', config.gates.preferSameTrafficDistribution, true],
    ['hostnameOverride', config.hostnameOverride, ''],
    ['nodeName: the OS hostname, lower-cased', config.nodeName, 'test-node'],
  ];
  for (const [name, actual, want] of expected) {
    test(name, () => assert.deepEqual(actual, want));
  }

  test('no flags and no file give the same configuration as an empty file', () => {
    assert.deepEqual(expectOk(load([])).config, config);
  });
});

describe('mode-dependent values', () => {
  interface Expected {
    readonly mode: string;
    readonly syncPeriodMs: number;
    readonly minSyncPeriodMs: number;
    readonly nodePortAddresses: readonly string[];
  }
  const byMode: Record<'' | 'iptables' | 'nftables', Expected> = {
    '': { mode: 'iptables', syncPeriodMs: 30_000, minSyncPeriodMs: 1_000, nodePortAddresses: [] },
    iptables: { mode: 'iptables', syncPeriodMs: 30_000, minSyncPeriodMs: 1_000, nodePortAddresses: [] },
    nftables: {
      mode: 'nftables',
      syncPeriodMs: 30_000,
      minSyncPeriodMs: 1_000,
      nodePortAddresses: ['primary'],
    },
  };
  for (const [mode, want] of Object.entries(byMode)) {
    test(`mode ${JSON.stringify(mode)}: defaults`, () => {
      const { config } = expectOk(loadFile(`mode: "${mode}"\n`));
      assert.deepEqual(
        {
          mode: config.mode,
          syncPeriodMs: config.syncPeriodMs,
          minSyncPeriodMs: config.minSyncPeriodMs,
          nodePortAddresses: config.nodePortAddresses,
        },
        want,
      );
    });
  }

  const periods =
    'iptables:\n  syncPeriod: 1m\n  minSyncPeriod: 5s\nnftables:\n  syncPeriod: 45s\n  minSyncPeriod: 15s\n';
  const chosen: Record<'' | 'iptables' | 'nftables', readonly [number, number]> = {
    '': [60_000, 5_000],
    iptables: [60_000, 5_000],
    nftables: [45_000, 15_000],
  };
  for (const [mode, [sync, min]] of Object.entries(chosen)) {
    test(`mode ${JSON.stringify(mode)} reads its own section's sync periods`, () => {
      const { config } = expectOk(loadFile(`mode: "${mode}"\n${periods}`));
      assert.equal(config.syncPeriodMs, sync);
      assert.equal(config.minSyncPeriodMs, min);
    });
  }

  test('nftables mode with nftables.minSyncPeriod: 15s runs with a 15 s minSyncPeriod', () => {
    const { config } = expectOk(loadFile('mode: nftables\nnftables:\n  minSyncPeriod: 15s\n'));
    assert.equal(config.minSyncPeriodMs, 15_000);
    assert.equal(config.syncPeriodMs, 30_000);
  });

  test('the same value under iptables.* is ignored in nftables mode', () => {
    const { config } = expectOk(loadFile('mode: nftables\niptables:\n  minSyncPeriod: 15s\n'));
    assert.equal(config.minSyncPeriodMs, 1_000);
  });

  test('masqueradeAll and masqueradeBit come from the mode section', () => {
    const body =
      'iptables:\n  masqueradeAll: false\n  masqueradeBit: 10\nnftables:\n  masqueradeAll: true\n  masqueradeBit: 20\n';
    const ipt = expectOk(loadFile(`mode: iptables\n${body}`)).config;
    const nft = expectOk(loadFile(`mode: nftables\n${body}`)).config;
    assert.deepEqual([ipt.masqueradeAll, ipt.masqueradeBit], [false, 10]);
    assert.deepEqual([nft.masqueradeAll, nft.masqueradeBit], [true, 20]);
  });

  test('explicit nodePortAddresses are kept in nftables mode', () => {
    const { config } = expectOk(loadFile('mode: nftables\nnodePortAddresses: ["198.18.0.0/15"]\n'));
    assert.deepEqual(config.nodePortAddresses, ['198.18.0.0/15']);
  });

  test('clusterCIDR is split on ","', () => {
    const { config } = expectOk(loadFile('clusterCIDR: "198.18.0.0/16,2001:db8::/64"\n'));
    assert.deepEqual(config.detectLocal.clusterCIDRs, ['198.18.0.0/16', '2001:db8::/64']);
  });

  test('an IPv6 bindAddress moves the default listeners to IPv6', () => {
    const { config } = expectOk(loadFile('bindAddress: "2001:db8::1"\n'));
    assert.equal(config.healthzBindAddress, '[::]:10256');
    assert.equal(config.metricsBindAddress, '[::1]:10249');
  });

  test('bind addresses without a port get the default port appended', () => {
    const { config } = expectOk(
      loadFile('healthzBindAddress: 198.18.0.1\nmetricsBindAddress: "2001:db8::2"\n'),
    );
    assert.equal(config.healthzBindAddress, '198.18.0.1:10256');
    assert.equal(config.metricsBindAddress, '[2001:db8::2]:10249');
  });

  test('zero periods take the default, as Go zero values do upstream; pointer fields keep 0', () => {
    const { config } = expectOk(
      loadFile('iptables:\n  syncPeriod: 0s\n  minSyncPeriod: 0s\n  masqueradeBit: 0\noomScoreAdj: 0\n'),
    );
    assert.equal(config.syncPeriodMs, 30_000);
    assert.equal(config.minSyncPeriodMs, 1_000);
    assert.equal(config.masqueradeBit, 0);
    assert.equal(config.oomScoreAdj, 0);
  });

  test('JSON is read as well as YAML', () => {
    const path = '/etc/kube-proxy/config.json';
    const json = JSON.stringify({
      apiVersion: 'kubeproxy.config.k8s.io/v1alpha1',
      kind: 'KubeProxyConfiguration',
      mode: 'nftables',
      nftables: { minSyncPeriod: '2s' },
    });
    const { config } = expectOk(load(['--config', path], { [path]: json }));
    assert.equal(config.mode, 'nftables');
    assert.equal(config.minSyncPeriodMs, 2_000);
  });

  test('feature gates from the file reach the model', () => {
    const { config } = expectOk(loadFile('featureGates:\n  PreferSameTrafficDistribution: false\n'));
    assert.equal(config.gates.preferSameTrafficDistribution, false);
    assert.deepEqual(config.featureGates, { PreferSameTrafficDistribution: false });
  });
});
