// ipvs mode's whole desired state for one family, computed from the model's per-port decision: the virtual
// servers and their real servers, the addresses kube-ipvs0 holds, the ipset entries, and what the iptables glue
// needs to know (masquerade mode, the load-balancer VIPs the node may not reach). Pure: the backend diffs it
// against the kernel, `render --proxy-mode ipvs` prints it, the table tests compare it with upstream's cases.
// Upstream: pkg/proxy/ipvs/proxier.go syncProxyRules and syncEndpoint.
import { endpointString } from '../../model/endpoint.js';
import type { Endpoint } from '../../model/endpoint.js';
import type { FeatureGates } from '../../model/feature-gates.js';
import { cidrContains, isLoopbackIP, parseIPSloppy } from '../../model/ip.js';
import type { IPFamily } from '../../model/ip.js';
import { nodePortIPs } from '../../model/nodeport-addresses.js';
import { ipvsTrafficPolicy, policyNode, servicePortPolicy } from '../../model/port-policy.js';
import type { ServicePortPolicy } from '../../model/port-policy.js';
import type { ServicePort } from '../../model/service-port.js';
import { IPVS_FLAG_PERSISTENT, IPVS_FLAG_SOURCE_HASH } from '../../netfilter/ipvs/types.js';
import type { RealServer, VirtualServer } from '../../netfilter/ipvs/types.js';
import { virtualServerKey } from '../../netfilter/ipvs/types.js';
import type { NodeNetworkConfig, ProxySnapshot } from '../../sync/backend.js';
import { KUBE_IPSETS } from '../../netfilter/ipset/sets.js';
import type { KubeIPSetId } from '../../netfilter/ipset/sets.js';

/** The dummy interface that holds every Service address this node answers for. */
export const DUMMY_DEVICE = 'kube-ipvs0';

export interface IpvsPlanOptions {
  /** The scheduler every virtual server gets ('' already resolved to rr). */
  readonly scheduler: string;
  /** This family's local addresses on interfaces other than kube-ipvs0 (no loopback, no IPv6 link-local). */
  readonly nodeAddresses: readonly string[];
  readonly featureGates?: FeatureGates;
}

export interface PlannedVirtualServer {
  readonly virtualServer: VirtualServer;
  /** Weight 1 each (upstream), sorted by address. */
  readonly realServers: readonly RealServer[];
  /** "ns/name:port" of the service port it serves, for logs and explain. */
  readonly servicePort: string;
}

/** A load-balancer VIP:port the node itself may not reach (its IP is outside every source range). */
export interface NodeBlockedVIP {
  readonly vip: string;
  readonly protocol: string;
  readonly port: number;
}

export interface IpvsPlan {
  readonly family: IPFamily;
  /** By virtualServerKey. */
  readonly virtualServers: ReadonlyMap<string, PlannedVirtualServer>;
  /** Addresses on kube-ipvs0 (also the KUBE-IPVS-IPS set), sorted. */
  readonly boundAddresses: readonly string[];
  /** Entries of each set, as `ipset save` prints them. */
  readonly sets: ReadonlyMap<KubeIPSetId, ReadonlySet<string>>;
  readonly nodeBlockedVIPs: readonly NodeBlockedVIP[];
  /** Services (not ports) whose internal / external traffic has no local endpoint under policy Local. */
  readonly noLocalEndpointsInternal: number;
  readonly noLocalEndpointsExternal: number;
}

/** Collects the plan while the service ports are walked. */
class PlanBuilder {
  readonly virtualServers = new Map<string, PlannedVirtualServer>();
  readonly bound = new Set<string>();
  readonly sets = new Map<KubeIPSetId, Set<string>>(KUBE_IPSETS.map((s) => [s.id, new Set<string>()]));
  readonly nodeBlockedVIPs: NodeBlockedVIP[] = [];
  readonly noLocalInternal = new Set<string>();
  readonly noLocalExternal = new Set<string>();

  add(id: KubeIPSetId, entry: string): void {
    this.sets.get(id)?.add(entry);
  }
}

interface PortContext {
  readonly sp: ServicePort;
  readonly policy: ServicePortPolicy;
  /** "tcp", "udp", "sctp": ipset's spelling. */
  readonly proto: string;
  readonly options: IpvsPlanOptions;
  readonly nodeAddresses: ReadonlySet<string>;
}

