// The lab's wires: an underlay namespace with one bridge, a client namespace and one namespace per node on it,
// each node with a pod bridge; pods are added and removed one at a time as the API server schedules them.
// The building blocks are the kernel tests' (src/lab/netns/wiring.ts), with the lab's own names, IPv4 only, and
// with pods that come and go. Nothing here touches the root namespace: every link is created inside a named one.
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
import {
  CLIENT_CIDR,
  CLIENT_IP,
  UNDERLAY_CIDR,
  UNDERLAY_GATEWAY,
  type LabLayout,
  type LabNodeLayout,
} from './layout.js';

function buildLabNode(runner: CommandRunner, layout: LabLayout, node: LabNodeLayout): Promise<void> {
  const routes: RouteSpec[] = [
    { to: CLIENT_CIDR, dev: UPLINK },
    // A real node has a default route: a ClusterIP packet that was not DNATed (no endpoints) must be routed to
    // meet the proxy's filter rules (a REJECT), not be refused as "network unreachable". The gateway drops it.
    { to: 'default', via: UNDERLAY_GATEWAY },
  ];
  for (const peer of layout.nodes) {
    if (peer !== node) routes.push({ to: peer.podCIDR, via: peer.ip });
  }
  return buildNode(runner, {
    namespace: node.namespace,
    underlayNamespace: layout.underlayNamespace,
    underlayLink: node.underlayLink,
    addresses: [withPrefixOf(node.ip, UNDERLAY_CIDR)],
    routes,
    podBridgeAddresses: [withPrefixOf(node.gatewayIP, node.podCIDR)],
  });
}

/** Creates the underlay, the client and every node. Rejects with the first failure; `lab down` removes the rest. */
export async function buildLabNetwork(runner: CommandRunner, layout: LabLayout): Promise<void> {
  await buildUnderlay(runner, {
    namespace: layout.underlayNamespace,
    gatewayAddresses: [withPrefixOf(UNDERLAY_GATEWAY, UNDERLAY_CIDR)],
  });
  await buildUnderlayHost(runner, {
    namespace: layout.clientNamespace,
    underlayNamespace: layout.underlayNamespace,
    underlayLink: 'cl',
    addresses: [withPrefixOf(CLIENT_IP, CLIENT_CIDR)],
    routes: [{ to: UNDERLAY_CIDR, dev: UPLINK }],
  });
  await Promise.all(layout.nodes.map((node) => buildLabNode(runner, layout, node)));
}

export interface PodAttachment {
  readonly namespace: string;
  readonly node: LabNodeLayout;
  readonly veth: string;
  readonly ip: string;
}

/** A pod's namespace, its veth on the node's bridge (hairpin on, as the CNI bridge plugin), address and route. */
export function attachPod(runner: CommandRunner, pod: PodAttachment): Promise<void> {
  return attachPodToNode(runner, {
    namespace: pod.namespace,
    nodeNamespace: pod.node.namespace,
    nodeSideLink: pod.veth,
    addresses: [withPrefixOf(pod.ip, pod.node.podCIDR)],
    gateways: [pod.node.gatewayIP],
  });
}

/** Kills what runs in the pod's namespace and deletes it; its veth pair goes with it. Missing is fine. */
export async function detachPod(runner: CommandRunner, namespace: string): Promise<void> {
  await deleteNamespace(runner, namespace);
}
