// What this node does with traffic to one service port: which endpoints serve cluster-internal and external
// traffic, what happens when a policy leaves none, which ports need the Cluster and Local endpoint sets, and the
// load-balancer firewall. Computed once here from the port, its endpoints and the node; every renderer (and every
// command that explains a ruleset) reads this value instead of deriving it again. The rules follow upstream's
// syncProxyRules (pkg/proxy/nftables/proxier.go, pkg/proxy/iptables/proxier.go) around CategorizeEndpoints.
import type { Endpoint } from './endpoint.js';
import type { FeatureGates } from './feature-gates.js';
import { cidrContains } from './ip.js';
import { externallyAccessible, usesClusterEndpoints, usesLocalEndpoints } from './service-port.js';
import type { ServicePort } from './service-port.js';
import { categorizeEndpoints } from './topology.js';
import type { NodeTopology, TopologyDecision } from './topology.js';

/** What a frontend does when its policy leaves no endpoint. */
export type NoEndpointsVerdict =
  /** The Service has no usable endpoint anywhere: refuse the connection (ICMP unreachable / TCP reset). */
  | 'reject'
  /** Endpoints exist, but none on this node and the policy is Local: drop silently. */
  | 'drop';

export interface TrafficPolicy {
  readonly policy: 'Cluster' | 'Local';
  /** The endpoints this traffic is sent to: the Local set under Local, else the Cluster set. */
  readonly endpoints: readonly Endpoint[];
  /** Set when this traffic has no endpoint to go to: what its frontends do instead. */
  readonly noEndpoints?: NoEndpointsVerdict;
}

export interface ExternalTrafficPolicy extends TrafficPolicy {
  /**
   * The port has external frontends (NodePort, externalIPs, load-balancer VIPs) and the Service has endpoints,
   * so external traffic goes through the port's external chain (masquerade, short-circuits, then the policy).
   */
  readonly viaExternalChain: boolean;
}

export interface LoadBalancerFirewall {
  /** loadBalancerSourceRanges: the only sources admitted through a load-balancer VIP. */
  readonly sourceRanges: readonly string[];
  /**
   * VIPs admitted as sources too: when the node's primary IP is inside a source range, node → VIP traffic can
   * come back with the VIP as its source (the VIP is often also a local address), and must pass.
   */
  readonly allowedVIPs: readonly string[];
}

export interface ServicePortPolicy {
  readonly servicePort: ServicePort;
  /** The Service has a usable endpoint somewhere (ready, or serving while terminating). */
  readonly hasEndpoints: boolean;
  /** The Cluster endpoint set is used by this port and not empty: the port needs its Cluster policy chain. */
  readonly usesClusterEndpoints: boolean;
  /** The Local endpoint set is used by this port and not empty: the port needs its Local policy chain. */
  readonly usesLocalEndpoints: boolean;
  /** The Cluster set (empty when unused). */
  readonly clusterEndpoints: readonly Endpoint[];
  /** The Local set (empty when unused). */
  readonly localEndpoints: readonly Endpoint[];
  /** Every endpoint some traffic from this node may reach (each needs its endpoint chain or map entry). */
  readonly reachableEndpoints: readonly Endpoint[];
  /** ClusterIP traffic (spec.internalTrafficPolicy). */
  readonly internal: TrafficPolicy;
  /** NodePort, externalIP and load-balancer traffic (spec.externalTrafficPolicy). */
  readonly external: ExternalTrafficPolicy;
  /** Set when the port has load-balancer VIPs and source ranges. */
  readonly firewall?: LoadBalancerFirewall;
  /** How topology hints narrowed the Cluster set, and why existing hints were not used. */
  readonly topology: TopologyDecision;
  /** No endpoint was ready: the Cluster set is the terminating endpoints that still serve. */
  readonly clusterFellBack: boolean;
  /** No local endpoint was ready: the Local set is the local terminating endpoints that still serve. */
  readonly localFellBack: boolean;
  /** ClusterIP traffic is dropped for want of a local endpoint (kubeproxy_sync_proxy_rules_no_local_endpoints_total). */
  readonly noLocalEndpointsInternal: boolean;
  /** External traffic is dropped for want of a local endpoint. */
  readonly noLocalEndpointsExternal: boolean;
}

/** The node facts the policy depends on. */
export interface PolicyNode extends NodeTopology {
  /** The node's primary IP of this family, if known (for the load-balancer firewall). */
  readonly primaryIP?: string;
  readonly featureGates?: FeatureGates;
}

const NONE: readonly Endpoint[] = Object.freeze([]);
const NO_ADDRESSES: readonly string[] = Object.freeze([]);

