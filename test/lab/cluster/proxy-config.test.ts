// The lab's kube-proxy ConfigMap must be a configuration the agent accepts as is, with nothing host-wide.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { loadProxyConfig } from '../../../packages/agent/src/config/index.js';
import {
  configFromConfigMap,
  kubeProxyConfigMap,
  labProxyConfiguration,
  modeOfConfig,
} from '../../../packages/lab/src/cluster/proxy-config.js';
import { PROXY_MODES } from '../../../packages/agent/src/config/proxy-mode.js';

function load(text: string) {
  return loadProxyConfig(['--config', '/lab/config.conf', '--hostname-override', 'worker'], {
    readFile: (p) => {
      assert.equal(p, '/lab/config.conf');
      return text;
    },
    hostname: () => 'unused',
  });
}

describe('lab kube-proxy configuration', () => {
  for (const mode of PROXY_MODES) {
    test(`${mode}: the agent loads it without warnings, in ${mode} mode, leaving conntrack sysctls alone`, () => {
      const r = load(labProxyConfiguration(mode));
      assert.ok(r.ok, r.ok ? '' : JSON.stringify(r.errors));
      assert.deepEqual(r.warnings, []);
      assert.equal(r.config.mode, mode);
      assert.equal(r.config.nodeName, 'worker');
      assert.deepEqual(r.config.detectLocal.clusterCIDRs, ['198.18.8.0/21']);
      // 0 means "do not touch" for each of these host-wide sysctls (upstream's conntrack setup skips them).
      assert.equal(r.config.conntrack.maxPerCore, 0);
      assert.equal(r.config.conntrack.tcpEstablishedTimeoutMs, 0);
      assert.equal(r.config.conntrack.tcpCloseWaitTimeoutMs, 0);
      assert.equal(r.config.conntrack.udpTimeoutMs, 0);
      assert.equal(r.config.conntrack.udpStreamTimeoutMs, 0);
      assert.equal(r.config.minSyncPeriodMs, 1000);
      assert.equal(r.config.metricsBindAddress, '127.0.0.1:10249');
    });
  }

  test('the walkthrough’s sed edit (minSyncPeriod 1s → 15s) gives a 15 s minSyncPeriod in either mode', () => {
    for (const mode of PROXY_MODES) {
      const edited = labProxyConfiguration(mode).replace(/minSyncPeriod: 1s/g, 'minSyncPeriod: 15s');
      const r = load(edited);
      assert.ok(r.ok);
      assert.equal(r.config.minSyncPeriodMs, 15_000);
    }
  });

  test('the ConfigMap is kubeadm’s shape: kube-system/kube-proxy, key config.conf', () => {
    const cm = kubeProxyConfigMap('nftables') as { metadata: { name: string; namespace: string } };
    assert.equal(cm.metadata.namespace, 'kube-system');
    assert.equal(cm.metadata.name, 'kube-proxy');
    assert.equal(configFromConfigMap(cm), labProxyConfiguration('nftables'));
    assert.equal(configFromConfigMap({ data: {} }), undefined);
    assert.equal(configFromConfigMap({ data: { 'config.conf': '  ' } }), undefined);
    assert.equal(configFromConfigMap('nonsense'), undefined);
  });

  test('modeOfConfig: upstream reads an empty mode as iptables on Linux', () => {
    assert.equal(modeOfConfig('mode: nftables\n'), 'nftables');
    assert.equal(modeOfConfig('mode: ""\n'), 'iptables');
    assert.equal(modeOfConfig('kind: KubeProxyConfiguration\n'), 'iptables');
    assert.equal(modeOfConfig('mode: [1]\n'), undefined);
    assert.equal(modeOfConfig(': : :\n  -'), undefined);
  });
});
