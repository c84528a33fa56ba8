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

/** An address as bytes: 4 for IPv4 (including IPv4-mapped IPv6), 16 for IPv6. */
type IPBytes = Uint8Array;

const DECIMAL = /^[0-9]+$/;
const HEX = /^[0-9a-fA-F]+$/;

// Like Go's pre-1.17 parser that netutils forked: any number of digits, value ≤ 255, always decimal.
function parseIPv4Bytes(s: string): IPBytes | undefined {
  const parts = s.split('.');
  if (parts.length !== 4) return undefined;
  const out = new Uint8Array(4);
  for (let i = 0; i < 4; i++) {
    const p = parts[i] as string;
    if (!DECIMAL.test(p)) return undefined;
    const n = Number(p);
    if (n > 255) return undefined;
    out[i] = n;
  }
  return out;
}

/** Groups of one side of "::"; a dotted IPv4 is allowed as the last part and counts as two groups. */
function parseIPv6Groups(s: string, allowIPv4Tail: boolean): number[] | undefined {
  if (s === '') return [];
  const parts = s.split(':');
  const groups: number[] = [];
  for (let i = 0; i < parts.length; i++) {
    const p = parts[i] as string;
    if (allowIPv4Tail && i === parts.length - 1 && p.includes('.')) {
      const v4 = parseIPv4Bytes(p);
      if (v4 === undefined) return undefined;
      groups.push(((v4[0] as number) << 8) | (v4[1] as number), ((v4[2] as number) << 8) | (v4[3] as number));
      continue;
    }
    if (!HEX.test(p)) return undefined;
    const n = parseInt(p, 16);
    if (n > 0xffff) return undefined;
    groups.push(n);
  }
  return groups;
}

function parseIPv6Bytes(s: string): IPBytes | undefined {
  const dbl = s.indexOf('::');
  let groups: number[];
  if (dbl < 0) {
    const all = parseIPv6Groups(s, true);
    if (all === undefined || all.length !== 8) return undefined;
    groups = all;
  } else {
    if (s.indexOf('::', dbl + 1) >= 0) return undefined;
    const head = parseIPv6Groups(s.slice(0, dbl), false);
    const tail = parseIPv6Groups(s.slice(dbl + 2), true);
    if (head === undefined || tail === undefined || head.length + tail.length > 7) return undefined;
    groups = [...head, ...new Array<number>(8 - head.length - tail.length).fill(0), ...tail];
  }
  const out = new Uint8Array(16);
  groups.forEach((g, i) => {
    out[2 * i] = g >> 8;
    out[2 * i + 1] = g & 0xff;
  });
  return out;
}

function isIPv4Mapped(b: IPBytes): boolean {
  for (let i = 0; i < 10; i++) if (b[i] !== 0) return false;
  return b[10] === 0xff && b[11] === 0xff;
}

/** Parses to bytes; an IPv4-mapped IPv6 address comes back as 4 bytes, as Go's To4() would. */
function parseIPBytes(text: unknown): IPBytes | undefined {
  if (typeof text !== 'string' || text.length === 0 || text.length > 64) return undefined;
  if (text.includes(':')) {
    const b = parseIPv6Bytes(text);
    if (b === undefined) return undefined;
    return isIPv4Mapped(b) ? b.slice(12) : b;
  }
  return parseIPv4Bytes(text);
}

function formatIPBytes(b: IPBytes): string {
  if (b.length === 4) return `${b[0]}.${b[1]}.${b[2]}.${b[3]}`;
  const groups: number[] = [];
  for (let i = 0; i < 8; i++) groups.push(((b[2 * i] as number) << 8) | (b[2 * i + 1] as number));
  // Longest run of zero groups (first one on a tie), compressed only if it spans two or more groups (RFC 5952).
  let bestStart = -1;
  let bestLen = 0;
  for (let i = 0; i < 8;) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLen) {
      bestStart = i;
      bestLen = j - i;
    }
    i = j;
  }
  const hex = (gs: number[]): string => gs.map((g) => g.toString(16)).join(':');
  if (bestLen < 2) return hex(groups);
  return `${hex(groups.slice(0, bestStart))}::${hex(groups.slice(bestStart + bestLen))}`;
}

function familyOfBytes(b: IPBytes): IPFamily {
  return b.length === 4 ? 'IPv4' : 'IPv6';
}

/**
 * Whether `s` is an IPv4 address already in canonical form (four decimal octets ≤ 255, no leading zeros): what
 * almost every address in a cluster's objects is. One pass over the characters, no split and no bytes, because
 * a full sync parses every endpoint address of the cluster (a million at 100,000 Services).
 */
