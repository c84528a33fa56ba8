// `explain`: what this node does with traffic to each port of a Service, and why. Everything here is read from
// the decision the agent itself uses (servicePortPolicy and its reasons, clusterIPMasquerade) and from the very
// renderers the backends run (for the kernel objects), so an explanation cannot drift from what is programmed.
import { renderServicePort as renderIptablesPort } from '../backends/iptables/service-port.js';
import type { IptablesExtras } from '../backends/iptables/render.js';
import { LARGE_CLUSTER_ENDPOINTS_THRESHOLD, totalEndpoints } from '../backends/iptables/render.js';
import { nftFamilyOf, nftNodePortIPs } from '../backends/nftables/backend.js';
import { TABLE_NAME } from '../backends/nftables/naming.js';
import { renderServicePort as renderNftPort } from '../backends/nftables/service-port.js';
import type { ProxyMode } from '../config/proxy-mode.js';
import type { Endpoint } from '../model/endpoint.js';
import { explainTraffic } from '../model/endpoint-reasons.js';
import type { FeatureGates } from '../model/feature-gates.js';
import { cidrContains, parseIPSloppy } from '../model/ip.js';
import { clusterIPMasquerade } from '../model/local-detector.js';
import { nodePortIPs } from '../model/nodeport-addresses.js';
import { ipvsTrafficPolicy, policyNode, servicePortPolicy } from '../model/port-policy.js';
import type {
  IpvsTrafficPolicy,
  NoEndpointsVerdict,
  ServicePortPolicy,
  TrafficPolicy,
} from '../model/port-policy.js';
import { externallyAccessible, servicePortString } from '../model/service-port.js';
import type { ServicePort } from '../model/service-port.js';
import { ipvsPortObjects } from './ipvs-objects.js';
import { writeOperation } from '../netfilter/nft/serialize.js';
import { ruleLine } from '../netfilter/iptables/serialize.js';
import type { IptablesRule } from '../netfilter/iptables/types.js';
import type { NodeNetworkConfig, ProxySnapshot } from '../sync/backend.js';

export interface ExplainedEndpoint {
  readonly endpoint: string;
  readonly reason: string;
}

export interface TrafficExplanation {
  readonly policy: 'Cluster' | 'Local';
  /** The endpoints this traffic is sent to, as IP:PORT. */
  readonly endpoints: readonly string[];
  readonly excluded: readonly ExplainedEndpoint[];
  /** What a packet meets when there is no endpoint for it, and why. */
  readonly noEndpoints?: { readonly verdict: NoEndpointsVerdict; readonly why: string };
  readonly notes: readonly string[];
}

export interface MasqueradeExplanation {
  /** For ClusterIP traffic and (when the port has external frontends) external traffic, by source. */
  readonly clusterIP: { readonly fromPod: string; readonly fromNode: string; readonly fromOutside: string };
  readonly external?: { readonly fromPod: string; readonly fromNode: string; readonly fromOutside: string };
  /** --from-ip: what this one source is taken for, and what happens to its traffic. */
  readonly fromIP?: {
    readonly ip: string;
    readonly is: 'pod' | 'node' | 'outside';
    readonly clusterIP: string;
    readonly external?: string;
  };
  readonly hairpin: string;
}

/** How to find one kernel object in the node's live table (explain --programmed). */
export type KernelCheck =
  | { readonly kind: 'nft-element'; readonly set: string; readonly key: string; readonly value?: string }
  | { readonly kind: 'nft-chain'; readonly chain: string; readonly rules: number }
  | { readonly kind: 'nft-set'; readonly set: string }
  | {
      readonly kind: 'iptables-chain';
      readonly table: 'filter' | 'nat';
      readonly chain: string;
      readonly rules: readonly (readonly string[])[];
    }
  | {
      readonly kind: 'iptables-rule';
      readonly table: 'filter' | 'nat';
      readonly chain: string;
      readonly args: readonly string[];
    }
  | {
      readonly kind: 'ipvs-virtual-server';
      /** virtualServerKey: "TCP/198.19.0.10:80". */
      readonly key: string;
      /** "rr", with " persistent 10800" when sticky: what the kernel must hold besides the real servers. */
      readonly service: string;
      /** realServerKey and weight, sorted: "198.18.10.2:8080 w1". */
      readonly realServers: readonly string[];
    }
  | { readonly kind: 'ipset-entry'; readonly set: string; readonly entry: string };

