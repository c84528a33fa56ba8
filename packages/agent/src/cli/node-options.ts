// The node settings that `render`, `explain` and `diff` take from flags: which node, its IPs and family, how pod
// traffic is recognised, NodePort addresses, masquerading, and what an iptables host would otherwise detect. One
// parser, so the three commands describe the same node the same way.
import type { Node } from '../api/objects.js';
import type { IptablesExtras } from '../backends/iptables/render.js';
import { nodePortAddressesOrDefault } from '../config/platform-defaults.js';
import type { ProxyMode } from '../config/proxy-mode.js';
import { readChoice } from '../config/choice.js';
import { nodeAddressFamilies, nodeIPs as nodeIPsOf, nodePodCIDRs } from '../model/node-facts.js';
import type { IPFamily } from '../model/ip.js';
import type { NodeNetworkConfig } from '../sync/backend.js';
import { DETECT_LOCAL_MODES, nodeNetworkConfig } from '../sync/node-network.js';
import type { DetectLocalMode } from '../sync/node-network.js';
import { UsageError } from './command-line.js';

/** parseArgs options for the node flags (merge into a command's own). */
export const NODE_OPTIONS = {
  'hostname-override': { type: 'string' },
  'node-ip': { type: 'string' },
  'ip-family': { type: 'string' },
  'cluster-cidr': { type: 'string' },
  'detect-local-mode': { type: 'string', default: 'ClusterCIDR' },
  'pod-bridge-interface': { type: 'string' },
  'pod-interface-name-prefix': { type: 'string' },
  'nodeport-addresses': { type: 'string' },
  'masquerade-all': { type: 'boolean', default: false },
  'masquerade-bit': { type: 'string', default: '14' },
  'service-cidrs': { type: 'string' },
  'iptables-localhost-nodeports': { type: 'string' },
  'random-fully': { type: 'string' },
  'nfacct-counters': { type: 'string' },
  'conntrack-tcp-be-liberal': { type: 'string' },
} as const;

export const NODE_FLAGS_USAGE = `  --node-ip IP[,IP]              this node's IPs, first is primary (default: the Node's InternalIPs, else ExternalIPs)
  --ip-family ipv4|ipv6          which family (default: the primary node IP's)
  --cluster-cidr CIDR[,CIDR]     pod range(s), for --detect-local-mode=ClusterCIDR
  --detect-local-mode MODE       ClusterCIDR (default), NodeCIDR, BridgeInterface, InterfaceNamePrefix
  --pod-bridge-interface IF      for BridgeInterface
  --pod-interface-name-prefix P  for InterfaceNamePrefix
  --nodeport-addresses LIST      CIDRs or "primary" (nftables default: primary; iptables: all)
  --masquerade-all               SNAT all traffic to ClusterIPs
  --masquerade-bit N             fwmark bit for masquerading (default 14)
  --service-cidrs CIDR[,CIDR]    service ranges (nftables drops traffic to unallocated ClusterIPs)
 iptables mode only, what the node would otherwise detect:
  --iptables-localhost-nodeports=true|false   (default true)
  --random-fully=true|false                   (default true)
  --nfacct-counters=NAME,...                  nfacct counters that exist (default none)
  --conntrack-tcp-be-liberal=true|false       (default false)
`;

/** The values parseArgs gives for NODE_OPTIONS. */
export interface NodeFlagValues {
  readonly 'hostname-override'?: string;
  readonly 'node-ip'?: string;
  readonly 'ip-family'?: string;
  readonly 'cluster-cidr'?: string;
  readonly 'detect-local-mode'?: string;
  readonly 'pod-bridge-interface'?: string;
  readonly 'pod-interface-name-prefix'?: string;
  readonly 'nodeport-addresses'?: string;
  readonly 'masquerade-all'?: boolean;
  readonly 'masquerade-bit'?: string;
  readonly 'service-cidrs'?: string;
  readonly 'iptables-localhost-nodeports'?: string;
  readonly 'random-fully'?: string;
  readonly 'nfacct-counters'?: string;
  readonly 'conntrack-tcp-be-liberal'?: string;
}

