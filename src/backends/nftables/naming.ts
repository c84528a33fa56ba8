// Names of everything kube-proxy puts in its table. Fixed names are constants; per-service names go through
// hashAndTruncate (upstream pkg/proxy/nftables/proxier.go), so operators' `nft list` habits keep working.
import { createHash } from 'node:crypto';
import type { Endpoint } from '../../model/endpoint.js';
import type { ServicePortName } from '../../model/service-port-name.js';

export const TABLE_NAME = 'kube-proxy';
export const TABLE_COMMENT = 'rules for kube-proxy';

// Regular chains.
export const SERVICES_CHAIN = 'services';
export const MASQUERADING_CHAIN = 'masquerading';
export const SERVICE_ENDPOINTS_CHECK_CHAIN = 'service-endpoints-check';
export const NODEPORT_ENDPOINTS_CHECK_CHAIN = 'nodeport-endpoints-check';
export const FIREWALL_CHECK_CHAIN = 'firewall-check';
export const CLUSTER_IPS_CHECK_CHAIN = 'cluster-ips-check';
export const REJECT_CHAIN = 'reject-chain';

// Shared sets and maps.
export const CLUSTER_IPS_SET = 'cluster-ips';
export const NODEPORT_IPS_SET = 'nodeport-ips';
export const HAIRPIN_SET = 'hairpin-connections';
export const SERVICE_IPS_MAP = 'service-ips';
export const SERVICE_NODEPORTS_MAP = 'service-nodeports';
export const FIREWALL_IPS_MAP = 'firewall-ips';
export const NO_ENDPOINT_SERVICES_MAP = 'no-endpoint-services';
export const NO_ENDPOINT_NODEPORTS_MAP = 'no-endpoint-nodeports';

// Per-service prefixes.
export const SERVICE_CHAIN_PREFIX = 'service-';
export const LOCAL_CHAIN_PREFIX = 'local-';
export const EXTERNAL_CHAIN_PREFIX = 'external-';
export const FIREWALL_CHAIN_PREFIX = 'firewall-';
export const ENDPOINT_CHAIN_PREFIX = 'endpoint-';
export const AFFINITY_SET_PREFIX = 'affinity-';

/**
 * knftables NameLengthMax is 256; upstream leaves 16 for the longest prefix ("external-" and friends), so a
 * hashed base is at most 240 characters.
 */
export const CHAIN_BASE_LENGTH_MAX = 240;

const BASE32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

/** Standard (RFC 4648) base32 of the first 5 bytes: exactly the first 8 characters of the full encoding. */
function base32First8(bytes: Uint8Array): string {
  let bits = 0n;
  for (let i = 0; i < 5; i++) bits = (bits << 8n) | BigInt(bytes[i] ?? 0);
  let out = '';
  for (let i = 7; i >= 0; i--) out += BASE32[Number((bits >> BigInt(i * 5)) & 31n)];
  return out;
}

/** base32(SHA-256(name))[:8] + "-" + name, cut to 240 characters ending in "..." when longer. */
export function hashAndTruncate(name: string): string {
  const hash = base32First8(createHash('sha256').update(name, 'utf8').digest());
  const full = `${hash}-${name}`;
  return full.length > CHAIN_BASE_LENGTH_MAX ? full.slice(0, CHAIN_BASE_LENGTH_MAX - 3) + '...' : full;
}

/** "ns/svc/tcp/port" (unnamed port: trailing "/"), hashed. */
export function servicePortChainBase(name: ServicePortName): string {
  return hashAndTruncate(`${name.namespace}/${name.name}/${name.protocol.toLowerCase()}/${name.port}`);
}

/** "ns/svc/tcp/port__IP/port" (IPv6 ":" → "."), hashed. */
export function endpointChainBase(name: ServicePortName, ep: Pick<Endpoint, 'ip' | 'port'>): string {
  const ip = ep.ip.replaceAll(':', '.');
  return hashAndTruncate(
    `${name.namespace}/${name.name}/${name.protocol.toLowerCase()}/${name.port}__${ip}/${ep.port}`,
  );
}

/** Upstream's test for "a per-service chain" (used to find stale chains): every such name contains "/". */
export function isServiceChain(name: string): boolean {
  return name.includes('/');
}

export function isAffinitySet(name: string): boolean {
  return name.startsWith(AFFINITY_SET_PREFIX);
}
