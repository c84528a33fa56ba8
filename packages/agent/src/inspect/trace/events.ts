// Reads the lines `nft monitor trace` prints (nftables 1.0.x) into events. One line is one event:
//
//   trace id 43fc81c8 ip kube-proxy nat-output packet: oif "d0" ip saddr 198.18.6.1 ip daddr … tcp dport 80 …
//   trace id 43fc81c8 ip kube-proxy nat-output rule ip daddr 198.18.99.1 tcp dport 80 jump svc (verdict jump svc)
//   trace id 43fc81c8 ip kube-proxy filter-out policy accept
//
// A `packet:` line is printed when a traced packet enters a base chain, with the headers as they are at that
// point (after any NAT an earlier hook did); `rule` lines name the rule that matched and its verdict; `policy`
// is a base chain's default verdict; `return` ends a regular chain. The trace id is the kernel's per-skb
// identifier: it can change when a packet is routed and be reused by later packets of a flow, so grouping into
// packets is packets.ts's job, not this parser's.

export type TraceEventKind = 'packet' | 'rule' | 'policy' | 'return';

/** Header fields of a `packet:` line that the interpretation needs; the rest stays in `text`. */
export interface TracePacketFields {
  readonly iif?: string;
  readonly oif?: string;
  readonly saddr?: string;
  readonly daddr?: string;
  /** tcp, udp, sctp, icmp, icmpv6: the first layer-4 keyword on the line. */
  readonly protocol?: string;
  readonly sport?: number;
  readonly dport?: number;
  /** IPv4 identification: constant through NAT and routing, so it ties a packet's events together. */
  readonly ipId?: number;
  readonly tcpFlags?: string;
}

export interface TraceEvent {
  readonly id: string;
  /** nft family of the table: ip, ip6, inet, … */
  readonly family: string;
  readonly table: string;
  readonly chain: string;
  readonly kind: TraceEventKind;
  /** `packet:` headers, the rule text, or the policy verdict, as nft printed it. */
  readonly text: string;
  /** For a rule: the verdict in parentheses ("accept", "jump svc", "goto reject-chain", "continue", "drop"). */
  readonly verdict?: string;
  readonly packet?: TracePacketFields;
}

export type TraceLine =
  { readonly ok: true; readonly event: TraceEvent } | { readonly ok: false; readonly reason: string };

// nft prints "unknown rule handle N" for a rule added after the monitor read the ruleset.
const HEAD = /^trace id ([0-9a-f]+) (\S+) (\S+) (\S+) (packet: |rule |unknown rule |policy |return)(.*)$/;

const PROTOCOLS = ['tcp', 'udp', 'sctp', 'icmp', 'icmpv6'];

function unquote(s: string | undefined): string | undefined {
  return s === undefined ? undefined : s.replace(/^"(.*)"$/, '$1');
}

/** The value after `keyword` among the words (`ip saddr X`, `tcp dport 80`). */
function after(words: readonly string[], ...keyword: string[]): string | undefined {
  for (let i = 0; i + keyword.length < words.length; i++) {
    if (keyword.every((k, j) => words[i + j] === k)) return words[i + keyword.length];
  }
  return undefined;
}

function num(s: string | undefined): number | undefined {
  if (s === undefined || !/^\d+$/.test(s)) return undefined;
  return Number(s);
}

export function parsePacketFields(text: string): TracePacketFields {
  const words = text.trim().split(/\s+/);
  const protocol = words.find(
    (w, i) => PROTOCOLS.includes(w) && i + 1 < words.length && words[i + 1] !== 'id',
  );
  const ipFamily = words.includes('ip6') ? 'ip6' : 'ip';
  const fields: Record<string, string | number | undefined> = {
    iif: unquote(after(words, 'iif')),
    oif: unquote(after(words, 'oif')),
    saddr: after(words, ipFamily, 'saddr'),
    daddr: after(words, ipFamily, 'daddr'),
    protocol,
    sport: protocol ? num(after(words, protocol, 'sport')) : undefined,
    dport: protocol ? num(after(words, protocol, 'dport')) : undefined,
    ipId: num(after(words, 'ip', 'id')),
    tcpFlags: after(words, 'tcp', 'flags', '=='),
  };
  return Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined)) as TracePacketFields;
}

/** One line of `nft monitor trace`; lines that are not trace events are reported with why. */
export function parseTraceLine(line: string): TraceLine {
  const trimmed = line.replace(/\s+$/, '');
  const m = HEAD.exec(trimmed);
  if (!m) return { ok: false, reason: `not a trace event: ${JSON.stringify(trimmed.slice(0, 120))}` };
  const [, id = '', family = '', table = '', chain = '', kindWord = '', rest = ''] = m;
  const unknownRule = kindWord === 'unknown rule ';
  const kind = (unknownRule ? 'rule' : kindWord.replace(/[: ]/g, '')) as TraceEventKind;
  const base = { id, family, table, chain, kind };
  if (kind === 'packet') {
    return { ok: true, event: { ...base, text: rest.trim(), packet: parsePacketFields(rest) } };
  }
  if (kind === 'rule') {
    // The verdict is the last parenthesised group; a rule's own text may hold parentheses in a comment.
    const v = /^(.*) \(verdict ([^()]+)\)$/.exec(rest);
    const text = unknownRule ? `unknown rule ${v?.[1] ?? rest}` : (v?.[1] ?? rest);
    return { ok: true, event: v ? { ...base, text, verdict: v[2] ?? '' } : { ...base, text } };
  }
  return {
    ok: true,
    event: { ...base, text: rest.trim(), ...(kind === 'policy' ? { verdict: rest.trim() } : {}) },
  };
}

