import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  allKubeIPSetNames,
  entryText,
  ipsetName,
  kubeIPSet,
  kubeIPSets,
  validateEntry,
} from '../../../packages/agent/src/netfilter/ipset/sets.js';
import type {
  IPSetEntry,
  IPSetSpec,
  IPSetType,
  KubeIPSetId,
} from '../../../packages/agent/src/netfilter/ipset/sets.js';

// Upstream's names (pkg/proxy/ipvs/ipset.go), spelled out here rather than derived, so a slip in the derivation
// fails. The two IPv6 names over 31 characters are cut, as upstream's NewIPSet cuts them.
const UPSTREAM: readonly [string, string, IPSetType][] = [
  ['KUBE-LOOP-BACK', 'KUBE-6-LOOP-BACK', 'hash:ip,port,ip'],
  ['KUBE-CLUSTER-IP', 'KUBE-6-CLUSTER-IP', 'hash:ip,port'],
  ['KUBE-EXTERNAL-IP', 'KUBE-6-EXTERNAL-IP', 'hash:ip,port'],
  ['KUBE-EXTERNAL-IP-LOCAL', 'KUBE-6-EXTERNAL-IP-LOCAL', 'hash:ip,port'],
  ['KUBE-LOAD-BALANCER', 'KUBE-6-LOAD-BALANCER', 'hash:ip,port'],
  ['KUBE-LOAD-BALANCER-FW', 'KUBE-6-LOAD-BALANCER-FW', 'hash:ip,port'],
  ['KUBE-LOAD-BALANCER-LOCAL', 'KUBE-6-LOAD-BALANCER-LOCAL', 'hash:ip,port'],
  ['KUBE-LOAD-BALANCER-SOURCE-IP', 'KUBE-6-LOAD-BALANCER-SOURCE-IP', 'hash:ip,port,ip'],
  ['KUBE-LOAD-BALANCER-SOURCE-CIDR', 'KUBE-6-LOAD-BALANCER-SOURCE-CID', 'hash:ip,port,net'],
  ['KUBE-NODE-PORT-TCP', 'KUBE-6-NODE-PORT-TCP', 'bitmap:port'],
  ['KUBE-NODE-PORT-LOCAL-TCP', 'KUBE-6-NODE-PORT-LOCAL-TCP', 'bitmap:port'],
  ['KUBE-NODE-PORT-UDP', 'KUBE-6-NODE-PORT-UDP', 'bitmap:port'],
  ['KUBE-NODE-PORT-LOCAL-UDP', 'KUBE-6-NODE-PORT-LOCAL-UDP', 'bitmap:port'],
  ['KUBE-NODE-PORT-SCTP-HASH', 'KUBE-6-NODE-PORT-SCTP-HASH', 'hash:ip,port'],
  ['KUBE-NODE-PORT-LOCAL-SCTP-HASH', 'KUBE-6-NODE-PORT-LOCAL-SCTP-HAS', 'hash:ip,port'],
  ['KUBE-HEALTH-CHECK-NODE-PORT', 'KUBE-6-HEALTH-CHECK-NODE-PORT', 'bitmap:port'],
  ['KUBE-IPVS-IPS', 'KUBE-6-IPVS-IPS', 'hash:ip'],
];

describe('the catalogue', () => {
  test('upstream’s sets, in its order, with their types, for both families', () => {
    assert.deepEqual(
      kubeIPSets('IPv4').map((s) => [s.name, s.type]),
      UPSTREAM.map(([v4, , type]) => [v4, type]),
    );
    assert.deepEqual(
      kubeIPSets('IPv6').map((s) => [s.name, s.type]),
      UPSTREAM.map(([, v6, type]) => [v6, type]),
    );
    for (const s of kubeIPSets('IPv6')) assert.ok(s.name.length <= 31, s.name);
    assert.equal(new Set(allKubeIPSetNames()).size, 2 * UPSTREAM.length);
  });

  test('options: family and upstream’s hash size and maxelem for hash sets; the full range for bitmap:port', () => {
    assert.deepEqual(kubeIPSet('clusterIP', 'IPv6'), {
      name: 'KUBE-6-CLUSTER-IP',
      type: 'hash:ip,port',
      family: 'IPv6',
      comment: 'Kubernetes service cluster ip + port for masquerade purpose',
      hashSize: 1024,
      maxElem: 65536,
    });
    assert.deepEqual(kubeIPSet('nodePortTCP', 'IPv4'), {
      name: 'KUBE-NODE-PORT-TCP',
      type: 'bitmap:port',
      family: 'IPv4',
      comment: 'Kubernetes nodeport TCP port for masquerade purpose',
      portRange: { first: 0, last: 65535 },
    });
  });

  test('upstream’s comments, word for word (a few spot checks)', () => {
    const comment = (id: KubeIPSetId) => kubeIPSet(id, 'IPv4').comment;
    assert.equal(
      comment('loopBack'),
      'Kubernetes endpoints dst ip:port, source ip for solving hairpin purpose',
    );
    assert.equal(comment('loadBalancer'), 'Kubernetes service lb portal');
    assert.equal(
      comment('nodePortLocalSCTP'),
      "Kubernetes nodeport SCTP port with externalTrafficPolicy=local with type 'hash ip:port'",
    );
    assert.equal(comment('ipvsIPs'), 'Addresses on the ipvs interface');
  });

  test('ipsetName: only a KUBE- prefix changes, and only for IPv6', () => {
    assert.equal(ipsetName('KUBE-CLUSTER-IP', 'IPv4'), 'KUBE-CLUSTER-IP');
    assert.equal(ipsetName('OTHER-SET', 'IPv6'), 'OTHER-SET');
    assert.equal(ipsetName('KUBE-LOAD-BALANCER-SOURCE-CIDR', 'IPv6'), 'KUBE-6-LOAD-BALANCER-SOURCE-CID');
  });
});

