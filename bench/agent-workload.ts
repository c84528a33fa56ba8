// What the agent-process bench's API server holds, and how its agent is started: bench/workload.ts's cluster (Service
// i with one port, its EndpointSlice with E endpoints, the first on this node) as the API's JSON, the Node, a
// kubeconfig for the server, and the flags a node passes.
import type { NftablesLayoutName } from 'kube-proxy-ts/config/nftables-layout.js';
import type { ApiObject } from './api-server.js';
import { benchService, benchSlice, NFTABLES_BENCH_NODE } from './workload.js';

export const NODE_NAME = NFTABLES_BENCH_NODE.nodeName;
export const NODE_IP = NFTABLES_BENCH_NODE.nodeIPs[0] ?? '198.18.0.2';
/** The pods' range of bench/workload.ts (its local-traffic detector). */
export const CLUSTER_CIDR = '198.19.0.0/16';
export const API_ADDRESS = '127.0.0.1:6443';
export const API_TOKEN = 'kpts-agent-bench';
/** How bench/agent-bench.ts hands a run its spec, and how the run's row comes back on its stdout. */
export const AGENT_CHILD_ENV = 'KPTS_BENCH_AGENT_CHILD';
export const ROW_MARK = 'KPTS_BENCH_AGENT_ROW ';

export const PATHS = {
  nodes: '/api/v1/nodes',
  services: '/api/v1/services',
  endpointSlices: '/apis/discovery.k8s.io/v1/endpointslices',
} as const;

export function nodeObject(): ApiObject {
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name: NODE_NAME, labels: { 'kubernetes.io/hostname': NODE_NAME } },
    status: { addresses: [{ type: 'InternalIP', address: NODE_IP }] },
  };
}

export function serviceObject(i: number): ApiObject {
  const s = benchService(i);
  const clusterIP = s.spec?.clusterIP ?? '';
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: s.metadata.name ?? '', namespace: s.metadata.namespace ?? '' },
    spec: { ...s.spec, clusterIPs: [clusterIP], ipFamilies: ['IPv4'] },
  };
}

/** Service i's slice; `variant` > 0 swaps its last endpoint's address (workload.ts's one-endpoint change). */
export function sliceObject(i: number, endpoints: number, variant: number): ApiObject {
  const s = benchSlice(i, endpoints, variant);
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    ...s,
    metadata: { ...s.metadata, name: s.metadata.name ?? '', namespace: s.metadata.namespace ?? '' },
  };
}

/** The address that Service i's last endpoint has in `variant` (what the kernel must come to hold). */
export function lastEndpointAddress(i: number, endpoints: number, variant: number): string {
  const s = benchSlice(i, endpoints, variant);
  return s.endpoints?.[endpoints - 1]?.addresses?.[0] ?? '';
}

export function kubeconfig(): string {
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    `- name: bench\n  cluster:\n    server: http://${API_ADDRESS}`,
    'users:',
    `- name: kube-proxy\n  user:\n    token: ${API_TOKEN}`,
    'contexts:',
    '- name: bench\n  context:\n    cluster: bench\n    user: kube-proxy',
    'current-context: bench',
    '',
  ].join('\n');
}

/**
 * The agent's command line: a node's (kubeconfig, name, nftables mode, the layout, the cluster CIDR, the directory
 * it leaves its state in for a restart, as deploy/'s DaemonSet would mount one), the conntrack zeros that keep it
 * from writing host-wide sysctls, and JSON logs at -v=2 (list and sync records).
 */
export function agentFlags(
  kubeconfigPath: string,
  layout: NftablesLayoutName,
  stateDir: string | undefined,
): string[] {
  return [
    ...(stateDir !== undefined ? ['--nftables-state-dir', stateDir] : []),
    '--kubeconfig',
    kubeconfigPath,
    '--hostname-override',
    NODE_NAME,
    '--proxy-mode',
    'nftables',
    '--nftables-layout',
    layout,
    '--cluster-cidr',
    CLUSTER_CIDR,
    '--conntrack-max-per-core=0',
    '--conntrack-tcp-timeout-established=0',
    '--conntrack-tcp-timeout-close-wait=0',
    '--logging-format=json',
    '--v=2',
  ];
}
