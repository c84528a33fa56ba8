// The Service every cluster has: default/kubernetes, which kube-apiserver's "kubernetes service" controller
// creates at start (pkg/controlplane/controller/kubernetesservice), with the endpoint reconciler's EndpointSlice
// and Endpoints naming the API server's advertised address. Clients find the API server through it, and
// upstream's conformance tests ("should provide secure master service", "should find a service from listing all
// namespaces") look for it.
//
// The shape is upstream's: labels component=apiserver and provider=kubernetes, ClusterIP the first address of the
// primary service range, one port "https" 443 → the secure port (6443), SingleStack. The lab's API server listens
// on 127.0.0.1 of the host and is carried into each node's namespace at 127.0.0.1:6443 (cluster/relay.ts); the
// advertised address is the first node's InternalIP, as kubeadm advertises the control-plane node's.
import type { Cidr } from './ipnet.js';
import { bigIntToIp } from './ipnet.js';
import type { JsonObject } from './json.js';

export const KUBERNETES_SERVICE_NAME = 'kubernetes';
export const KUBERNETES_SERVICE_NAMESPACE = 'default';
/** kube-apiserver's --secure-port default, which the Service's https port targets. */
export const SECURE_PORT = 6443;

const PORT = { name: 'https', protocol: 'TCP' } as const;

/** The Service: ClusterIP the first address after the primary range's network address (10.96.0.1 for 10.96.0.0/12). */
export function kubernetesService(primary: Cidr): JsonObject {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {
      name: KUBERNETES_SERVICE_NAME,
      namespace: KUBERNETES_SERVICE_NAMESPACE,
      labels: { component: 'apiserver', provider: 'kubernetes' },
    },
    spec: {
      type: 'ClusterIP',
      clusterIP: bigIntToIp(primary.family, primary.base + 1n),
      ipFamilyPolicy: 'SingleStack',
      ports: [{ ...PORT, port: 443, targetPort: SECURE_PORT }],
      sessionAffinity: 'None',
    },
  };
}

/** The endpoint reconciler's EndpointSlice for it: one ready endpoint, the advertised address, port https 6443. */
export function kubernetesEndpointSlice(advertiseAddress: string, family: 4 | 6): JsonObject {
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: {
      name: KUBERNETES_SERVICE_NAME,
      namespace: KUBERNETES_SERVICE_NAMESPACE,
      labels: { 'kubernetes.io/service-name': KUBERNETES_SERVICE_NAME },
    },
    addressType: family === 4 ? 'IPv4' : 'IPv6',
    endpoints: [{ addresses: [advertiseAddress], conditions: { ready: true } }],
    ports: [{ ...PORT, port: SECURE_PORT }],
  };
}

/** The reconciler's Endpoints (the lab's Endpoints controller mirrors only Services with a selector). */
export function kubernetesEndpoints(advertiseAddress: string): JsonObject {
  return {
    apiVersion: 'v1',
    kind: 'Endpoints',
    metadata: { name: KUBERNETES_SERVICE_NAME, namespace: KUBERNETES_SERVICE_NAMESPACE },
    subsets: [{ addresses: [{ ip: advertiseAddress }], ports: [{ ...PORT, port: SECURE_PORT }] }],
  };
}
