// Model values built by hand for unit tests: an endpoint from a flag string and a service port from overrides.
import type { Endpoint } from '../../packages/agent/src/model/endpoint.js';
import type { ServicePort } from '../../packages/agent/src/model/service-port.js';

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
