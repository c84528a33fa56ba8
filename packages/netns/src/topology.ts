// A one-host cluster network: nodes and pods as network namespaces. planTopology() is pure (names and addresses);
// buildTopology() makes it real; destroyTopology() removes it, whatever state a failed build left behind.
//
//   client ns ──┐                       underlay ns: bridge "ul0" 198.18.0.1/24 (+ the client's 198.18.1.0/24)
//               ├─ ul0 ─┬─ eth0 node-0 ns: 198.18.0.10, ip_forward=1, bridge "cbr0" 198.18.10.1/24
//               │       │        └─ veth ─ eth0 pod ns 198.18.10.10, default via 198.18.10.1
//               │       └─ eth0 node-1 ns: 198.18.0.11, bridge "cbr0" 198.18.11.1/24, …
//
// Nodes route each other's pod CIDRs via the peer's underlay IP, as a host-gw CNI would. Pods on one node share a
// bridge, so same-node replies are bridged, not routed: the node keeps net.bridge.bridge-nf-call-iptables=1 so
// that such replies still pass conntrack and get un-DNATed, and pod ports are in hairpin mode so that a pod can
// reach itself through its Service: exactly what a kube-proxy node needs from its CNI (the bridge plugin does both).
// Every node, pod and client is dual-stack. Every address lies in 198.18.0.0/15 (RFC 2544 benchmarking) or
// 2001:db8::/32 (documentation), the only ranges tests may use; IPv6 mirrors IPv4 (node n's pods in
// 2001:db8:1n::/64, as 198.18.(10+n).0/24).
import type { CommandRunner } from 'kube-proxy-ts/netfilter/command.js';
import type { RouteSpec } from './link.js';
import { sweepNamespaces } from './namespace.js';
import type { NodeSpec } from './wiring.js';
import { UPLINK, attachPod, buildNode, buildUnderlay, buildUnderlayHost, withPrefixOf } from './wiring.js';

export const UNDERLAY_CIDR = '198.18.0.0/24';
export const CLIENT_CIDR = '198.18.1.0/24';
/** Contains every node's pod CIDR (198.18.10.0/24 … 198.18.15.0/24): the local-traffic detector's ClusterCIDR. */
export const CLUSTER_CIDR = '198.18.8.0/21';
export const SERVICE_CIDR = '198.19.0.0/16';
/** The underlay's "router": an address on the underlay bridge that forwards nothing (see buildTopology). */
export const UNDERLAY_GATEWAY = '198.18.0.1';
export const UNDERLAY_CIDR6 = '2001:db8::/64';
export const CLIENT_CIDR6 = '2001:db8:1::/64';
/** Contains every node's IPv6 pod CIDR (2001:db8:10::/64 … 2001:db8:15::/64). */
export const CLUSTER_CIDR6 = '2001:db8:10::/44';
/** A /112, as upstream's largest allowed IPv6 service range is /108. */
export const SERVICE_CIDR6 = '2001:db8:ff::/112';
export const UNDERLAY_GATEWAY6 = '2001:db8::1';
/**
 * Addresses outside every node and pod, for Services' externalIPs and load-balancer IPs. The client routes them
 * to node-0, standing in for the router or load balancer that sends such traffic to a node.
 */
export const EXTERNAL_CIDR = '198.18.200.0/24';
export const EXTERNAL_CIDR6 = '2001:db8:200::/64';
export const MAX_NODES = 6;
export const MAX_PODS_PER_NODE = 200;

/** One IP family's half of the address plan: the wires, the cluster's ranges, and where the client sits. */
export interface FamilyAddressPlan {
  readonly family: 4 | 6;
  readonly underlayCIDR: string;
  readonly underlayGateway: string;
  readonly clientCIDR: string;
  readonly clientIP: string;
  readonly clusterCIDR: string;
  readonly serviceCIDR: string;
  readonly externalCIDR: string;
}

/** The plan per family; the lab takes one half or both, the kernel tests both. */
export const FAMILY_PLANS: Readonly<Record<4 | 6, FamilyAddressPlan>> = {
  4: {
    family: 4,
    underlayCIDR: UNDERLAY_CIDR,
    underlayGateway: UNDERLAY_GATEWAY,
    clientCIDR: CLIENT_CIDR,
    clientIP: '198.18.1.10',
    clusterCIDR: CLUSTER_CIDR,
    serviceCIDR: SERVICE_CIDR,
    externalCIDR: EXTERNAL_CIDR,
  },
  6: {
    family: 6,
    underlayCIDR: UNDERLAY_CIDR6,
    underlayGateway: UNDERLAY_GATEWAY6,
    clientCIDR: CLIENT_CIDR6,
    clientIP: '2001:db8:1::10',
    clusterCIDR: CLUSTER_CIDR6,
    serviceCIDR: SERVICE_CIDR6,
    externalCIDR: EXTERNAL_CIDR6,
  },
};

