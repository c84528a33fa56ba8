// Upstream's IPVS proxier cases (kubernetes/kubernetes pkg/proxy/ipvs/proxier_test.go @ 531be81208e2, with
// syncProxyRules read in pkg/proxy/ipvs/proxier.go) as table tests of our pure planning layer: the virtual and real
// servers planIpvs asks for, the ipset entries, and the iptables-restore input beside them. Each test is named after
// the upstream function (and case) it comes from, so the two can be read side by side; addresses, names and ports
// follow upstream's. Where upstream's test only loops over what it finds, or checks counts, these assert the whole
// value that upstream's proxier produces for the same input. UPSTREAM-CASES.md lists every upstream function and
// what became of it.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { EndpointSlice, Service } from '../../../packages/agent/src/api/objects.js';
import { FILTER_CHAINS, IPVS_JUMPS, NAT_CHAINS } from '../../../packages/agent/src/backends/ipvs/iptables.js';
import { localNodeAddresses } from '../../../packages/agent/src/backends/ipvs/plan.js';
import { ModelCluster } from '../../helpers/model-cluster.js';
import {
  chainRules,
  declaredChains,
  endpointSlice,
  entries,
  nonEmptySets,
  planObjects,
  planSnapshot,
  rr,
  service,
  THIS_NODE,
  upstreamNode,
  virtualServers,
  weights,
} from './upstream-helpers.js';
import type { EndpointSpec, Family, UpstreamNode, VirtualServerView } from './upstream-helpers.js';

// The rule lines upstream's cases name by (jump, match-set), written out whole as iptables-restore reads them. The
// ClusterIP masquerade matches src,dst: upstream's fake proxier has no local-traffic detector (NoOpLocalDetector),
// and neither has upstreamNode().
const NAT = {
  skipLoopback: '-A KUBE-SERVICES -s 127.0.0.0/8 -j RETURN',
  toLoadBalancer:
    '-A KUBE-SERVICES -m comment --comment "Kubernetes service lb portal" -m set --match-set KUBE-LOAD-BALANCER dst,dst -j KUBE-LOAD-BALANCER',
  clusterIPMasq:
    '-A KUBE-SERVICES -m comment --comment "Kubernetes service cluster ip + port for masquerade purpose" -m set --match-set KUBE-CLUSTER-IP src,dst -j KUBE-MARK-MASQ',
  externalIPMasq:
    '-A KUBE-SERVICES -m comment --comment "Kubernetes service external ip + port for masquerade and filter purpose" -m set --match-set KUBE-EXTERNAL-IP dst,dst -j KUBE-MARK-MASQ',
  externalIPFromOutside:
    '-A KUBE-SERVICES -m comment --comment "Kubernetes service external ip + port for masquerade and filter purpose" -m set --match-set KUBE-EXTERNAL-IP dst,dst -m physdev ! --physdev-is-in -m addrtype ! --src-type LOCAL -j ACCEPT',
  externalIPToLocal:
    '-A KUBE-SERVICES -m comment --comment "Kubernetes service external ip + port for masquerade and filter purpose" -m set --match-set KUBE-EXTERNAL-IP dst,dst -m addrtype --dst-type LOCAL -j ACCEPT',
  toNodePort: '-A KUBE-SERVICES -m addrtype --dst-type LOCAL -j KUBE-NODE-PORT',
  acceptClusterIP: '-A KUBE-SERVICES -m set --match-set KUBE-CLUSTER-IP dst,dst -j ACCEPT',
  acceptLoadBalancer: '-A KUBE-SERVICES -m set --match-set KUBE-LOAD-BALANCER dst,dst -j ACCEPT',
  lbLocalReturn:
    '-A KUBE-LOAD-BALANCER -m comment --comment "Kubernetes service load balancer ip + port with externalTrafficPolicy=local" -m set --match-set KUBE-LOAD-BALANCER-LOCAL dst,dst -j RETURN',
  lbMasq: '-A KUBE-LOAD-BALANCER -j KUBE-MARK-MASQ',
  nodePortLocalTCP:
    '-A KUBE-NODE-PORT -p tcp -m comment --comment "Kubernetes nodeport TCP port with externalTrafficPolicy=local" -m set --match-set KUBE-NODE-PORT-LOCAL-TCP dst -j RETURN',
  nodePortTCP:
    '-A KUBE-NODE-PORT -p tcp -m comment --comment "Kubernetes nodeport TCP port for masquerade purpose" -m set --match-set KUBE-NODE-PORT-TCP dst -j KUBE-MARK-MASQ',
  nodePortUDP:
    '-A KUBE-NODE-PORT -p udp -m comment --comment "Kubernetes nodeport UDP port for masquerade purpose" -m set --match-set KUBE-NODE-PORT-UDP dst -j KUBE-MARK-MASQ',
  nodePortLocalSCTP:
    '-A KUBE-NODE-PORT -p sctp -m comment --comment "Kubernetes nodeport SCTP port with externalTrafficPolicy=local with type \'hash ip:port\'" -m set --match-set KUBE-NODE-PORT-LOCAL-SCTP-HASH dst,dst -j RETURN',
  nodePortSCTP:
    '-A KUBE-NODE-PORT -p sctp -m comment --comment "Kubernetes nodeport SCTP port for masquerade purpose with type \'hash ip:port\'" -m set --match-set KUBE-NODE-PORT-SCTP-HASH dst,dst -j KUBE-MARK-MASQ',
  loopBackMasq:
    '-A KUBE-POSTROUTING -m comment --comment "Kubernetes endpoints dst ip:port, source ip for solving hairpin purpose" -m set --match-set KUBE-LOOP-BACK dst,dst,src -j MASQUERADE',
};
const FILTER = {
  healthCheckAccept:
    '-A KUBE-NODE-PORT -m comment --comment "Kubernetes health check node port" -m set --match-set KUBE-HEALTH-CHECK-NODE-PORT dst -j ACCEPT',
  toSourceRanges:
    '-A KUBE-PROXY-FIREWALL -m comment --comment "Kubernetes service load balancer ip + port for load balancer with sourceRange" -m set --match-set KUBE-LOAD-BALANCER-FW dst,dst -j KUBE-SOURCE-RANGES-FIREWALL',
  sourceCIDRReturn:
    '-A KUBE-SOURCE-RANGES-FIREWALL -m comment --comment "Kubernetes service load balancer ip + port + source cidr for packet filter purpose" -m set --match-set KUBE-LOAD-BALANCER-SOURCE-CIDR dst,dst,src -j RETURN',
  sourceRangesDrop: '-A KUBE-SOURCE-RANGES-FIREWALL -j DROP',
};

type ChainExpectations = Readonly<Record<string, readonly string[]>>;

function assertChains(
  planned: ReturnType<typeof planObjects>,
  nat: ChainExpectations,
  filter: ChainExpectations,
) {
  for (const [chain, lines] of Object.entries(nat))
    assert.deepEqual(chainRules(planned.rules, 'nat', chain), lines, `nat ${chain}`);
  for (const [chain, lines] of Object.entries(filter))
    assert.deepEqual(chainRules(planned.rules, 'filter', chain), lines, `filter ${chain}`);
}

const TCP80 = [{ name: 'p80', port: 80, protocol: 'TCP' }] as const;

function tcpSlice(ns: string, svcName: string, n: number, eps: readonly EndpointSpec[], family = 'IPv4') {
  return endpointSlice(ns, svcName, n, family, eps, TCP80);
}

