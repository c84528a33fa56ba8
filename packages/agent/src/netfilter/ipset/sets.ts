// The ipsets of upstream's IPVS proxier (pkg/proxy/ipvs/ipset.go for names and comments, proxier.go's ipsetInfo
// for the types, pkg/proxy/ipvs/ipset/ipset.go for the create options and the entry text) as data, and the
// typed entry of each set type with its canonical text and its validation.
//
// The text is canonical, the way `ipset save` prints an entry back (checked against the kernel by
// test/netfilter/ipset/kernel.test.ts), so that the agent can compare desired and listed state as strings: IPv6 in
// RFC 5952 form, a net with its host bits cleared and no "/32" (or "/128"), the protocol in lower case.
import type { IPFamily } from '../../model/ip.js';
import { parseCIDRSloppy, parseIPSloppy } from '../../model/ip.js';

export const IPSET_TYPES = [
  'hash:ip',
  'hash:ip,port',
  'hash:ip,port,ip',
  'hash:ip,port,net',
  'bitmap:port',
] as const;
export type IPSetType = (typeof IPSET_TYPES)[number];

export function isIPSetType(s: string): s is IPSetType {
  return (IPSET_TYPES as readonly string[]).includes(s);
}

/** The protocols upstream accepts in an entry (validateProtocol). */
export const IPSET_PROTOCOLS = ['tcp', 'udp', 'sctp'] as const;
export type IPSetProtocol = (typeof IPSET_PROTOCOLS)[number];

export interface PortRange {
  readonly first: number;
  readonly last: number;
}

// Upstream's defaults (setIPSetDefaults); every set it makes uses them.
export const DEFAULT_HASH_SIZE = 1024;
export const DEFAULT_MAX_ELEM = 65536;
export const DEFAULT_PORT_RANGE: PortRange = { first: 0, last: 65535 };

/** The kernel's limit (IPSET_MAXNAMELEN is 32 with the terminating NUL). */
export const IPSET_MAX_NAME_LENGTH = 31;

/** One set as the agent wants it to exist. */
export interface IPSetSpec {
  readonly name: string;
  readonly type: IPSetType;
  /**
   * The proxier's family: `family inet|inet6` of a hash set. A bitmap:port set has no family in the kernel; it is
   * still one proxier's, which its name tells.
   */
  readonly family: IPFamily;
  /**
   * Upstream's words for the set. Upstream puts them in iptables rule comments, not in the set: its sets are
   * created without the `comment` option, and `create -exist` refuses a set whose options differ, so adding it
   * here would clash with sets an upstream kube-proxy left behind.
   */
  readonly comment: string;
  /** Hash types only; DEFAULT_HASH_SIZE when absent. */
  readonly hashSize?: number;
  /** Hash types only; DEFAULT_MAX_ELEM when absent. */
  readonly maxElem?: number;
  /** bitmap:port only; DEFAULT_PORT_RANGE when absent. */
  readonly portRange?: PortRange;
}

/** One entry of upstream's catalogue; `name` is the IPv4 name. */
export interface KubeIPSetInfo {
  readonly id: string;
  readonly name: string;
  readonly type: IPSetType;
  readonly comment: string;
}