export interface NodeSettings {
  readonly nodeName: string;
  /** The node's Node object, when the input has it (zone label, pod CIDRs, addresses). */
  readonly node: Node | undefined;
  readonly family: IPFamily;
  readonly config: NodeNetworkConfig;
  readonly iptables: IptablesExtras;
  /** Settings that were given but could not be used, in words. */
  readonly problems: readonly string[];
}

export function list(v: string | undefined): string[] {
  return (v ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

function bool(name: string, v: string | undefined, dflt: boolean): boolean {
  if (v === undefined) return dflt;
  if (v === 'true') return true;
  if (v === 'false') return false;
  throw new UsageError(`--${name}: expected true or false, got ${JSON.stringify(v)}`);
}

/** The node flags that need no cluster state, read into their types; throws UsageError naming a wrong flag. */
export function checkNodeFlags(values: NodeFlagValues): {
  readonly detectLocalMode: DetectLocalMode;
  readonly masqueradeBit: number;
} {
  const detectLocalMode = readChoice('mode', DETECT_LOCAL_MODES, values['detect-local-mode'], 'ClusterCIDR');
  if (!detectLocalMode.ok) throw new UsageError(`--detect-local-mode: ${detectLocalMode.message}`);
  return { detectLocalMode: detectLocalMode.value, masqueradeBit: masqueradeBitOf(values) };
}

function masqueradeBitOf(values: NodeFlagValues): number {
  const text = values['masquerade-bit'] ?? '14';
  const bit = Number(text);
  if (!Number.isInteger(bit) || bit < 0 || bit > 31) {
    throw new UsageError(`--masquerade-bit: must be an integer 0-31, got ${JSON.stringify(text)}`);
  }
  return bit;
}

function familyFrom(flag: string | undefined, nodeIPs: readonly string[]): IPFamily {
  if (flag !== undefined) {
    const f = flag.toLowerCase();
    if (f === 'ipv4') return 'IPv4';
    if (f === 'ipv6') return 'IPv6';
    throw new UsageError(`--ip-family: expected ipv4 or ipv6, got ${JSON.stringify(flag)}`);
  }
  // The agent's own choice (model/node-facts.ts); a command has no bindAddress, so the first node IP decides.
  return nodeAddressFamilies('', nodeIPs).primary;
}

/**
 * The settings of node `nodeName` in `mode`, from the flags and (when present) its Node object among `nodes`.
 * --node-ip, when given, wins over the Node's addresses; without either the node is 127.0.0.1 (a problem).
 */
export function nodeSettings(
  values: NodeFlagValues,
  mode: ProxyMode,
  nodeName: string,
  nodes: readonly Node[],
): NodeSettings {
  const { detectLocalMode, masqueradeBit } = checkNodeFlags(values);
  const problems: string[] = [];
  const node = nodes.find((n) => n.metadata.name === nodeName);
  const nodeIPs = values['node-ip'] !== undefined ? list(values['node-ip']) : nodeIPsOf(node);
  if (nodeIPs.length === 0) {
    problems.push('no node IP given (--node-ip) and no Node object with addresses; using 127.0.0.1');
    nodeIPs.push('127.0.0.1');
  }
  const family = familyFrom(values['ip-family'], nodeIPs);
  const nodePortAddresses = nodePortAddressesOrDefault(mode, list(values['nodeport-addresses']));
  const { config, problems: configProblems } = nodeNetworkConfig({
    family,
    nodeName,
    nodeIPs,
    detectLocalMode,
    clusterCIDRs: list(values['cluster-cidr']),
    podCIDRs: nodePodCIDRs(node),
    bridgeInterface: values['pod-bridge-interface'],
    interfaceNamePrefix: values['pod-interface-name-prefix'],
    nodePortAddresses,
    masqueradeAll: values['masquerade-all'] === true,
    masqueradeBit,
    serviceCIDRs: list(values['service-cidrs']),
  });
  problems.push(...configProblems.map((p) => `ignored ${p}`));
  const iptables: IptablesExtras = {
    localhostNodePorts: bool('iptables-localhost-nodeports', values['iptables-localhost-nodeports'], true),
    randomFully: bool('random-fully', values['random-fully'], true),
    nfacctCounters: list(values['nfacct-counters']),
    conntrackTCPBeLiberal: bool('conntrack-tcp-be-liberal', values['conntrack-tcp-be-liberal'], false),
  };
  return { nodeName, node, family, config, iptables, problems };
}
