// Refusals: decoding (malformed YAML, wrong kind/apiVersion, wrong types), validation (each message names its
// field; all problems reported together) and the strict → lenient fallback for unknown fields.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { expectErrors, expectOk, load, loadFile } from './helpers.js';

describe('decoding', () => {
  test('malformed YAML is refused, naming the file', () => {
    const errors = expectErrors(loadFile('mode: [nftables\n'));
    // A file that does not parse is one error: there is nothing to decode or validate.
    assert.equal(errors.length, 1);
    assert.match(errors[0] ?? '', /^--config: \/etc\/kube-proxy\/config.conf: malformed YAML: /);
  });

  test('a wrong kind is refused', () => {
    const path = '/c.yaml';
    const text = 'apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeletConfiguration\n';
    assert.deepEqual(expectErrors(load(['--config', path], { [path]: text })), [
      'kind: must be "KubeProxyConfiguration", got "KubeletConfiguration"',
    ]);
  });

  test('a wrong or missing apiVersion is refused', () => {
    const path = '/c.yaml';
    const v2 = 'apiVersion: kubeproxy.config.k8s.io/v1alpha2\nkind: KubeProxyConfiguration\n';
    const [first] = expectErrors(load(['--config', path], { [path]: v2 }));
    assert.match(
      first ?? '',
      /^apiVersion: must be "kubeproxy.config.k8s.io\/v1alpha1".*got "kubeproxy.config.k8s.io\/v1alpha2"/,
    );
    const none = 'kind: KubeProxyConfiguration\nmode: nftables\n';
    assert.deepEqual(expectErrors(load(['--config', path], { [path]: none })), [
      'apiVersion: missing; expected "kubeproxy.config.k8s.io/v1alpha1"',
    ]);
  });

  test('an empty file is refused (upstream: kind is missing)', () => {
    const errors = expectErrors(load(['--config=/c'], { '/c': '' }));
    assert.match(errors[0] ?? '', /^--config: \/c: the configuration is empty/);
  });

  test('a document that is not a mapping is refused', () => {
    const errors = expectErrors(load(['--config=/c'], { '/c': '- mode: nftables\n' }));
    assert.match(errors[0] ?? '', /must be a mapping, got a list/);
  });

  test('several YAML documents are refused', () => {
    const errors = expectErrors(load(['--config=/c'], { '/c': 'a: 1\n---\nb: 2\n' }));
    assert.match(errors[0] ?? '', /expected one YAML document, found 2/);
  });

  test('unknown fields: strict decoding fails, lenient decoding succeeds with a warning naming them', () => {
    const r = expectOk(
      loadFile('mode: nftables\nudpIdleTimeout: 250ms\nnftables:\n  minSyncPeriod: 3s\n  syncperiod: 1m\n'),
    );
    assert.equal(r.config.mode, 'nftables');
    assert.equal(r.config.minSyncPeriodMs, 3_000);
    assert.equal(r.config.syncPeriodMs, 30_000, 'keys match case-sensitively: "syncperiod" is unknown');
    const warning = r.warnings.find((w) => w.includes('strict decoding'));
    assert.ok(warning, 'a warning about strict decoding');
    assert.match(warning, /"udpIdleTimeout"/);
    assert.match(warning, /"nftables.syncperiod"/);
  });

  const wrongTypes: ReadonlyArray<readonly [string, string]> = [
    ['mode: 1\n', 'mode: must be a string, got number 1'],
    [
      'iptables:\n  syncPeriod: 30\n',
      'iptables.syncPeriod: must be a duration string such as "30s", got number 30',
    ],
    ['iptables:\n  masqueradeBit: "14"\n', 'iptables.masqueradeBit: must be a 32-bit integer, got "14"'],
    ['iptables:\n  masqueradeAll: "true"\n', 'iptables.masqueradeAll: must be true or false, got "true"'],
    [
      'nodePortAddresses: 198.18.0.0/15\n',
      'nodePortAddresses: must be a list of strings, got "198.18.0.0/15"',
    ],
    ['nodePortAddresses: [1, "198.18.0.0/15"]\n', 'nodePortAddresses[0]: must be a string, got number 1'],
    ['conntrack: 5\n', 'conntrack: must be a mapping, got number 5'],
    [
      'featureGates:\n  PreferSameTrafficDistribution: "false"\n',
      'featureGates.PreferSameTrafficDistribution: must be true or false, got "false"',
    ],
    ['clientConnection:\n  burst: 1.5\n', 'clientConnection.burst: must be a 32-bit integer, got number 1.5'],
    [
      'logging:\n  verbosity: -1\n',
      'logging.verbosity: must be a non-negative 32-bit integer, got number -1',
    ],
  ];
  for (const [body, message] of wrongTypes) {
    test(`wrong type: ${message.split(':')[0]}`, () => {
      assert.deepEqual(expectErrors(loadFile(body)), [message]);
    });
  }

  test('a malformed duration names the field', () => {
    const [first] = expectErrors(loadFile('nftables:\n  minSyncPeriod: 15 seconds\n'));
    assert.match(first ?? '', /^nftables.minSyncPeriod: .*"15 seconds"/);
  });

  test('YAML 1.1 booleans (as Go reads them): yes/no/on/off', () => {
    const { config } = expectOk(loadFile('iptables:\n  masqueradeAll: yes\n  localhostNodePorts: off\n'));
    assert.equal(config.masqueradeAll, true);
    assert.equal(config.iptables.localhostNodePorts, false);
  });
});