describe('TestGetNodeIPs: the addresses NodePorts listen on, not those of kube-ipvs0 (localNodeAddresses)', () => {
  const cases: {
    name: string;
    family?: Family;
    interfaces: Record<string, string[]>;
    want: string[];
  }[] = [
    { name: 'case 0', interfaces: { eth0: ['1.2.3.4'], lo: ['127.0.0.1'] }, want: ['1.2.3.4'] },
    { name: 'case 1', interfaces: { lo: ['127.0.0.1'] }, want: [] },
    { name: 'case 2', interfaces: {}, want: [] },
    {
      name: 'case 3',
      interfaces: {
        encap0: ['10.20.30.40', 'fe80::200:ff:fe01:1'],
        lo: ['127.0.0.1', '::1'],
        docker0: ['172.17.0.1'],
      },
      want: ['10.20.30.40', '172.17.0.1'],
    },
    {
      name: 'case 4',
      interfaces: { encaps9: ['10.20.30.40'], lo: ['127.0.0.1', '::1'], encap7: ['1000::', '10.20.30.31'] },
      want: ['10.20.30.31', '10.20.30.40'],
    },
    {
      name: 'case 5',
      interfaces: {
        'kube-ipvs0': ['2000::', '1.2.3.4'],
        lo: ['127.0.0.1', '::1'],
        encap7: ['1000::', '10.20.30.31'],
      },
      want: ['10.20.30.31'],
    },
    {
      name: 'case 6',
      interfaces: { 'kube-ipvs0': ['1.2.3.4', '2.3.4.5'], lo: ['127.0.0.1', '::1'] },
      want: [],
    },
    { name: 'case 7', interfaces: { 'kube-ipvs0': ['1.2.3.4', '2.3.4.5'] }, want: [] },
    {
      name: 'case 8',
      interfaces: { 'kube-ipvs0': ['1.2.3.4', '2.3.4.5'], eth5: ['3.4.5.6'], lo: ['127.0.0.1', '::1'] },
      want: ['3.4.5.6'],
    },
    {
      name: 'case 9',
      interfaces: { ipvs0: ['1.2.3.4'], lo: ['127.0.0.1', '::1'], encap7: ['10.20.30.31'] },
      want: ['1.2.3.4', '10.20.30.31'],
    },
    {
      name: 'case 10',
      family: 'IPv6',
      interfaces: {
        ipvs0: ['1.2.3.4', '1000::'],
        lo: ['127.0.0.1', '::1'],
        encap7: ['10.20.30.31', '2000::', 'fe80::200:ff:fe01:1'],
      },
      want: ['1000::', '2000::'],
    },
    {
      // Upstream's test expects only 1000:: here: it subtracts kube-ipvs0's addresses from all addresses. Its
      // proxier does not: syncProxyRules calls GetAllLocalAddressesExcept("kube-ipvs0"), whose comment says it is
      // "not the same as to take the diff ... since an address can be assigned to many interfaces" (k/k #114815).
      // 2000:: is also on encap7, so the proxier keeps it, and so do we.
      name: 'case 11 (the proxier keeps an address that is on kube-ipvs0 and on another interface)',
      family: 'IPv6',
      interfaces: {
        ipvs0: ['1.2.3.4', '1000::'],
        lo: ['127.0.0.1', '::1'],
        encap7: ['10.20.30.31', '2000::', 'fe80::200:ff:fe01:1'],
        'kube-ipvs0': ['1.2.3.4', '2.3.4.5', '2000::'],
      },
      want: ['1000::', '2000::'],
    },
  ];
  for (const c of cases) {
    test(c.name, () => {
      const node = upstreamNode({ family: c.family ?? 'IPv4', interfaces: c.interfaces });
      assert.deepEqual(localNodeAddresses(node), c.want);
    });
  }
});

describe('TestIpIsValidForSet: which local addresses count (family, no loopback, no IPv6 link-local)', () => {
  const cases: { family: Family; ip: string; valid: boolean; as?: string }[] = [
    { family: 'IPv4', ip: '127.0.0.1', valid: false },
    { family: 'IPv4', ip: '127.0.0.0', valid: false },
    { family: 'IPv4', ip: '127.6.7.8', valid: false },
    { family: 'IPv4', ip: '8.8.8.8', valid: true },
    { family: 'IPv4', ip: '192.168.0.1', valid: true },
    { family: 'IPv4', ip: '169.254.0.0', valid: true },
    { family: 'IPv4', ip: '::ffff:169.254.0.0', valid: true, as: '169.254.0.0' },
    { family: 'IPv4', ip: '1000::', valid: false },
    { family: 'IPv6', ip: '::1', valid: false },
    { family: 'IPv6', ip: '1000::', valid: true },
    { family: 'IPv6', ip: 'fe80::200:ff:fe01:1', valid: false },
    { family: 'IPv6', ip: '8.8.8.8', valid: false },
    { family: 'IPv6', ip: '::ffff:8.8.8.8', valid: false },
  ];
  for (const c of cases) {
    test(`${c.family} ${c.ip} → ${c.valid ? 'kept' : 'left out'}`, () => {
      const node = upstreamNode({ family: c.family, eth0: [c.ip] });
      assert.deepEqual(localNodeAddresses(node), c.valid ? [c.as ?? c.ip] : []);
    });
  }
});

interface NodePortCase {
  readonly name: string;
  readonly services: readonly Service[];
  readonly slices: readonly EndpointSlice[];
  readonly eth0: readonly string[];
  readonly nodePortAddresses: readonly string[];
  readonly virtualServers: Record<string, VirtualServerView>;
  /** Every non-empty set; left out where upstream's case checks no set. */
  readonly sets?: Record<string, string[]>;
  readonly nat?: ChainExpectations;
  readonly filter?: ChainExpectations;
}

function runNodePortCases(family: Family, cases: readonly NodePortCase[]): void {
  for (const c of cases) {
    test(c.name, () => {
      const node = upstreamNode({ family, eth0: c.eth0, nodePortAddresses: c.nodePortAddresses });
      const planned = planObjects(node, c.services, c.slices);
      assert.deepEqual(virtualServers(planned.plan), c.virtualServers);
      if (c.sets !== undefined) assert.deepEqual(nonEmptySets(planned.plan), c.sets);
      assertChains(planned, c.nat ?? {}, c.filter ?? {});
      assert.ok(
        weights(planned.plan).every((w) => w === 1),
        'every real server has weight 1',
      );
    });
  }
}

function nodePortService(clusterIP: string, protocol: string, extra: Parameters<typeof service>[4] = {}) {
  return service('ns1', 'svc1', clusterIP, [{ name: 'p80', port: 80, protocol, nodePort: 3001 }], {
    type: 'NodePort',
    ...extra,
  });
}

function p80Slice(n: number, addressType: string, eps: readonly EndpointSpec[], protocol: string) {
  return endpointSlice('ns1', 'svc1', n, addressType, eps, [{ name: 'p80', port: 80, protocol }]);
}

