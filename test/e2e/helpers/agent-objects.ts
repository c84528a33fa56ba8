// The objects the agent e2e tests show the proxy: one Node, Services and their EndpointSlices, as the plain JSON an
// API server sends. Addresses come from the test ranges only (198.18.0.0/15): node 198.18.0.10, pods in
// 198.18.10.0/24 (inside the cluster CIDR), Services in 198.19.0.0/16.
import type { FakeObject } from '../../kube/helpers/fake-apiserver.js';

export const NODE_NAME = 'agent-node';
export const NODE_IP = '198.18.0.10';
export const CLUSTER_CIDR = '198.18.8.0/21';
export const POD_CIDR = '198.18.10.0/24';

/** Collection paths the proxy lists and watches (the fake API server ignores selectors: none of ours need them). */
export const PATHS = {
  nodes: '/api/v1/nodes',
  services: '/api/v1/services',
  endpointSlices: '/apis/discovery.k8s.io/v1/endpointslices',
} as const;

/** FakeObject types only the metadata it reads; labels and the rest pass through as sent. */
function meta(
  m: FakeObject['metadata'] & { readonly labels?: Readonly<Record<string, string>> },
): FakeObject['metadata'] {
  return m;
}

export function nodeObject(name = NODE_NAME, ip = NODE_IP): FakeObject {
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: meta({ name, labels: { 'kubernetes.io/hostname': name } }),
    spec: { podCIDR: POD_CIDR, podCIDRs: [POD_CIDR] },
    status: { addresses: [{ type: 'InternalIP', address: ip }] },
  };
}

export interface ServicePortInput {
  readonly name: string;
  readonly port: number;
  readonly protocol?: 'TCP' | 'UDP' | 'SCTP';
  readonly targetPort?: number;
  readonly nodePort?: number;
}

export interface ServiceInput {
  readonly name: string;
  readonly namespace?: string;
  readonly clusterIP: string;
  readonly type?: 'ClusterIP' | 'NodePort';
  readonly ports: readonly ServicePortInput[];
}

export function serviceObject(s: ServiceInput): FakeObject {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: s.name, namespace: s.namespace ?? 'default' },
    spec: {
      type: s.type ?? 'ClusterIP',
      clusterIP: s.clusterIP,
      clusterIPs: [s.clusterIP],
      ipFamilies: ['IPv4'],
      ports: s.ports.map((p) => ({
        name: p.name,
        port: p.port,
        protocol: p.protocol ?? 'TCP',
        targetPort: p.targetPort ?? p.port,
        ...(p.nodePort !== undefined ? { nodePort: p.nodePort } : {}),
      })),
    },
  };
}

export interface SliceInput {
  readonly service: string;
  readonly namespace?: string;
  /** Default `${service}-1`. */
  readonly name?: string;
  readonly addresses: readonly string[];
  readonly ports: readonly { readonly name: string; readonly port: number; readonly protocol?: string }[];
}

export function sliceObject(s: SliceInput): FakeObject {
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: meta({
      name: s.name ?? `${s.service}-1`,
      namespace: s.namespace ?? 'default',
      labels: { 'kubernetes.io/service-name': s.service },
    }),
    addressType: 'IPv4',
    endpoints: s.addresses.map((address) => ({
      addresses: [address],
      conditions: { ready: true, serving: true, terminating: false },
      nodeName: NODE_NAME,
    })),
    ports: s.ports.map((p) => ({ name: p.name, port: p.port, protocol: p.protocol ?? 'TCP' })),
  };
}

export function keyOf(obj: FakeObject): string {
  return obj.metadata.namespace ? `${obj.metadata.namespace}/${obj.metadata.name}` : obj.metadata.name;
}

/** The objects as a v1 List (what `kube-proxy-ts render -f` reads), without server-set fields. */
export function manifestList(objects: readonly FakeObject[]): string {
  const items = objects.map((o) => {
    const { resourceVersion: _rv, ...metadata } = o.metadata;
    return { ...o, metadata };
  });
  return `${JSON.stringify({ apiVersion: 'v1', kind: 'List', items }, null, 1)}\n`;
}

/** A small web Service with `n` endpoints on port 80 → 8080 (a NodePort one when `nodePort` is given). */
export function webService(
  name: string,
  clusterIP: string,
  endpoints: readonly string[],
  nodePort?: number,
): { service: FakeObject; slice: FakeObject } {
  return {
    service: serviceObject({
      name,
      clusterIP,
      ...(nodePort !== undefined ? { type: 'NodePort' as const } : {}),
      ports: [{ name: 'http', port: 80, targetPort: 8080, ...(nodePort !== undefined ? { nodePort } : {}) }],
    }),
    slice: sliceObject({ service: name, addresses: endpoints, ports: [{ name: 'http', port: 8080 }] }),
  };
}