describe('validation', () => {
  const single: ReadonlyArray<readonly [string, string]> = [
    [
      'mode: userspace\n',
      'mode: must be "iptables", "ipvs" or "nftables" (or "" for iptables), got "userspace"',
    ],
    [
      'mode: nftables\nnftables:\n  syncPeriod: -1s\n',
      'nftables.syncPeriod: must be greater than 0, got -1s',
    ],
    [
      'iptables:\n  minSyncPeriod: -5s\n',
      'iptables.minSyncPeriod: must be greater than or equal to 0, got -5s',
    ],
    [
      'mode: nftables\nnftables:\n  minSyncPeriod: 45s\n',
      'nftables.minSyncPeriod: must be less than or equal to nftables.syncPeriod (30s), got 45s',
    ],
    ['iptables:\n  masqueradeBit: 32\n', 'iptables.masqueradeBit: must be in the range [0, 31], got 32'],
    ['nftables:\n  masqueradeBit: -1\n', 'nftables.masqueradeBit: must be in the range [0, 31], got -1'],
    ['oomScoreAdj: -1001\n', 'oomScoreAdj: must be in the range [-1000, 1000], got -1001'],
    ['configSyncPeriod: -1m\n', 'configSyncPeriod: must be greater than 0, got -1m0s'],
    ['bindAddress: 198.18.0.300\n', 'bindAddress: must be an IP address, got "198.18.0.300"'],
    [
      'healthzBindAddress: "198.18.0.1:70000"\n',
      'healthzBindAddress: must be IP:port with a port in 1-65535, got "70000"',
    ],
    [
      'metricsBindAddress: "localhost:10249"\n',
      'metricsBindAddress: must be IP:port with a valid IP, got "localhost"',
    ],
    [
      'metricsBindAddress: "2001:db8::1:10249:1"\n',
      'metricsBindAddress: must be IP:port, got "2001:db8::1:10249:1" (too many colons in address)',
    ],
    [
      'nodePortAddresses: ["198.18.0.0/15", "nope"]\n',
      'nodePortAddresses[1]: must be a CIDR (or the single entry "primary"), got "nope"',
    ],
    [
      'nodePortAddresses: ["primary", "198.18.0.0/15"]\n',
      'nodePortAddresses[0]: "primary" must be the only entry',
    ],
    [
      'detectLocalMode: PodCIDR\n',
      'detectLocalMode: must be one of ClusterCIDR, NodeCIDR, BridgeInterface, InterfaceNamePrefix, got "PodCIDR"',
    ],
    [
      'detectLocalMode: BridgeInterface\n',
      'detectLocal.bridgeInterface: must be set when detectLocalMode is BridgeInterface',
    ],
    [
      'detectLocalMode: InterfaceNamePrefix\n',
      'detectLocal.interfaceNamePrefix: must be set when detectLocalMode is InterfaceNamePrefix',
    ],
    ['clusterCIDR: "198.18.0.0/16,nope"\n', 'clusterCIDR: "nope" is not a valid CIDR'],
    [
      'clusterCIDR: "198.18.0.0/16,198.19.0.0/16"\n',
      'clusterCIDR: must hold at most one CIDR per IP family, got two IPv4 CIDRs',
    ],
    ['featureGates:\n  "not a gate": true\n', 'featureGates: "not a gate" is not a feature gate name'],
    ['logging:\n  format: xml\n', 'logging.format: must be "text" or "json", got "xml"'],
    ['conntrack:\n  min: -1\n', 'conntrack.min: must be greater than or equal to 0, got -1'],
    [
      'clientConnection:\n  burst: -1\n',
      'clientConnection.burst: must be greater than or equal to 0, got -1',
    ],
  ];
  for (const [body, message] of single) {
    test(message.split(':')[0] ?? message, () => {
      assert.deepEqual(expectErrors(loadFile(body)), [message]);
    });
  }

  test('ipvs mode is accepted with its gate on (the default), refused with it off', () => {
    const { config } = expectOk(loadFile('mode: ipvs\nipvs:\n  scheduler: wrr\n  syncPeriod: 20s\n'));
    assert.equal(config.mode, 'ipvs');
    assert.equal(config.ipvs.scheduler, 'wrr');
    assert.equal(config.syncPeriodMs, 20_000, 'ipvs mode reads its periods from the ipvs section');
    const errors = expectErrors(loadFile('mode: ipvs\nfeatureGates:\n  KubeProxyIPVS: false\n'));
    assert.deepEqual(errors, [
      'mode: ipvs mode needs the KubeProxyIPVS feature gate, which featureGates turns off',
    ]);
  });

  test('the ipvs section is checked in ipvs mode only, every problem named', () => {
    const body = 'ipvs:\n  tcpTimeout: -1s\n  udpTimeout: -2s\n  excludeCIDRs: ["198.18.0.0/15", "nope"]\n';
    assert.equal(expectOk(loadFile(`mode: nftables\n${body}`)).config.mode, 'nftables');
    assert.deepEqual(expectErrors(loadFile(`mode: ipvs\n${body}`)), [
      'ipvs.tcpTimeout: must be greater than or equal to 0, got -1s',
      'ipvs.udpTimeout: must be greater than or equal to 0, got -2s',
      'ipvs.excludeCIDRs[1]: must be a CIDR, got "nope"',
    ]);
  });

  test('several problems are all reported, each naming its field', () => {
    const errors = expectErrors(
      loadFile(
        'mode: nftables\nnftables:\n  syncPeriod: 10s\n  minSyncPeriod: 20s\nbindAddress: nope\n' +
          'healthzBindAddress: "198.18.0.1:0"\noomScoreAdj: 2000\nnodePortAddresses: ["bad"]\n',
      ),
    );
    const fields = errors.map((e) => e.split(':')[0]).sort();
    assert.deepEqual(fields, [
      'bindAddress',
      'healthzBindAddress',
      'nftables.minSyncPeriod',
      'nodePortAddresses[0]',
      'oomScoreAdj',
    ]);
  });

  test('type errors are all reported together too', () => {
    const errors = expectErrors(loadFile('mode: 3\niptables:\n  syncPeriod: true\noomScoreAdj: low\n'));
    assert.equal(errors.length, 3);
  });

  test('flags-only configurations are validated the same way', () => {
    const errors = expectErrors(
      load(['--proxy-mode=nftables', '--iptables-sync-period=1s', '--iptables-min-sync-period=2s']),
    );
    assert.deepEqual(errors, [
      'nftables.minSyncPeriod (--iptables-min-sync-period): must be less than or equal to nftables.syncPeriod (1s), got 2s',
    ]);
  });

  test('flag-set fields are attributed to their flag; file fields are not', () => {
    assert.deepEqual(expectErrors(load(['--proxy-mode=ipvsx', '--bind-address=nope'])), [
      'mode (--proxy-mode): must be "iptables", "ipvs" or "nftables" (or "" for iptables), got "ipvsx"',
      'bindAddress (--bind-address): must be an IP address, got "nope"',
    ]);
    assert.deepEqual(expectErrors(loadFile('bindAddress: nope\n', ['--bind-address=198.18.0.1'])), [
      'bindAddress: must be an IP address, got "nope"',
    ]);
    assert.deepEqual(expectErrors(loadFile('', ['--logging-format=xml'])), [
      'logging.format (--logging-format): must be "text" or "json", got "xml"',
    ]);
  });

  test('an unknown but well-formed feature gate is a warning, not an error', () => {
    const r = expectOk(loadFile('featureGates:\n  SomeKubeletGate: true\n'));
    assert.ok(r.warnings.some((w) => w.includes('SomeKubeletGate')));
  });
});
