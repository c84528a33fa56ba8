// IP parsing for validation and allocation, as bigints so IPv4 and IPv6 share one code path.
import { isIP } from 'node:net';

export interface Cidr {
  readonly family: 4 | 6;
  readonly base: bigint;
  readonly bits: number;
  readonly text: string;
}

export function ipToBigInt(ip: string): { family: 4 | 6; value: bigint } | undefined {
  const fam = isIP(ip);
  if (fam === 4) {
    const parts = ip.split('.').map(Number);
    // Upstream rejects leading zeros (ambiguous octal) in new objects.
    if (ip.split('.').some((p) => p.length > 1 && p.startsWith('0'))) return undefined;
    return { family: 4, value: parts.reduce((acc, p) => (acc << 8n) | BigInt(p), 0n) };
  }
  if (fam === 6) {
    if (ip.includes('.')) return undefined; // v4-in-v6 forms are not used here
    const [head = '', tail] = ip.split('::');
    const h = head ? head.split(':') : [];
    const t = tail ? tail.split(':') : [];
    const missing = 8 - h.length - t.length;
    const groups = tail === undefined ? h : [...h, ...Array<string>(missing).fill('0'), ...t];
    if (groups.length !== 8) return undefined;
    return { family: 6, value: groups.reduce((acc, g) => (acc << 16n) | BigInt(parseInt(g, 16)), 0n) };
  }
  return undefined;
}

export function bigIntToIp(family: 4 | 6, value: bigint): string {
  if (family === 4) return [24n, 16n, 8n, 0n].map((s) => String((value >> s) & 255n)).join('.');
  const groups: string[] = [];
  for (let i = 7; i >= 0; i--) groups.push(((value >> BigInt(i * 16)) & 0xffffn).toString(16));
  // Canonical form: compress the longest run of zero groups.
  let best = -1;
  let bestLen = 0;
  for (let i = 0; i < 8;) {
    if (groups[i] !== '0') {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === '0') j++;
    if (j - i > bestLen && j - i > 1) {
      best = i;
      bestLen = j - i;
    }
    i = j;
  }
  if (best < 0) return groups.join(':');
  return `${groups.slice(0, best).join(':')}::${groups.slice(best + bestLen).join(':')}`;
}

export function parseCidr(text: string): Cidr | undefined {
  const [ip = '', bitsText, extra] = text.split('/');
  if (bitsText === undefined || extra !== undefined || !/^\d+$/.test(bitsText)) return undefined;
  const parsed = ipToBigInt(ip);
  if (!parsed) return undefined;
  const bits = Number(bitsText);
  const width = parsed.family === 4 ? 32 : 128;
  if (bits > width) return undefined;
  const hostBits = BigInt(width - bits);
  const base = (parsed.value >> hostBits) << hostBits;
  return { family: parsed.family, base, bits, text: `${bigIntToIp(parsed.family, base)}/${bits}` };
}

export function cidrSize(c: Cidr): bigint {
  return 1n << BigInt((c.family === 4 ? 32 : 128) - c.bits);
}

export function cidrContains(c: Cidr, ip: string): boolean {
  const p = ipToBigInt(ip);
  if (!p || p.family !== c.family) return false;
  return p.value >= c.base && p.value < c.base + cidrSize(c);
}