describe('TestNodePortIPv4', () => {
  runNodePortCases('IPv4', [
    {
      name: '1 service with node port, has 2 endpoints',
      services: [nodePortService('10.20.30.41', 'TCP')],
      slices: [
        p80Slice(1, 'IPv4', [{ ip: '10.180.0.1' }], 'TCP'),
        p80Slice(2, 'IPv6', [{ ip: '1002:ab8::2:10' }], 'TCP'),
      ],
      eth0: ['100.101.102.103', '2001:db8::1:1'],
      nodePortAddresses: [],
      virtualServers: {
        'TCP/10.20.30.41:80': rr('10.180.0.1:80'),
        'TCP/100.101.102.103:3001': rr('10.180.0.1:80'),
      },
      sets: {
        clusterIP: ['10.20.30.41,tcp:80'],
        nodePortTCP: ['3001'],
        ipvsIPs: ['10.20.30.41'],
      },
    },
    {
      name: '1 UDP service with node port, has endpoints',
      services: [nodePortService('10.20.30.41', 'UDP')],
      slices: [p80Slice(1, 'IPv4', [{ ip: '10.180.0.1' }], 'UDP')],
      eth0: ['100.101.102.103'],
      nodePortAddresses: ['0.0.0.0/0'],
      virtualServers: {
        'UDP/10.20.30.41:80': rr('10.180.0.1:80'),
        'UDP/100.101.102.103:3001': rr('10.180.0.1:80'),
      },
      sets: {
        clusterIP: ['10.20.30.41,udp:80'],
        nodePortUDP: ['3001'],
        ipvsIPs: ['10.20.30.41'],
      },
      nat: {
        'KUBE-NODE-PORT': [NAT.nodePortUDP],
        'KUBE-SERVICES': [NAT.skipLoopback, NAT.clusterIPMasq, NAT.toNodePort, NAT.acceptClusterIP],
      },
      filter: { 'KUBE-NODE-PORT': [FILTER.healthCheckAccept] },
    },
    {
      name: 'service has node port but no endpoints',
      services: [nodePortService('10.20.30.41', 'TCP')],
      slices: [],
      eth0: ['100.101.102.103'],
      nodePortAddresses: [],
      virtualServers: { 'TCP/10.20.30.41:80': rr(), 'TCP/100.101.102.103:3001': rr() },
    },
    {
      name: 'node port service with protocol sctp on a node with multiple nodeIPs',
      services: [nodePortService('10.20.30.41', 'SCTP')],
      slices: [p80Slice(1, 'IPv4', [{ ip: '10.180.0.1' }], 'SCTP')],
      eth0: [
        '100.101.102.103',
        '100.101.102.104',
        '100.101.102.105',
        '2001:db8::1:1',
        '2001:db8::1:2',
        '2001:db8::1:3',
      ],
      nodePortAddresses: [],
      virtualServers: {
        'SCTP/10.20.30.41:80': rr('10.180.0.1:80'),
        'SCTP/100.101.102.103:3001': rr('10.180.0.1:80'),
        'SCTP/100.101.102.104:3001': rr('10.180.0.1:80'),
        'SCTP/100.101.102.105:3001': rr('10.180.0.1:80'),
      },
      sets: {
        clusterIP: ['10.20.30.41,sctp:80'],
        nodePortSCTP: ['100.101.102.103,sctp:3001', '100.101.102.104,sctp:3001', '100.101.102.105,sctp:3001'],
        ipvsIPs: ['10.20.30.41'],
      },
    },
    {
      name: 'node port service with protocol sctp and externalTrafficPolicy local',
      services: [nodePortService('10.20.30.41', 'SCTP', { externalTrafficPolicy: 'Local' })],
      slices: [
        p80Slice(
          1,
          'IPv4',
          [
            { ip: '10.180.0.1', nodeName: THIS_NODE },
            { ip: '10.180.1.1', nodeName: 'other-node' },
          ],
          'SCTP',
        ),
      ],
      eth0: ['100.101.102.103'],
      nodePortAddresses: [],
      virtualServers: {
        'SCTP/10.20.30.41:80': rr('10.180.0.1:80', '10.180.1.1:80'),
        'SCTP/100.101.102.103:3001': rr('10.180.0.1:80'),
      },
      sets: {
        loopBack: ['10.180.0.1,sctp:80,10.180.0.1'],
        clusterIP: ['10.20.30.41,sctp:80'],
        nodePortSCTP: ['100.101.102.103,sctp:3001'],
        nodePortLocalSCTP: ['100.101.102.103,sctp:3001'],
        ipvsIPs: ['10.20.30.41'],
      },
      nat: { 'KUBE-NODE-PORT': [NAT.nodePortLocalSCTP, NAT.nodePortSCTP] },
      filter: { 'KUBE-NODE-PORT': [FILTER.healthCheckAccept] },
    },
  ]);
});

describe('TestNodePortIPv6', () => {
  runNodePortCases('IPv6', [
    {
      name: '1 service with node port, has 2 endpoints',
      services: [nodePortService('2020::1', 'TCP')],
      slices: [
        p80Slice(1, 'IPv4', [{ ip: '10.180.0.1' }], 'TCP'),
        p80Slice(2, 'IPv6', [{ ip: '1002:ab8::2:10' }], 'TCP'),
      ],
      eth0: ['100.101.102.103', '2001:db8::1:1'],
      nodePortAddresses: [],
      virtualServers: {
        'TCP/[2001:db8::1:1]:3001': rr('[1002:ab8::2:10]:80'),
        'TCP/[2020::1]:80': rr('[1002:ab8::2:10]:80'),
      },
      sets: { clusterIP: ['2020::1,tcp:80'], nodePortTCP: ['3001'], ipvsIPs: ['2020::1'] },
    },
    {
      name: '1 UDP service with node port, has endpoints (no action on IPv6 Proxier)',
      services: [nodePortService('10.20.30.41', 'UDP')],
      // Upstream's slice: an IPv6 slice holding an IPv4 address.
      slices: [p80Slice(1, 'IPv6', [{ ip: '10.180.0.1' }], 'UDP')],
      eth0: ['100.101.102.103'],
      nodePortAddresses: ['0.0.0.0/0'],
      virtualServers: {},
      sets: {},
    },
    {
      name: 'service has node port but no endpoints',
      services: [nodePortService('2020::1', 'TCP')],
      slices: [],
      eth0: ['100.101.102.103', '2001:db8::1:1'],
      nodePortAddresses: [],
      virtualServers: { 'TCP/[2001:db8::1:1]:3001': rr(), 'TCP/[2020::1]:80': rr() },
    },
    {
      name: 'node port service with protocol sctp on a node with multiple nodeIPs',
      services: [nodePortService('2020::1', 'SCTP')],
      slices: [p80Slice(1, 'IPv6', [{ ip: '2001::1' }], 'SCTP')],
      eth0: ['2001:db8::1:1', '2001:db8::1:2'],
      nodePortAddresses: [],
      virtualServers: {
        'SCTP/[2001:db8::1:1]:3001': rr('[2001::1]:80'),
        'SCTP/[2001:db8::1:2]:3001': rr('[2001::1]:80'),
        'SCTP/[2020::1]:80': rr('[2001::1]:80'),
      },
      sets: {
        clusterIP: ['2020::1,sctp:80'],
        nodePortSCTP: ['2001:db8::1:1,sctp:3001', '2001:db8::1:2,sctp:3001'],
        ipvsIPs: ['2020::1'],
      },
    },
  ]);
});

