// The workload every mode's benchmark programs, in one place so the modes are compared on the same cluster: Service
// i has ClusterIP 198.18.128.0 + i and one port; its slice has E endpoints in 198.19.0.0/16, the first on this node.
// `variant` > 0 swaps the last endpoint for another address: the one-endpoint change.
import type { EndpointSlice, Service } from '../src/kube/objects.js';

function ip(base: string, n: number): string {
  return `${base}.${(n >> 8) & 255}.${n & 255}`;
}

export function benchService(i: number): Service {
  return {
    metadata: { namespace: `ns${i % 50}`, name: `svc${i}` },
    spec: {
      type: 'ClusterIP',
      clusterIP: ip('198.18', 32768 + i),
      ports: [{ name: 'http', port: 80, protocol: 'TCP' }],
    },
  };
}

export function benchSlice(i: number, endpoints: number, variant: number): EndpointSlice {
  return {
    metadata: {
      namespace: `ns${i % 50}`,
      name: `svc${i}-1`,
      labels: { 'kubernetes.io/service-name': `svc${i}` },
    },
    addressType: 'IPv4',
    endpoints: Array.from({ length: endpoints }, (_, e) => ({
      // 198.19.0.0/16 holds pod IPs; endpoint 0 is on this node (hairpin), the rest elsewhere.
      addresses: [
        e === endpoints - 1 && variant > 0
          ? ip('198.19', 60000 + variant)
          : ip('198.19', (i * endpoints + e) % 60000),
      ],
      nodeName: e === 0 ? 'bench-node' : 'other-node',
    })),
    ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
  };
}
