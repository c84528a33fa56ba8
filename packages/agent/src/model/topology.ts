// Which endpoints this node uses for one service port (upstream pkg/proxy/topology.go CategorizeEndpoints).
// kube-proxy acts only on the hints the EndpointSlice controller wrote; it never reads spec.trafficDistribution
// or the topology-mode annotation itself.
import type { Endpoint } from './endpoint.js';
import { DEFAULT_FEATURE_GATES } from './feature-gates.js';
import type { FeatureGates } from './feature-gates.js';
import { usesClusterEndpoints, usesLocalEndpoints } from './service-port.js';
import type { ServicePort } from './service-port.js';

export interface NodeTopology {
  /** This node's name (for node hints). */
  readonly nodeName: string;
  /** The node's topology.kubernetes.io/zone label, if any (for zone hints). */
  readonly zone?: string;
}

export interface CategorizedEndpoints {
  /** Endpoints for Cluster-policy traffic; null when the Cluster set is not used by this port. */
  readonly clusterEndpoints: readonly Endpoint[] | null;
  /** Endpoints for Local-policy traffic; null when the Local set is not used by this port. */
  readonly localEndpoints: readonly Endpoint[] | null;
  /** Every endpoint that some traffic to this port may reach from this node. */
  readonly allReachableEndpoints: readonly Endpoint[];
  /** Whether the service has any usable endpoint cluster-wide (else every frontend rejects). */
  readonly hasAnyEndpoints: boolean;
  /** How hints narrowed the Cluster set, and why existing hints were not used. */
  readonly topology: TopologyDecision;
  /** No endpoint was ready, so the Cluster set is the terminating endpoints that still serve. */
  readonly clusterFellBack: boolean;
  /** No local endpoint was ready, so the Local set is the local terminating endpoints that still serve. */
  readonly localFellBack: boolean;
}

const NO_TOPOLOGY: TopologyDecision = Object.freeze({ mode: '' });

/** How the Cluster set is narrowed by hints: '' (not at all), same node, or same zone. */
export type TopologyMode = '' | 'PreferSameNode' | 'PreferSameZone';

/** Why hints that exist were not used; absent when they were used or none exist. */
export type HintsIgnored =
  /** Some ready endpoint carries no hint (the EndpointSlice controller hints all or none). */
  | 'not-all-hinted'
  /** Every ready endpoint is hinted, but none for this node's zone (or node). */
  | 'none-for-this-node';

export interface TopologyDecision {
  readonly mode: TopologyMode;
  readonly hintsIgnored?: HintsIgnored;
}

/**
 * Hints are honoured only when every *ready* endpoint carries one and at least one is for this node (or zone);
 * anything less and all ready endpoints are used, so one unhinted endpoint never strands traffic.
 */
export function topologyDecision(
  endpoints: readonly Endpoint[],
  node: NodeTopology,
  featureGates: FeatureGates = DEFAULT_FEATURE_GATES,
): TopologyDecision {
  let anyReady = false;
  let anyHinted = false;
  let allNodeHinted = true;
  let anyForNode = false;
  let allZoneHinted = true;
  let anyForZone = false;
  const zone = node.zone ?? '';
  const nodeHints = featureGates.preferSameTrafficDistribution;
  for (const ep of endpoints) {
    if (!ep.ready) continue;
    anyReady = true;
    if (ep.zoneHints.size > 0 || (nodeHints && ep.nodeHints.size > 0)) anyHinted = true;
    if (ep.nodeHints.size === 0) allNodeHinted = false;
    else if (node.nodeName !== '' && ep.nodeHints.has(node.nodeName)) anyForNode = true;
    if (ep.zoneHints.size === 0) allZoneHinted = false;
    else if (zone !== '' && ep.zoneHints.has(zone)) anyForZone = true;
  }
  if (!anyReady) return { mode: '' };
  if (nodeHints && allNodeHinted && anyForNode) return { mode: 'PreferSameNode' };
  if (allZoneHinted && anyForZone) return { mode: 'PreferSameZone' };
  if (!anyHinted) return { mode: '' };
  const allHinted = allZoneHinted || (nodeHints && allNodeHinted);
  return { mode: '', hintsIgnored: allHinted ? 'none-for-this-node' : 'not-all-hinted' };
}

