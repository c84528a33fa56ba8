// Builds the node-level facts a backend needs (NodeNetworkConfig) from what the operator configured and what the
// node is: shared by the agent (config file + Node object + host) and `render` (flags only), so both program the
// same rules for the same inputs.
import { parseCIDRSloppy, parseIPSloppy } from '../model/ip.js';
import type { IPFamily } from '../model/ip.js';
import type { LocalTrafficDetector } from '../model/local-detector.js';
import { expandPrimary, nodePortAddressesFor } from '../model/nodeport-addresses.js';
import type { NodeNetworkConfig } from './backend.js';
import { masqueradeMarkFor } from './backend.js';

export const DETECT_LOCAL_MODES = [
  'ClusterCIDR',
  'NodeCIDR',
  'BridgeInterface',
  'InterfaceNamePrefix',
] as const;
export type DetectLocalMode = (typeof DETECT_LOCAL_MODES)[number];

export interface NodeNetworkInput {
  readonly family: IPFamily;
  readonly nodeName: string;
  /** All of this node's IPs, any family, first = primary. */
  readonly nodeIPs: readonly string[];
  readonly detectLocalMode: DetectLocalMode;
  readonly clusterCIDRs: readonly string[];
  /** The Node's spec.podCIDRs (NodeCIDR mode). */
  readonly podCIDRs?: readonly string[];
  readonly bridgeInterface?: string;
  readonly interfaceNamePrefix?: string;
  /** CIDRs or the single word "primary"; empty = all addresses. */
  readonly nodePortAddresses: readonly string[];
  readonly masqueradeAll: boolean;
  readonly masqueradeBit: number;
  /** Interface → addresses with prefix; when absent, the node IPs (as /32, /128) stand for the host's addresses. */
  readonly hostInterfaces?: ReadonlyMap<string, readonly string[]>;
  readonly serviceCIDRs?: readonly string[];
  /** Overrides the printed mark (upstream's tests use "0x4000"). */
  readonly masqueradeMark?: string;
}

export interface NodeNetworkResult {
  readonly config: NodeNetworkConfig;
  /** Inputs that were ignored, each naming the value and why. */
  readonly problems: readonly string[];
}

function firstCIDROf(
  family: IPFamily,
  cidrs: readonly string[],
  what: string,
  problems: string[],
): string | undefined {
  for (const c of cidrs) {
    const parsed = parseCIDRSloppy(c.trim());
    if (!parsed) {
      problems.push(`${what}: ${JSON.stringify(c)} is not a CIDR`);
      continue;
    }
    if (parsed.family === family) return parsed.text;
  }
  return undefined;
}

export function localDetectorFor(input: NodeNetworkInput, problems: string[]): LocalTrafficDetector {
  switch (input.detectLocalMode) {
    case 'ClusterCIDR': {
      const cidr = firstCIDROf(input.family, input.clusterCIDRs, 'clusterCIDR', problems);
      return cidr ? { mode: 'ClusterCIDR', cidr } : { mode: 'None' };
    }
    case 'NodeCIDR': {
      const cidr = firstCIDROf(input.family, input.podCIDRs ?? [], 'node podCIDRs', problems);
      return cidr ? { mode: 'NodeCIDR', cidr } : { mode: 'None' };
    }
    case 'BridgeInterface':
      return input.bridgeInterface
        ? { mode: 'BridgeInterface', interfaceName: input.bridgeInterface }
        : { mode: 'None' };
    case 'InterfaceNamePrefix':
      return input.interfaceNamePrefix
        ? { mode: 'InterfaceNamePrefix', interfacePrefix: input.interfaceNamePrefix }
        : { mode: 'None' };
  }
}

export function nodeNetworkConfig(input: NodeNetworkInput): NodeNetworkResult {
  const problems: string[] = [];
  const nodeIPs: string[] = [];
  const allNodeIPs: string[] = [];
  for (const raw of input.nodeIPs) {
    const ip = parseIPSloppy(raw.trim());
    if (!ip) {
      problems.push(`node IP ${JSON.stringify(raw)} is not an IP`);
      continue;
    }
    allNodeIPs.push(ip.text);
    if (ip.family === input.family) nodeIPs.push(ip.text);
  }
  const npa = nodePortAddressesFor(input.family, expandPrimary(input.nodePortAddresses, allNodeIPs));
  problems.push(...npa.problems);
  const hostInterfaces =
    input.hostInterfaces ??
    new Map([['node', nodeIPs.map((ip) => `${ip}/${input.family === 'IPv4' ? 32 : 128}`)]]);
  const serviceCIDRs: string[] = [];
  for (const c of input.serviceCIDRs ?? []) {
    const parsed = parseCIDRSloppy(c.trim());
    if (!parsed) problems.push(`service CIDR ${JSON.stringify(c)} is not a CIDR`);
    else if (parsed.family === input.family) serviceCIDRs.push(parsed.text);
  }
  const config: NodeNetworkConfig = {
    family: input.family,
    nodeName: input.nodeName,
    nodeIPs,
    localDetector: localDetectorFor(input, problems),
    masqueradeMark: input.masqueradeMark ?? masqueradeMarkFor(input.masqueradeBit),
    masqueradeAll: input.masqueradeAll,
    nodePortAddresses: npa.value,
    hostInterfaces,
    serviceCIDRs,
  };
  return { config, problems };
}