/** Node n's addresses in one family: its underlay IP, its pod CIDR, and its pod bridge's address in it. */
export interface NodeFamilyAddresses {
  readonly ip: string;
  readonly podCIDR: string;
  readonly gatewayIP: string;
}

export function nodeFamilyAddresses(n: number, family: 4 | 6): NodeFamilyAddresses {
  if (family === 4) {
    const subnet = `198.18.${10 + n}`;
    return { ip: `198.18.0.${10 + n}`, podCIDR: `${subnet}.0/24`, gatewayIP: `${subnet}.1` };
  }
  // Hex digits that read like the IPv4 plan: node 1 → 2001:db8:11::/64 (as 198.18.11.0/24), underlay 2001:db8::11.
  const subnet6 = `2001:db8:1${n}:`;
  return { ip: `2001:db8::1${n}`, podCIDR: `${subnet6}:/64`, gatewayIP: `${subnet6}:1` };
}

export interface PodPlan {
  /** The pod's name (also its server's name): "pod-<node>-<k>". */
  readonly name: string;
  readonly namespace: string;
  readonly nodeName: string;
  readonly ip: string;
  readonly ip6: string;
  /** Interface on the node's bridge for this pod ("p<k>"). */
  readonly nodeSideLink: string;
}

export interface NodePlan {
  /** The Kubernetes node name: "node-<n>". */
  readonly name: string;
  readonly namespace: string;
  readonly ip: string;
  readonly ip6: string;
  readonly podCIDR: string;
  readonly podCIDR6: string;
  /** The node's address on its pod bridge: every pod's default gateway. */
  readonly gatewayIP: string;
  readonly gatewayIP6: string;
  /** Interface in the underlay namespace that leads to this node ("n<n>"). */
  readonly underlayLink: string;
  readonly pods: readonly PodPlan[];
}

export interface ClientPlan {
  readonly namespace: string;
  readonly ip: string;
  readonly ip6: string;
  readonly underlayLink: string;
}

export interface TopologyPlan {
  readonly prefix: string;
  readonly underlayNamespace: string;
  readonly nodes: readonly NodePlan[];
  readonly client: ClientPlan;
  readonly clusterCIDR: string;
  readonly serviceCIDR: string;
  readonly clusterCIDR6: string;
  readonly serviceCIDR6: string;
}

export interface TopologySpec {
  /** Every namespace is named `${prefix}-…`; destroyTopology sweeps the prefix. */
  readonly prefix: string;
  readonly nodes: number;
  /** Pods per node: one count for all, or one per node. */
  readonly podsPerNode: number | readonly number[];
}

/** The names and addresses for `spec`; throws on a spec outside the address plan. */
export function planTopology(spec: TopologySpec): TopologyPlan {
  if (!Number.isInteger(spec.nodes) || spec.nodes < 1 || spec.nodes > MAX_NODES) {
    throw new Error(`nodes: ${spec.nodes} is outside 1…${MAX_NODES} (pod CIDRs must fit in ${CLUSTER_CIDR})`);
  }
  const nodes: NodePlan[] = [];
  for (let n = 0; n < spec.nodes; n++) {
    const podCount = typeof spec.podsPerNode === 'number' ? spec.podsPerNode : (spec.podsPerNode[n] ?? 0);
    if (!Number.isInteger(podCount) || podCount < 0 || podCount > MAX_PODS_PER_NODE) {
      throw new Error(`podsPerNode[${n}]: ${podCount} is outside 0…${MAX_PODS_PER_NODE}`);
    }
    const name = `node-${n}`;
    const v4 = nodeFamilyAddresses(n, 4);
    const v6 = nodeFamilyAddresses(n, 6);
    const subnet = `198.18.${10 + n}`;
    // Pod k of node 1 is 2001:db8:11::1k (hex digits that read like 198.18.11.(10+k)).
    const subnet6 = `2001:db8:1${n}:`;
    const pods: PodPlan[] = [];
    for (let k = 0; k < podCount; k++) {
      pods.push({
        name: `pod-${n}-${k}`,
        namespace: `${spec.prefix}-n${n}p${k}`,
        nodeName: name,
        ip: `${subnet}.${10 + k}`,
        ip6: `${subnet6}:${10 + k}`,
        nodeSideLink: `p${k}`,
      });
    }
    nodes.push({
      name,
      namespace: `${spec.prefix}-n${n}`,
      ip: v4.ip,
      ip6: v6.ip,
      podCIDR: v4.podCIDR,
      podCIDR6: v6.podCIDR,
      gatewayIP: v4.gatewayIP,
      gatewayIP6: v6.gatewayIP,
      underlayLink: `n${n}`,
      pods,
    });
  }
  return {
    prefix: spec.prefix,
    underlayNamespace: `${spec.prefix}-ul`,
    nodes,
    client: {
      namespace: `${spec.prefix}-cl`,
      ip: FAMILY_PLANS[4].clientIP,
      ip6: FAMILY_PLANS[6].clientIP,
      underlayLink: 'cl',
    },
    clusterCIDR: CLUSTER_CIDR,
    serviceCIDR: SERVICE_CIDR,
    clusterCIDR6: CLUSTER_CIDR6,
    serviceCIDR6: SERVICE_CIDR6,
  };
}

