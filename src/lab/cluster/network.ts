// The lab's wires: an underlay namespace with one bridge, a client namespace and one namespace per node on it,
// each node with a pod bridge; pods are added and removed one at a time as the API server schedules them.
// The same shape as src/lab/netns/topology.ts (which the kernel tests use), with the lab's own names, and with
// pods that come and go. Nothing here touches the root namespace: every link is created inside a named one.
import type { CommandRunner } from '../../netfilter/command.js';
import {
  addAddress,
  addBridge,
  addRoute,
  addVethPair,
  createNamespace,
  deleteNamespace,
  getSysctl,
  setLinkMaster,
  setSysctl,
} from '../netns/index.js';
import { setBridgePortHairpin } from '../netns/link.js';
import {
  CLIENT_CIDR,
  CLIENT_IP,
  NODE_BRIDGE,
  UNDERLAY_BRIDGE,
  UNDERLAY_CIDR,
  UNDERLAY_GATEWAY,
  UPLINK,
  type LabLayout,
  type LabNodeLayout,
} from './layout.js';

const prefixLength = (cidr: string): string => cidr.slice(cidr.indexOf('/'));

async function buildNode(runner: CommandRunner, layout: LabLayout, node: LabNodeLayout): Promise<void> {
  await createNamespace(runner, node.namespace);
  await addVethPair(
    runner,
    { namespace: layout.underlayNamespace, name: node.underlayLink },
    { namespace: node.namespace, name: UPLINK },
  );
  await setLinkMaster(runner, layout.underlayNamespace, node.underlayLink, UNDERLAY_BRIDGE);
  await addAddress(runner, node.namespace, UPLINK, node.ip + prefixLength(UNDERLAY_CIDR));
  await addRoute(runner, node.namespace, { to: CLIENT_CIDR, dev: UPLINK });
  // A real node has a default route: a ClusterIP packet that was not DNATed (no endpoints) must be routed to
  // meet the proxy's filter rules (a REJECT), not be refused as "network unreachable". The gateway drops it.
  await addRoute(runner, node.namespace, { to: 'default', via: UNDERLAY_GATEWAY });
  for (const peer of layout.nodes) {
    if (peer !== node) await addRoute(runner, node.namespace, { to: peer.podCIDR, via: peer.ip });
  }
  await setSysctl(runner, node.namespace, 'net.ipv4.ip_forward', 1);
  await addBridge(runner, node.namespace, NODE_BRIDGE);
  await addAddress(runner, node.namespace, NODE_BRIDGE, node.gatewayIP + prefixLength(node.podCIDR));
  // Same-node pod replies are bridged; without this they would skip conntrack and reach the client un-DNATed.
  await setSysctl(runner, node.namespace, 'net.bridge.bridge-nf-call-iptables', 1);
  const seen = await getSysctl(runner, node.namespace, 'net.bridge.bridge-nf-call-iptables');
  if (seen !== '1')
    throw new Error(`${node.namespace}: net.bridge.bridge-nf-call-iptables is ${seen}, need 1`);
}

/** Creates the underlay, the client and every node. Rejects with the first failure; `lab down` removes the rest. */
export async function buildLabNetwork(runner: CommandRunner, layout: LabLayout): Promise<void> {
  const ul = layout.underlayNamespace;
  await createNamespace(runner, ul);
  await addBridge(runner, ul, UNDERLAY_BRIDGE);
  await addAddress(runner, ul, UNDERLAY_BRIDGE, UNDERLAY_GATEWAY + prefixLength(UNDERLAY_CIDR));
  await setSysctl(runner, ul, 'net.ipv4.ip_forward', 0);
  await setSysctl(runner, ul, 'net.bridge.bridge-nf-call-iptables', 0);

  await createNamespace(runner, layout.clientNamespace);
  await addVethPair(
    runner,
    { namespace: ul, name: 'cl' },
    { namespace: layout.clientNamespace, name: UPLINK },
  );
  await setLinkMaster(runner, ul, 'cl', UNDERLAY_BRIDGE);
  await addAddress(runner, layout.clientNamespace, UPLINK, CLIENT_IP + prefixLength(CLIENT_CIDR));
  await addRoute(runner, layout.clientNamespace, { to: UNDERLAY_CIDR, dev: UPLINK });

  await Promise.all(layout.nodes.map((node) => buildNode(runner, layout, node)));
}

export interface PodAttachment {
  readonly namespace: string;
  readonly node: LabNodeLayout;
  readonly veth: string;
  readonly ip: string;
}

/** A pod's namespace, its veth on the node's bridge (hairpin on, as the CNI bridge plugin), address and route. */
export async function attachPod(runner: CommandRunner, pod: PodAttachment): Promise<void> {
  await createNamespace(runner, pod.namespace);
  await addVethPair(
    runner,
    { namespace: pod.node.namespace, name: pod.veth },
    { namespace: pod.namespace, name: UPLINK },
  );
  await setLinkMaster(runner, pod.node.namespace, pod.veth, NODE_BRIDGE);
  await setBridgePortHairpin(runner, pod.node.namespace, pod.veth, true);
  await addAddress(runner, pod.namespace, UPLINK, pod.ip + prefixLength(pod.node.podCIDR));
  await addRoute(runner, pod.namespace, { to: 'default', via: pod.node.gatewayIP });
}

/** Kills what runs in the pod's namespace and deletes it; its veth pair goes with it. Missing is fine. */
export async function detachPod(runner: CommandRunner, namespace: string): Promise<void> {
  await deleteNamespace(runner, namespace);
}
