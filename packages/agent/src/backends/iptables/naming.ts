// iptables mode's fixed and generated chain names (upstream pkg/proxy/iptables/proxier.go). Generated names:
// "KUBE-SVC-" + the first 16 characters of standard base32 (RFC 4648, A–Z2–7) of SHA-256(svcPortName + protocol),
// e.g. "ns1/svc1:p80" + "tcp" → KUBE-SVC-XPGD46QRK7WJZT7O. 16 characters keep every name (at most 25) well under
// the kernel's 28-character chain-name limit; the rest of the hash is dropped.
import { createHash } from 'node:crypto';
import type { Protocol } from '../../model/service-port-name.js';

export const KUBE_SERVICES = 'KUBE-SERVICES';
export const KUBE_EXTERNAL_SERVICES = 'KUBE-EXTERNAL-SERVICES';
export const KUBE_NODEPORTS = 'KUBE-NODEPORTS';
export const KUBE_POSTROUTING = 'KUBE-POSTROUTING';
export const KUBE_MARK_MASQ = 'KUBE-MARK-MASQ';
export const KUBE_FORWARD = 'KUBE-FORWARD';
export const KUBE_PROXY_FIREWALL = 'KUBE-PROXY-FIREWALL';
/** kubelet's historical anti-martian chain, written by kube-proxy for IPv4 localhost NodePorts. */
export const KUBELET_FIREWALL = 'KUBE-FIREWALL';
export const KUBE_PROXY_CANARY = 'KUBE-PROXY-CANARY';

export const SERVICE_CHAIN_PREFIXES = [
  'KUBE-SVC-',
  'KUBE-SVL-',
  'KUBE-EXT-',
  'KUBE-FW-',
  'KUBE-SEP-',
] as const;

/** Per-service and per-endpoint chains: the ones stale-chain cleanup may delete. */
export function isServiceChainName(chain: string): boolean {
  return SERVICE_CHAIN_PREFIXES.some((p) => chain.startsWith(p));
}

const BASE32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

/** RFC 4648 base32 (standard alphabet; padding omitted since callers take a prefix). */
export function base32(bytes: Uint8Array): string {
  let out = '';
  let bits = 0;
  let value = 0;
  for (const b of bytes) {
    value = (value << 8) | b;
    bits += 8;
    while (bits >= 5) {
      out += BASE32[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
    value &= (1 << bits) - 1;
  }
  if (bits > 0) out += BASE32[(value << (5 - bits)) & 31];
  return out;
}

function hash16(text: string): string {
  // 10 bytes are exactly 16 base32 characters: encode only what is kept.
  return base32(createHash('sha256').update(text, 'utf8').digest().subarray(0, 10));
}

/** upstream portProtoHash: base32(SHA-256(svcPortName + lowercase protocol))[:16]. */
export function portProtoHash(svcPortName: string, protocol: Protocol): string {
  return hash16(svcPortName + protocol.toLowerCase());
}

export interface ServicePortChainNames {
  /** KUBE-SVC-…: Cluster-policy endpoints. */
  readonly clusterPolicy: string;
  /** KUBE-SVL-…: Local-policy endpoints. */
  readonly localPolicy: string;
  /** KUBE-EXT-…: external traffic entry. */
  readonly external: string;
  /** KUBE-FW-…: loadBalancerSourceRanges. */
  readonly firewall: string;
}

export function servicePortChainNames(svcPortName: string, protocol: Protocol): ServicePortChainNames {
  const h = portProtoHash(svcPortName, protocol);
  return {
    clusterPolicy: 'KUBE-SVC-' + h,
    localPolicy: 'KUBE-SVL-' + h,
    external: 'KUBE-EXT-' + h,
    firewall: 'KUBE-FW-' + h,
  };
}

/** KUBE-SEP-…: base32(SHA-256(svcPortName + protocol + "IP:port"))[:16]; IPv6 endpoints as "[addr]:port". */
export function endpointChainName(svcPortName: string, protocol: Protocol, endpoint: string): string {
  return 'KUBE-SEP-' + hash16(svcPortName + protocol.toLowerCase() + endpoint);
}