export function planIpvs(
  snapshot: ProxySnapshot,
  node: NodeNetworkConfig,
  options: IpvsPlanOptions,
): IpvsPlan {
  const b = new PlanBuilder();
  const forNode = policyNode(snapshot.topology, node.nodeIPs[0], options.featureGates);
  const nodeAddresses = new Set(options.nodeAddresses);
  const nodePortAddresses = nodePortTargets(snapshot, node, options.nodeAddresses);
  for (const [key, sp] of snapshot.serviceMap) {
    const endpoints = snapshot.endpointsMap.get(key) ?? [];
    const policy = servicePortPolicy(sp, endpoints, forNode);
    const ctx: PortContext = { sp, policy, proto: sp.protocol.toLowerCase(), options, nodeAddresses };
    planLoopBack(b, ctx, endpoints);
    planClusterIP(b, ctx);
    planExternalIPs(b, ctx);
    planLoadBalancer(b, ctx);
    planNodePort(b, ctx, nodePortAddresses);
    if (sp.healthCheckNodePort !== 0) b.add('healthCheckNodePort', String(sp.healthCheckNodePort));
    if (policy.noLocalEndpointsInternal) b.noLocalInternal.add(sp.serviceName);
    if (policy.noLocalEndpointsExternal) b.noLocalExternal.add(sp.serviceName);
  }
  const boundAddresses = [...b.bound].sort();
  for (const a of boundAddresses) b.add('ipvsIPs', a);
  return {
    family: node.family,
    virtualServers: b.virtualServers,
    boundAddresses,
    sets: b.sets,
    nodeBlockedVIPs: b.nodeBlockedVIPs,
    noLocalEndpointsInternal: b.noLocalInternal.size,
    noLocalEndpointsExternal: b.noLocalExternal.size,
  };
}

/**
 * This family's addresses on the node's interfaces other than kube-ipvs0, without loopback and IPv6 link-local
 * (upstream GetAllLocalAddressesExcept): NodePorts listen on them, and a Service address among them stays off
 * kube-ipvs0.
 */
export function localNodeAddresses(node: NodeNetworkConfig): string[] {
  const out = new Set<string>();
  for (const [name, addresses] of node.hostInterfaces) {
    if (name === DUMMY_DEVICE) continue;
    for (const a of addresses) {
      const ip = parseIPSloppy(a.split('/')[0] ?? '');
      if (ip === undefined || ip.family !== node.family || isLoopbackIP(ip.text)) continue;
      if (ip.family === 'IPv6' && cidrContains('fe80::/10', ip.text)) continue;
      out.add(ip.text);
    }
  }
  return [...out].sort();
}

/**
 * The node addresses NodePort virtual servers listen on: every local address when nodePortAddresses admits all,
 * else the matching ones without loopback (IPVS cannot serve 127.0.0.1). Empty when no port has a NodePort.
 */
function nodePortTargets(
  snapshot: ProxySnapshot,
  node: NodeNetworkConfig,
  nodeAddresses: readonly string[],
): readonly string[] {
  const any = [...snapshot.serviceMap.values()].some((sp) => sp.nodePort !== 0);
  if (!any) return [];
  if (node.nodePortAddresses.matchAll) return nodeAddresses;
  return nodePortIPs(node.nodePortAddresses, node.hostInterfaces).filter((ip) => !isLoopbackIP(ip));
}

/** Local endpoints reaching their own Service are masqueraded (hairpin): KUBE-LOOP-BACK ip,proto:port,ip. */
function planLoopBack(b: PlanBuilder, ctx: PortContext, endpoints: readonly Endpoint[]): void {
  for (const ep of endpoints) {
    if (!ep.isLocal || ep.ip === '' || ep.port === 0) continue;
    b.add('loopBack', `${ep.ip},${ctx.proto}:${ep.port},${ep.ip}`);
  }
}

function planClusterIP(b: PlanBuilder, ctx: PortContext): void {
  const { sp } = ctx;
  b.add('clusterIP', ipPortEntry(sp.clusterIP, ctx.proto, sp.port));
  addVirtualServer(b, ctx, sp.clusterIP, sp.port, ipvsTrafficPolicy(ctx.policy, 'internal').endpoints);
  b.bound.add(sp.clusterIP);
}

