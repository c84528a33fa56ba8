// "IP:port" handling for healthzBindAddress and metricsBindAddress, with Go's net.SplitHostPort rules (an IPv6
// host needs brackets) so that the same strings are accepted and refused as upstream.
import { parseIPSloppy } from '../model/ip.js';

export type HostPort =
  | { readonly ok: true; readonly host: string; readonly port: string }
  | { readonly ok: false; readonly error: string };

/** Splits "host:port" or "[host]:port" as Go's net.SplitHostPort does; the port is not checked. */
export function splitHostPort(hostport: string): HostPort {
  const colon = hostport.lastIndexOf(':');
  if (colon < 0) return { ok: false, error: 'missing port in address' };
  let host: string;
  let searchFrom = 0;
  let closeFrom = 0;
  if (hostport.startsWith('[')) {
    const end = hostport.indexOf(']');
    if (end < 0) return { ok: false, error: "missing ']' in address" };
    if (end + 1 === hostport.length) return { ok: false, error: 'missing port in address' };
    if (end + 1 !== colon) {
      return {
        ok: false,
        error: hostport[end + 1] === ':' ? 'too many colons in address' : 'missing port in address',
      };
    }
    host = hostport.slice(1, end);
    searchFrom = 1;
    closeFrom = end + 1;
  } else {
    host = hostport.slice(0, colon);
    if (host.includes(':')) return { ok: false, error: 'too many colons in address' };
  }
  if (hostport.indexOf('[', searchFrom) >= 0) return { ok: false, error: "unexpected '[' in address" };
  if (hostport.indexOf(']', closeFrom) >= 0) return { ok: false, error: "unexpected ']' in address" };
  return { ok: true, host, port: hostport.slice(colon + 1) };
}

/**
 * Appends `port` to a bare IP ("0.0.0.0" → "0.0.0.0:10256", "::" → "[::]:10256"). An address that already has a
 * port, or that is not an IP at all, is returned unchanged: validation reports the latter.
 */
export function appendPortIfNeeded(address: string, port: number): string {
  if (splitHostPort(address).ok) return address;
  const ip = parseIPSloppy(address);
  if (ip === undefined) return address;
  return ip.family === 'IPv4' ? `${address}:${port}` : `[${address}]:${port}`;
}

/** Checks an "IP:port" bind address (port 1–65535); returns the problem or undefined. */
export function checkIPPort(address: string): string | undefined {
  const split = splitHostPort(address);
  if (!split.ok) return `must be IP:port, got ${JSON.stringify(address)} (${split.error})`;
  if (parseIPSloppy(split.host) === undefined) {
    return `must be IP:port with a valid IP, got ${JSON.stringify(split.host)}`;
  }
  const port = /^\d+$/.test(split.port) ? Number(split.port) : NaN;
  if (!(port >= 1 && port <= 65535)) {
    return `must be IP:port with a port in 1-65535, got ${JSON.stringify(split.port)}`;
  }
  return undefined;
}
