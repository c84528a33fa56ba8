// Shared by upstream-cases.test.ts: the objects, node and read-outs that upstream's pkg/proxy/ipvs/proxier_test.go
// builds with makeTestService / makeTestEndpointSlice and its fakes (FakeIPVS, the fake ipset, the fake
// iptables), here as plain objects through the real model and our pure planning layer.
import type {
  EndpointSlice,
  EndpointSliceEndpoint,
  Service,
} from '../../../packages/agent/src/api/objects.js';
import { ipvsRestoreInput } from '../../../packages/agent/src/backends/ipvs/iptables.js';
import { localNodeAddresses, planIpvs } from '../../../packages/agent/src/backends/ipvs/plan.js';
import type { IpvsPlan } from '../../../packages/agent/src/backends/ipvs/plan.js';
import type { KubeIPSetId } from '../../../packages/agent/src/netfilter/ipset/sets.js';
import { ruleLine } from '../../../packages/agent/src/netfilter/iptables/serialize.js';
import type {
  IptablesTableName,
  RestoreInput,
} from '../../../packages/agent/src/netfilter/iptables/types.js';
import { realServerKey } from '../../../packages/agent/src/netfilter/ipvs/types.js';
import type { NodeNetworkConfig, ProxySnapshot } from '../../../packages/agent/src/sync/backend.js';
import { snapshotFromObjects } from '../../../packages/agent/src/sync/snapshot.js';
import { testNode } from '../../helpers/model-values.js';

/** Upstream's testNodeName: endpoints with this nodeName are local. */
export const THIS_NODE = 'test-node';

export type Family = 'IPv4' | 'IPv6';

export interface UpstreamNode {
  readonly family?: Family;
  /** What upstream's fake netlink handle holds on eth0 (NewFakeProxier's nodeIPs), bare addresses. */
  readonly eth0?: readonly string[];
  /** Further interfaces, as upstream's FakeNetwork.AddInterfaceAddr: name → addresses with prefix. */
  readonly interfaces?: Readonly<Record<string, readonly string[]>>;
  /** proxyutil.NewNodePortAddresses' CIDRs; empty = every address. */
  readonly nodePortAddresses?: readonly string[];
  /** The proxier's own node IP (upstream's fake leaves it nil; the load-balancer firewall reads it). */
  readonly nodeIP?: string;
  readonly masqueradeAll?: boolean;
}

/**
 * The node of upstream's NewFakeProxier: named test-node, no local-traffic detector (proxyutil.NoOpLocalDetector,
 * here detect-local-mode ClusterCIDR without a cluster CIDR), the test mark 0x4000, addresses as given.
 */
export function upstreamNode(n: UpstreamNode = {}): NodeNetworkConfig {
  const family = n.family ?? 'IPv4';
  const interfaces = new Map<string, readonly string[]>([['eth0', n.eth0 ?? []]]);
  for (const [name, addrs] of Object.entries(n.interfaces ?? {})) interfaces.set(name, addrs);
  return testNode({
    family,
    nodeName: THIS_NODE,
    nodeIPs: n.nodeIP === undefined ? [] : [n.nodeIP],
    clusterCIDRs: [],
    nodePortAddresses: [...(n.nodePortAddresses ?? [])],
    masqueradeAll: n.masqueradeAll ?? false,
    masqueradeMark: '0x4000',
    hostInterfaces: interfaces,
  });
}

export interface PortSpec {
  readonly name?: string;
  readonly port?: number;
  readonly protocol?: string;
  readonly nodePort?: number;
}

export interface ServiceSpecExtra {
  readonly type?: string;
  readonly externalIPs?: readonly string[];
  readonly externalTrafficPolicy?: string;
  readonly internalTrafficPolicy?: string;
  readonly healthCheckNodePort?: number;
  readonly loadBalancerSourceRanges?: readonly string[];
  readonly sessionAffinity?: string;
  readonly sessionAffinityConfig?: { readonly clientIP?: { readonly timeoutSeconds?: number } };
  /** status.loadBalancer.ingress. */
  readonly ingress?: readonly { readonly ip: string; readonly ipMode?: string }[];
}

/** A Service as upstream's makeTestService fills it: ClusterIP, ports, and whatever the case sets. */
export function service(
  ns: string,
  name: string,
  clusterIP: string,
  ports: readonly PortSpec[],
  extra: ServiceSpecExtra = {},
): Service {
  const { ingress, ...spec } = extra;
  return {
    metadata: { namespace: ns, name },
    spec: { clusterIP, ports: ports.map((p) => ({ ...p })), ...spec },
    ...(ingress !== undefined ? { status: { loadBalancer: { ingress } } } : {}),
  };
}

export interface EndpointSpec {
  readonly ip: string;
  readonly nodeName?: string;
  readonly ready?: boolean;
  readonly serving?: boolean;
  readonly terminating?: boolean;
}