export function topologyModeFromHints(
  endpoints: readonly Endpoint[],
  node: NodeTopology,
  featureGates: FeatureGates = DEFAULT_FEATURE_GATES,
): TopologyMode {
  return topologyDecision(endpoints, node, featureGates).mode;
}

function allowedByTopology(ep: Endpoint, mode: TopologyMode, node: NodeTopology): boolean {
  switch (mode) {
    case '':
      return true;
    case 'PreferSameNode':
      return ep.nodeHints.has(node.nodeName);
    case 'PreferSameZone':
      return ep.zoneHints.has(node.zone ?? '');
  }
}

const servingTerminating = (ep: Endpoint): boolean => ep.serving && ep.terminating;

function byEndpointString(a: Endpoint, b: Endpoint): number {
  return a.endpoint < b.endpoint ? -1 : a.endpoint > b.endpoint ? 1 : 0;
}

export function categorizeEndpoints(
  endpoints: readonly Endpoint[],
  servicePort: ServicePort,
  node: NodeTopology,
  featureGates: FeatureGates = DEFAULT_FEATURE_GATES,
): CategorizedEndpoints {
  if (endpoints.length === 0) {
    return {
      clusterEndpoints: null,
      localEndpoints: null,
      allReachableEndpoints: [],
      hasAnyEndpoints: false,
      topology: NO_TOPOLOGY,
      clusterFellBack: false,
      localFellBack: false,
    };
  }
  const useCluster = usesClusterEndpoints(servicePort);
  const useLocal = usesLocalEndpoints(servicePort);

  let clusterEndpoints: Endpoint[] | null = null;
  let topology = NO_TOPOLOGY;
  let clusterFellBack = false;
  let hasAnyEndpoints = false;
  if (useCluster) {
    topology = topologyDecision(endpoints, node, featureGates);
    const mode = topology.mode;
    clusterEndpoints = endpoints.filter((ep) => ep.ready && allowedByTopology(ep, mode, node));
    // Empty only when nothing is ready anywhere (the hint fallback already happened): use what is still
    // serving while it terminates, ignoring topology, rather than black-holing connections.
    if (clusterEndpoints.length === 0) {
      clusterFellBack = true;
      clusterEndpoints = endpoints.filter(servingTerminating);
    }
    hasAnyEndpoints = clusterEndpoints.length > 0;
  }

  let localEndpoints: Endpoint[] | null = null;
  let localFellBack = false;
  if (useLocal) {
    // Even with no local endpoint, endpoints elsewhere mean "drop" (no local endpoints) rather than "reject".
    if (!hasAnyEndpoints) hasAnyEndpoints = endpoints.some((ep) => ep.ready || servingTerminating(ep));
    // Topology hints never narrow the Local set: it is already as close as it gets.
    localEndpoints = endpoints.filter((ep) => ep.isLocal && ep.ready);
    if (localEndpoints.length === 0) {
      localFellBack = true;
      localEndpoints = endpoints.filter((ep) => ep.isLocal && servingTerminating(ep));
    }
  }

  let allReachableEndpoints: readonly Endpoint[];
  if (!useLocal) allReachableEndpoints = clusterEndpoints ?? [];
  else if (!useCluster) allReachableEndpoints = localEndpoints ?? [];
  else if (topology.mode === '' && !localFellBack) {
    // Unfiltered ready endpoints already include every local ready one.
    allReachableEndpoints = clusterEndpoints ?? [];
  } else {
    const union = new Map<string, Endpoint>();
    for (const ep of clusterEndpoints ?? []) union.set(ep.endpoint, ep);
    for (const ep of localEndpoints ?? []) union.set(ep.endpoint, ep);
    allReachableEndpoints = [...union.values()].sort(byEndpointString);
  }
  return {
    clusterEndpoints,
    localEndpoints,
    allReachableEndpoints,
    hasAnyEndpoints,
    topology,
    clusterFellBack,
    localFellBack,
  };
}