describe('entryText: what `ipset save` prints back', () => {
  const cases: [string, IPSetType, IPSetEntry, string][] = [
    ['hash:ip', 'hash:ip', { ip: '10.0.0.1' }, '10.0.0.1'],
    ['hash:ip IPv6, upper case and zeros', 'hash:ip', { ip: '2001:DB8:0:0:0:0:0:1' }, '2001:db8::1'],
    ['hash:ip,port', 'hash:ip,port', { ip: '10.0.0.1', protocol: 'tcp', port: 80 }, '10.0.0.1,tcp:80'],
    [
      'hash:ip,port IPv6, one zero group stays',
      'hash:ip,port',
      { ip: '2001:db8:0:1:0:0:0:1', protocol: 'sctp', port: 9 },
      '2001:db8:0:1::1,sctp:9',
    ],
    [
      'hash:ip,port,ip',
      'hash:ip,port,ip',
      { ip: '10.0.0.1', protocol: 'udp', port: 53, ip2: '10.0.0.1' },
      '10.0.0.1,udp:53,10.0.0.1',
    ],
    [
      'hash:ip,port,ip IPv6',
      'hash:ip,port,ip',
      { ip: '2001:db8::1', protocol: 'tcp', port: 80, ip2: '2001:0db8:0000:0000:1:0:0:1' },
      '2001:db8::1,tcp:80,2001:db8::1:0:0:1',
    ],
    [
      'hash:ip,port,net',
      'hash:ip,port,net',
      { ip: '1.2.3.4', protocol: 'tcp', port: 80, net: '10.0.0.0/24' },
      '1.2.3.4,tcp:80,10.0.0.0/24',
    ],
    [
      'hash:ip,port,net: host bits cleared',
      'hash:ip,port,net',
      { ip: '1.2.3.4', protocol: 'tcp', port: 80, net: '10.0.0.5/24' },
      '1.2.3.4,tcp:80,10.0.0.0/24',
    ],
    [
      'hash:ip,port,net: a /32 is the bare address',
      'hash:ip,port,net',
      { ip: '1.2.3.4', protocol: 'tcp', port: 80, net: '10.0.0.5/32' },
      '1.2.3.4,tcp:80,10.0.0.5',
    ],
    [
      'hash:ip,port,net IPv6: /128 bare, /64 cleared',
      'hash:ip,port,net',
      { ip: '2001:db8::1', protocol: 'udp', port: 1, net: '2001:db8:1::5/64' },
      '2001:db8::1,udp:1,2001:db8:1::/64',
    ],
    [
      'hash:ip,port,net IPv6 /128',
      'hash:ip,port,net',
      { ip: '2001:db8::1', protocol: 'udp', port: 1, net: '2001:db8:1::5/128' },
      '2001:db8::1,udp:1,2001:db8:1::5',
    ],
    ['bitmap:port', 'bitmap:port', { port: 30001 }, '30001'],
  ];
  for (const [name, type, entry, want] of cases) {
    test(name, () => assert.equal(entryText(type, entry), want));
  }
});

