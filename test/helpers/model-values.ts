// Model values built by hand for unit tests: an endpoint from a flag string, a service port and a node's network
// config from overrides.
import type { Endpoint } from '../../packages/agent/src/model/endpoint.js';
import type { ServicePort } from '../../packages/agent/src/model/service-port.js';
import type { NodeNetworkConfig } from '../../packages/agent/src/sync/backend.js';
import type { NodeNetworkInput } from '../../packages/agent/src/sync/node-network.js';
import { nodeNetworkConfig } from '../../packages/agent/src/sync/node-network.js';

/** An endpoint on port 80. Flags: r=ready, s=serving, t=terminating, l=local; hints as zone/node name lists. */
export function endpointOf(
  ip: string,
  flags: string,
  hints: { zones?: string[]; nodes?: string[] } = {},
): Endpoint {
  const c = (ch: string) => flags.includes(ch);
  return {
    ip,
    port: 80,
    endpoint: `${ip}:80`,
    isLocal: c('l'),
    ready: c('r'),
    serving: c('s'),
    terminating: c('t'),
    zoneHints: new Set(hints.zones ?? []),
    nodeHints: new Set(hints.nodes ?? []),
  };
}

/** A ClusterIP port ns/svc of TCP 80, with `p` overriding any field. */
export function servicePortOf(p: Partial<ServicePort> = {}): ServicePort {
  return {
    key: 'k',
    name: { namespace: 'ns', name: 'svc', port: '', protocol: 'TCP' },
    nameString: 'ns/svc',
    serviceName: 'ns/svc',
    family: 'IPv4',
    clusterIP: '198.18.0.1',
    port: 80,
    protocol: 'TCP',
    nodePort: 0,
    sessionAffinityClientIP: false,
    stickyMaxAgeSeconds: 0,
    externalIPs: [],
    loadBalancerSourceRanges: [],
    loadBalancerVIPs: [],
    healthCheckNodePort: 0,
    externalPolicyLocal: false,
    internalPolicyLocal: false,
    ...p,
  };
}

/**
 * A one-family IPv4 node, "node-a" at 198.18.0.2 with cluster CIDR 198.19.0.0/16, NodePorts on every address and
 * masquerade bit 14, for tests that need no particular node; `input` overrides any of nodeNetworkConfig's inputs.
 */
export function testNode(input: Partial<NodeNetworkInput> = {}): NodeNetworkConfig {
  return nodeNetworkConfig({
    family: 'IPv4',
    nodeName: 'node-a',
    nodeIPs: ['198.18.0.2'],
    detectLocalMode: 'ClusterCIDR',
    clusterCIDRs: ['198.19.0.0/16'],
    nodePortAddresses: [],
    masqueradeAll: false,
    masqueradeBit: 14,
    ...input,
  }).config;
}
