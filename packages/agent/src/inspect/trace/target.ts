// What `trace --to DEST[:PORT][/tcp|/udp|/sctp] [--from SRC]` asks about. IPv6 with a port is written
// [ADDR]:PORT, as in a URL.
import type { IPFamily } from '../../model/ip.js';
import { parseIPSloppy } from '../../model/ip.js';

export type TraceProtocol = 'tcp' | 'udp' | 'sctp';

export interface TraceTarget {
  readonly family: IPFamily;
  readonly to: { readonly address: string; readonly port?: number; readonly protocol?: TraceProtocol };
  readonly from?: string;
}

export type TargetParse = { ok: true; target: TraceTarget } | { ok: false; reason: string };

function familyOf(address: string): IPFamily | undefined {
  return parseIPSloppy(address)?.family;
}

export function parseTraceTarget(to: string, from?: string): TargetParse {
  let rest = to.trim();
  let protocol: TraceProtocol | undefined;
  const slash = /\/(tcp|udp|sctp)$/i.exec(rest);
  if (slash) {
    protocol = (slash[1] ?? '').toLowerCase() as TraceProtocol;
    rest = rest.slice(0, slash.index);
  } else if (rest.includes('/')) {
    return { ok: false, reason: `--to ${to}: the protocol after "/" must be tcp, udp or sctp` };
  }
  let address = rest;
  let portText: string | undefined;
  const bracket = /^\[([^\]]+)\](?::(\d+))?$/.exec(rest);
  if (bracket) {
    address = bracket[1] ?? '';
    portText = bracket[2];
  } else if ((rest.match(/:/g) ?? []).length === 1) {
    const i = rest.indexOf(':');
    address = rest.slice(0, i);
    portText = rest.slice(i + 1);
  }
  const family = familyOf(address);
  if (!family) return { ok: false, reason: `--to ${to}: ${JSON.stringify(address)} is not an IP address` };
  let port: number | undefined;
  if (portText !== undefined) {
    port = Number(portText);
    if (!/^\d+$/.test(portText) || port < 1 || port > 65535)
      return { ok: false, reason: `--to ${to}: port ${JSON.stringify(portText)} is not 1…65535` };
  }
  if (from !== undefined) {
    const ff = familyOf(from.replace(/\/\d+$/, ''));
    if (!ff) return { ok: false, reason: `--from ${from}: not an IP address or CIDR` };
    if (ff !== family)
      return { ok: false, reason: `--from ${from} and --to ${to} are of different IP families` };
  }
  return {
    ok: true,
    target: {
      family,
      to: {
        address: parseIPSloppy(address)?.text ?? address,
        ...(port !== undefined ? { port } : {}),
        ...(protocol ? { protocol } : {}),
      },
      ...(from !== undefined ? { from } : {}),
    },
  };
}

export function formatTarget(t: TraceTarget): string {
  const addr = t.family === 'IPv6' && t.to.port !== undefined ? `[${t.to.address}]` : t.to.address;
  return `${addr}${t.to.port !== undefined ? `:${t.to.port}` : ''}${t.to.protocol ? `/${t.to.protocol}` : ''}`;
}
