// What the proxy reads of its Node object, worked out in one place for the agent and for every command that
// describes a node (render, explain, diff, the lab's views): its IPs, its pod CIDRs and its topology zone.
//   - IPs: the InternalIP addresses, or else the ExternalIP ones, in the object's order, invalid ones skipped
//     (upstream's GetNodeHostIPs in k8s.io/component-helpers/node/util, which kube-proxy's NodeManager uses).
//   - Pod CIDRs: spec.podCIDRs, or else the older single spec.podCIDR (an API server keeps the two in step; a
//     hand-written manifest may carry only the older field).
//   - Zone: the topology.kubernetes.io/zone label, for topology hints.
//   - Families: the primary is the first address's (bindAddress first when it names one); the other family is
//     proxied too when the node has an address of it (upstream's dual-stack choice in server_linux.go).
import { LABEL_TOPOLOGY_ZONE } from '../api/objects.js';
import type { Node } from '../api/objects.js';
import { parseIPSloppy } from './ip.js';
import type { IPFamily } from './ip.js';
import type { NodeTopology } from './topology.js';

export interface NodeFacts {
  readonly name: string;
  readonly ips: readonly string[];
  readonly podCIDRs: readonly string[];
  readonly zone?: string;
}

/** The Node's IPs in upstream's order: InternalIP addresses, or else ExternalIP addresses; invalid ones skipped. */
export function nodeIPs(node: Node | undefined): string[] {
  const addresses = Array.isArray(node?.status?.addresses) ? node.status.addresses : [];
  const ofType = (type: string): string[] =>
    addresses
      .filter((a) => typeof a === 'object' && a !== null && a.type === type && typeof a.address === 'string')
      .map((a) => a.address)
      .filter((ip) => parseIPSloppy(ip) !== undefined);
  const internal = ofType('InternalIP');
  return internal.length > 0 ? internal : ofType('ExternalIP');
}

/** spec.podCIDRs, or else [spec.podCIDR]; [] when the Node has neither. */
export function nodePodCIDRs(node: Node | undefined): string[] {
  const spec = node?.spec;
  if (Array.isArray(spec?.podCIDRs) && spec.podCIDRs.length > 0)
    return spec.podCIDRs.filter((c): c is string => typeof c === 'string');
  return typeof spec?.podCIDR === 'string' && spec.podCIDR !== '' ? [spec.podCIDR] : [];
}

/** The topology.kubernetes.io/zone label, if the Node has one. */
export function nodeZone(node: Node | undefined): string | undefined {
  const zone: unknown = node?.metadata.labels?.[LABEL_TOPOLOGY_ZONE];
  return typeof zone === 'string' ? zone : undefined;
}

/** The node as topology hints see it: its name and, when labelled, its zone. */
export function nodeTopology(nodeName: string, node: Node | undefined): NodeTopology {
  const zone = nodeZone(node);
  return zone === undefined ? { nodeName } : { nodeName, zone };
}

export function nodeFacts(node: Node): NodeFacts {
  const zone = nodeZone(node);
  return {
    name: node.metadata.name ?? '',
    ips: nodeIPs(node),
    podCIDRs: nodePodCIDRs(node),
    ...(zone !== undefined ? { zone } : {}),
  };
}

/** The node's addresses as the proxiers use them: bindAddress first when it names one, and the families. */
export interface NodeAddressFamilies {
  readonly ips: readonly string[];
  readonly primary: IPFamily;
  readonly families: readonly IPFamily[];
}

/** The primary family is the first address's; the other joins when the node has an address of it. */
export function nodeAddressFamilies(bindAddress: string, nodeIPs: readonly string[]): NodeAddressFamilies {
  const bind = parseIPSloppy(bindAddress);
  const ips = [...nodeIPs];
  if (bind && bind.text !== '0.0.0.0' && bind.text !== '::') ips.unshift(bind.text);
  const primary = parseIPSloppy(ips[0] ?? '')?.family ?? 'IPv4';
  const other: IPFamily = primary === 'IPv4' ? 'IPv6' : 'IPv4';
  const families: IPFamily[] = ips.some((ip) => parseIPSloppy(ip)?.family === other)
    ? [primary, other]
    : [primary];
  return { ips, primary, families };
}
