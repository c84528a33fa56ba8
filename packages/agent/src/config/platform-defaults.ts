// Upstream's platformApplyDefaults for Linux (cmd/kube-proxy/app/server_linux.go), applied after the file or the
// flags and before validation: mode "" runs iptables, nftables with no nodePortAddresses serves NodePorts only on
// the node's primary IPs, and detectLocalMode "" is ClusterCIDR.
import { NODE_PORT_ADDRESSES_PRIMARY } from './v1alpha1-types.js';
import type { KubeProxyConfigurationV1Alpha1 } from './v1alpha1-types.js';

export function applyPlatformDefaults(doc: KubeProxyConfigurationV1Alpha1): KubeProxyConfigurationV1Alpha1 {
  const mode = doc.mode === '' ? 'iptables' : doc.mode;
  const noNodePortAddresses = doc.nodePortAddresses === null || doc.nodePortAddresses.length === 0;
  return {
    ...doc,
    mode,
    nodePortAddresses:
      mode === 'nftables' && noNodePortAddresses ? [NODE_PORT_ADDRESSES_PRIMARY] : doc.nodePortAddresses,
    detectLocalMode: doc.detectLocalMode === '' ? 'ClusterCIDR' : doc.detectLocalMode,
  };
}
