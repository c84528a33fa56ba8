// The kernel tests' cluster for the flat layout, IPv4 and IPv6: every kind of frontend (ClusterIP, NodePort,
// external IP, load-balancer VIP with source ranges), both traffic policies, ClientIP affinity and TCP, UDP and
// SCTP, with a Service whose endpoint count the tests vary. Used by flat-kernel.test.ts and by the libnftables
// executor's comparison with `nft -f` (test/netfilter/nft/library-scenario.ts).
import type { EndpointSlice, Service } from '../../../packages/agent/src/api/objects.js';
import type { IPFamily } from '../../../packages/agent/src/model/ip.js';
import { nodePortAddressesFor } from '../../../packages/agent/src/model/nodeport-addresses.js';
import type { NodeNetworkConfig } from '../../../packages/agent/src/sync/backend.js';
import { ModelCluster } from '../../helpers/model-cluster.js';

const FAMILY = {
  IPv4: {
    nodeIP: '198.18.0.2',
    pod: (n: number) => `198.18.10.${n}`,
    vip: (n: number) => `198.19.0.${n}`,
    range: '198.18.64.0/18',
    inner: '198.18.65.0/24',
    cidr: '198.18.0.0/17',
    serviceCIDR: '198.19.0.0/16',
  },
  IPv6: {
    nodeIP: '2001:db8::2',
    pod: (n: number) => `2001:db8:10::${n}`,
    vip: (n: number) => `2001:db8:ff::${n}`,
    range: '2001:db8:40::/48',
    inner: '2001:db8:40:1::/64',
    cidr: '2001:db8::/40',
    serviceCIDR: '2001:db8:ff::/64',
  },
} as const;

export function nodeFor(family: IPFamily): NodeNetworkConfig {
  const f = FAMILY[family];
  return {
    family,
    nodeName: 'node-a',
    nodeIPs: [f.nodeIP],
    localDetector: { mode: 'ClusterCIDR', cidr: f.cidr },
    serviceCIDRs: [f.serviceCIDR],
    masqueradeMark: '0x00004000',
    masqueradeAll: false,
    nodePortAddresses: nodePortAddressesFor(family, ['primary']).value,
    hostInterfaces: new Map([['eth0', [`${f.nodeIP}/${family === 'IPv4' ? 24 : 64}`]]]),
  };
}

export function objects(
  family: IPFamily,
  endpointsOfWeb: number,
): { services: Service[]; slices: EndpointSlice[] } {
  const f = FAMILY[family];
  const addressType = family;
  const svc = (name: string, vip: number, spec: Partial<Service['spec']>, lb?: string): Service => ({
    metadata: { namespace: 'ns', name },
    spec: { type: 'ClusterIP', clusterIP: f.vip(vip), ipFamilies: [family], ports: [], ...spec },
    ...(lb !== undefined ? { status: { loadBalancer: { ingress: [{ ip: lb }] } } } : {}),
  });
  const slice = (name: string, eps: [number, string][], ports: EndpointSlice['ports']): EndpointSlice => ({
    metadata: { namespace: 'ns', name: `${name}-1`, labels: { 'kubernetes.io/service-name': name } },
    addressType,
    endpoints: eps.map(([n, nodeName]) => ({ addresses: [f.pod(n)], nodeName })),
    ports,
  });
  const http = [{ name: 'http', port: 8080, protocol: 'TCP' as const }];
  return {
    services: [
      svc('web', 10, { ports: [{ name: 'http', port: 80, protocol: 'TCP' }] }),
      svc('dns', 11, {
        type: 'NodePort',
        ports: [{ name: 'dns', port: 53, protocol: 'UDP', nodePort: 30053 }],
      }),
      svc(
        'lb',
        12,
        {
          type: 'LoadBalancer',
          externalTrafficPolicy: 'Local',
          healthCheckNodePort: 30999,
          externalIPs: [f.vip(100)],
          loadBalancerSourceRanges: [f.range, f.inner],
          ports: [{ name: 'http', port: 80, protocol: 'TCP', nodePort: 30080 }],
        },
        f.vip(200),
      ),
      svc('sticky', 13, {
        sessionAffinity: 'ClientIP',
        internalTrafficPolicy: 'Local',
        ports: [{ name: 'http', port: 80, protocol: 'TCP' }],
      }),
      svc('sctp', 14, { ports: [{ name: 's', port: 9, protocol: 'SCTP' }] }),
      svc('empty', 15, {
        type: 'NodePort',
        ports: [{ name: 'http', port: 80, protocol: 'TCP', nodePort: 30081 }],
      }),
    ],
    slices: [
      slice(
        'web',
        Array.from({ length: endpointsOfWeb }, (_, i): [number, string] => [
          20 + i,
          i % 2 ? 'node-a' : 'node-b',
        ]),
        http,
      ),
      slice('dns', [[1, 'node-b']], [{ name: 'dns', port: 5353, protocol: 'UDP' }]),
      slice(
        'lb',
        [
          [2, 'node-a'],
          [3, 'node-b'],
        ],
        http,
      ),
      slice(
        'sticky',
        [
          [4, 'node-a'],
          [5, 'node-a'],
        ],
        http,
      ),
      slice('sctp', [[6, 'node-b']], [{ name: 's', port: 9, protocol: 'SCTP' }]),
      slice('empty', [], http),
    ],
  };
}

/** node-a's cluster model, and `load(n)`: upserts every Service and slice of objects(), the web Service with n endpoints. */
export function flatCluster(family: IPFamily): {
  cluster: ModelCluster;
  load: (endpointsOfWeb: number) => void;
} {
  const cluster = new ModelCluster(family, 'node-a');
  const load = (n: number): void => {
    const o = objects(family, n);
    for (const s of o.services) cluster.upsertService(s);
    for (const s of o.slices) cluster.upsertSlice(s);
  };
  return { cluster, load };
}