describe('TestIPv4Proxier and TestIPv6Proxier: each family programs its own Services only', () => {
  const twoServices = [
    service('ns1', 'svc1', '10.20.30.41', [{ name: 'p80', port: 80, protocol: 'TCP' }]),
    service('ns2', 'svc2', '1002:ab8::2:1', [{ name: 'p8080', port: 8080, protocol: 'TCP' }]),
  ];
  const twoSlices = [
    tcpSlice('ns1', 'svc1', 1, [{ ip: '10.180.0.1' }]),
    endpointSlice(
      'ns2',
      'svc2',
      1,
      'IPv6',
      [{ ip: '1009:ab8::5:6' }],
      [{ name: 'p8080', port: 8080, protocol: 'TCP' }],
    ),
  ];
  const cases: {
    name: string;
    family: Family;
    services: Service[];
    slices: EndpointSlice[];
    want: Record<string, VirtualServerView>;
  }[] = [
    {
      name: 'TestIPv4Proxier: 2 services with Cluster IP, each with endpoints',
      family: 'IPv4',
      services: twoServices,
      slices: twoSlices,
      want: { 'TCP/10.20.30.41:80': rr('10.180.0.1:80') },
    },
    {
      name: 'TestIPv4Proxier: cluster IP service with no endpoints',
      family: 'IPv4',
      services: [service('ns1', 'svc1', '10.20.30.41', [{ name: 'p80', port: 80, protocol: 'TCP' }])],
      slices: [],
      want: { 'TCP/10.20.30.41:80': rr() },
    },
    {
      name: 'TestIPv6Proxier: 2 services with Cluster IP, each with endpoints',
      family: 'IPv6',
      services: twoServices,
      slices: twoSlices,
      want: { 'TCP/[1002:ab8::2:1]:8080': rr('[1009:ab8::5:6]:8080') },
    },
    {
      name: 'TestIPv6Proxier: cluster IP service with no endpoints',
      family: 'IPv6',
      services: [service('ns1', 'svc1', '2001::1', [{ name: 'p80', port: 80, protocol: 'TCP' }])],
      slices: [],
      want: { 'TCP/[2001::1]:80': rr() },
    },
  ];
  for (const c of cases) {
    test(c.name, () => {
      const { plan } = planObjects(upstreamNode({ family: c.family }), c.services, c.slices);
      assert.deepEqual(virtualServers(plan), c.want);
    });
  }
});

describe('TestMasqueradeRule: KUBE-POSTROUTING masquerades, --random-fully when iptables has it', () => {
  for (const randomFully of [false, true]) {
    test(`randomFully ${randomFully}`, () => {
      const planned = planObjects(upstreamNode(), [], [], { randomFully });
      assert.deepEqual(chainRules(planned.rules, 'nat', 'KUBE-POSTROUTING'), [
        '-A KUBE-POSTROUTING -m mark ! --mark 0x4000/0x4000 -j RETURN',
        '-A KUBE-POSTROUTING -j MARK --xor-mark 0x4000',
        '-A KUBE-POSTROUTING -m comment --comment "kubernetes service traffic requiring SNAT" -j MASQUERADE' +
          (randomFully ? ' --random-fully' : ''),
      ]);
    });
  }
});

test('TestExternalIPsNoEndpoint: the external IP gets a virtual server with no real servers', () => {
  const svc = service('ns1', 'svc1', '10.20.30.41', TCP80, {
    type: 'ClusterIP',
    externalIPs: ['50.60.70.81'],
  });
  const { plan } = planObjects(upstreamNode(), [svc]);
  assert.deepEqual(virtualServers(plan), { 'TCP/10.20.30.41:80': rr(), 'TCP/50.60.70.81:80': rr() });
  assert.deepEqual(entries(plan, 'externalIP'), ['50.60.70.81,tcp:80']);
});

describe('TestExternalIPs: one virtual server per external IP of the family (127.0.0.1 too)', () => {
  const svc = service('ns1', 'svc1', '10.20.30.41', TCP80, {
    type: 'ClusterIP',
    externalIPs: ['50.60.70.81', '2012::51', '127.0.0.1'],
  });
  // Upstream's slice gives port p80 protocol UDP, so the TCP port has no endpoints (its test only loops over the
  // real servers it finds, and finds none); the second case gives the slice TCP, as the case surely meant.
  const cases = [
    { name: "upstream's slice (port p80/UDP: no endpoint for p80/TCP)", protocol: 'UDP', rs: [] },
    { name: 'the slice with port p80/TCP', protocol: 'TCP', rs: ['10.180.0.1:80'] },
  ];
  for (const c of cases) {
    test(c.name, () => {
      const slice = p80Slice(1, 'IPv4', [{ ip: '10.180.0.1' }], c.protocol);
      const { plan } = planObjects(upstreamNode(), [svc], [slice]);
      assert.deepEqual(virtualServers(plan), {
        'TCP/10.20.30.41:80': rr(...c.rs),
        'TCP/127.0.0.1:80': rr(...c.rs),
        'TCP/50.60.70.81:80': rr(...c.rs),
      });
      assert.deepEqual(entries(plan, 'externalIP'), ['127.0.0.1,tcp:80', '50.60.70.81,tcp:80']);
      // Neither is a node address (loopback never counts), so both go on kube-ipvs0, as upstream binds them.
      assert.deepEqual(plan.boundAddresses, ['10.20.30.41', '127.0.0.1', '50.60.70.81']);
    });
  }
});

test('TestOnlyLocalExternalIPs: external IPs reach only the local endpoint under Local', () => {
  const svc = service('ns1', 'svc1', '10.20.30.41', TCP80, {
    type: 'NodePort',
    externalIPs: ['50.60.70.81', '2012::51', '127.0.0.1'],
    externalTrafficPolicy: 'Local',
  });
  const slice = tcpSlice('ns1', 'svc1', 1, [
    { ip: '10.180.0.1', nodeName: THIS_NODE },
    { ip: '10.180.1.1', nodeName: 'other-node' },
  ]);
  const { plan } = planObjects(upstreamNode(), [svc], [slice]);
  assert.deepEqual(virtualServers(plan), {
    'TCP/10.20.30.41:80': rr('10.180.0.1:80', '10.180.1.1:80'),
    'TCP/127.0.0.1:80': rr('10.180.0.1:80'),
    'TCP/50.60.70.81:80': rr('10.180.0.1:80'),
  });
  assert.deepEqual(entries(plan, 'externalIPLocal'), ['127.0.0.1,tcp:80', '50.60.70.81,tcp:80']);
  assert.deepEqual(entries(plan, 'externalIP'), []);
});

function loadBalancer(extra: Parameters<typeof service>[4] = {}, nodePort?: number): Service {
  return service(
    'ns1',
    'svc1',
    '10.20.30.41',
    [{ name: 'p80', port: 80, protocol: 'TCP', ...(nodePort !== undefined ? { nodePort } : {}) }],
    { type: 'LoadBalancer', ingress: [{ ip: '1.2.3.4' }], ...extra },
  );
}

test('TestLoadBalancer: the ingress IP gets a virtual server, the lb set and its chain', () => {
  // Upstream's slice is p80/UDP again: no real servers for the TCP port. Its fake has no node address, so the
  // NodePort 3001 gets no virtual server (nor set entry).
  const slice = p80Slice(1, 'IPv4', [{ ip: '10.180.0.1' }], 'UDP');
  const planned = planObjects(upstreamNode(), [loadBalancer({}, 3001)], [slice]);
  assert.deepEqual(virtualServers(planned.plan), { 'TCP/1.2.3.4:80': rr(), 'TCP/10.20.30.41:80': rr() });
  assert.deepEqual(nonEmptySets(planned.plan), {
    clusterIP: ['10.20.30.41,tcp:80'],
    loadBalancer: ['1.2.3.4,tcp:80'],
    ipvsIPs: ['1.2.3.4', '10.20.30.41'],
  });
  assertChains(
    planned,
    {
      'KUBE-SERVICES': [
        NAT.skipLoopback,
        NAT.toLoadBalancer,
        NAT.clusterIPMasq,
        NAT.toNodePort,
        NAT.acceptClusterIP,
        NAT.acceptLoadBalancer,
      ],
      'KUBE-LOAD-BALANCER': [NAT.lbMasq],
    },
    {},
  );
});

