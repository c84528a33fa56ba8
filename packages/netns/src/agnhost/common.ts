// What agnhost's subcommands share: the pod's hostname, addresses written as Go writes them, the log, and why
// SCTP cannot be served here.
import { readFileSync } from 'node:fs';
import { hostname as osHostname } from 'node:os';

/**
 * agnhost answers os.Hostname(), which in a real Pod is the Pod's name (its own UTS namespace). Lab pods share the
 * host's UTS namespace, so the lab passes the name in $HOSTNAME, as container runtimes also set it.
 */
export function podHostname(env: NodeJS.ProcessEnv = process.env): string {
  const fromEnv = env.HOSTNAME;
  return fromEnv !== undefined && fromEnv !== '' ? fromEnv : osHostname();
}

/** Node reports IPv4 peers of a dual-stack socket as "::ffff:a.b.c.d"; Go reports them as plain IPv4. */
export function unmapped(ip: string | undefined): string {
  if (ip === undefined) return '';
  return ip.startsWith('::ffff:') && ip.includes('.') ? ip.slice('::ffff:'.length) : ip;
}

/** Go's net.JoinHostPort: IPv6 in brackets. */
export function joinHostPort(host: string, port: number | string): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

/** Go's net.SplitHostPort, for "host:port" and "[v6]:port"; undefined when the text is neither. */
export function splitHostPort(text: string): { host: string; port: string } | undefined {
  const bracketed = /^\[([^\]]*)\]:([^:]*)$/.exec(text);
  if (bracketed) return { host: bracketed[1] ?? '', port: bracketed[2] ?? '' };
  const colon = text.lastIndexOf(':');
  if (colon < 0 || text.slice(0, colon).includes(':')) return undefined;
  return { host: text.slice(0, colon), port: text.slice(colon + 1) };
}

/** A port as Go's resolvers take it here: decimal 0..65535. */
export function parsePortText(text: string): number | undefined {
  if (!/^\d{1,5}$/.test(text)) return undefined;
  const n = Number(text);
  return n <= 65535 ? n : undefined;
}

/** A line on stderr with Go's log prefix shape ("2024/01/02 15:04:05 …"): the container's log. */
export function logLine(text: string): void {
  const d = new Date();
  const two = (n: number): string => String(n).padStart(2, '0');
  const stamp = `${d.getFullYear()}/${two(d.getMonth() + 1)}/${two(d.getDate())} ${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}`;
  process.stderr.write(`${stamp} ${text}\n`);
}

/**
 * Why an SCTP listener or dial cannot happen in this process. Node.js has no SCTP sockets (its net module is TCP
 * only) and we add no native module for it; where the kernel lacks SCTP too, the message says that as well, since
 * then no helper could do better.
 */
export function sctpUnsupportedReason(protocols = '/proc/net/protocols'): string {
  let kernel: string;
  try {
    kernel = /^SCTP\s/m.test(readFileSync(protocols, 'utf8'))
      ? 'the kernel has SCTP'
      : 'the kernel has no SCTP either (not in /proc/net/protocols: CONFIG_IP_SCTP off or the sctp module not loaded)';
  } catch {
    kernel = 'and /proc/net/protocols cannot be read';
  }
  return `SCTP: not supported here because Node.js has no SCTP sockets, ${kernel}`;
}
