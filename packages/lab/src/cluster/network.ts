// The lab's wires: an underlay namespace with one bridge, a client namespace and one namespace per node on it,
// each node with a pod bridge; pods are added and removed one at a time as the API server schedules them.
// The building blocks are the kernel tests' (packages/netns/src/wiring.ts), with the lab's own names, the
// families the lab was started with (`lab up --ip-family`), and pods that come and go. Nothing here touches the
// root namespace: every link is created inside a named one. IPv6 addresses are added with `nodad` (wiring's
// addAddress): duplicate address detection would keep them tentative, unusable, for a second or more.
import type { CommandRunner } from 'kube-proxy-ts/netfilter/command.js';
import { deleteNamespace } from '@kube-proxy-ts/netns/index.js';
import type { RouteSpec } from '@kube-proxy-ts/netns/link.js';
import {
  UPLINK,
  attachPod as attachPodToNode,
  buildNode,
  buildUnderlay,
  buildUnderlayHost,
  withPrefixOf,
} from '@kube-proxy-ts/netns/wiring.js';
import type { Pod } from '../apiserver/types.js';
import type { LabLayout, LabNodeLayout } from './layout.js';

const familyOfIP = (ip: string): 4 | 6 => (ip.includes(':') ? 6 : 4);

/** A node's routes: the client's subnet on its uplink, a default route, and each peer's pod CIDR via the peer. */
export function labNodeRoutes(layout: LabLayout, node: LabNodeLayout): RouteSpec[] {
  const routes: RouteSpec[] = [];
  for (const plan of layout.families) {
    routes.push(
      { to: plan.clientCIDR, dev: UPLINK },
      // A real node has a default route: a ClusterIP packet that was not DNATed (no endpoints) must be routed to
      // meet the proxy's filter rules (a REJECT), not be refused as "network unreachable". The gateway drops it.
      { to: 'default', via: plan.underlayGateway },
    );
  }
  // Peers' pod CIDRs via their underlay address of the same family, as a host-gw CNI routes them.
  for (const peer of layout.nodes)
    if (peer !== node) for (const f of peer.families) routes.push({ to: f.podCIDR, via: f.ip });
  return routes;
}

/** A node's pod bridge addresses, one per family: its pods' gateways, with the pod CIDR's prefix. */
export function labPodBridgeAddresses(node: LabNodeLayout): string[] {
  return node.families.map((f) => withPrefixOf(f.gatewayIP, f.podCIDR));
}

function buildLabNode(runner: CommandRunner, layout: LabLayout, node: LabNodeLayout): Promise<void> {
  // Every node has the lab's families, in the layout's order.
  const addresses = node.families.map((f, i) => withPrefixOf(f.ip, layout.families[i]?.underlayCIDR ?? ''));
  return buildNode(runner, {
    namespace: node.namespace,
    underlayNamespace: layout.underlayNamespace,
    underlayLink: node.underlayLink,
    addresses,
    routes: labNodeRoutes(layout, node),
    // One bridge address per family: forwarding and br_netfilter are turned on for each (wiring.ts).
    podBridgeAddresses: labPodBridgeAddresses(node),
  });
}

/**
 * Creates the underlay, the client and every node but the guests' (`guestNodes`: their uplinks are the guests'
 * own, wired once they boot, cluster/guest-nodes.ts). Rejects with the first failure; `lab down` removes the rest.
 */
export async function buildLabNetwork(
  runner: CommandRunner,
  layout: LabLayout,
  guestNodes: ReadonlySet<string> = new Set(),
): Promise<void> {
  await buildUnderlay(runner, {
    namespace: layout.underlayNamespace,
    gatewayAddresses: layout.families.map((p) => withPrefixOf(p.underlayGateway, p.underlayCIDR)),
  });
  await buildUnderlayHost(runner, {
    namespace: layout.clientNamespace,
    underlayNamespace: layout.underlayNamespace,
    underlayLink: 'cl',
    addresses: layout.families.map((p) => withPrefixOf(p.clientIP, p.clientCIDR)),
    routes: layout.families.map((p) => ({ to: p.underlayCIDR, dev: UPLINK })),
  });
  const nodes = layout.nodes.filter((node) => !guestNodes.has(node.name));
  await Promise.all(nodes.map((node) => buildLabNode(runner, layout, node)));
}

/** A Pod's addresses: status.podIPs (one per family, primary first), or else the older status.podIP. */
export function podIPsOf(pod: Pod): string[] {
  const ips = (pod.status?.podIPs ?? []).map((p) => p.ip).filter((ip) => typeof ip === 'string' && ip !== '');
  if (ips.length > 0) return ips;
  return pod.status?.podIP ? [pod.status.podIP] : [];
}

export interface PodAttachment {
  readonly namespace: string;
  readonly node: LabNodeLayout;
  readonly veth: string;
  /** Its addresses, one per family (status.podIPs): each on eth0, with a default route via the node's bridge. */
  readonly ips: readonly string[];
}

/** A pod's namespace, its veth on the node's bridge (hairpin on, as the CNI bridge plugin), addresses and routes. */
export function attachPod(runner: CommandRunner, pod: PodAttachment): Promise<void> {
  const addresses: string[] = [];
  const gateways: string[] = [];
  for (const ip of pod.ips) {
    const f = pod.node.families.find((x) => x.family === familyOfIP(ip));
    if (!f) throw new Error(`pod ${pod.namespace}: ${ip} is of a family node ${pod.node.name} does not have`);
    addresses.push(withPrefixOf(ip, f.podCIDR));
    gateways.push(f.gatewayIP);
  }
  return attachPodToNode(runner, {
    namespace: pod.namespace,
    nodeNamespace: pod.node.namespace,
    nodeSideLink: pod.veth,
    addresses,
    gateways,
  });
}

/** Kills what runs in the pod's namespace and deletes it; its veth pair goes with it. Missing is fine. */
export async function detachPod(runner: CommandRunner, namespace: string): Promise<void> {
  await deleteNamespace(runner, namespace);
}