// Upstream's buildFakeProxier has no node address on eth0; these cases find node IPs through nodePortAddresses
// 100.101.102.0/24 and the interfaces of its FakeNetwork.
const nodeWithInterfaces: UpstreamNode = {
  interfaces: { eth0: ['100.101.102.103/24'], eth1: ['2001:db8::/64'] },
  nodePortAddresses: ['100.101.102.0/24'],
};

test('TestOnlyLocalNodePorts: the node port reaches the local endpoint only, and returns before masquerade', () => {
  const svc = nodePortService('10.20.30.41', 'TCP', { externalTrafficPolicy: 'Local' });
  const slice = tcpSlice('ns1', 'svc1', 1, [
    { ip: '10.180.0.1', nodeName: THIS_NODE },
    { ip: '10.180.1.1', nodeName: 'other-node' },
  ]);
  const planned = planObjects(upstreamNode(nodeWithInterfaces), [svc], [slice]);
  assert.deepEqual(virtualServers(planned.plan), {
    'TCP/10.20.30.41:80': rr('10.180.0.1:80', '10.180.1.1:80'),
    'TCP/100.101.102.103:3001': rr('10.180.0.1:80'),
  });
  assert.deepEqual(entries(planned.plan, 'nodePortTCP'), ['3001']);
  assert.deepEqual(entries(planned.plan, 'nodePortLocalTCP'), ['3001']);
  assertChains(
    planned,
    {
      'KUBE-SERVICES': [NAT.skipLoopback, NAT.clusterIPMasq, NAT.toNodePort, NAT.acceptClusterIP],
      'KUBE-NODE-PORT': [NAT.nodePortLocalTCP, NAT.nodePortTCP],
    },
    { 'KUBE-NODE-PORT': [FILTER.healthCheckAccept] },
  );
});

test('TestHealthCheckNodePort: only Local load balancers put their health check port in the set', () => {
  const sample = (name: string, hc: number, etp: string) =>
    service('ns1', name, '10.20.30.41', [{ name: 'p80', port: 80, protocol: 'TCP', nodePort: 3000 }], {
      type: 'LoadBalancer',
      externalTrafficPolicy: etp,
      healthCheckNodePort: hc,
    });
  const services = [
    sample('valid-svc1', 30000, 'Local'),
    sample('valid-svc2', 30001, 'Local'),
    sample('invalid-svc3', 30002, 'Cluster'),
  ];
  const planned = planObjects(upstreamNode(nodeWithInterfaces), services);
  assert.deepEqual(entries(planned.plan, 'healthCheckNodePort'), ['30000', '30001']);
  assertChains(
    planned,
    { 'KUBE-NODE-PORT': [NAT.nodePortLocalTCP, NAT.nodePortTCP] },
    { 'KUBE-NODE-PORT': [FILTER.healthCheckAccept] },
  );
});

test('TestLoadBalancerSourceRanges: firewall sets and chains; the node outside the ranges is blocked', () => {
  const svc = loadBalancer({ loadBalancerSourceRanges: ['10.0.0.0/8'] });
  const slice = tcpSlice('ns1', 'svc1', 1, [{ ip: '10.180.0.1' }]);
  // Upstream's fake proxier has no node IP, so no source range admits the node.
  const planned = planObjects(upstreamNode(), [svc], [slice]);
  assert.deepEqual(virtualServers(planned.plan), {
    'TCP/1.2.3.4:80': rr('10.180.0.1:80'),
    'TCP/10.20.30.41:80': rr('10.180.0.1:80'),
  });
  assert.deepEqual(nonEmptySets(planned.plan), {
    clusterIP: ['10.20.30.41,tcp:80'],
    loadBalancer: ['1.2.3.4,tcp:80'],
    loadBalancerFW: ['1.2.3.4,tcp:80'],
    loadBalancerSourceCIDR: ['1.2.3.4,tcp:80,10.0.0.0/8'],
    ipvsIPs: ['1.2.3.4', '10.20.30.41'],
  });
  assertChains(
    planned,
    {
      'KUBE-SERVICES': [
        NAT.skipLoopback,
        NAT.toLoadBalancer,
        NAT.clusterIPMasq,
        NAT.toNodePort,
        NAT.acceptClusterIP,
        NAT.acceptLoadBalancer,
      ],
    },
    {
      'KUBE-PROXY-FIREWALL': [FILTER.toSourceRanges],
      'KUBE-SOURCE-RANGES-FIREWALL': [FILTER.sourceCIDRReturn, FILTER.sourceRangesDrop],
      // proxier.go's lbNoNodeAccessIPPortProtocolEntries (k/k #119656); upstream's test does not look at it.
      'KUBE-IPVS-OUT-FILTER': [
        '-A KUBE-IPVS-OUT-FILTER -s 1.2.3.4 -m ipvs --vaddr 1.2.3.4 --vproto tcp --vport 80 -j DROP',
      ],
    },
  );
});

test('TestAcceptIPVSTraffic: KUBE-SERVICES accepts Service traffic at its end', () => {
  const p80 = [{ name: 'p80', port: 80, protocol: 'TCP', nodePort: 80 }];
  const services = [
    service('ns1', 'svc1', '10.20.30.40', p80, { type: 'ClusterIP', externalIPs: ['5.6.7.8'] }),
    service('ns1', 'svc2', '10.20.30.41', p80, { type: 'LoadBalancer', ingress: [{ ip: '1.2.3.4' }] }),
    service('ns1', 'svc3', '10.20.30.42', p80, { type: 'NodePort' }),
  ];
  const planned = planObjects(upstreamNode(), services);
  assertChains(
    planned,
    {
      'KUBE-SERVICES': [
        NAT.skipLoopback,
        NAT.toLoadBalancer,
        NAT.clusterIPMasq,
        NAT.externalIPMasq,
        NAT.externalIPFromOutside,
        NAT.externalIPToLocal,
        NAT.toNodePort,
        NAT.acceptClusterIP,
        NAT.acceptLoadBalancer,
      ],
    },
    {},
  );
});

test('TestOnlyLocalLoadBalancing: the ingress IP reaches the local endpoint, and returns before masquerade', () => {
  const slice = tcpSlice('ns1', 'svc1', 1, [
    { ip: '10.180.0.1', nodeName: THIS_NODE },
    { ip: '10.180.1.1', nodeName: 'other-node' },
  ]);
  const planned = planObjects(
    upstreamNode(),
    [loadBalancer({ externalTrafficPolicy: 'Local' }, 3001)],
    [slice],
  );
  assert.deepEqual(virtualServers(planned.plan), {
    'TCP/1.2.3.4:80': rr('10.180.0.1:80'),
    'TCP/10.20.30.41:80': rr('10.180.0.1:80', '10.180.1.1:80'),
  });
  assert.deepEqual(entries(planned.plan, 'loadBalancer'), ['1.2.3.4,tcp:80']);
  assert.deepEqual(entries(planned.plan, 'loadBalancerLocal'), ['1.2.3.4,tcp:80']);
  assertChains(
    planned,
    {
      'KUBE-SERVICES': [
        NAT.skipLoopback,
        NAT.toLoadBalancer,
        NAT.clusterIPMasq,
        NAT.toNodePort,
        NAT.acceptClusterIP,
        NAT.acceptLoadBalancer,
      ],
      'KUBE-LOAD-BALANCER': [NAT.lbLocalReturn, NAT.lbMasq],
    },
    {},
  );
});

