// Conntrack entries as the `conntrack` tool lists them (`conntrack -L -o extended`, and the entries `-D`/`-R`
// echo), parsed into plain values. The tool prints the original tuple first and the reply tuple second, each as
// src= dst= [sport= dport=], with state words, [FLAGS] and other key=value fields around them; with
// `-o extended` the line starts with the layer-3 name and number ("ipv4 2"). Anything unreadable is skipped with a
// reason, never thrown: the table is the kernel's, and a line we do not understand must not stop a reconcile.
import type { IPFamily } from '../../model/ip.js';

export interface ConntrackTuple {
  readonly src: string;
  readonly dst: string;
  /** Absent for protocols without ports (ICMP). */
  readonly sport?: number;
  readonly dport?: number;
}

export interface ConntrackFlow {
  readonly family: IPFamily;
  /** Lower-case protocol name as printed: "udp", "tcp", "sctp", "icmp", … */
  readonly protocol: string;
  readonly original: ConntrackTuple;
  readonly reply: ConntrackTuple;
}

export interface ConntrackListing {
  readonly flows: readonly ConntrackFlow[];
  /** Lines that looked like entries but could not be read, with why. */
  readonly skipped: readonly string[];
}

const L3: Readonly<Record<string, IPFamily>> = { ipv4: 'IPv4', ipv6: 'IPv6' };

function port(text: string | undefined): number | undefined {
  if (text === undefined || !/^\d{1,5}$/.test(text)) return undefined;
  const n = Number(text);
  return n <= 65535 ? n : undefined;
}

function tuple(fields: ReadonlyMap<string, readonly string[]>, i: number): ConntrackTuple | undefined {
  const src = fields.get('src')?.[i];
  const dst = fields.get('dst')?.[i];
  if (src === undefined || dst === undefined) return undefined;
  const sport = port(fields.get('sport')?.[i]);
  const dport = port(fields.get('dport')?.[i]);
  return {
    src: src.toLowerCase(),
    dst: dst.toLowerCase(),
    ...(sport !== undefined ? { sport } : {}),
    ...(dport !== undefined ? { dport } : {}),
  };
}

/** Parses one line; undefined for lines that are not entries (summaries, blank lines), a reason when malformed. */
export function parseConntrackLine(line: string): ConntrackFlow | string | undefined {
  const tokens = line.trim().split(/\s+/);
  if (tokens.length < 3 || !tokens.some((t) => t.startsWith('src='))) return undefined;
  let i = 0;
  let family: IPFamily | undefined = L3[tokens[0]!.toLowerCase()];
  if (family) i = 2; // "ipv4 2"
  const protocol = tokens[i]?.toLowerCase();
  if (protocol === undefined || !/^[a-z][a-z0-9-]*$/.test(protocol)) return `no protocol name: ${line}`;
  const fields = new Map<string, string[]>();
  for (const t of tokens.slice(i + 1)) {
    const eq = t.indexOf('=');
    if (eq <= 0) continue; // numbers, state words, [FLAGS]
    const key = t.slice(0, eq);
    const list = fields.get(key) ?? [];
    list.push(t.slice(eq + 1));
    fields.set(key, list);
  }
  const original = tuple(fields, 0);
  const reply = tuple(fields, 1);
  if (!original || !reply) return `missing original or reply addresses: ${line}`;
  family ??= original.src.includes(':') ? 'IPv6' : 'IPv4';
  return { family, protocol, original, reply };
}

export function parseConntrackListing(text: string): ConntrackListing {
  const flows: ConntrackFlow[] = [];
  const skipped: string[] = [];
  for (const line of text.split('\n')) {
    const r = parseConntrackLine(line);
    if (r === undefined) continue;
    if (typeof r === 'string') skipped.push(r);
    else flows.push(r);
  }
  return { flows, skipped };
}