/** An EndpointSlice as upstream's makeTestEndpointSlice names it: "<svc>-<n>", labelled with its Service. */
export function endpointSlice(
  ns: string,
  svcName: string,
  n: number,
  addressType: string,
  endpoints: readonly EndpointSpec[],
  ports: readonly { readonly name: string; readonly port: number; readonly protocol: string }[],
): EndpointSlice {
  return {
    metadata: { namespace: ns, name: `${svcName}-${n}`, labels: { 'kubernetes.io/service-name': svcName } },
    addressType,
    endpoints: endpoints.map((e): EndpointSliceEndpoint => {
      const conditions = {
        ...(e.ready !== undefined ? { ready: e.ready } : {}),
        ...(e.serving !== undefined ? { serving: e.serving } : {}),
        ...(e.terminating !== undefined ? { terminating: e.terminating } : {}),
      };
      return {
        addresses: [e.ip],
        ...(e.nodeName !== undefined ? { nodeName: e.nodeName } : {}),
        ...(Object.keys(conditions).length > 0 ? { conditions } : {}),
      };
    }),
    ports: ports.map((p) => ({ ...p })),
  };
}

export interface Planned {
  readonly plan: IpvsPlan;
  readonly rules: RestoreInput;
}

export interface PlanOptions {
  readonly scheduler?: string;
  readonly randomFully?: boolean;
}

/** One sync's desired state from a snapshot: the IPVS plan and the iptables-restore input beside it. */
export function planSnapshot(
  snapshot: ProxySnapshot,
  node: NodeNetworkConfig,
  options: PlanOptions = {},
): Planned {
  const plan = planIpvs(snapshot, node, {
    scheduler: options.scheduler ?? 'rr',
    nodeAddresses: localNodeAddresses(node),
  });
  return { plan, rules: ipvsRestoreInput(plan, node, { randomFully: options.randomFully ?? false }) };
}

/** One sync of these objects, as upstream's makeServiceMap + populateEndpointSlices + syncProxyRules. */
export function planObjects(
  node: NodeNetworkConfig,
  services: readonly Service[],
  slices: readonly EndpointSlice[] = [],
  options: PlanOptions = {},
): Planned {
  const { snapshot } = snapshotFromObjects({
    family: node.family,
    nodeName: node.nodeName,
    services,
    endpointSlices: slices,
  });
  return planSnapshot(snapshot, node, options);
}

/**
 * A virtual server as upstream's FakeIPVS keeps it (Services[key] and Destinations[key] together): what a test can
 * compare whole. Real servers as "ip:port" (weight 1 is checked separately by weights()).
 */
export interface VirtualServerView {
  readonly scheduler: string;
  readonly flags: number;
  readonly timeout: number;
  readonly realServers: readonly string[];
}

/** Every virtual server of the plan by its key ("TCP/10.20.30.41:80"), as upstream compares FakeIPVS whole. */
export function virtualServers(plan: IpvsPlan): Record<string, VirtualServerView> {
  const out: Record<string, VirtualServerView> = {};
  for (const key of [...plan.virtualServers.keys()].sort()) {
    const { virtualServer: vs, realServers } = plan.virtualServers.get(key)!;
    out[key] = {
      scheduler: vs.scheduler,
      flags: vs.flags,
      timeout: vs.timeout,
      realServers: realServers.map((rs) => realServerKey(rs)),
    };
  }
  return out;
}

/** A plain round-robin virtual server with these real servers: what most of upstream's expectations are. */
export function rr(...realServers: string[]): VirtualServerView {
  return { scheduler: 'rr', flags: 0, timeout: 0, realServers };
}

/** The weights of every real server of the plan (upstream adds each with weight 1). */
export function weights(plan: IpvsPlan): number[] {
  return [...plan.virtualServers.values()].flatMap((v) => v.realServers.map((rs) => rs.weight));
}

/** The entries of one set, sorted, as `ipset save` prints them. */
export function entries(plan: IpvsPlan, id: KubeIPSetId): string[] {
  return [...(plan.sets.get(id) ?? [])].sort();
}

/** The sets that hold anything, with their entries: for "and nothing else" assertions. */
export function nonEmptySets(plan: IpvsPlan): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const [id, set] of plan.sets) if (set.size > 0) out[id] = [...set].sort();
  return out;
}

/** The `-A CHAIN …` lines of one chain of one table, in order, as iptables-restore reads them. */
export function chainRules(rules: RestoreInput, table: IptablesTableName, chain: string): string[] {
  const t = rules.tables.find((x) => x.table === table);
  return (t?.rules ?? []).filter((r) => r.chain === chain).map((r) => ruleLine(r));
}

/** The chains a table's restore declares (`:CHAIN - [0:0]`), in order. */
export function declaredChains(rules: RestoreInput, table: IptablesTableName): readonly string[] {
  return rules.tables.find((x) => x.table === table)?.chains ?? [];
}
