// Upstream's platformApplyDefaults for Linux (cmd/kube-proxy/app/server_linux.go), applied after the file or the
// flags and before validation: mode "" runs iptables, nftables with no nodePortAddresses serves NodePorts only on
// the node's primary IPs, and detectLocalMode "" is ClusterCIDR.
import { NODEPORT_ADDRESSES_PRIMARY } from '../model/nodeport-addresses.js';
import type { KubeProxyConfigurationV1Alpha1 } from './v1alpha1-types.js';

/**
 * nodePortAddresses as given, or, when none are, the mode's default: "primary" (the node's primary IPs) in
 * nftables mode, every address ([]) in the others. The agent's config and the commands' --nodeport-addresses
 * both come through here.
 */
export function nodePortAddressesOrDefault(
  mode: string,
  given: readonly string[] | null | undefined,
): readonly string[] {
  if (given !== null && given !== undefined && given.length > 0) return given;
  return mode === 'nftables' ? [NODEPORT_ADDRESSES_PRIMARY] : [];
}

export function applyPlatformDefaults(doc: KubeProxyConfigurationV1Alpha1): KubeProxyConfigurationV1Alpha1 {
  const mode = doc.mode === '' ? 'iptables' : doc.mode;
  return {
    ...doc,
    mode,
    // Left as given (null or []) where the default is every address: the file's own form, for /configz.
    nodePortAddresses:
      mode === 'nftables'
        ? [...nodePortAddressesOrDefault(mode, doc.nodePortAddresses)]
        : doc.nodePortAddresses,
    detectLocalMode: doc.detectLocalMode === '' ? 'ClusterCIDR' : doc.detectLocalMode,
  };
}