/** Upstream's ipsetInfo, in its order, with its names and comments. */
export const KUBE_IPSETS = [
  {
    id: 'loopBack',
    name: 'KUBE-LOOP-BACK',
    type: 'hash:ip,port,ip',
    comment: 'Kubernetes endpoints dst ip:port, source ip for solving hairpin purpose',
  },
  {
    id: 'clusterIP',
    name: 'KUBE-CLUSTER-IP',
    type: 'hash:ip,port',
    comment: 'Kubernetes service cluster ip + port for masquerade purpose',
  },
  {
    id: 'externalIP',
    name: 'KUBE-EXTERNAL-IP',
    type: 'hash:ip,port',
    comment: 'Kubernetes service external ip + port for masquerade and filter purpose',
  },
  {
    id: 'externalIPLocal',
    name: 'KUBE-EXTERNAL-IP-LOCAL',
    type: 'hash:ip,port',
    comment: 'Kubernetes service external ip + port with externalTrafficPolicy=local',
  },
  {
    id: 'loadBalancer',
    name: 'KUBE-LOAD-BALANCER',
    type: 'hash:ip,port',
    comment: 'Kubernetes service lb portal',
  },
  {
    id: 'loadBalancerFW',
    name: 'KUBE-LOAD-BALANCER-FW',
    type: 'hash:ip,port',
    comment: 'Kubernetes service load balancer ip + port for load balancer with sourceRange',
  },
  {
    id: 'loadBalancerLocal',
    name: 'KUBE-LOAD-BALANCER-LOCAL',
    type: 'hash:ip,port',
    comment: 'Kubernetes service load balancer ip + port with externalTrafficPolicy=local',
  },
  {
    id: 'loadBalancerSourceIP',
    name: 'KUBE-LOAD-BALANCER-SOURCE-IP',
    type: 'hash:ip,port,ip',
    comment: 'Kubernetes service load balancer ip + port + source IP for packet filter purpose',
  },
  {
    id: 'loadBalancerSourceCIDR',
    name: 'KUBE-LOAD-BALANCER-SOURCE-CIDR',
    type: 'hash:ip,port,net',
    comment: 'Kubernetes service load balancer ip + port + source cidr for packet filter purpose',
  },
  {
    id: 'nodePortTCP',
    name: 'KUBE-NODE-PORT-TCP',
    type: 'bitmap:port',
    comment: 'Kubernetes nodeport TCP port for masquerade purpose',
  },
  {
    id: 'nodePortLocalTCP',
    name: 'KUBE-NODE-PORT-LOCAL-TCP',
    type: 'bitmap:port',
    comment: 'Kubernetes nodeport TCP port with externalTrafficPolicy=local',
  },
  {
    id: 'nodePortUDP',
    name: 'KUBE-NODE-PORT-UDP',
    type: 'bitmap:port',
    comment: 'Kubernetes nodeport UDP port for masquerade purpose',
  },
  {
    id: 'nodePortLocalUDP',
    name: 'KUBE-NODE-PORT-LOCAL-UDP',
    type: 'bitmap:port',
    comment: 'Kubernetes nodeport UDP port with externalTrafficPolicy=local',
  },
  {
    id: 'nodePortSCTP',
    name: 'KUBE-NODE-PORT-SCTP-HASH',
    type: 'hash:ip,port',
    comment: "Kubernetes nodeport SCTP port for masquerade purpose with type 'hash ip:port'",
  },
  {
    id: 'nodePortLocalSCTP',
    name: 'KUBE-NODE-PORT-LOCAL-SCTP-HASH',
    type: 'hash:ip,port',
    comment: "Kubernetes nodeport SCTP port with externalTrafficPolicy=local with type 'hash ip:port'",
  },
  {
    id: 'healthCheckNodePort',
    name: 'KUBE-HEALTH-CHECK-NODE-PORT',
    type: 'bitmap:port',
    comment: 'Kubernetes health check node port',
  },
  {
    id: 'ipvsIPs',
    name: 'KUBE-IPVS-IPS',
    type: 'hash:ip',
    comment: 'Addresses on the ipvs interface',
  },
] as const satisfies readonly KubeIPSetInfo[];

export type KubeIPSetId = (typeof KUBE_IPSETS)[number]['id'];

/**
 * A set's name in a family. Upstream (NewIPSet) keeps the IPv4 names as they always were and, so that both
 * families' sets can live side by side in dual-stack, turns the first "KUBE-" of an IPv6 name into "KUBE-6-",
 * cutting the result to the kernel's 31 characters: KUBE-6-LOAD-BALANCER-SOURCE-CID and
 * KUBE-6-NODE-PORT-LOCAL-SCTP-HAS are what upstream creates.
 */
export function ipsetName(ipv4Name: string, family: IPFamily): string {
  if (family === 'IPv4' || !ipv4Name.startsWith('KUBE-')) return ipv4Name;
  return `KUBE-6-${ipv4Name.slice('KUBE-'.length)}`.slice(0, IPSET_MAX_NAME_LENGTH);
}

function specOf(info: KubeIPSetInfo, family: IPFamily): IPSetSpec {
  const base = { name: ipsetName(info.name, family), type: info.type, family, comment: info.comment };
  return info.type === 'bitmap:port'
    ? { ...base, portRange: DEFAULT_PORT_RANGE }
    : { ...base, hashSize: DEFAULT_HASH_SIZE, maxElem: DEFAULT_MAX_ELEM };
}

/** One set of the catalogue, as the family's proxier creates it. */
export function kubeIPSet(id: KubeIPSetId, family: IPFamily): IPSetSpec {
  const info = KUBE_IPSETS.find((s) => s.id === id) as KubeIPSetInfo;
  return specOf(info, family);
}

/** Every set of the catalogue for one family, in upstream's order. */
export function kubeIPSets(family: IPFamily): readonly IPSetSpec[] {
  return KUBE_IPSETS.map((info) => specOf(info, family));
}

/** The names of every set of the catalogue in both families: what `save` keeps and cleanup destroys. */
export function allKubeIPSetNames(): readonly string[] {
  return [...kubeIPSets('IPv4'), ...kubeIPSets('IPv6')].map((s) => s.name);
}

// Entries: one typed value per set type.
export interface HashIPEntry {
  readonly ip: string;
}
export interface HashIPPortEntry {
  readonly ip: string;
  readonly protocol: IPSetProtocol;
  readonly port: number;
}
export interface HashIPPortIPEntry extends HashIPPortEntry {
  readonly ip2: string;
}
export interface HashIPPortNetEntry extends HashIPPortEntry {
  /** A CIDR; prefix length 0 cannot be stored (the kernel refuses it). */
  readonly net: string;
}
export interface BitmapPortEntry {
  readonly port: number;
}

export interface IPSetEntryByType {
  readonly 'hash:ip': HashIPEntry;
  readonly 'hash:ip,port': HashIPPortEntry;
  readonly 'hash:ip,port,ip': HashIPPortIPEntry;
  readonly 'hash:ip,port,net': HashIPPortNetEntry;
  readonly 'bitmap:port': BitmapPortEntry;
}