describe('TestSessionAffinity: ClientIP affinity makes every virtual server persistent', () => {
  const svc = service(
    'ns1',
    'svc1',
    '10.20.30.41',
    [{ name: 'p80', port: 80, protocol: 'TCP', nodePort: 3001 }],
    {
      type: 'NodePort',
      externalIPs: ['50.60.70.81'],
      sessionAffinity: 'ClientIP',
      sessionAffinityConfig: { clientIP: { timeoutSeconds: 10800 } },
    },
  );
  const node = upstreamNode({ eth0: ['100.101.102.103'] });
  test('persistent flag 0x1 with the affinity timeout on the cluster IP, external IP and node port', () => {
    const { plan } = planObjects(node, [svc]);
    const persistent = { scheduler: 'rr', flags: 0x1, timeout: 10800, realServers: [] };
    assert.deepEqual(virtualServers(plan), {
      'TCP/10.20.30.41:80': persistent,
      'TCP/100.101.102.103:3001': persistent,
      'TCP/50.60.70.81:80': persistent,
    });
  });
  // Not in upstream's test file: proxier.go sets FlagSourceHash (0x10) on every virtual server when the scheduler
  // is "mh", so that maglev hashes on the source port too.
  test('proxier.go: scheduler mh adds the source-hash flag 0x10 to each', () => {
    const { plan } = planObjects(node, [svc], [], { scheduler: 'mh' });
    const mh = { scheduler: 'mh', flags: 0x11, timeout: 10800, realServers: [] };
    assert.deepEqual(virtualServers(plan), {
      'TCP/10.20.30.41:80': mh,
      'TCP/100.101.102.103:3001': mh,
      'TCP/50.60.70.81:80': mh,
    });
  });
});

test('TestMultiPortServiceBindAddr: one address on kube-ipvs0 however many ports, none once deleted', () => {
  const ports = (...ps: [string, string, number][]) =>
    ps.map(([name, protocol, port]) => ({ name, protocol, port }));
  const v1 = service('ns1', 'svc1', '172.16.55.4', ports(['port1', 'TCP', 1234], ['port2', 'TCP', 1235]));
  const v2 = service('ns1', 'svc1', '172.16.55.4', ports(['port1', 'TCP', 1234]));
  const v3 = service(
    'ns1',
    'svc1',
    '172.16.55.4',
    ports(['port1', 'TCP', 1234], ['port2', 'TCP', 1235], ['port3', 'UDP', 1236]),
  );
  const node = upstreamNode();
  const cluster = new ModelCluster('IPv4', THIS_NODE);
  const sync = () => planSnapshot(cluster.checkout().snapshot, node).plan;
  const steps: { name: string; change: () => void; vs: string[]; bound: string[] }[] = [
    {
      name: 'add multi-port service1',
      change: () => cluster.upsertService(v1),
      vs: ['TCP/172.16.55.4:1234', 'TCP/172.16.55.4:1235'],
      bound: ['172.16.55.4'],
    },
    {
      name: 'update to single-port service2',
      change: () => cluster.upsertService(v2),
      vs: ['TCP/172.16.55.4:1234'],
      bound: ['172.16.55.4'],
    },
    {
      name: 'update to multi-port service3',
      change: () => cluster.upsertService(v3),
      vs: ['TCP/172.16.55.4:1234', 'TCP/172.16.55.4:1235', 'UDP/172.16.55.4:1236'],
      bound: ['172.16.55.4'],
    },
    { name: 'delete service3', change: () => cluster.deleteService('ns1/svc1'), vs: [], bound: [] },
  ];
  for (const s of steps) {
    s.change();
    const plan = sync();
    assert.deepEqual([...plan.virtualServers.keys()].sort(), s.vs, s.name);
    assert.deepEqual(plan.boundAddresses, s.bound, s.name);
    assert.deepEqual(entries(plan, 'ipvsIPs'), s.bound, s.name);
  }
});

// Upstream's E2E tests give the Service port no `port` (0); an API server refuses that, and our model drops such a
// port (see the todo cases at the end). Here the Service port is 80, the port its endpoints use.
const e2eService = (extra: Parameters<typeof service>[4] = {}) =>
  service('ns1', 'svc1', '172.20.1.1', [{ name: '', port: 80, protocol: 'TCP' }], extra);

function e2eSlice(eps: readonly EndpointSpec[]): EndpointSlice {
  return endpointSlice('ns1', 'svc1', 1, 'IPv4', eps, [{ name: '', port: 80, protocol: 'TCP' }]);
}

test('TestEndpointSliceE2E: ready endpoints become real servers, the local one a loop-back entry', () => {
  const slice = e2eSlice([
    { ip: '10.0.1.1', nodeName: THIS_NODE, ready: true },
    { ip: '10.0.1.2', nodeName: 'node2', ready: true },
    { ip: '10.0.1.3', nodeName: 'node3', ready: true },
    { ip: '10.0.1.4', nodeName: 'node3', ready: false },
  ]);
  const node = upstreamNode();
  const cluster = new ModelCluster('IPv4', THIS_NODE);
  cluster.upsertService(e2eService());
  cluster.upsertSlice(slice);
  const first = planSnapshot(cluster.checkout().snapshot, node);
  assert.deepEqual(entries(first.plan, 'loopBack'), ['10.0.1.1,tcp:80,10.0.1.1']);
  assert.deepEqual(virtualServers(first.plan), {
    'TCP/172.20.1.1:80': rr('10.0.1.1:80', '10.0.1.2:80', '10.0.1.3:80'),
  });
  // The loop-back masquerade comes first in KUBE-POSTROUTING, before the mark rules (upstream's rule order).
  assert.equal(chainRules(first.rules, 'nat', 'KUBE-POSTROUTING')[0], NAT.loopBackMasq);

  cluster.deleteSlice(slice);
  const second = planSnapshot(cluster.checkout().snapshot, node);
  assert.deepEqual(entries(second.plan, 'loopBack'), []);
  assert.deepEqual(virtualServers(second.plan), { 'TCP/172.20.1.1:80': rr() });
  assert.ok(!chainRules(second.rules, 'nat', 'KUBE-POSTROUTING').includes(NAT.loopBackMasq));
});

test('TestHealthCheckNodePortE2E: the set follows the Service health check port, and empties on delete', () => {
  const v1 = e2eService({ type: 'LoadBalancer', externalTrafficPolicy: 'Local', healthCheckNodePort: 30000 });
  const v2 = e2eService({ type: 'LoadBalancer', externalTrafficPolicy: 'Local', healthCheckNodePort: 30001 });
  const node = upstreamNode();
  const cluster = new ModelCluster('IPv4', THIS_NODE);
  const hc = () => entries(planSnapshot(cluster.checkout().snapshot, node).plan, 'healthCheckNodePort');
  cluster.upsertService(v1);
  assert.deepEqual(hc(), ['30000']);
  cluster.upsertService(v2);
  assert.deepEqual(hc(), ['30001']);
  cluster.deleteService('ns1/svc1');
  assert.deepEqual(hc(), []);
});

