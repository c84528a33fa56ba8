// Which host addresses accept NodePort traffic (upstream pkg/proxy/util/nodeport_addresses.go).
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

/**
 * Builds the family's NodePortAddresses from the configured CIDR strings (other families' entries are dropped;
 * none left → match-all). Invalid entries are reported in `problems`.
 */
export declare function nodePortAddressesFor(
  family: IPFamily,
  cidrs: readonly string[] | null | undefined,
): { readonly value: NodePortAddresses; readonly problems: readonly string[] };

/**
 * The host addresses (canonical, this family) that fall inside the CIDRs, from a map interface → addresses with
 * prefix ("192.168.0.2/24"). Loopback addresses are included only when a CIDR contains them.
 */
export declare function nodePortIPs(
  npa: NodePortAddresses,
  hostInterfaces: ReadonlyMap<string, readonly string[]>,
): string[];

/** Expands the word "primary" into the node's primary IPs as /32 and /128. */
export declare function expandPrimary(cidrs: readonly string[], nodeIPs: readonly string[]): string[];
