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

// The flat layout (flat/README.md): shared maps instead of per-service chains. Names that upstream's layout also
// uses (cluster-ips, service-ips, the no-endpoint maps, hairpin-connections, the check chains) keep their meaning;
// the rest exist only in flat, so either layout can tell the other's table by them.
/** IP frontend → `goto dispatch-N` (or an affinity port's chain) for traffic using the Cluster endpoints. */
export const CLUSTER_DISPATCH_MAP = 'cluster-dispatch';
/** IP frontend → `goto local-dispatch-N` for traffic using the Local endpoints. */
export const LOCAL_DISPATCH_MAP = 'local-dispatch';
export const NODEPORT_CLUSTER_DISPATCH_MAP = 'nodeport-cluster-dispatch';
export const NODEPORT_LOCAL_DISPATCH_MAP = 'nodeport-local-dispatch';
/** Load-balancer frontends that have source ranges, and the (frontend . source range) pairs they admit. */
export const FIREWALL_FRONTENDS_SET = 'firewall-frontends';
export const FIREWALL_ALLOW_SET = 'firewall-allow';
/** The external policy chains, shared by every frontend (one per policy and frontend kind). */
export const EXTERNAL_CLUSTER_CHAIN = 'external-cluster';
export const EXTERNAL_LOCAL_CHAIN = 'external-local';
export const NODEPORT_EXTERNAL_CLUSTER_CHAIN = 'nodeport-external-cluster';
export const NODEPORT_EXTERNAL_LOCAL_CHAIN = 'nodeport-external-local';

/** Which endpoints a dispatch chain picks from: the view (Cluster, Local) and the frontend kind (IP, NodePort). */
export type DispatchKind = 'cluster' | 'local' | 'nodeport-cluster' | 'nodeport-local';
export const DISPATCH_KINDS: readonly DispatchKind[] = [
  'cluster',
  'local',
  'nodeport-cluster',
  'nodeport-local',
];
/** The protocols a Service port can have, as nft names them. */
export const FLAT_PROTOCOLS = ['tcp', 'udp', 'sctp'] as const;
export type FlatProtocol = (typeof FLAT_PROTOCOLS)[number];

const DISPATCH_PREFIX: Readonly<Record<DispatchKind, string>> = {
  cluster: 'dispatch-',
  local: 'local-dispatch-',
  'nodeport-cluster': 'nodeport-dispatch-',
  'nodeport-local': 'nodeport-local-dispatch-',
};

const ENDPOINTS_PREFIX: Readonly<Record<DispatchKind, string>> = {
  cluster: 'endpoints-',
  local: 'local-endpoints-',
  'nodeport-cluster': 'nodeport-endpoints-',
  'nodeport-local': 'nodeport-local-endpoints-',
};

// Made once: a render names a map for every port's endpoint run, and a name made there was a string of its own
// per port, held as long as the run is (≈ 3 MiB at 100,000 Services).
const ENDPOINTS_MAP_NAMES = Object.fromEntries(
  DISPATCH_KINDS.map((kind) => [
    kind,
    Object.fromEntries(FLAT_PROTOCOLS.map((p) => [p, ENDPOINTS_PREFIX[kind] + p])) as Record<
      FlatProtocol,
      string
    >,
  ]),
) as Record<DispatchKind, Record<FlatProtocol, string>>;

/**
 * The map of one view's endpoints by frontend and slot, per protocol (`endpoints-tcp`, `local-endpoints-udp`, …):
 * one map per protocol because nft 1.0.6 can only read a map's `typeof` value back when it names the protocol.
 */
export function endpointsMapName(kind: DispatchKind, protocol: FlatProtocol): string {
  return ENDPOINTS_MAP_NAMES[kind][protocol];
}

/** The shared chain that picks one of `count` endpoints: `dispatch-tcp-3`, `local-dispatch-udp-1`, … */
export function dispatchChainName(kind: DispatchKind, protocol: FlatProtocol, count: number): string {
  return `${DISPATCH_PREFIX[kind]}${protocol}-${count}`;
}

/** The kind, protocol and count of a dispatch chain name, or undefined when the name is not one. */
export function parseDispatchChainName(
  name: string,
): { kind: DispatchKind; protocol: FlatProtocol; count: number } | undefined {
  for (const kind of DISPATCH_KINDS) {
    const prefix = DISPATCH_PREFIX[kind];
    if (!name.startsWith(prefix)) continue;
    const m = /^(tcp|udp|sctp)-([1-9][0-9]*)$/.exec(name.slice(prefix.length));
    return m ? { kind, protocol: m[1] as FlatProtocol, count: Number(m[2]) } : undefined;
  }
  return undefined;
}