describe('validateEntry', () => {
  const v4 = (type: IPSetType): IPSetSpec => ({ name: 'S4', type, family: 'IPv4', comment: '' });
  const v6 = (type: IPSetType): IPSetSpec => ({ name: 'S6', type, family: 'IPv6', comment: '' });
  const ok: [IPSetSpec, IPSetEntry][] = [
    [v4('hash:ip'), { ip: '10.0.0.1' }],
    [v6('hash:ip'), { ip: '2001:db8::1' }],
    [v4('hash:ip,port'), { ip: '10.0.0.1', protocol: 'sctp', port: 0 }],
    [v6('hash:ip,port'), { ip: '2001:db8::1', protocol: 'udp', port: 65535 }],
    [v4('hash:ip,port,ip'), { ip: '10.0.0.1', protocol: 'tcp', port: 80, ip2: '10.0.0.2' }],
    [v6('hash:ip,port,ip'), { ip: '2001:db8::1', protocol: 'tcp', port: 80, ip2: '2001:db8::2' }],
    [v4('hash:ip,port,net'), { ip: '10.0.0.1', protocol: 'tcp', port: 80, net: '10.0.0.0/8' }],
    [v6('hash:ip,port,net'), { ip: '2001:db8::1', protocol: 'tcp', port: 80, net: '2001:db8::/32' }],
    [v4('bitmap:port'), { port: 30001 }],
    [v6('bitmap:port'), { port: 0 }],
  ];
  for (const [set, entry] of ok) {
    test(`accepts ${set.type} ${set.family} ${entryText(set.type, entry)}`, () => {
      assert.equal(validateEntry(set, entry), undefined);
    });
  }

  const bad: [string, IPSetSpec, IPSetEntry, RegExp][] = [
    [
      'negative port',
      v4('hash:ip,port'),
      { ip: '10.0.0.1', protocol: 'tcp', port: -1 },
      /^S4: port -1 is not/,
    ],
    ['port above 65535', v4('hash:ip,port'), { ip: '10.0.0.1', protocol: 'tcp', port: 65536 }, /port 65536/],
    ['fractional port', v4('hash:ip,port'), { ip: '10.0.0.1', protocol: 'tcp', port: 1.5 }, /port 1\.5/],
    [
      'unknown protocol',
      v4('hash:ip,port'),
      { ip: '10.0.0.1', protocol: 'icmp' as 'tcp', port: 1 },
      /protocol "icmp" is not one of tcp, udp, sctp/,
    ],
    ['not an IP', v4('hash:ip'), { ip: 'foo' }, /^S4: IP "foo" is not an IP address$/],
    [
      'IPv6 in an IPv4 set',
      v4('hash:ip'),
      { ip: '2001:db8::1' },
      /IP 2001:db8::1 is IPv6, the set holds IPv4/,
    ],
    [
      'IPv4 in an IPv6 set',
      v6('hash:ip,port'),
      { ip: '10.0.0.1', protocol: 'tcp', port: 80 },
      /^S6: IP 10.0.0.1 is IPv4, the set holds IPv6$/,
    ],
    [
      'second IP of the other family',
      v6('hash:ip,port,ip'),
      { ip: '2001:db8::1', protocol: 'tcp', port: 80, ip2: '10.0.0.1' },
      /second IP 10.0.0.1 is IPv4/,
    ],
    [
      'net that is not a CIDR',
      v4('hash:ip,port,net'),
      { ip: '10.0.0.1', protocol: 'tcp', port: 80, net: '10.0.0.0' },
      /net "10.0.0.0" is not a CIDR/,
    ],
    [
      'net of the other family',
      v4('hash:ip,port,net'),
      { ip: '10.0.0.1', protocol: 'tcp', port: 80, net: '2001:db8::/64' },
      /net 2001:db8::\/64 is IPv6/,
    ],
    [
      'a /0 net',
      v4('hash:ip,port,net'),
      { ip: '10.0.0.1', protocol: 'tcp', port: 80, net: '0.0.0.0/0' },
      /prefix length 0/,
    ],
    ['bitmap port above 65535', v4('bitmap:port'), { port: 70000 }, /port 70000 is not a port number/],
    [
      'bitmap port outside the set’s range',
      { ...v4('bitmap:port'), portRange: { first: 30000, last: 32767 } },
      { port: 80 },
      /^S4: port 80 is outside the set's range 30000-32767$/,
    ],
  ];
  for (const [name, set, entry, want] of bad) {
    test(`refuses: ${name}`, () => assert.match(validateEntry(set, entry) ?? 'accepted', want));
  }

  test('every catalogue set accepts an entry of its type in its family', () => {
    const sample = (type: IPSetType, six: boolean): IPSetEntry => {
      const ip = six ? '2001:db8::1' : '198.18.0.1';
      const ipPort = { ip, protocol: 'tcp' as const, port: 80 };
      return {
        'hash:ip': { ip },
        'hash:ip,port': ipPort,
        'hash:ip,port,ip': { ...ipPort, ip2: ip },
        'hash:ip,port,net': { ...ipPort, net: six ? '2001:db8::/64' : '198.18.0.0/24' },
        'bitmap:port': { port: 30001 },
      }[type];
    };
    for (const family of ['IPv4', 'IPv6'] as const) {
      for (const set of kubeIPSets(family)) {
        assert.equal(validateEntry(set, sample(set.type, family === 'IPv6')), undefined, set.name);
      }
    }
  });
});