function planExternalIPs(b: PlanBuilder, ctx: PortContext): void {
  const { sp } = ctx;
  for (const ip of sp.externalIPs) {
    b.add(sp.externalPolicyLocal ? 'externalIPLocal' : 'externalIP', ipPortEntry(ip, ctx.proto, sp.port));
    addVirtualServer(b, ctx, ip, sp.port, ipvsTrafficPolicy(ctx.policy, 'external').endpoints);
    // An address another interface already holds must not go on kube-ipvs0 too.
    if (!ctx.nodeAddresses.has(ip)) b.bound.add(ip);
  }
}

function planLoadBalancer(b: PlanBuilder, ctx: PortContext): void {
  const { sp, policy } = ctx;
  for (const vip of sp.loadBalancerVIPs) {
    const entry = ipPortEntry(vip, ctx.proto, sp.port);
    b.add('loadBalancer', entry);
    if (sp.externalPolicyLocal) b.add('loadBalancerLocal', entry);
    if (policy.firewall !== undefined) {
      b.add('loadBalancerFW', entry);
      for (const cidr of policy.firewall.sourceRanges) b.add('loadBalancerSourceCIDR', `${entry},${cidr}`);
      // The node's own IP inside a range lets node → VIP traffic through (its source may be the VIP itself).
      if (policy.firewall.allowedVIPs.includes(vip)) b.add('loadBalancerSourceIP', `${entry},${vip}`);
      else b.nodeBlockedVIPs.push({ vip, protocol: ctx.proto, port: sp.port });
    }
    addVirtualServer(b, ctx, vip, sp.port, ipvsTrafficPolicy(policy, 'external').endpoints);
    if (!ctx.nodeAddresses.has(vip)) b.bound.add(vip);
  }
}

function planNodePort(b: PlanBuilder, ctx: PortContext, nodeIPs: readonly string[]): void {
  const { sp } = ctx;
  if (sp.nodePort === 0 || nodeIPs.length === 0) return;
  const local = sp.externalPolicyLocal;
  if (sp.protocol === 'SCTP') {
    // bitmap:port has no protocol, so SCTP NodePorts are kept per node IP in a hash:ip,port set.
    for (const ip of nodeIPs) {
      const entry = ipPortEntry(ip, ctx.proto, sp.nodePort);
      b.add('nodePortSCTP', entry);
      if (local) b.add('nodePortLocalSCTP', entry);
    }
  } else {
    const tcp = sp.protocol === 'TCP';
    b.add(tcp ? 'nodePortTCP' : 'nodePortUDP', String(sp.nodePort));
    if (local) b.add(tcp ? 'nodePortLocalTCP' : 'nodePortLocalUDP', String(sp.nodePort));
  }
  const destinations = ipvsTrafficPolicy(ctx.policy, 'external').endpoints;
  for (const ip of nodeIPs) addVirtualServer(b, ctx, ip, sp.nodePort, destinations);
}

function addVirtualServer(
  b: PlanBuilder,
  ctx: PortContext,
  address: string,
  port: number,
  destinations: readonly Endpoint[],
): void {
  const { sp, options } = ctx;
  let flags = 0;
  let timeout = 0;
  if (sp.sessionAffinityClientIP) {
    flags |= IPVS_FLAG_PERSISTENT;
    timeout = sp.stickyMaxAgeSeconds;
  }
  // The maglev scheduler hashes on the source port too only with this flag (upstream sets it for mh).
  if (options.scheduler === 'mh') flags |= IPVS_FLAG_SOURCE_HASH;
  const virtualServer: VirtualServer = {
    address,
    port,
    protocol: sp.protocol,
    scheduler: options.scheduler,
    flags,
    timeout,
  };
  const realServers = uniqueRealServers(destinations);
  b.virtualServers.set(virtualServerKey(virtualServer), {
    virtualServer,
    realServers,
    servicePort: sp.nameString,
  });
}

/** One real server per ip:port (a slice may list an endpoint twice), weight 1, sorted. */
function uniqueRealServers(endpoints: readonly Endpoint[]): RealServer[] {
  const byKey = new Map<string, RealServer>();
  for (const ep of endpoints) {
    const key = endpointString(ep.ip, ep.port);
    if (!byKey.has(key)) byKey.set(key, { address: ep.ip, port: ep.port, weight: 1 });
  }
  return [...byKey.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, rs]) => rs);
}

/** hash:ip,port's entry as ipset prints it: "10.0.0.1,tcp:80" ("2001:db8::1,tcp:80"). */
function ipPortEntry(ip: string, proto: string, port: number): string {
  return `${parseIPSloppy(ip)?.text ?? ip},${proto}:${port}`;
}
