// Which host addresses accept NodePort traffic (upstream pkg/proxy/util/nodeport_addresses.go, and the
// "primary" expansion in cmd/kube-proxy/app/server.go).
import { cidrContains, isLoopbackIP, parseCIDRSloppy, parseIPSloppy } from './ip.js';
import type { IPFamily } from './ip.js';

export interface NodePortAddresses {
  readonly family: IPFamily;
  /** The CIDRs of this family given by --nodeport-addresses (after "primary" expansion); ["0.0.0.0/0"] or ["::/0"] when none apply. */
  readonly cidrs: readonly string[];
  /** True when cidrs is the whole family (0.0.0.0/0 or ::/0): every local address accepts NodePorts. */
  readonly matchAll: boolean;
  /** Whether a loopback CIDR is included (iptables' localhost NodePorts). */
  readonly containsIPv4Loopback: boolean;
}

const ZERO_CIDR: Readonly<Record<IPFamily, string>> = { IPv4: '0.0.0.0/0', IPv6: '::/0' };

/** The keyword that expands to the node's primary IPs (nftables' default). */
export const NODEPORT_ADDRESSES_PRIMARY = 'primary';

/**
 * Builds the family's NodePortAddresses from the configured CIDR strings (other families' entries are dropped;
 * none left → match-all). Invalid entries are reported in `problems`.
 */
export function nodePortAddressesFor(
  family: IPFamily,
  cidrs: readonly string[] | null | undefined,
): { readonly value: NodePortAddresses; readonly problems: readonly string[] } {
  const problems: string[] = [];
  const mine: string[] = [];
  (Array.isArray(cidrs) ? cidrs : []).forEach((raw: unknown, i) => {
    const parsed = typeof raw === 'string' ? parseCIDRSloppy(raw.trim()) : undefined;
    if (parsed === undefined) {
      const hint =
        raw === NODEPORT_ADDRESSES_PRIMARY ? ' ("primary" must be expanded with expandPrimary first)' : '';
      problems.push(
        `nodePortAddresses[${i}] ${JSON.stringify(raw) ?? String(raw)} is not a CIDR${hint}; ignored`,
      );
    } else if (parsed.family === family && !mine.includes(parsed.text)) {
      mine.push(parsed.text);
    }
  });
  const list = mine.length > 0 ? mine : [ZERO_CIDR[family]];
  const matchAll = list.some((c) => parseCIDRSloppy(c)?.prefixLength === 0);
  // 127.0.0.1 lying inside a CIDR (including 0.0.0.0/0) is what turns on localhost NodePorts in iptables mode.
  const containsIPv4Loopback =
    family === 'IPv4' &&
    list.some((c) => cidrContains(c, '127.0.0.1') || isLoopbackIP(parseCIDRSloppy(c)?.address ?? ''));
  return { value: { family, cidrs: list, matchAll, containsIPv4Loopback }, problems };
}

/**
 * The host addresses (canonical, this family) that fall inside the CIDRs, from a map interface → addresses with
 * prefix ("192.168.0.2/24"). Loopback addresses are included only when a CIDR contains them.
 */
export function nodePortIPs(
  npa: NodePortAddresses,
  hostInterfaces: ReadonlyMap<string, readonly string[]>,
): string[] {
  const out = new Set<string>();
  for (const addrs of hostInterfaces.values()) {
    for (const a of addrs) {
      const slash = a.indexOf('/');
      const ip = parseIPSloppy(slash < 0 ? a : a.slice(0, slash));
      if (ip === undefined || ip.family !== npa.family) continue;
      if (npa.cidrs.some((c) => cidrContains(c, ip.text))) out.add(ip.text);
    }
  }
  return [...out].sort();
}

/** Expands the word "primary" into the node's primary IPs as /32 and /128. */
export function expandPrimary(cidrs: readonly string[], nodeIPs: readonly string[]): string[] {
  // Upstream expands only the exact list ["primary"]; anything else is a list of CIDRs (validated elsewhere).
  if (cidrs.length !== 1 || cidrs[0] !== NODEPORT_ADDRESSES_PRIMARY) return [...cidrs];
  const out: string[] = [];
  for (const family of ['IPv4', 'IPv6'] as const) {
    // The primary IP of each family is the first node IP of that family.
    const primary = nodeIPs.map((s) => parseIPSloppy(s)).find((p) => p?.family === family);
    if (primary === undefined || isLoopbackIP(primary.text)) continue;
    out.push(`${primary.text}/${family === 'IPv4' ? 32 : 128}`);
  }
  return out;
}
