// How a backend tells pod-originated traffic from the rest (upstream pkg/proxy/util/localdetector.go). Data only:
// each backend prints its own match from it.
export type LocalTrafficDetector =
  | { readonly mode: 'ClusterCIDR' | 'NodeCIDR'; readonly cidr: string }
  | { readonly mode: 'BridgeInterface'; readonly interfaceName: string }
  | { readonly mode: 'InterfaceNamePrefix'; readonly interfacePrefix: string }
  | { readonly mode: 'None' };

/**
 * Which traffic to a ClusterIP is masqueraded: all of it (--masquerade-all), or only what does not come from a
 * pod (so that replies to off-cluster clients come back through this node), or none when pods cannot be told
 * from other sources (detect-local-mode None).
 */
export type ClusterIPMasquerade = 'all' | 'from-outside-cluster' | 'none';

export function clusterIPMasquerade(
  masqueradeAll: boolean,
  detector: LocalTrafficDetector,
): ClusterIPMasquerade {
  if (masqueradeAll) return 'all';
  return detector.mode === 'None' ? 'none' : 'from-outside-cluster';
}