function isCanonicalIPv4(s: string): boolean {
  const n = s.length;
  if (n < 7 || n > 15) return false;
  let dots = 0;
  let value = 0;
  let digits = 0;
  let lead = 0;
  for (let i = 0; i < n; i++) {
    const c = s.charCodeAt(i);
    if (c === 46) {
      if (digits === 0 || (digits > 1 && lead === 48) || ++dots > 3) return false;
      value = 0;
      digits = 0;
      continue;
    }
    if (c < 48 || c > 57) return false;
    if (digits === 0) lead = c;
    value = value * 10 + (c - 48);
    if (++digits > 3 || value > 255) return false;
  }
  return dots === 3 && digits > 0 && !(digits > 1 && lead === 48);
}

/** Parses an IP leniently; undefined when it is not an IP. IPv4-mapped IPv6 ("::ffff:1.2.3.4") is IPv4. */
export function parseIPSloppy(text: string): ParsedIP | undefined {
  if (typeof text === 'string' && isCanonicalIPv4(text)) return { family: 'IPv4', text };
  const b = parseIPBytes(text);
  return b === undefined ? undefined : { family: familyOfBytes(b), text: formatIPBytes(b) };
}

function maskBytes(b: IPBytes, prefixLength: number): IPBytes {
  const out = b.slice();
  for (let i = 0; i < out.length; i++) {
    const bits = Math.max(0, Math.min(8, prefixLength - 8 * i));
    out[i] = (out[i] as number) & ((0xff << (8 - bits)) & 0xff);
  }
  return out;
}

interface CIDRBytes {
  readonly network: IPBytes;
  readonly prefixLength: number;
}

function parseCIDRBytes(text: unknown): CIDRBytes | undefined {
  if (typeof text !== 'string') return undefined;
  const slash = text.indexOf('/');
  if (slash < 0 || text.indexOf('/', slash + 1) >= 0) return undefined;
  const addrText = text.slice(0, slash);
  const lenText = text.slice(slash + 1);
  // Leading zeros in the length are accepted too ("/025" is /25), as Go's old dtoi did.
  if (!DECIMAL.test(lenText) || lenText.length > 4) return undefined;
  let prefixLength = Number(lenText);
  if (addrText.includes(':')) {
    const b6 = parseIPv6Bytes(addrText);
    if (b6 === undefined || prefixLength > 128) return undefined;
    if (isIPv4Mapped(b6)) {
      // An IPv4-mapped network is an IPv4 network when its mask covers the mapping prefix; narrower masks would
      // span non-mapped space, which we refuse rather than guess at.
      if (prefixLength < 96) return undefined;
      prefixLength -= 96;
      return { network: maskBytes(b6.slice(12), prefixLength), prefixLength };
    }
    return { network: maskBytes(b6, prefixLength), prefixLength };
  }
  const b4 = parseIPv4Bytes(addrText);
  if (b4 === undefined || prefixLength > 32) return undefined;
  return { network: maskBytes(b4, prefixLength), prefixLength };
}

/** Parses a CIDR leniently ("203.0.113.000/025" → 203.0.113.0/25); undefined when invalid. */
export function parseCIDRSloppy(text: string): ParsedCIDR | undefined {
  const c = parseCIDRBytes(text);
  if (c === undefined) return undefined;
  const address = formatIPBytes(c.network);
  return {
    family: familyOfBytes(c.network),
    text: `${address}/${c.prefixLength}`,
    address,
    prefixLength: c.prefixLength,
  };
}

/** The family of an IP string, undefined when it is not an IP. */
export function ipFamilyOf(text: string): IPFamily | undefined {
  const b = parseIPBytes(text);
  return b === undefined ? undefined : familyOfBytes(b);
}

/** Whether `ip` lies inside `cidr` (both canonical or sloppy text); false for mixed families or invalid input. */
export function cidrContains(cidr: string, ip: string): boolean {
  const c = parseCIDRBytes(cidr);
  const b = parseIPBytes(ip);
  if (c === undefined || b === undefined || c.network.length !== b.length) return false;
  const masked = maskBytes(b, c.prefixLength);
  return masked.every((v, i) => v === c.network[i]);
}

/** Whether an IP (canonical or sloppy) is a loopback address: 127.0.0.0/8 or ::1. */
export function isLoopbackIP(ip: string): boolean {
  return cidrContains('127.0.0.0/8', ip) || cidrContains('::1/128', ip);
}
