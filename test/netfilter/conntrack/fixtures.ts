// Plain-value ServicePorts and Endpoints for the conntrack tests (built by hand, not through src/model).
import type { Endpoint } from '../../../packages/agent/src/model/endpoint.js';
import type { IPFamily } from '../../../packages/agent/src/model/ip.js';
import type { ServicePort } from '../../../packages/agent/src/model/service-port.js';
import type { Protocol } from '../../../packages/agent/src/model/service-port-name.js';

export function servicePort(
  ns: string,
  name: string,
  o: {
    family?: IPFamily;
    clusterIP: string;
    port: number;
    protocol?: Protocol;
    nodePort?: number;
    externalIPs?: string[];
    loadBalancerVIPs?: string[];
    portName?: string;
  },
): ServicePort {
  const protocol = o.protocol ?? 'UDP';
  const portName = o.portName ?? 'p';
  return {
    key: `${ns}\u0000${name}\u0000${portName}\u0000${protocol}`,
    name: { namespace: ns, name, port: portName, protocol },
    nameString: `${ns}/${name}:${portName}`,
    serviceName: `${ns}/${name}`,
    family: o.family ?? 'IPv4',
    clusterIP: o.clusterIP,
    port: o.port,
    protocol,
    nodePort: o.nodePort ?? 0,
    sessionAffinityClientIP: false,
    stickyMaxAgeSeconds: 0,
    externalIPs: o.externalIPs ?? [],
    loadBalancerSourceRanges: [],
    loadBalancerVIPs: o.loadBalancerVIPs ?? [],
    healthCheckNodePort: 0,
    externalPolicyLocal: false,
    internalPolicyLocal: false,
  };
}

export function endpoint(
  ip: string,
  port: number,
  c: { ready?: boolean; serving?: boolean; terminating?: boolean; isLocal?: boolean } = {},
): Endpoint {
  const ready = c.ready ?? true;
  return {
    ip,
    port,
    endpoint: ip.includes(':') ? `[${ip}]:${port}` : `${ip}:${port}`,
    isLocal: c.isLocal ?? false,
    ready,
    serving: c.serving ?? ready,
    terminating: c.terminating ?? false,
    zoneHints: new Set(),
    nodeHints: new Set(),
  };
}
