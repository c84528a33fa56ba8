// The building blocks of a one-host cluster network, shared by the kernel tests' topology (topology.ts) and the
// lab (src/lab/cluster/network.ts): an underlay namespace holding one bridge, hosts plugged into it (the client,
// nodes), a node's pod bridge and forwarding, and pods on that bridge. Callers bring their own names and
// addresses (with prefix lengths); a family is set up for every address given, so the lab (one family or both:
// `lab up --ip-family`) and the kernel tests (dual-stack) run the same steps. Nothing here touches the root
// namespace.
import type { CommandRunner } from 'kube-proxy-ts/netfilter/command.js';
import type { RouteSpec } from './link.js';
import {
  addAddress,
  addBridge,
  addRoute,
  addVethPair,
  macForAddress,
  setBridgePortHairpin,
  setLinkMaster,
} from './link.js';
import { createNamespace } from './namespace.js';
import { getSysctl, setSysctl } from './sysctl.js';

/** Interface names, fixed per namespace (names only need to be unique inside one namespace). */
export const UNDERLAY_BRIDGE = 'ul0';
export const NODE_BRIDGE = 'cbr0';
export const UPLINK = 'eth0';

type IPFamily = 4 | 6;

const FORWARDING: Readonly<Record<IPFamily, string>> = {
  4: 'net.ipv4.ip_forward',
  6: 'net.ipv6.conf.all.forwarding',
};
/** Whether bridged frames pass the family's netfilter hooks (br_netfilter). */
const BRIDGE_NETFILTER: Readonly<Record<IPFamily, string>> = {
  4: 'net.bridge.bridge-nf-call-iptables',
  6: 'net.bridge.bridge-nf-call-ip6tables',
};

/** The families of `cidrs`, in first-seen order. */
function familiesOf(cidrs: readonly string[]): IPFamily[] {
  const families: IPFamily[] = [];
  for (const cidr of cidrs) {
    const family: IPFamily = cidr.includes(':') ? 6 : 4;
    if (!families.includes(family)) families.push(family);
  }
  return families;
}

/** "198.18.0.10" + "198.18.0.0/24" → "198.18.0.10/24": an address with its subnet's prefix length. */
export function withPrefixOf(ip: string, cidr: string): string {
  return ip + cidr.slice(cidr.indexOf('/'));
}

export interface UnderlaySpec {
  readonly namespace: string;
  /** The bridge's addresses with prefix ("198.18.0.1/24"): the "gateway" that nodes' default routes point to. */
  readonly gatewayAddresses: readonly string[];
}

/**
 * The underlay namespace and its bridge. It forwards nothing, so packets sent to the gateway end there, and it is
 * a plain wire: its bridged frames are kept out of netfilter.
 */
export async function buildUnderlay(runner: CommandRunner, underlay: UnderlaySpec): Promise<void> {
  await createNamespace(runner, underlay.namespace);
  await addBridge(runner, underlay.namespace, UNDERLAY_BRIDGE);
  for (const cidr of underlay.gatewayAddresses)
    await addAddress(runner, underlay.namespace, UNDERLAY_BRIDGE, cidr);
  const families = familiesOf(underlay.gatewayAddresses);
  for (const family of families) await setSysctl(runner, underlay.namespace, FORWARDING[family], 0);
  for (const family of families) await setSysctl(runner, underlay.namespace, BRIDGE_NETFILTER[family], 0);
}

/** A namespace whose uplink `eth0` plugs into a bridge in another namespace. */
interface PluggedNamespace {
  readonly namespace: string;
  /** The uplink's addresses with prefix. */
  readonly addresses: readonly string[];
}

export interface UnderlayHostSpec extends PluggedNamespace {
  readonly underlayNamespace: string;
  /** The host's port on the underlay bridge (an interface in the underlay namespace). */
  readonly underlayLink: string;
  readonly routes: readonly RouteSpec[];
}

/** Where a namespace's uplink plugs in: a bridge in another namespace, through a port of the given name. */
interface BridgePort {
  readonly namespace: string;
  readonly bridge: string;
  readonly link: string;
  readonly hairpin: boolean;
}