function trafficPolicy(
  local: boolean,
  clusterEndpoints: readonly Endpoint[],
  localEndpoints: readonly Endpoint[],
  hasEndpoints: boolean,
): TrafficPolicy {
  if (local) {
    if (localEndpoints.length > 0) return { policy: 'Local', endpoints: localEndpoints };
    // None here: endpoints elsewhere make it a drop (the client may retry another node), none at all a reject.
    return { policy: 'Local', endpoints: NONE, noEndpoints: hasEndpoints ? 'drop' : 'reject' };
  }
  // The Cluster set is empty only when the Service has no usable endpoint (categorizeEndpoints already fell back
  // to terminating ones), or when this port never uses it (internal Local, no external frontend).
  return hasEndpoints
    ? { policy: 'Cluster', endpoints: clusterEndpoints }
    : { policy: 'Cluster', endpoints: NONE, noEndpoints: 'reject' };
}

export function servicePortPolicy(
  sp: ServicePort,
  endpoints: readonly Endpoint[],
  node: PolicyNode,
): ServicePortPolicy {
  const cat = categorizeEndpoints(endpoints, sp, node, node.featureGates);
  const clusterEndpoints = cat.clusterEndpoints ?? NONE;
  const localEndpoints = cat.localEndpoints ?? NONE;
  const hasEndpoints = cat.hasAnyEndpoints;
  const internal = trafficPolicy(sp.internalPolicyLocal, clusterEndpoints, localEndpoints, hasEndpoints);
  const external: ExternalTrafficPolicy = {
    ...trafficPolicy(sp.externalPolicyLocal, clusterEndpoints, localEndpoints, hasEndpoints),
    viaExternalChain: hasEndpoints && externallyAccessible(sp),
  };

  let firewall: LoadBalancerFirewall | undefined;
  if (sp.loadBalancerVIPs.length > 0 && sp.loadBalancerSourceRanges.length > 0) {
    const nodeIP = node.primaryIP;
    const admitsNode =
      nodeIP !== undefined && sp.loadBalancerSourceRanges.some((cidr) => cidrContains(cidr, nodeIP));
    firewall = {
      sourceRanges: sp.loadBalancerSourceRanges,
      allowedVIPs: admitsNode ? sp.loadBalancerVIPs : NO_ADDRESSES,
    };
  }

  return {
    servicePort: sp,
    hasEndpoints,
    usesClusterEndpoints: clusterEndpoints.length > 0 && usesClusterEndpoints(sp),
    usesLocalEndpoints: localEndpoints.length > 0 && usesLocalEndpoints(sp),
    clusterEndpoints,
    localEndpoints,
    reachableEndpoints: cat.allReachableEndpoints,
    internal,
    external,
    ...(firewall !== undefined ? { firewall } : {}),
    topology: cat.topology,
    clusterFellBack: cat.clusterFellBack,
    localFellBack: cat.localFellBack,
    noLocalEndpointsInternal: internal.noEndpoints === 'drop',
    noLocalEndpointsExternal: external.noEndpoints === 'drop',
  };
}

/** A traffic policy as ipvs mode applies it. */
export interface IpvsTrafficPolicy extends TrafficPolicy {
  /** Policy Local found no local endpoint, so the Cluster set is used instead of dropping. */
  readonly fellBackToCluster?: boolean;
}

/**
 * ClusterIP or external traffic as IPVS serves it (upstream ipvs syncEndpoint). IPVS reads a Local policy
 * differently from the rule-based modes: with no local endpoint it uses the Cluster set (k/k #97081: pods on this
 * node still reach the Service; replies to clients outside the cluster go astray) rather than dropping; with none
 * there either, the virtual server has no real server and the node's own stack refuses the connection.
 */
export function ipvsTrafficPolicy(
  policy: ServicePortPolicy,
  traffic: 'internal' | 'external',
): IpvsTrafficPolicy {
  const view = traffic === 'internal' ? policy.internal : policy.external;
  if (view.noEndpoints !== 'drop') return view;
  const endpoints = policy.clusterEndpoints;
  return endpoints.length > 0
    ? { policy: view.policy, endpoints, fellBackToCluster: true }
    : { policy: view.policy, endpoints, noEndpoints: 'reject' };
}

/** The PolicyNode for a node of this topology, primary IP and feature gates. */
export function policyNode(
  topology: NodeTopology,
  primaryIP: string | undefined,
  featureGates: FeatureGates | undefined,
): PolicyNode {
  return {
    ...topology,
    ...(primaryIP !== undefined ? { primaryIP } : {}),
    ...(featureGates !== undefined ? { featureGates } : {}),
  };
}
