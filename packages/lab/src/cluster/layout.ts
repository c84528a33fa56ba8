// The lab's names, addresses and paths in one place, so that `lab up`, `lab down`, `lab exec` and `lab status`
// agree on them without talking to each other (down and exec also work after the lab process has died).
//
//   <prefix>-ul      underlay: bridge ul0 198.18.0.1/24 (2001:db8::1/64); node n's uplink is 198.18.0.(10+n)
//   <prefix>-client  the outside client, 198.18.1.10/24 (2001:db8:1::10/64) on the same wire (NodePort traffic)
//   <prefix>-<node>  one per node (control-plane, worker, worker2, …): pod bridge cbr0 = .1 (::1) of its pod CIDRs
//   <prefix>-<ns>-<pod>  one per pod: eth0 on its node's bridge, a default route per family via the bridge
import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { defaultNodeNames } from '../apiserver/index.js';
import {
  FAMILY_PLANS,
  MAX_NODES,
  nodeFamilyAddresses,
  type FamilyAddressPlan,
} from '@kube-proxy-ts/netns/topology.js';

// The address plan is the kernel tests' (packages/netns/src/topology.ts, README beside it); the lab uses its IPv4
// half (`lab up`, `--ip-family ipv4`), its IPv6 half (`ipv6`) or both, IPv4 first (`dual`). CLUSTER_CIDR holds
// every node's IPv4 pod CIDR (198.18.10.0/24 … 198.18.15.0/24): kube-proxy's clusterCIDR.
export { CLIENT_CIDR, CLUSTER_CIDR, UNDERLAY_CIDR, UNDERLAY_GATEWAY } from '@kube-proxy-ts/netns/topology.js';

/** `lab up --ip-family`: which families nodes, pods and Services get (dual: IPv4 primary, as kind's default). */
export const LAB_IP_FAMILIES = ['ipv4', 'ipv6', 'dual'] as const;
export type LabIPFamily = (typeof LAB_IP_FAMILIES)[number];
export const DEFAULT_IP_FAMILY: LabIPFamily = 'ipv4';

/** The families of a lab, primary first. */
export function familiesOf(ipFamily: LabIPFamily): readonly (4 | 6)[] {
  return ipFamily === 'ipv4' ? [4] : ipFamily === 'ipv6' ? [6] : [4, 6];
}

export const DEFAULT_PREFIX = 'kptslab';
/** As many nodes as the address plan has pod CIDRs for. */
export const MAX_LAB_NODES = MAX_NODES;
export const CLIENT_IP = FAMILY_PLANS[4].clientIP;
/** Where each node's relay listens, inside the node's namespace: the proxies' kubeconfig points here. */
export const NODE_APISERVER_ADDRESS = '127.0.0.1:6443';

/** A node's addresses in one family. */
export interface LabNodeFamily {
  readonly family: 4 | 6;
  readonly ip: string;
  readonly podCIDR: string;
  readonly gatewayIP: string;
}

export interface LabNodeLayout {
  readonly name: string;
  readonly index: number;
  readonly namespace: string;
  /** The primary family's underlay address, pod CIDR and pod bridge address (families[0]'s). */
  readonly ip: string;
  readonly podCIDR: string;
  readonly gatewayIP: string;
  /** Every family's, primary first: the Node's InternalIPs and spec.podCIDRs, in this order. */
  readonly families: readonly LabNodeFamily[];
  /** The node's port on the underlay bridge (in the underlay namespace). */
  readonly underlayLink: string;
}

export interface LabLayout {
  readonly prefix: string;
  readonly ipFamily: LabIPFamily;
  /** The address plan's halves this lab uses, primary first. */
  readonly families: readonly FamilyAddressPlan[];
  readonly underlayNamespace: string;
  readonly clientNamespace: string;
  readonly nodes: readonly LabNodeLayout[];
}

function nodeLayout(
  prefix: string,
  name: string,
  index: number,
  families: readonly (4 | 6)[],
): LabNodeLayout {
  const perFamily = families.map((family) => ({ family, ...nodeFamilyAddresses(index, family) }));
  const primary = perFamily[0] as LabNodeFamily;
  return {
    name,
    index,
    namespace: `${prefix}-${name}`,
    ip: primary.ip,
    podCIDR: primary.podCIDR,
    gatewayIP: primary.gatewayIP,
    families: perFamily,
    underlayLink: `n${index}`,
  };
}

export function labLayout(
  nodeCount: number,
  prefix = DEFAULT_PREFIX,
  ipFamily: LabIPFamily = DEFAULT_IP_FAMILY,
): LabLayout {
  if (!Number.isInteger(nodeCount) || nodeCount < 1 || nodeCount > MAX_LAB_NODES)
    throw new Error(
      `--nodes: ${nodeCount} is outside 1…${MAX_LAB_NODES} (pod CIDRs must fit in ${FAMILY_PLANS[4].clusterCIDR})`,
    );
  // `lab down` sweeps every namespace that starts with the prefix: it must be long and plain enough to be ours.
  if (!/^[a-z][a-z0-9]{5,19}$/.test(prefix))
    throw new Error(`prefix ${JSON.stringify(prefix)}: expected 6…20 lower-case letters and digits`);
  const families = familiesOf(ipFamily);
  return {
    prefix,
    ipFamily,
    families: families.map((f) => FAMILY_PLANS[f]),
    underlayNamespace: `${prefix}-ul`,
    clientNamespace: `${prefix}-client`,
    nodes: defaultNodeNames(nodeCount).map((name, index) => nodeLayout(prefix, name, index, families)),
  };
}

