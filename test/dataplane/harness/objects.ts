// Kubernetes-shaped Services and EndpointSlices for the scenarios, written the way the API server and the
// EndpointSlice controller would write them, so that the model reads them exactly as it reads a real cluster's.
import { createHash } from 'node:crypto';
import type { EndpointSlice, Service, ServicePortSpec } from '../../../packages/agent/src/api/objects.js';
import { LABEL_SERVICE_NAME } from '../../../packages/agent/src/api/objects.js';
import type { IPFamily } from '../../../packages/agent/src/model/ip.js';

export const NAMESPACE = 'dataplane';

/** Every pod server listens on these (see makeTestCluster). */
export const POD_TCP_PORT = 8080;
export const POD_UDP_PORT = 5353;

export interface PortSpec {
  readonly name: string;
  readonly protocol: 'TCP' | 'UDP';
  readonly port: number;
  readonly targetPort: number;
  readonly nodePort?: number;
}

export interface ServiceSpecInput {
  readonly name: string;
  readonly clusterIP: string;
  readonly ports: readonly PortSpec[];
  readonly type?: 'ClusterIP' | 'NodePort' | 'LoadBalancer';
  readonly externalTrafficPolicy?: 'Cluster' | 'Local';
  readonly internalTrafficPolicy?: 'Cluster' | 'Local';
  readonly sessionAffinity?: 'None' | 'ClientIP';
  readonly externalIPs?: readonly string[];
  /** Makes the Service a LoadBalancer whose status carries these ingress IPs (ipMode VIP). */
  readonly loadBalancerIPs?: readonly string[];
  readonly loadBalancerSourceRanges?: readonly string[];
  readonly affinityTimeoutSeconds?: number;
}

export function httpPort(overrides: Partial<PortSpec> = {}): PortSpec {
  return { name: 'http', protocol: 'TCP', port: 80, targetPort: POD_TCP_PORT, ...overrides };
}

export function dnsPort(overrides: Partial<PortSpec> = {}): PortSpec {
  return { name: 'dns', protocol: 'UDP', port: 53, targetPort: POD_UDP_PORT, ...overrides };
}

/** A stable UID per object, as the API server keeps it across updates (derived from kind and name). */
function uid(kind: string, name: string): string {
  const hex = createHash('sha256').update(`${kind}/${NAMESPACE}/${name}`).digest('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-8${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

/** The family of an address as the scenarios write them (IPv6 has a colon). */
export function familyOf(ip: string): IPFamily {
  return ip.includes(':') ? 'IPv6' : 'IPv4';
}

/** A single-stack Service of its ClusterIP's family. */
export function service(input: ServiceSpecInput): Service {
  const type =
    input.type ??
    (input.loadBalancerIPs !== undefined
      ? 'LoadBalancer'
      : input.ports.some((p) => p.nodePort !== undefined)
        ? 'NodePort'
        : 'ClusterIP');
  const ports: ServicePortSpec[] = input.ports.map((p) => ({
    name: p.name,
    protocol: p.protocol,
    port: p.port,
    targetPort: p.targetPort,
    ...(p.nodePort !== undefined ? { nodePort: p.nodePort } : {}),
  }));
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: input.name, namespace: NAMESPACE, uid: uid('Service', input.name) },
    spec: {
      type,
      selector: { app: input.name },
      clusterIP: input.clusterIP,
      clusterIPs: [input.clusterIP],
      ipFamilies: [familyOf(input.clusterIP)],
      ipFamilyPolicy: 'SingleStack',
      ports,
      sessionAffinity: input.sessionAffinity ?? 'None',
      ...(input.sessionAffinity === 'ClientIP'
        ? { sessionAffinityConfig: { clientIP: { timeoutSeconds: input.affinityTimeoutSeconds ?? 10800 } } }
        : {}),
      internalTrafficPolicy: input.internalTrafficPolicy ?? 'Cluster',
      ...(type === 'NodePort' || type === 'LoadBalancer'
        ? { externalTrafficPolicy: input.externalTrafficPolicy ?? 'Cluster' }
        : {}),
      ...(input.externalIPs ? { externalIPs: input.externalIPs } : {}),
      ...(input.loadBalancerSourceRanges ? { loadBalancerSourceRanges: input.loadBalancerSourceRanges } : {}),
    },
    ...(input.loadBalancerIPs
      ? { status: { loadBalancer: { ingress: input.loadBalancerIPs.map((ip) => ({ ip, ipMode: 'VIP' })) } } }
      : {}),
  };
}

export interface SliceEndpoint {
  readonly ip: string;
  readonly nodeName: string;
  readonly podName: string;
  readonly ready?: boolean;
  readonly serving?: boolean;
  readonly terminating?: boolean;
}

/** An endpoint's conditions, where they differ from ready, serving and not terminating. */
export type EndpointConditions = Partial<Pick<SliceEndpoint, 'ready' | 'serving' | 'terminating'>>;

/**
 * One slice for `svc` in the family of its ClusterIP (named `<svc>-<suffix>`), with a port per service port, as
 * the EndpointSlice controller writes it. Endpoint addresses must be of that family.
 */
export function endpointSlice(
  svc: Service,
  endpoints: readonly SliceEndpoint[],
  suffix = 'a',
): EndpointSlice {
  const name = svc.metadata.name ?? 'unnamed';
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: {
      name: `${name}-${suffix}`,
      namespace: NAMESPACE,
      uid: uid('EndpointSlice', `${name}-${suffix}`),
      labels: {
        [LABEL_SERVICE_NAME]: name,
        'endpointslice.kubernetes.io/managed-by': 'endpointslice-controller.k8s.io',
      },
    },
    addressType: familyOf(svc.spec?.clusterIP ?? ''),
    endpoints: endpoints.map((ep) => ({
      addresses: [ep.ip],
      conditions: {
        ready: ep.ready ?? true,
        serving: ep.serving ?? true,
        terminating: ep.terminating ?? false,
      },
      nodeName: ep.nodeName,
      targetRef: { kind: 'Pod', namespace: NAMESPACE, name: ep.podName },
    })),
    ports: (svc.spec?.ports ?? []).map((p) => ({
      name: p.name ?? '',
      protocol: p.protocol ?? 'TCP',
      port: typeof p.targetPort === 'number' ? p.targetPort : (p.port ?? 0),
    })),
  };
}
