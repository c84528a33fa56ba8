// Lenient IP and CIDR parsing, canonical printing. Upstream parses with netutils.ParseIPSloppy, which accepts
// IPv4 octets with leading zeros ("172.30.0.041" is 172.30.0.41, decimal, not octal) and prints Go's canonical
// form. Every IP the model hands to a backend has been through here, so backends never see a non-canonical IP.

export type IPFamily = 'IPv4' | 'IPv6';
export const IP_FAMILIES = ['IPv4', 'IPv6'] as const satisfies readonly IPFamily[];

export interface ParsedIP {
  readonly family: IPFamily;
  /** Canonical text: dotted decimal for IPv4, RFC 5952 (lower case, longest zero run compressed) for IPv6. */
  readonly text: string;
}

export interface ParsedCIDR {
  readonly family: IPFamily;
  /** Canonical text of the network (host bits cleared), e.g. "203.0.113.0/25". */
  readonly text: string;
  readonly address: string;
  readonly prefixLength: number;
}

/** Parses an IP leniently; undefined when it is not an IP. IPv4-mapped IPv6 ("::ffff:1.2.3.4") is IPv4. */
export declare function parseIPSloppy(text: string): ParsedIP | undefined;
/** Parses a CIDR leniently ("203.0.113.000/025" → 203.0.113.0/25); undefined when invalid. */
export declare function parseCIDRSloppy(text: string): ParsedCIDR | undefined;
/** The family of an IP string, undefined when it is not an IP. */
export declare function ipFamilyOf(text: string): IPFamily | undefined;
/** Whether `ip` lies inside `cidr` (both canonical or sloppy text); false for mixed families or invalid input. */
export declare function cidrContains(cidr: string, ip: string): boolean;
