// agnhost porter: for every environment variable SERVE_PORT_N (or SERVE_TCP_PORT_N) an HTTP server on port N
// answering the variable's value to any request; SERVE_UDP_PORT_N answers it to any datagram, SERVE_TLS_PORT_N
// serves it over HTTPS, SERVE_SCTP_PORT_N cannot be served here (sctpUnsupportedReason). --json-response answers
// {"Method": …, "Body": value} instead. HTTPS uses $CERT_FILE/$KEY_FILE; agnhost's image carries a localhost
// certificate, which the lab has not, so without them one is made with openssl for this run (SANs 127.0.0.1, ::1).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer as createHttpServer, type RequestListener, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { createSocket } from 'node:dgram';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { flag, parseFlags } from './flags.js';
import { logLine, parsePortText, sctpUnsupportedReason } from './common.js';

export type PorterKind = 'tcp' | 'udp' | 'tls' | 'sctp';

export interface PorterEntry {
  readonly kind: PorterKind;
  readonly port: number;
  readonly value: string;
}

const PREFIXES: readonly (readonly [string, PorterKind])[] = [
  ['SERVE_PORT_', 'tcp'],
  ['SERVE_TCP_PORT_', 'tcp'],
  ['SERVE_UDP_PORT_', 'udp'],
  ['SERVE_TLS_PORT_', 'tls'],
  ['SERVE_SCTP_PORT_', 'sctp'],
];

/** The ports porter serves for `env`; a variable whose suffix is no port is logged and skipped. */
export function porterEntries(env: NodeJS.ProcessEnv): PorterEntry[] {
  const entries: PorterEntry[] = [];
  for (const [key, value] of Object.entries(env)) {
    const match = PREFIXES.find(([prefix]) => key.startsWith(prefix));
    if (!match || value === undefined) continue;
    const port = parsePortText(key.slice(match[0].length));
    if (port === undefined) {
      logLine(`server on port ${JSON.stringify(key.slice(match[0].length))} failed: not a port`);
      continue;
    }
    entries.push({ kind: match[1], port, value });
  }
  return entries;
}

export function parsePorterArgs(argv: readonly string[]): { readonly jsonResponse: boolean } {
  const f = parseFlags(argv, { 'json-response': 'bool' });
  if (f.positional.length > 0) throw new Error(`accepts at most 0 arg(s), received ${f.positional.length}`);
  return { jsonResponse: flag(f, 'json-response', false) };
}

export interface TlsFiles {
  readonly cert: Buffer;
  readonly key: Buffer;
}

/** A throwaway self-signed certificate for localhost, made by openssl (Debian's), for SERVE_TLS_PORT_N. */
export function localhostCertificate(): TlsFiles {
  const dir = mkdtempSync(join(tmpdir(), 'agnhost-porter-'));
  try {
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-days',
        '30',
        '-subj',
        '/CN=localhost',
        '-addext',
        'subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1',
        '-keyout',
        join(dir, 'localhost.key'),
        '-out',
        join(dir, 'localhost.crt'),
      ],
      { stdio: 'ignore' },
    );
    return { cert: readFileSync(join(dir, 'localhost.crt')), key: readFileSync(join(dir, 'localhost.key')) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function tlsFromEnv(env: NodeJS.ProcessEnv): TlsFiles {
  const cert = env.CERT_FILE;
  const key = env.KEY_FILE;
  if (cert && key) return { cert: readFileSync(cert), key: readFileSync(key) };
  return localhostCertificate();
}

export interface RunningPorter {
  /** Each entry with the port it bound (the kernel's choice where the entry asked for 0). */
  readonly bound: readonly (PorterEntry & { readonly bound: number })[];
  close(): void;
}

export async function startPorter(
  entries: readonly PorterEntry[],
  options: { readonly jsonResponse: boolean; readonly tls?: () => TlsFiles },
): Promise<RunningPorter> {
  const sctp = entries.find((e) => e.kind === 'sctp');
  if (sctp) throw new Error(`SERVE_SCTP_PORT_${sctp.port}: ${sctpUnsupportedReason()}`);
  const bound: (PorterEntry & { bound: number })[] = [];
  const closers: (() => void)[] = [];
  let tls: TlsFiles | undefined;
  for (const entry of entries) {
    if (entry.kind === 'udp') {
      const socket = createSocket({ type: 'udp6', ipv6Only: false });
      socket.on('message', (_msg, rinfo) => socket.send(entry.value, rinfo.port, rinfo.address));
      await new Promise<void>((resolve, reject) => {
        socket.once('error', reject);
        socket.bind({ port: entry.port, address: '::' }, () => resolve());
      });
      logLine(`Started UDP server on port ${entry.port}`);
      bound.push({ ...entry, bound: socket.address().port });
      closers.push(() => socket.close());
      continue;
    }
    const listener: RequestListener = (req, res) => {
      req.resume();
      const json = JSON.stringify({ Method: req.method ?? 'GET', Body: entry.value });
      const body = options.jsonResponse ? json : entry.value;
      res.writeHead(200, {
        'content-type': options.jsonResponse ? 'application/json' : 'text/plain; charset=utf-8',
        'content-length': Buffer.byteLength(body),
      });
      res.end(body);
    };
    if (entry.kind === 'tls') tls ??= (options.tls ?? (() => tlsFromEnv(process.env)))();
    const server: Server =
      entry.kind === 'tls' && tls ? createHttpsServer({ ...tls }, listener) : createHttpServer(listener);
    try {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen({ port: entry.port, host: '0.0.0.0' }, () => resolve());
      });
    } catch (e) {
      // agnhost logs a TCP or TLS server that cannot listen and keeps the others.
      logLine(`server on port ${JSON.stringify(String(entry.port))} failed: ${String(e)}`);
      continue;
    }
    bound.push({ ...entry, bound: (server.address() as AddressInfo).port });
    closers.push(() => {
      server.close();
      server.closeAllConnections();
    });
  }
  return { bound, close: () => closers.forEach((c) => c()) };
}