/** Every event of a captured trace, and the lines that were not events. */
export function parseTraceText(text: string): { events: TraceEvent[]; skipped: string[] } {
  const events: TraceEvent[] = [];
  const skipped: string[] = [];
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    const r = parseTraceLine(line);
    if (r.ok) events.push(r.event);
    else skipped.push(r.reason);
  }
  return { events, skipped };
}

// `xtables-monitor --trace` (iptables-nft's tracer) prints the same kernel events in iptables' words:
//
//   PACKET: 2 1ac30bd1 IN=cbr0 … SRC=198.18.10.10 DST=198.19.0.10 LEN=60 TOS=0x0 TTL=64 ID=16212 DF SPORT=45778 DPORT=80 SYN
//    TRACE: 2 1ac30bd1 nat:KUBE-SERVICES:rule:0x1d:JUMP:KUBE-SVC-ZEKC…  -4 -t nat -A KUBE-SERVICES -d … -j KUBE-SVC-ZEKC…
//    TRACE: 2 1ac30bd1 kube-proxy-ts-trace:trace-prerouting:policy:ACCEPT
//
// A PACKET line names no chain: it is the headers as the packet enters the chain of the next TRACE line of its id.

const XT_FAMILY: Readonly<Record<string, string>> = { '2': 'ip', '10': 'ip6' };
const TCP_FLAGS = new Set(['SYN', 'ACK', 'FIN', 'RST', 'PSH', 'URG']);

export function parseXtablesPacketFields(text: string): TracePacketFields {
  const words = text.trim().split(/\s+/);
  const kv = new Map<string, string>();
  for (const w of words) {
    const i = w.indexOf('=');
    if (i > 0) kv.set(w.slice(0, i), w.slice(i + 1));
  }
  const flags = words.filter((w) => TCP_FLAGS.has(w));
  const proto =
    kv.get('PROTO')?.toLowerCase() ?? (flags.length > 0 ? 'tcp' : kv.has('SPORT') ? 'udp' : undefined);
  const n = (k: string): number | undefined => num(kv.get(k));
  const fields: Record<string, string | number | undefined> = {
    iif: kv.get('IN'),
    oif: kv.get('OUT'),
    saddr: kv.get('SRC'),
    daddr: kv.get('DST'),
    protocol: proto,
    sport: n('SPORT'),
    dport: n('DPORT'),
    ipId: n('ID'),
    tcpFlags: flags.length > 0 ? flags.join(',').toLowerCase() : undefined,
  };
  return Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined)) as TracePacketFields;
}

function xtVerdict(parts: readonly string[]): string {
  const [v = '', target] = parts;
  if ((v === 'JUMP' || v === 'GOTO') && target !== undefined) return `${v.toLowerCase()} ${target}`;
  return v.toLowerCase();
}

/** Turns `xtables-monitor --trace` lines into the same events as `nft monitor trace`'s. */
export class XtablesTraceReader {
  private readonly pendingPacket = new Map<string, { family: string; text: string }>();

  push(line: string): TraceLine[] {
    const packet = /^PACKET: (\d+) ([0-9a-f]+) (.*)$/.exec(line.trim());
    if (packet) {
      this.pendingPacket.set(packet[2] ?? '', {
        family: XT_FAMILY[packet[1] ?? ''] ?? packet[1] ?? '',
        text: packet[3] ?? '',
      });
      return [];
    }
    const trace = /^TRACE: (\d+) ([0-9a-f]+) (\S+)\s*(.*)$/.exec(line.trim());
    if (!trace)
      return [{ ok: false, reason: `not a trace event: ${JSON.stringify(line.trim().slice(0, 120))}` }];
    const [, fam = '', id = '', head = '', rule = ''] = trace;
    const [table = '', chain = '', kindWord = '', ...rest] = head.split(':');
    const family = XT_FAMILY[fam] ?? fam;
    const out: TraceLine[] = [];
    const pending = this.pendingPacket.get(id);
    if (pending) {
      this.pendingPacket.delete(id);
      out.push({
        ok: true,
        event: {
          id,
          family: pending.family,
          table,
          chain,
          kind: 'packet',
          text: pending.text,
          packet: parseXtablesPacketFields(pending.text),
        },
      });
    }
    if (kindWord === 'rule') {
      // rest: handle, VERDICT[, target]
      out.push({
        ok: true,
        event: {
          id,
          family,
          table,
          chain,
          kind: 'rule',
          text: rule.trim(),
          verdict: xtVerdict(rest.slice(1)),
        },
      });
    } else if (kindWord === 'policy') {
      out.push({
        ok: true,
        event: { id, family, table, chain, kind: 'policy', text: xtVerdict(rest), verdict: xtVerdict(rest) },
      });
    } else if (kindWord === 'return') {
      out.push({ ok: true, event: { id, family, table, chain, kind: 'return', text: 'return' } });
    } else {
      out.push({
        ok: false,
        reason: `unknown trace kind ${JSON.stringify(kindWord)} in ${JSON.stringify(line.trim().slice(0, 120))}`,
      });
    }
    return out;
  }
}

export function parseXtablesTraceText(text: string): { events: TraceEvent[]; skipped: string[] } {
  const reader = new XtablesTraceReader();
  const events: TraceEvent[] = [];
  const skipped: string[] = [];
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    for (const r of reader.push(line)) {
      if (r.ok) events.push(r.event);
      else skipped.push(r.reason);
    }
  }
  return { events, skipped };
}
