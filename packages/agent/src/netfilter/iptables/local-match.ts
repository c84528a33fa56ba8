// iptables' match for "from a local pod" or "not from one", printed from the model's detector. Shared by the
// iptables and ipvs backends, whose rules say it the same way (upstream proxyutil.LocalTrafficDetector).
import type { LocalTrafficDetector } from '../../model/local-detector.js';

export function localMatch(d: LocalTrafficDetector, local: boolean): string[] {
  const not = local ? [] : ['!'];
  switch (d.mode) {
    case 'ClusterCIDR':
    case 'NodeCIDR':
      return [...not, '-s', d.cidr];
    case 'BridgeInterface':
      return [...not, '-i', d.interfaceName];
    case 'InterfaceNamePrefix':
      return [...not, '-i', d.interfacePrefix + '+'];
    case 'None':
      return [];
  }
}