describe('TestCreateAndLinkKubeChain: the chains of both tables, and the jumps into them', () => {
  test("the restore declares upstream's chains, in its order", () => {
    const { rules } = planObjects(upstreamNode(), []);
    const nat = [
      'KUBE-SERVICES',
      'KUBE-POSTROUTING',
      'KUBE-NODE-PORT',
      'KUBE-LOAD-BALANCER',
      'KUBE-MARK-MASQ',
    ];
    const filter = [
      'KUBE-FORWARD',
      'KUBE-NODE-PORT',
      'KUBE-PROXY-FIREWALL',
      'KUBE-SOURCE-RANGES-FIREWALL',
      'KUBE-IPVS-FILTER',
      'KUBE-IPVS-OUT-FILTER',
    ];
    assert.deepEqual(declaredChains(rules, 'nat'), nat);
    assert.deepEqual(declaredChains(rules, 'filter'), filter);
    assert.deepEqual(NAT_CHAINS, nat);
    assert.deepEqual(FILTER_CHAINS, filter);
    assert.deepEqual(
      rules.tables.map((t) => t.table),
      ['nat', 'filter'],
    );
  });
  // proxier.go's iptablesJumpChain (the test checks the chain lines only).
  test("the jumps are proxier.go's iptablesJumpChain", () => {
    assert.deepEqual(
      IPVS_JUMPS.map((j) => [j.table, j.from, j.to, j.comment]),
      [
        ['nat', 'OUTPUT', 'KUBE-SERVICES', 'kubernetes service portals'],
        ['nat', 'PREROUTING', 'KUBE-SERVICES', 'kubernetes service portals'],
        ['nat', 'POSTROUTING', 'KUBE-POSTROUTING', 'kubernetes postrouting rules'],
        ['filter', 'FORWARD', 'KUBE-FORWARD', 'kubernetes forwarding rules'],
        ['filter', 'INPUT', 'KUBE-NODE-PORT', 'kubernetes health check rules'],
        ['filter', 'INPUT', 'KUBE-PROXY-FIREWALL', 'kube-proxy firewall rules'],
        ['filter', 'FORWARD', 'KUBE-PROXY-FIREWALL', 'kube-proxy firewall rules'],
        ['filter', 'INPUT', 'KUBE-IPVS-FILTER', 'kubernetes ipvs access filter'],
        ['filter', 'OUTPUT', 'KUBE-IPVS-OUT-FILTER', 'kubernetes ipvs access filter'],
      ],
    );
  });
});

describe('TestTestInternalTrafficPolicyE2E', () => {
  const cases: {
    name: string;
    itp: string;
    nodes: [string, string, string];
    loopBack: string[];
    rs: string[];
  }[] = [
    {
      name: 'internalTrafficPolicy is cluster with non-zero local endpoints',
      itp: 'Cluster',
      nodes: [THIS_NODE, 'node1', 'node2'],
      loopBack: ['10.0.1.1,tcp:80,10.0.1.1'],
      rs: ['10.0.1.1:80', '10.0.1.2:80', '10.0.1.3:80'],
    },
    {
      name: 'internalTrafficPolicy is cluster with zero local endpoints',
      itp: 'Cluster',
      nodes: ['node0', 'node1', 'node2'],
      loopBack: [],
      rs: ['10.0.1.1:80', '10.0.1.2:80', '10.0.1.3:80'],
    },
    {
      name: 'internalTrafficPolicy is local with non-zero local endpoints',
      itp: 'Local',
      nodes: [THIS_NODE, 'node1', 'node2'],
      loopBack: ['10.0.1.1,tcp:80,10.0.1.1'],
      rs: ['10.0.1.1:80'],
    },
    {
      // No fall-back to the cluster endpoints here: a ClusterIP-only Service under internal Local never computes
      // them (CategorizeEndpoints: UsesClusterEndpoints is false).
      name: 'internalTrafficPolicy is local with zero local endpoints',
      itp: 'Local',
      nodes: ['node0', 'node1', 'node2'],
      loopBack: [],
      rs: [],
    },
  ];
  for (const c of cases) {
    test(c.name, () => {
      const slice = e2eSlice(
        c.nodes.map((nodeName, i) => ({ ip: `10.0.1.${i + 1}`, nodeName, ready: true })),
      );
      const node = upstreamNode();
      const cluster = new ModelCluster('IPv4', THIS_NODE);
      cluster.upsertService(e2eService({ internalTrafficPolicy: c.itp }));
      cluster.upsertSlice(slice);
      const first = planSnapshot(cluster.checkout().snapshot, node).plan;
      assert.deepEqual(entries(first, 'loopBack'), c.loopBack);
      assert.deepEqual(virtualServers(first), { 'TCP/172.20.1.1:80': rr(...c.rs) });
      cluster.deleteSlice(slice);
      const second = planSnapshot(cluster.checkout().snapshot, node).plan;
      assert.deepEqual(entries(second, 'loopBack'), []);
      assert.deepEqual(virtualServers(second), { 'TCP/172.20.1.1:80': rr() });
    });
  }
});

describe('Test_EndpointSlice{Ready,OnlyReady}AndTerminating{Cluster,Local}', () => {
  const ready = { ready: true, serving: true, terminating: false };
  const servingTerminating = { ready: false, serving: true, terminating: true };
  const goneTerminating = { ready: false, serving: false, terminating: true };
  const notReady = { ready: false, serving: false, terminating: false };
  const readyAndTerminating: EndpointSpec[] = [
    { ip: '10.0.1.1', nodeName: THIS_NODE, ...ready },
    { ip: '10.0.1.2', nodeName: THIS_NODE, ...ready },
    { ip: '10.0.1.3', nodeName: THIS_NODE, ...servingTerminating },
    { ip: '10.0.1.4', nodeName: THIS_NODE, ...goneTerminating },
    { ip: '10.0.1.5', nodeName: 'another-node', ...ready },
  ];
  const onlyTerminating = (fifth: typeof ready): EndpointSpec[] => [
    { ip: '10.0.1.1', nodeName: THIS_NODE, ...servingTerminating },
    { ip: '10.0.1.2', nodeName: THIS_NODE, ...servingTerminating },
    { ip: '10.0.1.3', nodeName: THIS_NODE, ...goneTerminating },
    { ip: '10.0.1.4', nodeName: 'another-node', ...servingTerminating },
    { ip: '10.0.1.5', nodeName: 'another-node', ...fifth },
  ];
  const localFour = ['10.0.1.1', '10.0.1.2', '10.0.1.3', '10.0.1.4'].map((ip) => `${ip},tcp:80,${ip}`);
  const cases: {
    name: string;
    etp: string;
    endpoints: EndpointSpec[];
    loopBack: string[];
    clusterIP: string[];
    externalIP: string[];
  }[] = [
    {
      name: 'Test_EndpointSliceReadyAndTerminatingCluster: only ready endpoints',
      etp: 'Cluster',
      endpoints: readyAndTerminating,
      loopBack: localFour,
      clusterIP: ['10.0.1.1:80', '10.0.1.2:80', '10.0.1.5:80'],
      externalIP: ['10.0.1.1:80', '10.0.1.2:80', '10.0.1.5:80'],
    },
    {
      name: 'Test_EndpointSliceReadyAndTerminatingLocal: the external IP keeps the local ready ones',
      etp: 'Local',
      endpoints: readyAndTerminating,
      loopBack: localFour,
      clusterIP: ['10.0.1.1:80', '10.0.1.2:80', '10.0.1.5:80'],
      externalIP: ['10.0.1.1:80', '10.0.1.2:80'],
    },
    {
      name: 'Test_EndpointSliceOnlyReadyAndTerminatingCluster: falls back to serving terminating ones',
      etp: 'Cluster',
      endpoints: onlyTerminating(notReady),
      loopBack: localFour.slice(0, 3),
      clusterIP: ['10.0.1.1:80', '10.0.1.2:80', '10.0.1.4:80'],
      externalIP: ['10.0.1.1:80', '10.0.1.2:80', '10.0.1.4:80'],
    },
    {
      name: 'Test_EndpointSliceOnlyReadyAndTerminatingLocal: the external IP falls back to local serving terminating ones',
      etp: 'Local',
      endpoints: onlyTerminating(ready),
      loopBack: localFour.slice(0, 3),
      clusterIP: ['10.0.1.5:80'],
      externalIP: ['10.0.1.1:80', '10.0.1.2:80'],
    },
  ];
  for (const c of cases) {
    test(c.name, () => {
      const svc = e2eService({
        type: 'NodePort',
        externalTrafficPolicy: c.etp,
        internalTrafficPolicy: 'Cluster',
        externalIPs: ['1.2.3.4'],
      });
      const slice = e2eSlice(c.endpoints);
      const node = upstreamNode();
      const cluster = new ModelCluster('IPv4', THIS_NODE);
      cluster.upsertService(svc);
      cluster.upsertSlice(slice);
      const first = planSnapshot(cluster.checkout().snapshot, node).plan;
      assert.deepEqual(entries(first, 'loopBack'), c.loopBack);
      assert.deepEqual(virtualServers(first), {
        'TCP/1.2.3.4:80': rr(...c.externalIP),
        'TCP/172.20.1.1:80': rr(...c.clusterIP),
      });
      cluster.deleteSlice(slice);
      const second = planSnapshot(cluster.checkout().snapshot, node).plan;
      assert.deepEqual(entries(second, 'loopBack'), []);
      assert.deepEqual(virtualServers(second), { 'TCP/1.2.3.4:80': rr(), 'TCP/172.20.1.1:80': rr() });
    });
  }
});

