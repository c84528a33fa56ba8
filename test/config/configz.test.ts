// /configz's object has upstream's internal KubeProxyConfiguration shape: Go field names, in Go's order, durations
// as Go duration strings (field names from pkg/proxy/apis/config/types.go, which has no json tags).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { configzDocument } from '../../packages/agent/src/config/configz.js';
import { expectOk, loadFile } from './helpers.js';

describe('configz document', () => {
  const { config } = expectOk(
    loadFile('mode: nftables\nclusterCIDR: 198.18.8.0/21\nnftables:\n  minSyncPeriod: 15s\n', ['--v=2']),
  );
  const doc = configzDocument(config);

  test('top-level fields are the internal type’s, in its order', () => {
    assert.deepEqual(Object.keys(doc), [
      'FeatureGates',
      'ClientConnection',
      'Logging',
      'HostnameOverride',
      'BindAddress',
      'HealthzBindAddress',
      'MetricsBindAddress',
      'BindAddressHardFail',
      'EnableProfiling',
      'ShowHiddenMetricsForVersion',
      'Mode',
      'IPTables',
      'IPVS',
      'Winkernel',
      'NFTables',
      'DetectLocalMode',
      'DetectLocal',
      'ClusterCIDR',
      'NodePortAddresses',
      'OOMScoreAdj',
      'Conntrack',
      'ConfigSyncPeriod',
      'PortRange',
      'WindowsRunAsService',
    ]);
  });

  test('values as upstream prints them: Go durations, defaults applied, flags included', () => {
    assert.equal(doc.Mode, 'nftables');
    assert.equal(doc.ClusterCIDR, '198.18.8.0/21');
    assert.equal(doc.MetricsBindAddress, '127.0.0.1:10249');
    assert.equal(doc.HealthzBindAddress, '0.0.0.0:10256');
    assert.deepEqual(doc.NFTables, {
      MasqueradeBit: 14,
      MasqueradeAll: false,
      SyncPeriod: '30s',
      MinSyncPeriod: '15s',
    });
    assert.deepEqual(doc.ClientConnection, {
      Kubeconfig: '',
      AcceptContentTypes: '',
      ContentType: 'application/vnd.kubernetes.protobuf',
      QPS: 5,
      Burst: 10,
    });
    assert.deepEqual(Object.keys(doc.Conntrack as object), [
      'MaxPerCore',
      'Min',
      'TCPEstablishedTimeout',
      'TCPCloseWaitTimeout',
      'TCPBeLiberal',
      'UDPTimeout',
      'UDPStreamTimeout',
    ]);
    assert.equal((doc.Conntrack as Record<string, unknown>).TCPEstablishedTimeout, '24h0m0s');
    assert.equal((doc.Logging as Record<string, unknown>).verbosity, 2);
    assert.equal(doc.ConfigSyncPeriod, '15m0s');
  });

  test('no field of our own internal config leaks into it', () => {
    const text = JSON.stringify(doc);
    for (const ours of ['syncPeriodMs', 'minSyncPeriodMs', 'gates', 'nodeName', 'kubeProxyTs'])
      assert.equal(text.includes(ours), false, ours);
  });
});