/** kube-proxy's clusterCIDR: every family's range of pod CIDRs, primary first, comma-separated. */
export function clusterCIDRs(layout: Pick<LabLayout, 'families'>): string[] {
  return layout.families.map((f) => f.clusterCIDR);
}

/** The API server's --service-cluster-ip-range: one range per family, primary first. */
export function serviceCIDRs(layout: Pick<LabLayout, 'families'>): string[] {
  return layout.families.map((f) => f.serviceCIDR);
}

/** The client's address per family, primary first (NodePort traffic comes from here). */
export function clientIPs(layout: Pick<LabLayout, 'families'>): string[] {
  return layout.families.map((f) => f.clientIP);
}

function shortHash(text: string, n: number): string {
  return createHash('sha256').update(text).digest('hex').slice(0, n);
}

/**
 * The namespace of a pod: readable (`kptslab-svc-web-5d8c…-x2x4k`) when it fits `ip netns`'s 64 characters,
 * else shortened with a hash of the full name so that it stays unique.
 */
export function podNamespaceName(prefix: string, podNamespace: string, podName: string): string {
  const full = `${prefix}-${podNamespace}-${podName}`;
  if (full.length <= 64) return full;
  return `${full.slice(0, 55)}-${shortHash(full, 8)}`;
}

/** The node-side veth of a pod, unique per node and within IFNAMSIZ: "veth" + 8 hex of the pod's uid. */
export function podVethName(podUID: string): string {
  return `veth${shortHash(podUID, 8)}`;
}

/** The lab's state directory: /run/kube-proxy-ts-lab as root (gone at reboot, as the namespaces are), else tmp. */
export function defaultStateDir(): string {
  const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  return isRoot ? '/run/kube-proxy-ts-lab' : join(tmpdir(), 'kube-proxy-ts-lab');
}

/**
 * A machine-wide lock per prefix, beside any state directory: two labs with different state directories but one
 * prefix would sweep each other's namespaces.
 */
export function prefixLockFile(prefix: string): string {
  const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  return join(isRoot ? '/run' : tmpdir(), `kube-proxy-ts-lab-${prefix}.lock`);
}

export interface LabPaths {
  readonly stateDir: string;
  readonly stateFile: string;
  readonly lockFile: string;
  readonly kubeconfig: string;
  /** The API server's Unix socket: a path is reachable from every network namespace. */
  readonly apiserverSocket: string;
  readonly labLog: string;
  /** `lab apiserver-restart` asks for a restart by writing this file; the lab removes it once it serves again. */
  readonly apiserverRestartRequest: string;
  nodeDir(node: string): string;
  nodeKubeconfig(node: string): string;
  nodeConfig(node: string): string;
  proxyLog(node: string): string;
  proxyPidFile(node: string): string;
  relayLog(node: string): string;
  /** The pid file of the node's relay to the API server. */
  relayPidFile(node: string): string;
  /**
   * The node's xtables lock (its proxy's $XTABLES_LOCKFILE): each lab node is a host of its own, so legacy
   * iptables writers on one node wait for each other and never for the real host's /run/xtables.lock.
   */
  nodeXtablesLock(node: string): string;
  /** The node's --nftables-state-dir (what its proxy leaves for the next one: deploy/'s /run/kube-proxy-ts). */
  nodeProxyStateDir(node: string): string;
  /** Where `iptables`, `iptables-save`, … name one back end for the proxies (`lab up --iptables legacy|nft`). */
  iptablesBinDir(backend: string): string;
  /** Guests' state directories (packages/lab/src/vm/), one per guest: `lab down` sweeps them (issue 29). */
  readonly guestsDir: string;
  podDir(): string;
}

export function labPaths(relativeOrAbsolute: string): LabPaths {
  // Absolute, always: containers run in writable layers of their own (a relative path would resolve there), and a
  // path in the state file must mean the same to `lab down` run from another directory.
  const stateDir = resolve(relativeOrAbsolute);
  const nodeDir = (node: string): string => join(stateDir, 'nodes', node);
  return {
    stateDir,
    stateFile: join(stateDir, 'state.json'),
    lockFile: join(stateDir, 'lock'),
    kubeconfig: join(stateDir, 'kubeconfig'),
    apiserverSocket: join(stateDir, 'apiserver.sock'),
    labLog: join(stateDir, 'lab.log'),
    apiserverRestartRequest: join(stateDir, 'apiserver-restart.request'),
    nodeDir,
    nodeKubeconfig: (node) => join(nodeDir(node), 'kubeconfig'),
    nodeConfig: (node) => join(nodeDir(node), 'config.conf'),
    proxyLog: (node) => join(nodeDir(node), 'kube-proxy.log'),
    proxyPidFile: (node) => join(nodeDir(node), 'kube-proxy.pid'),
    relayLog: (node) => join(nodeDir(node), 'relay.log'),
    relayPidFile: (node) => join(nodeDir(node), 'relay.pid'),
    nodeXtablesLock: (node) => join(nodeDir(node), 'xtables.lock'),
    nodeProxyStateDir: (node) => join(nodeDir(node), 'kube-proxy-ts'),
    iptablesBinDir: (backend) => join(stateDir, `iptables-${backend}`, 'bin'),
    guestsDir: join(stateDir, 'guests'),
    podDir: () => join(stateDir, 'pods'),
  };
}

/** iproute2 bind-mounts /etc/netns/NAME/* over /etc/* for commands run with `ip netns exec NAME`. */
export function etcNetnsDir(namespace: string): string {
  return join('/etc/netns', namespace);
}