/** A namespace whose uplink `eth0` is a port of `port.bridge`, with its addresses and routes. */
async function plugIn(
  runner: CommandRunner,
  { namespace, addresses }: PluggedNamespace,
  port: BridgePort,
  routes: readonly RouteSpec[],
  mac?: string,
): Promise<void> {
  await createNamespace(runner, namespace);
  await addVethPair(
    runner,
    { namespace: port.namespace, name: port.link },
    { namespace, name: UPLINK, ...(mac !== undefined ? { address: mac } : {}) },
  );
  await setLinkMaster(runner, port.namespace, port.link, port.bridge);
  if (port.hairpin) await setBridgePortHairpin(runner, port.namespace, port.link, true);
  for (const cidr of addresses) await addAddress(runner, namespace, UPLINK, cidr);
  for (const route of routes) await addRoute(runner, namespace, route);
}

/** A namespace whose uplink is a port of the underlay bridge, with its addresses and routes. */
export async function buildUnderlayHost(runner: CommandRunner, host: UnderlayHostSpec): Promise<void> {
  const port = {
    namespace: host.underlayNamespace,
    bridge: UNDERLAY_BRIDGE,
    link: host.underlayLink,
    hairpin: false,
  };
  await plugIn(runner, host, port, host.routes);
}

export interface NodeSpec extends UnderlayHostSpec {
  /** The pod bridge's addresses with the pod CIDR's prefix: every pod's default gateway. */
  readonly podBridgeAddresses: readonly string[];
}

/**
 * A node: an underlay host that forwards, with a pod bridge. Routes are the caller's (the client's subnet on-link,
 * a default route, peers' pod CIDRs): see the README for why a node needs a default route.
 */
export async function buildNode(runner: CommandRunner, node: NodeSpec): Promise<void> {
  await buildUnderlayHost(runner, node);
  await buildPodBridge(runner, node);
}

/**
 * What makes a host with an uplink a node: forwarding on, and the pod bridge with its addresses and bridged
 * traffic through netfilter. buildNode's second half; on its own for a node whose namespace and uplink exist
 * already (a guest's root namespace, its eth0 on the underlay: packages/lab/src/vm/node.ts).
 */
export async function buildPodBridge(
  runner: CommandRunner,
  node: Pick<NodeSpec, 'namespace' | 'podBridgeAddresses'>,
): Promise<void> {
  const families = familiesOf(node.podBridgeAddresses);
  for (const family of families) await setSysctl(runner, node.namespace, FORWARDING[family], 1);
  await addBridge(runner, node.namespace, NODE_BRIDGE);
  for (const cidr of node.podBridgeAddresses) await addAddress(runner, node.namespace, NODE_BRIDGE, cidr);
  // Same-node pod replies are bridged; without this they would skip conntrack and reach the client un-DNATed.
  for (const family of families) {
    const key = BRIDGE_NETFILTER[family];
    await setSysctl(runner, node.namespace, key, 1);
    const seen = await getSysctl(runner, node.namespace, key);
    if (seen !== '1')
      throw new Error(`${node.namespace}: ${key} is ${seen}, need 1 (is br_netfilter loaded?)`);
  }
}

/** A pod; its addresses have the pod CIDR's prefix. */
export interface PodSpec extends PluggedNamespace {
  readonly nodeNamespace: string;
  /** The pod's port on the node's bridge (an interface in the node's namespace). */
  readonly nodeSideLink: string;
  /** The node's bridge addresses (no prefix): the pod's default routes, one per family. */
  readonly gateways: readonly string[];
}

/** A pod's namespace, its veth on the node's bridge (hairpin on, as the CNI bridge plugin), addresses and routes. */
export async function attachPod(runner: CommandRunner, pod: PodSpec): Promise<void> {
  const port = { namespace: pod.nodeNamespace, bridge: NODE_BRIDGE, link: pod.nodeSideLink, hairpin: true };
  const routes = pod.gateways.map((via) => ({ to: 'default', via }));
  // The MAC follows the address (macForAddress): an address given again comes with the MAC neighbours know.
  const first = pod.addresses[0]?.split('/')[0];
  await plugIn(runner, pod, port, routes, first ? macForAddress(first) : undefined);
}