export interface KernelObject {
  /** The object as the node's tool writes it: an nft `add …` line, or an iptables chain / rule line. */
  readonly object: string;
  /** For iptables: which table. */
  readonly table?: string;
  readonly check: KernelCheck;
}

export interface PortExplanation {
  /** "ns/name:port" (servicePortNameString). */
  readonly servicePort: string;
  readonly service: string;
  readonly port: string;
  readonly protocol: string;
  readonly frontends: {
    readonly clusterIP: string;
    readonly nodePort?: { readonly port: number; readonly addresses: readonly string[] | 'all' };
    readonly externalIPs: readonly string[];
    readonly loadBalancerIPs: readonly string[];
    readonly sourceRanges: readonly string[];
  };
  readonly internal: TrafficExplanation;
  /** Absent when the port has no external frontend (NodePort, external IP, load-balancer IP). */
  readonly external?: TrafficExplanation;
  readonly masquerade: MasqueradeExplanation;
  readonly affinity: { readonly mode: 'None' | 'ClientIP'; readonly timeoutSeconds?: number };
  readonly objects: readonly KernelObject[];
}

export interface NodeExplanation {
  readonly node: string;
  readonly zone?: string;
  readonly mode: ProxyMode;
  readonly family: string;
  readonly ports: readonly PortExplanation[];
}

export interface ExplainNodeInput {
  readonly mode: ProxyMode;
  readonly node: NodeNetworkConfig;
  readonly iptables: IptablesExtras;
  readonly snapshot: ProxySnapshot;
  readonly featureGates?: FeatureGates;
  /** Only the ports of this Service ("ns/name"). */
  readonly service: string;
  readonly fromIP?: string;
}

function noEndpointsWhy(view: TrafficPolicy, kind: string): string {
  return view.noEndpoints === 'reject'
    ? `the Service has no usable endpoint anywhere: ${kind} traffic is rejected (connection refused)`
    : `no endpoint on this node and the policy is Local: ${kind} traffic is dropped (the client times out)`;
}

/** The traffic policy as this mode applies it: ipvs mode reads a Local policy without local endpoints its own way. */
function viewOf(
  policy: ServicePortPolicy,
  which: 'internal' | 'external',
  input: ExplainNodeInput,
): IpvsTrafficPolicy {
  if (input.mode === 'ipvs') return ipvsTrafficPolicy(policy, which);
  return which === 'internal' ? policy.internal : policy.external;
}

function traffic(
  policy: ServicePortPolicy,
  view: IpvsTrafficPolicy,
  all: readonly Endpoint[],
  which: 'internal' | 'external',
  input: ExplainNodeInput,
): TrafficExplanation {
  // ipvs mode's fallback serves the Cluster set: say why endpoints are left out as for Cluster traffic.
  const basis: ServicePortPolicy = view.fellBackToCluster
    ? { ...policy, [which]: { policy: 'Cluster', endpoints: view.endpoints } }
    : policy;
  const reasons = explainTraffic(basis, all, which, input.snapshot.topology);
  return {
    policy: view.policy,
    endpoints: view.endpoints.map((ep) => ep.endpoint),
    excluded: reasons.excluded.map((x) => ({ endpoint: x.endpoint.endpoint, reason: x.reason })),
    ...(view.noEndpoints !== undefined
      ? {
          noEndpoints: {
            verdict: view.noEndpoints,
            why: noEndpointsWhy(view, which === 'internal' ? 'ClusterIP' : 'external'),
          },
        }
      : {}),
    notes: view.fellBackToCluster
      ? [
          ...reasons.notes,
          'ipvs mode: no local endpoint, so the Cluster endpoints are used instead of dropping (upstream IPVS, ' +
            'k/k #97081); replies to clients outside the cluster may not find their way back',
        ]
      : reasons.notes,
  };
}

function detectorWords(node: NodeNetworkConfig): string {
  const d = node.localDetector;
  switch (d.mode) {
    case 'ClusterCIDR':
    case 'NodeCIDR':
      return `source in ${d.cidr} (detect-local-mode ${d.mode})`;
    case 'BridgeInterface':
      return `arriving on ${d.interfaceName} (detect-local-mode BridgeInterface)`;
    case 'InterfaceNamePrefix':
      return `arriving on ${d.interfacePrefix}* (detect-local-mode InterfaceNamePrefix)`;
    case 'None':
      return 'no way to tell pods apart (detect-local-mode None)';
  }
}