/** Every namespace of the plan, underlay first. */
export function planNamespaces(plan: TopologyPlan): string[] {
  return [
    plan.underlayNamespace,
    plan.client.namespace,
    ...plan.nodes.flatMap((node) => [node.namespace, ...node.pods.map((p) => p.namespace)]),
  ];
}

function nodeSpec(plan: TopologyPlan, node: NodePlan): NodeSpec {
  // The external client lives in its own subnet on the same wire: reach it on-link, no router needed.
  const routes: RouteSpec[] = [
    { to: CLIENT_CIDR, dev: UPLINK },
    { to: CLIENT_CIDR6, dev: UPLINK },
    // A real node has a default route, so a packet to a ClusterIP that was *not* DNATed (no endpoints, unknown
    // port) is routed and meets the proxy's filter-forward rules; without any route the kernel would answer
    // "network unreachable" before netfilter's forward hook ever saw it. The gateway forwards nothing.
    { to: 'default', via: UNDERLAY_GATEWAY },
    { to: 'default', via: UNDERLAY_GATEWAY6 },
  ];
  for (const peer of plan.nodes) {
    if (peer === node) continue;
    routes.push({ to: peer.podCIDR, via: peer.ip }, { to: peer.podCIDR6, via: peer.ip6 });
  }
  return {
    namespace: node.namespace,
    underlayNamespace: plan.underlayNamespace,
    underlayLink: node.underlayLink,
    addresses: [withPrefixOf(node.ip, UNDERLAY_CIDR), withPrefixOf(node.ip6, UNDERLAY_CIDR6)],
    routes,
    podBridgeAddresses: [
      withPrefixOf(node.gatewayIP, node.podCIDR),
      withPrefixOf(node.gatewayIP6, node.podCIDR6),
    ],
  };
}

async function buildNodeAndPods(runner: CommandRunner, plan: TopologyPlan, node: NodePlan): Promise<void> {
  await buildNode(runner, nodeSpec(plan, node));
  for (const pod of node.pods) {
    await attachPod(runner, {
      namespace: pod.namespace,
      nodeNamespace: node.namespace,
      nodeSideLink: pod.nodeSideLink,
      addresses: [withPrefixOf(pod.ip, node.podCIDR), withPrefixOf(pod.ip6, node.podCIDR6)],
      gateways: [node.gatewayIP, node.gatewayIP6],
    });
  }
}

/**
 * Creates every namespace, link, address and route of `plan`. On failure it rejects with the first error and
 * leaves what it made: call destroyTopology (in a `finally`) either way.
 */
export async function buildTopology(runner: CommandRunner, plan: TopologyPlan): Promise<void> {
  await buildUnderlay(runner, {
    namespace: plan.underlayNamespace,
    gatewayAddresses: [
      withPrefixOf(UNDERLAY_GATEWAY, UNDERLAY_CIDR),
      withPrefixOf(UNDERLAY_GATEWAY6, UNDERLAY_CIDR6),
    ],
  });
  const client = plan.client;
  const entry = plan.nodes[0];
  await buildUnderlayHost(runner, {
    namespace: client.namespace,
    underlayNamespace: plan.underlayNamespace,
    underlayLink: client.underlayLink,
    addresses: [withPrefixOf(client.ip, CLIENT_CIDR), withPrefixOf(client.ip6, CLIENT_CIDR6)],
    routes: [
      { to: UNDERLAY_CIDR, dev: UPLINK },
      { to: UNDERLAY_CIDR6, dev: UPLINK },
      ...(entry
        ? [
            { to: EXTERNAL_CIDR, via: entry.ip },
            { to: EXTERNAL_CIDR6, via: entry.ip6 },
          ]
        : []),
    ],
  });
  // Nodes in parallel: each touches only its own namespaces (plus its own port on the underlay bridge).
  await Promise.all(plan.nodes.map((node) => buildNodeAndPods(runner, plan, node)));
}

/**
 * Removes everything the plan's prefix names: processes inside are killed first, and links go with their
 * namespaces. Safe after a partial build, and to call twice.
 */
export async function destroyTopology(runner: CommandRunner, plan: TopologyPlan): Promise<string[]> {
  return sweepNamespaces(runner, plan.prefix + '-');
}
