// agnhost netexec: an HTTP server (paths in netexec-routes.ts), a UDP server answering "hostname", "echo X" and
// "clientip", and, where asked, SCTP (not possible here: sctpUnsupportedReason). Flags and defaults are agnhost's:
// --http-port 8080, --udp-port 8081 (-1: none), --sctp-port -1, --tls-cert-file/--tls-private-key-file (HTTPS),
// --http-override PATH, --udp-listen-addresses A,B, --delay-shutdown SECONDS.
import { readFileSync } from 'node:fs';
import { createServer as createHttpServer, type RequestListener, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { createSocket, type Socket } from 'node:dgram';
import { isIP, type AddressInfo } from 'node:net';
import { flag, parseFlags } from './flags.js';
import { joinHostPort, logLine, sctpUnsupportedReason, unmapped } from './common.js';
import { serveNetexecPath, type NetexecState } from './netexec-routes.js';

export interface NetexecOptions {
  readonly httpPort: number;
  /** -1: no UDP server. */
  readonly udpPort: number;
  /** -1: no SCTP server. */
  readonly sctpPort: number;
  readonly tlsCertFile?: string;
  readonly tlsKeyFile?: string;
  readonly httpOverride?: string;
  /** Empty: one dual-stack socket on every address. */
  readonly udpListenAddresses: readonly string[];
  readonly delayShutdownSeconds: number;
  readonly hostname: string;
  readonly shellPath?: string;
}

export function parseNetexecArgs(argv: readonly string[], hostname: string): NetexecOptions {
  const f = parseFlags(argv, {
    'http-port': 'int',
    'udp-port': 'int',
    'sctp-port': 'int',
    'tls-cert-file': 'string',
    'tls-private-key-file': 'string',
    'http-override': 'string',
    'udp-listen-addresses': 'string',
    'delay-shutdown': 'int',
  });
  if (f.positional.length > 0) throw new Error(`accepts at most 0 arg(s), received ${f.positional.length}`);
  const addresses = flag(f, 'udp-listen-addresses', '');
  const list = addresses === '' ? [] : [...new Set(addresses.split(','))].sort();
  for (const a of list) if (isIP(a) === 0) throw new Error(`parseAddress: invalid address ${a}`);
  const cert = flag(f, 'tls-cert-file', '');
  const key = flag(f, 'tls-private-key-file', '');
  const override = flag(f, 'http-override', '');
  return {
    httpPort: flag(f, 'http-port', 8080),
    udpPort: flag(f, 'udp-port', 8081),
    sctpPort: flag(f, 'sctp-port', -1),
    ...(cert !== '' ? { tlsCertFile: cert } : {}),
    ...(key !== '' ? { tlsKeyFile: key } : {}),
    ...(override !== '' ? { httpOverride: override } : {}),
    udpListenAddresses: list,
    delayShutdownSeconds: flag(f, 'delay-shutdown', 0),
    hostname,
  };
}

/** agnhost's UDP commands: the text trimmed and lower-cased; undefined for anything else (no answer). */
export function netexecUdpAnswer(text: string, hostname: string, client: string): string | undefined {
  const received = text.trim().toLowerCase();
  if (received === 'hostname') return hostname;
  if (received.startsWith('echo ')) return received.slice('echo '.length);
  if (received === 'clientip') return client;
  if (received.length > 0) logLine(`Unknown UDP command received from ${client}: ${received}`);
  return undefined;
}

export interface RunningNetexec {
  readonly httpPort: number;
  readonly udpPorts: readonly number[];
  /** What SIGTERM does: /readyz turns 503, and the process exits after --delay-shutdown. */
  terminate(): void;
  close(): void;
}

async function startUdp(address: string, port: number, hostname: string): Promise<Socket> {
  const v4 = address !== '' && isIP(address) === 4;
  const socket = createSocket(v4 ? { type: 'udp4' } : { type: 'udp6', ipv6Only: address !== '' });
  socket.on('message', (msg, rinfo) => {
    const client = joinHostPort(unmapped(rinfo.address), rinfo.port);
    const answer = netexecUdpAnswer(msg.toString('utf8'), hostname, client);
    if (answer !== undefined) socket.send(answer, rinfo.port, rinfo.address);
  });
  await new Promise<void>((resolve, reject) => {
    socket.once('error', reject);
    socket.bind({ port, address: address === '' ? '::' : address }, () => resolve());
  });
  logLine(`Started UDP server on port ${address} ${port}`);
  return socket;
}

/**
 * Starts netexec's servers; resolves once they listen. `exit` ends the process (a test passes its own); a failed
 * SCTP listener is fatal, as agnhost's log.Fatal is.
 */
export async function startNetexec(
  o: NetexecOptions,
  exit: (code: number) => void = (code) => process.exit(code),
): Promise<RunningNetexec> {
  if (o.sctpPort !== -1) throw new Error(sctpUnsupportedReason());
  let ready = false;
  let terminating = false;
  let shutdownTimer: NodeJS.Timeout | undefined;
  const sockets: Socket[] = [];
  const state: NetexecState = {
    hostname: o.hostname,
    shellPath: o.shellPath ?? '/bin/sh',
    ready: () => ready,
    terminating: () => terminating,
    exit: (code, graceMs) => {
      if (graceMs <= 0) {
        // Connections end with the process; drop them here too, for a caller whose `exit` does not end it.
        server.closeAllConnections();
        return exit(code);
      }
      server.close(() => exit(code));
      server.closeIdleConnections();
      setTimeout(() => exit(code), graceMs).unref();
    },
  };
  const handler: RequestListener = (req, res) => {
    req.resume();
    serveNetexecPath(state, req, res, o.httpOverride ?? req.url ?? '/');
  };
  // Declared after `state`, whose exit closes it: it is only called once requests arrive.
  const server: Server =
    o.tlsCertFile !== undefined
      ? createHttpsServer(
          { cert: readFileSync(o.tlsCertFile), key: readFileSync(o.tlsKeyFile ?? o.tlsCertFile) },
          handler,
        )
      : createHttpServer(handler);
  const http = server;
  await new Promise<void>((resolve, reject) => {
    http.once('error', reject);
    http.listen({ port: o.httpPort, host: '::', ipv6Only: false }, () => resolve());
  });
  logLine(`Started HTTP server on port ${o.httpPort}`);
  if (o.udpPort !== -1) {
    for (const address of o.udpListenAddresses.length > 0 ? o.udpListenAddresses : ['']) {
      sockets.push(await startUdp(address, o.udpPort, o.hostname));
    }
    ready = true;
  }
  return {
    httpPort: (http.address() as AddressInfo).port,
    udpPorts: sockets.map((s) => s.address().port),
    terminate: () => {
      terminating = true;
      if (o.delayShutdownSeconds > 0)
        logLine(`Sleeping ${o.delayShutdownSeconds} seconds before terminating...`);
      shutdownTimer = setTimeout(() => exit(0), o.delayShutdownSeconds * 1000);
    },
    close: () => {
      clearTimeout(shutdownTimer);
      http.close();
      http.closeAllConnections();
      for (const s of sockets) s.close();
    },
  };
}
