// The cluster of the seed experiment "what does each backend write to add one endpoint": `services` Services, each
// a ClusterIP with one TCP port and a slice of two endpoints, the first on this node (NODE) and the second on
// another. Every ClusterIP and endpoint IP is distinct, so no two Services share an nftables element. Used by the
// diff tests in-process (test/inspect) and as files for the CLI (test/cli).
import type { EndpointSlice, Node, Service } from '../../packages/agent/src/api/objects.js';

export const NODE = 'node-a';
export const NODE_IP = '198.18.0.2';
export const CLUSTER_CIDR = '198.19.0.0/16';
/** The ClusterIPs' range (--service-cidrs): nftables then drops traffic to unallocated ClusterIPs, one rule. */
export const SERVICE_CIDR = '198.18.128.0/17';

/** The n-th address of a /16 that starts at `base` ("198.19"), n < 65,536. */
function addr(base: string, n: number): string {
  return `${base}.${(n >> 8) & 255}.${n & 255}`;
}

export function service(i: number): Service {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { namespace: 'ns', name: `svc${i}` },
    spec: {
      type: 'ClusterIP',
      clusterIP: addr('198.18', 32768 + i),
      ports: [{ name: 'http', port: 80, protocol: 'TCP' }],
    },
  };
}

/** Service i's slice with `endpoints` endpoints: even ones on this node, odd ones on another. */
export function slice(i: number, endpoints: number): EndpointSlice {
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: { namespace: 'ns', name: `svc${i}-1`, labels: { 'kubernetes.io/service-name': `svc${i}` } },
    addressType: 'IPv4',
    endpoints: Array.from({ length: endpoints }, (_, e) => ({
      // Four addresses per Service: room for the added endpoint without meeting another Service's.
      addresses: [addr('198.19', i * 4 + e)],
      nodeName: e % 2 === 0 ? NODE : 'node-b',
    })),
    ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
  };
}

export const node: Node = {
  apiVersion: 'v1',
  kind: 'Node',
  metadata: { name: NODE },
  status: { addresses: [{ type: 'InternalIP', address: NODE_IP }] },
};

export interface Workload {
  readonly services: Service[];
  readonly endpointSlices: EndpointSlice[];
}

/** `services` Services with two endpoints each; `grown`'s slice has a third, on this node. */
export function workload(services: number, grown?: number): Workload {
  return {
    services: Array.from({ length: services }, (_, i) => service(i)),
    endpointSlices: Array.from({ length: services }, (_, i) => slice(i, i === grown ? 3 : 2)),
  };
}

/** The workload as `kubectl get -o json` prints it: one List, the Node included. */
export function workloadList(w: Workload): string {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'List',
    items: [node, ...w.services, ...w.endpointSlices],
  });
}