function clusterIPMasq(node: NodeNetworkConfig): MasqueradeExplanation['clusterIP'] {
  switch (clusterIPMasquerade(node.masqueradeAll, node.localDetector)) {
    case 'all':
      return {
        fromPod: 'masqueraded (--masquerade-all)',
        fromNode: 'masqueraded (--masquerade-all)',
        fromOutside: 'masqueraded (--masquerade-all)',
      };
    case 'from-outside-cluster':
      return {
        fromPod: `source kept: a pod is recognised by ${detectorWords(node)}`,
        fromNode: "masqueraded: the node's own address is not a pod's, and the reply must come back here",
        fromOutside: 'masqueraded, so the reply comes back through this node',
      };
    case 'none':
      return {
        fromPod: 'source kept',
        fromNode: `source kept: ${detectorWords(node)}, so nothing is masqueraded`,
        fromOutside: `source kept: ${detectorWords(node)}, so nothing is masqueraded`,
      };
  }
}

function externalMasq(sp: ServicePort): NonNullable<MasqueradeExplanation['external']> {
  if (!sp.externalPolicyLocal) {
    const all = 'masqueraded: policy Cluster may send it to another node, and the reply must come back here';
    return { fromPod: all, fromNode: all, fromOutside: all };
  }
  return {
    fromPod: 'source kept, sent to any endpoint (pod traffic short-circuits the Local policy)',
    fromNode: 'masqueraded and sent to any endpoint (node traffic short-circuits the Local policy)',
    fromOutside: 'source kept: policy Local sends it only to endpoints on this node',
  };
}

function sourceKind(node: NodeNetworkConfig, ip: string): 'pod' | 'node' | 'outside' {
  const parsed = parseIPSloppy(ip);
  const text = parsed?.text ?? ip;
  if (node.nodeIPs.includes(text)) return 'node';
  const d = node.localDetector;
  if ((d.mode === 'ClusterCIDR' || d.mode === 'NodeCIDR') && cidrContains(d.cidr, text)) return 'pod';
  return 'outside';
}

function masquerade(sp: ServicePort, input: ExplainNodeInput, hasExternal: boolean): MasqueradeExplanation {
  const clusterIP = clusterIPMasq(input.node);
  const external = hasExternal ? externalMasq(sp) : undefined;
  let fromIP: MasqueradeExplanation['fromIP'];
  if (input.fromIP !== undefined) {
    const is = sourceKind(input.node, input.fromIP);
    const pick = (m: { fromPod: string; fromNode: string; fromOutside: string }): string =>
      is === 'pod' ? m.fromPod : is === 'node' ? m.fromNode : m.fromOutside;
    fromIP = {
      ip: input.fromIP,
      is,
      clusterIP: pick(clusterIP),
      ...(external !== undefined ? { external: pick(external) } : {}),
    };
  }
  return {
    clusterIP,
    ...(external !== undefined ? { external } : {}),
    ...(fromIP !== undefined ? { fromIP } : {}),
    hairpin:
      'a pod that reaches itself through the Service is masqueraded, or it would answer itself directly',
  };
}

function nodePortAddressesOf(input: ExplainNodeInput): readonly string[] | 'all' {
  const node = input.node;
  if (input.mode === 'nftables') return node.nodePortAddresses.matchAll ? 'all' : nftNodePortIPs(node);
  return node.nodePortAddresses.matchAll ? 'all' : nodePortIPs(node.nodePortAddresses, node.hostInterfaces);
}