describe('TestNoEndpointsMetric: Services left without a local endpoint by a Local policy', () => {
  const local = [THIS_NODE, 'node1', 'node2'];
  const remote = ['node0', 'node1', 'node2'];
  const cases: {
    name: string;
    itp?: string;
    etp?: string;
    nodes: string[];
    internal: number;
    external: number;
  }[] = [
    {
      name: 'internalTrafficPolicy is set and there are local endpoints',
      itp: 'Local',
      nodes: local,
      internal: 0,
      external: 0,
    },
    {
      name: 'externalTrafficPolicy is set and there are local endpoints',
      etp: 'Local',
      nodes: local,
      internal: 0,
      external: 0,
    },
    {
      name: 'both policies are set and there are local endpoints',
      itp: 'Local',
      etp: 'Local',
      nodes: local,
      internal: 0,
      external: 0,
    },
    {
      name: 'internalTrafficPolicy is set and there are no local endpoints',
      itp: 'Local',
      nodes: remote,
      internal: 1,
      external: 0,
    },
    {
      name: 'externalTrafficPolicy is set and there are no local endpoints',
      etp: 'Local',
      nodes: remote,
      internal: 0,
      external: 1,
    },
    {
      name: 'Both policies are set and there are no local endpoints',
      itp: 'Local',
      etp: 'Local',
      nodes: remote,
      internal: 1,
      external: 1,
    },
    {
      name: 'Both policies are set and there are no endpoints at all',
      itp: 'Local',
      etp: 'Local',
      nodes: [],
      internal: 0,
      external: 0,
    },
  ];
  for (const c of cases) {
    test(c.name, () => {
      const svc = service(
        'ns1',
        'svc1',
        '172.20.1.1',
        [{ name: 'p80', port: 80, protocol: 'TCP', nodePort: 30000 }],
        {
          ...(c.itp !== undefined ? { internalTrafficPolicy: c.itp } : {}),
          ...(c.etp !== undefined ? { type: 'NodePort', externalTrafficPolicy: c.etp } : {}),
        },
      );
      const slice = tcpSlice(
        'ns1',
        'svc1',
        1,
        c.nodes.map((nodeName, i) => ({ ip: `10.0.1.${i + 1}`, nodeName, ready: true })),
      );
      const { plan } = planObjects(upstreamNode({ eth0: ['10.0.0.1'] }), [svc], [slice]);
      assert.equal(plan.noLocalEndpointsInternal, c.internal, 'internal');
      assert.equal(plan.noLocalEndpointsExternal, c.external, 'external');
    });
  }
});

describe('TestDismissLocalhostRuleExist: KUBE-SERVICES first returns what comes from loopback', () => {
  for (const [family, source] of [
    ['IPv4', '127.0.0.0/8'],
    ['IPv6', '::1/128'],
  ] as const) {
    test(`${family} rule`, () => {
      const { rules } = planObjects(upstreamNode({ family }), []);
      assert.equal(chainRules(rules, 'nat', 'KUBE-SERVICES')[0], `-A KUBE-SERVICES -s ${source} -j RETURN`);
    });
  }
});

describe('TestLoadBalancerIngressRouteTypeProxy: an ingress of ipMode Proxy gets no virtual server', () => {
  const cases = [
    { name: 'ipMode Proxy', clusterIP: '10.20.30.41', vip: '1.2.3.4', ipMode: 'Proxy', vipServer: false },
    { name: 'ipMode VIP', clusterIP: '10.20.30.42', vip: '1.2.3.5', ipMode: 'VIP', vipServer: true },
    { name: 'ipMode nil', clusterIP: '10.20.30.43', vip: '1.2.3.6', ipMode: undefined, vipServer: true },
  ];
  for (const c of cases) {
    test(c.name, () => {
      const svc = service(
        'ns1',
        'svc1',
        c.clusterIP,
        [{ name: 'p80', port: 80, protocol: 'TCP', nodePort: 3001 }],
        {
          type: 'LoadBalancer',
          ingress: [{ ip: c.vip, ...(c.ipMode !== undefined ? { ipMode: c.ipMode } : {}) }],
        },
      );
      const slice = tcpSlice('ns1', 'svc1', 1, [{ ip: '10.180.0.1' }]);
      const { plan } = planObjects(upstreamNode(), [svc], [slice]);
      const want: Record<string, VirtualServerView> = { [`TCP/${c.clusterIP}:80`]: rr('10.180.0.1:80') };
      if (c.vipServer) want[`TCP/${c.vip}:80`] = rr('10.180.0.1:80');
      assert.deepEqual(virtualServers(plan), want);
    });
  }
});

// Upstream's E2E cases write their Service ports without `port`: upstream keeps such a port and programs a
// virtual server on port 0 (TCP/172.20.1.1:0). The API server never admits such a Service, and our model drops
// the port with a problem ("is not a port number; dropped", model/service-port.ts): a deliberate difference,
// asserted here so that it cannot change unnoticed. The same cases with port 80 are ported above.
describe("upstream's E2E Services as they are written: a Service port without `port` is dropped here", () => {
  const portless = (extra: Parameters<typeof service>[4] = {}) =>
    service('ns1', 'svc1', '172.20.1.1', [{ name: '', protocol: 'TCP' }], extra);
  test('TestEndpointSliceE2E verbatim: no virtual server (upstream: one on port 0)', () => {
    const slice = e2eSlice([
      { ip: '10.0.1.1', nodeName: THIS_NODE, ready: true },
      { ip: '10.0.1.2', nodeName: 'node2', ready: true },
    ]);
    const { plan } = planObjects(upstreamNode(), [portless()], [slice]);
    assert.deepEqual(virtualServers(plan), {});
    assert.deepEqual(entries(plan, 'clusterIP'), []);
  });
  test('TestHealthCheckNodePortE2E verbatim: no health check entry (upstream: 30000)', () => {
    const svc = portless({
      type: 'LoadBalancer',
      externalTrafficPolicy: 'Local',
      healthCheckNodePort: 30000,
    });
    const { plan } = planObjects(upstreamNode(), [svc]);
    assert.deepEqual(entries(plan, 'healthCheckNodePort'), []);
  });
});
