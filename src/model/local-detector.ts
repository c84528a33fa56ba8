// How a backend tells pod-originated traffic from the rest (upstream pkg/proxy/util/localdetector.go). Data only:
// each backend prints its own match from it.
export type LocalTrafficDetector =
  | { readonly mode: 'ClusterCIDR' | 'NodeCIDR'; readonly cidr: string }
  | { readonly mode: 'BridgeInterface'; readonly interfaceName: string }
  | { readonly mode: 'InterfaceNamePrefix'; readonly interfacePrefix: string }
  | { readonly mode: 'None' };
