// Why an endpoint of a service port is not used for one kind of traffic from this node, in words. Read from the
// decision itself (servicePortPolicy: the sets it chose, the topology decision, the fallbacks), so an
// explanation can never disagree with what the backends program. Only `explain` and the like call this; a sync
// never pays for it.
import type { Endpoint } from './endpoint.js';
import type { ServicePortPolicy } from './port-policy.js';
import type { NodeTopology } from './topology.js';

export interface ExcludedEndpoint {
  readonly endpoint: Endpoint;
  readonly reason: string;
}

export interface TrafficExplanation {
  /** Endpoints of the port that this traffic is never sent to, each with why. */
  readonly excluded: readonly ExcludedEndpoint[];
  /** How the choice was made where that is not obvious (hints ignored, terminating fallback). */
  readonly notes: readonly string[];
}

const list = (names: ReadonlySet<string>): string => [...names].sort().join(', ');

/** Why a not-ready endpoint is left out when the set is made of ready ones. */
function notReadyReason(ep: Endpoint): string {
  if (!ep.terminating) return 'not ready';
  return ep.serving
    ? 'terminating (still serving), and ready endpoints exist'
    : 'terminating and no longer serving';
}

/** Why an endpoint is left out of a set that fell back to terminating endpoints that still serve. */
function notServingReason(ep: Endpoint): string {
  return ep.terminating ? 'terminating and no longer serving' : 'not ready and not terminating';
}

function clusterReason(ep: Endpoint, policy: ServicePortPolicy, node: NodeTopology): string {
  if (policy.clusterFellBack) return notServingReason(ep);
  if (!ep.ready) return notReadyReason(ep);
  switch (policy.topology.mode) {
    case 'PreferSameZone':
      return `hinted for zone ${list(ep.zoneHints)}, not this node's zone ${node.zone ?? '(none)'}`;
    case 'PreferSameNode':
      return `hinted for node ${list(ep.nodeHints)}, not this node (${node.nodeName})`;
    case '':
      // A ready endpoint is always in an unnarrowed Cluster set; reaching here means the set was not computed.
      return 'not used by this port';
  }
}

function localReason(ep: Endpoint, policy: ServicePortPolicy): string {
  if (!ep.isLocal) return 'on another node, and the traffic policy is Local';
  if (policy.localFellBack) return notServingReason(ep);
  return notReadyReason(ep);
}

/**
 * The endpoints of the port (`all`, as the endpoints map holds them) that `traffic` is not sent to, and why.
 * With no usable endpoint for that traffic every endpoint is listed, each with its own reason.
 */
export function explainTraffic(
  policy: ServicePortPolicy,
  all: readonly Endpoint[],
  traffic: 'internal' | 'external',
  node: NodeTopology,
): TrafficExplanation {
  const view = traffic === 'internal' ? policy.internal : policy.external;
  const used = new Set(view.endpoints.map((ep) => ep.endpoint));
  const local = view.policy === 'Local';
  const excluded: ExcludedEndpoint[] = [];
  for (const ep of all) {
    if (used.has(ep.endpoint)) continue;
    excluded.push({
      endpoint: ep,
      reason: local ? localReason(ep, policy) : clusterReason(ep, policy, node),
    });
  }
  const notes: string[] = [];
  if (!local) {
    if (policy.topology.mode === 'PreferSameZone')
      notes.push(`topology hints used: only endpoints hinted for zone ${node.zone ?? ''}`);
    else if (policy.topology.mode === 'PreferSameNode')
      notes.push(`topology hints used: only endpoints hinted for node ${node.nodeName}`);
    else if (policy.topology.hintsIgnored === 'not-all-hinted')
      notes.push('topology hints ignored: some ready endpoint has no hint, so all ready endpoints are used');
    else if (policy.topology.hintsIgnored === 'none-for-this-node')
      notes.push(
        `topology hints ignored: no endpoint is hinted for this node's zone (${node.zone ?? 'none'}), so all ready endpoints are used`,
      );
    if (policy.clusterFellBack && view.endpoints.length > 0)
      notes.push('no endpoint is ready: terminating endpoints that still serve are used');
  } else if (policy.localFellBack && view.endpoints.length > 0) {
    notes.push('no local endpoint is ready: local terminating endpoints that still serve are used');
  }
  return { excluded, notes };
}