/** An entry of a set of type T (of any type when T is not narrowed). */
export type IPSetEntry<T extends IPSetType = IPSetType> = IPSetEntryByType[T];

function ipText(ip: string): string {
  return parseIPSloppy(ip)?.text ?? ip;
}

// ipset prints a net that covers one address as the bare address.
function netText(net: string): string {
  const c = parseCIDRSloppy(net);
  if (c === undefined) return ipText(net);
  return c.prefixLength === (c.family === 'IPv4' ? 32 : 128) ? c.address : c.text;
}

function ipPortText(e: HashIPPortEntry): string {
  return `${ipText(e.ip)},${String(e.protocol).toLowerCase()}:${e.port}`;
}

const ENTRY_TEXT: { readonly [K in IPSetType]: (entry: IPSetEntry<K>) => string } = {
  'hash:ip': (e) => ipText(e.ip),
  'hash:ip,port': ipPortText,
  'hash:ip,port,ip': (e) => `${ipPortText(e)},${ipText(e.ip2)}`,
  'hash:ip,port,net': (e) => `${ipPortText(e)},${netText(e.net)}`,
  'bitmap:port': (e) => String(e.port),
};

/**
 * The entry as `ipset save` prints it back, e.g. "10.0.0.1,tcp:80,10.0.0.0/24" or "30001". Canonical for every
 * entry validateEntry accepts; others come back with their fields as given.
 */
export function entryText<T extends IPSetType>(type: T, entry: IPSetEntry<T>): string {
  const format: (entry: IPSetEntry<T>) => string = ENTRY_TEXT[type];
  return format(entry);
}

// Validation: what upstream's Entry.Validate checks, plus what the kernel would refuse (a port above 65535, an
// address of the other family, a /0 net), so that a bad entry is caught before it fails a whole restore.
function portProblem(port: unknown): string | undefined {
  if (typeof port !== 'number' || !Number.isInteger(port) || port < 0 || port > 65535) {
    return `port ${String(port)} is not a port number (0-65535)`;
  }
  return undefined;
}

function protocolProblem(protocol: unknown): string | undefined {
  if ((IPSET_PROTOCOLS as readonly unknown[]).includes(protocol)) return undefined;
  return `protocol ${JSON.stringify(protocol)} is not one of ${IPSET_PROTOCOLS.join(', ')}`;
}

function addressProblem(set: IPSetSpec, what: string, ip: unknown): string | undefined {
  const parsed = typeof ip === 'string' ? parseIPSloppy(ip) : undefined;
  if (parsed === undefined) return `${what} ${JSON.stringify(ip)} is not an IP address`;
  if (parsed.family !== set.family) return `${what} ${ip} is ${parsed.family}, the set holds ${set.family}`;
  return undefined;
}

function netProblem(set: IPSetSpec, net: unknown): string | undefined {
  const parsed = typeof net === 'string' ? parseCIDRSloppy(net) : undefined;
  if (parsed === undefined) return `net ${JSON.stringify(net)} is not a CIDR`;
  if (parsed.family !== set.family) return `net ${net} is ${parsed.family}, the set holds ${set.family}`;
  if (parsed.prefixLength === 0) return `net ${net} has prefix length 0, which ipset cannot store`;
  return undefined;
}

function ipPortProblem(set: IPSetSpec, e: HashIPPortEntry): string | undefined {
  return addressProblem(set, 'IP', e.ip) ?? protocolProblem(e.protocol) ?? portProblem(e.port);
}

function bitmapPortProblem(set: IPSetSpec, e: BitmapPortEntry): string | undefined {
  const problem = portProblem(e.port);
  if (problem !== undefined) return problem;
  const { first, last } = set.portRange ?? DEFAULT_PORT_RANGE;
  if (e.port < Math.min(first, last) || e.port > Math.max(first, last)) {
    return `port ${e.port} is outside the set's range ${first}-${last}`;
  }
  return undefined;
}

const VALIDATE: {
  readonly [K in IPSetType]: (set: IPSetSpec, entry: IPSetEntry<K>) => string | undefined;
} = {
  'hash:ip': (set, e) => addressProblem(set, 'IP', e.ip),
  'hash:ip,port': ipPortProblem,
  'hash:ip,port,ip': (set, e) => ipPortProblem(set, e) ?? addressProblem(set, 'second IP', e.ip2),
  'hash:ip,port,net': (set, e) => ipPortProblem(set, e) ?? netProblem(set, e.net),
  'bitmap:port': bitmapPortProblem,
};

/** Undefined when `entry` may go into `set`; otherwise a message that names the set and what is wrong. */
export function validateEntry<T extends IPSetType>(
  set: IPSetSpec & { readonly type: T },
  entry: IPSetEntry<T>,
): string | undefined {
  if (typeof entry !== 'object' || entry === null) return `${set.name}: entry is not a value`;
  const check: (set: IPSetSpec, entry: IPSetEntry<T>) => string | undefined = VALIDATE[set.type];
  const problem = check(set, entry);
  return problem === undefined ? undefined : `${set.name}: ${problem}`;
}