/** The kernel objects of this port, from the node's own renderer. */
function kernelObjects(policy: ServicePortPolicy, input: ExplainNodeInput): KernelObject[] {
  if (input.mode === 'ipvs') return ipvsPortObjects(policy.servicePort, input.snapshot, input.node);
  if (input.mode === 'nftables') {
    const r = renderNftPort(policy, { node: input.node });
    if (!r.ok) return [];
    const ref = { family: nftFamilyOf(input.node.family), table: TABLE_NAME };
    const out: KernelObject[] = [];
    for (const e of r.value.elements) {
      out.push({
        object: writeOperation(ref, { verb: 'add', object: e }),
        check: {
          kind: 'nft-element',
          set: e.set,
          key: e.key.join(' . '),
          ...(e.value !== undefined ? { value: e.value.join(' . ') } : {}),
        },
      });
    }
    const rules = new Map<string, number>();
    for (const op of r.value.chainOps) {
      if (op.verb === 'add' && op.object.kind === 'rule')
        rules.set(op.object.chain, (rules.get(op.object.chain) ?? 0) + 1);
    }
    for (const op of r.value.chainOps) {
      if (op.verb !== 'add') continue;
      const object = writeOperation(ref, op);
      if (op.object.kind === 'chain') {
        const chain = op.object.name;
        out.push({ object, check: { kind: 'nft-chain', chain, rules: rules.get(chain) ?? 0 } });
      } else if (op.object.kind === 'set') {
        out.push({ object, check: { kind: 'nft-set', set: op.object.name } });
      }
    }
    return out;
  }
  const large = totalEndpoints(input.snapshot) > LARGE_CLUSTER_ENDPOINTS_THRESHOLD;
  const r = renderIptablesPort(policy, { node: input.node, extras: input.iptables, largeClusterMode: large });
  const top = (table: 'filter' | 'nat', rule: IptablesRule): KernelObject => ({
    table,
    object: ruleLine(rule),
    check: { kind: 'iptables-rule', table, chain: rule.chain, args: rule.args },
  });
  return [
    ...r.filterRules.map((rule) => top('filter', rule)),
    ...r.natTopRules.map((rule) => top('nat', rule)),
    ...r.chains.map((chain): KernelObject => ({
      table: 'nat',
      object: [`:${chain} - [0:0]`, ...r.chainRules.filter((x) => x.chain === chain).map(ruleLine)].join(
        '\n',
      ),
      check: {
        kind: 'iptables-chain',
        table: 'nat',
        chain,
        rules: r.chainRules.filter((x) => x.chain === chain).map((x) => x.args),
      },
    })),
  ];
}

function sortPorts(a: ServicePort, b: ServicePort): number {
  return a.nameString < b.nameString ? -1 : a.nameString > b.nameString ? 1 : 0;
}

/** The ports of one Service this node proxies (none: the Service is unknown, headless, or another family's). */
export function servicePortsOf(snapshot: ProxySnapshot, service: string): ServicePort[] {
  return [...snapshot.serviceMap.values()].filter((sp) => sp.serviceName === service).sort(sortPorts);
}

export function explainNode(input: ExplainNodeInput): NodeExplanation {
  const forNode = policyNode(input.snapshot.topology, input.node.nodeIPs[0], input.featureGates);
  const ports = servicePortsOf(input.snapshot, input.service).map((sp): PortExplanation => {
    const all = input.snapshot.endpointsMap.get(sp.key) ?? [];
    const policy = servicePortPolicy(sp, all, forNode);
    const hasExternal = externallyAccessible(sp);
    return {
      servicePort: sp.nameString,
      service: sp.serviceName,
      port: sp.name.port,
      protocol: sp.protocol,
      frontends: {
        clusterIP: servicePortString(sp),
        ...(sp.nodePort !== 0
          ? { nodePort: { port: sp.nodePort, addresses: nodePortAddressesOf(input) } }
          : {}),
        externalIPs: sp.externalIPs,
        loadBalancerIPs: sp.loadBalancerVIPs,
        sourceRanges: sp.loadBalancerSourceRanges,
      },
      internal: traffic(policy, viewOf(policy, 'internal', input), all, 'internal', input),
      ...(hasExternal
        ? { external: traffic(policy, viewOf(policy, 'external', input), all, 'external', input) }
        : {}),
      masquerade: masquerade(sp, input, hasExternal),
      affinity: sp.sessionAffinityClientIP
        ? { mode: 'ClientIP', timeoutSeconds: sp.stickyMaxAgeSeconds }
        : { mode: 'None' },
      objects: kernelObjects(policy, input),
    };
  });
  const zone = input.snapshot.topology.zone;
  return {
    node: input.node.nodeName,
    ...(zone !== undefined ? { zone } : {}),
    mode: input.mode,
    family: input.node.family,
    ports,
  };
}
