// The lab's cluster DNS, made as kubeadm makes CoreDNS: Deployment kube-system/coredns (2 replicas, labels
// k8s-app=kube-dns, image registry.k8s.io/coredns/coredns:v1.11.3, ports dns 53/UDP and dns-tcp 53/TCP, ready on
// /ready at 8181, tolerating the control-plane taint) behind Service kube-system/kube-dns at the service range's tenth address (kubeadm's choice,
// what every kubelet's --cluster-dns names). DNS traffic from pods therefore goes to a ClusterIP and through the
// proxies like any other Service's.
//
// The image runs the lab's own DNS server (container-spec.ts maps it to `kube-proxy-ts-lab dns-server`), so the
// container's args are that command's flags, not a Corefile: the node's kubeconfig (the relay address
// 127.0.0.1:6443 and the lab's token) and the API server's Unix socket, which the server relays to itself inside
// its pod's namespace (src/dns/cluster-dns-server.ts).
import { LABEL_SERVICE_NAME } from 'kube-proxy-ts/api/objects.js';
import type { ApiServer } from '../apiserver/index.js';
import { CONTROL_PLANE_TAINT } from '../apiserver/control-plane.js';
import { arr, child, str } from '../apiserver/json.js';
import { bigIntToIp, parseCidr } from '../apiserver/ipnet.js';
import { resourceByKind } from '../apiserver/resources.js';
import { cidrsOf, DEFAULT_SERVICE_CIDR_NAME } from '../apiserver/service-cidr.js';

export const CLUSTER_DNS_NAMESPACE = 'kube-system';
export const COREDNS = 'coredns';
export const KUBE_DNS = 'kube-dns';
export const COREDNS_IMAGE = 'registry.k8s.io/coredns/coredns:v1.11.3';
export const KUBE_DNS_LABELS = { 'k8s-app': 'kube-dns' } as const;
export const COREDNS_REPLICAS = 2;
/** CoreDNS's ready plugin's port, asked by the Deployment's readiness probe. */
export const COREDNS_READY_PORT = 8181;

/** The DNS Service's address in a service range: its tenth address (198.19.0.0/16 → 198.19.0.10). */
export function clusterDnsIP(serviceCIDR: string): string | undefined {
  const cidr = parseCidr(serviceCIDR);
  return cidr ? bigIntToIp(cidr.family, cidr.base + 10n) : undefined;
}

/** The lab's cluster DNS address: the tenth of the API server's own service range (its default ServiceCIDR). */
export function labClusterDnsIP(server: ApiServer): string | undefined {
  const cidr = server.store.get(resourceByKind('ServiceCIDR'), '', DEFAULT_SERVICE_CIDR_NAME);
  const first = cidrsOf(cidr)[0];
  return first === undefined ? undefined : clusterDnsIP(first);
}

/** Whether `image` is CoreDNS's: the repository's last path element, without tag or digest, is `coredns`. */
export function isCorednsImage(image: string): boolean {
  const repository = image.replace(/@.*$/, '').replace(/:[^/:]*$/, '');
  return repository.split('/').pop() === 'coredns';
}

export interface ClusterDnsSpec {
  readonly clusterIP: string;
  /** The node's kubeconfig, with $(NODE_NAME) where the node's name goes. */
  readonly kubeconfigPath: string;
  readonly apiserverSocket: string;
}

/** [kind, namespace, object] of the ServiceAccount, Deployment and Service, in the order they are created. */
export function clusterDnsObjects(spec: ClusterDnsSpec): [string, string, object][] {
  const ns = CLUSTER_DNS_NAMESPACE;
  const serviceAccount = {
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    metadata: { name: COREDNS, namespace: ns },
  };
  const deployment = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: COREDNS, namespace: ns, labels: { ...KUBE_DNS_LABELS } },
    spec: {
      replicas: COREDNS_REPLICAS,
      selector: { matchLabels: { ...KUBE_DNS_LABELS } },
      template: {
        metadata: { labels: { ...KUBE_DNS_LABELS } },
        spec: {
          serviceAccountName: COREDNS,
          // As kubeadm's: CoreDNS itself must not ask CoreDNS (it would ask itself for the API server's name).
          dnsPolicy: 'Default',
          // As kubeadm's: a tainted control-plane node (`lab up --control-plane-taint`) still takes CoreDNS.
          tolerations: [{ key: 'CriticalAddonsOnly', operator: 'Exists' }, { ...CONTROL_PLANE_TAINT }],
          containers: [
            {
              name: COREDNS,
              image: COREDNS_IMAGE,
              args: [`--kubeconfig=${spec.kubeconfigPath}`, `--apiserver-socket=${spec.apiserverSocket}`],
              env: [{ name: 'NODE_NAME', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } }],
              ports: [
                { name: 'dns', containerPort: 53, protocol: 'UDP' },
                { name: 'dns-tcp', containerPort: 53, protocol: 'TCP' },
              ],
              // Asked every second (kubeadm: 10 s), so that a lab coming up waits seconds, not tens of them.
              readinessProbe: {
                httpGet: { path: '/ready', port: COREDNS_READY_PORT, scheme: 'HTTP' },
                periodSeconds: 1,
                timeoutSeconds: 2,
              },
            },
          ],
        },
      },
    },
  };
  const service = {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {
      name: KUBE_DNS,
      namespace: ns,
      labels: {
        ...KUBE_DNS_LABELS,
        'kubernetes.io/cluster-service': 'true',
        'kubernetes.io/name': 'CoreDNS',
      },
    },
    spec: {
      selector: { ...KUBE_DNS_LABELS },
      clusterIP: spec.clusterIP,
      ports: [
        { name: 'dns', port: 53, protocol: 'UDP', targetPort: 53 },
        { name: 'dns-tcp', port: 53, protocol: 'TCP', targetPort: 53 },
      ],
    },
  };
  return [
    ['ServiceAccount', ns, serviceAccount],
    ['Deployment', ns, deployment],
    ['Service', ns, service],
  ];
}

/** Whether kube-dns has a ready endpoint: a pod could resolve a name now. */
export function clusterDnsReady(server: ApiServer): boolean {
  return server.store
    .list(resourceByKind('EndpointSlice'), CLUSTER_DNS_NAMESPACE)
    .filter((s) => str(child(child(s, 'metadata'), 'labels'), LABEL_SERVICE_NAME) === KUBE_DNS)
    .some((s) => arr(s, 'endpoints').some((e) => child(e, 'conditions').ready !== false));
}
