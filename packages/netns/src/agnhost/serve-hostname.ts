// agnhost serve-hostname: the pod's hostname over HTTP (the default), raw TCP (written, then the connection
// closed) or UDP (one datagram back per datagram), on --port (9376). HTTP cannot be combined with --tcp/--udp;
// --udp alone therefore needs --http=false, as with agnhost. --close adds "Connection: close" to HTTP answers.
import { createServer as createHttpServer } from 'node:http';
import { createServer as createTcpServer, type AddressInfo, type Server } from 'node:net';
import { createSocket, type Socket } from 'node:dgram';
import { flag, parseFlags } from './flags.js';
import { joinHostPort, logLine, unmapped } from './common.js';

export interface ServeHostnameOptions {
  readonly tcp: boolean;
  readonly udp: boolean;
  readonly http: boolean;
  readonly close: boolean;
  readonly port: number;
  readonly hostname: string;
}

export function parseServeHostnameArgs(argv: readonly string[], hostname: string): ServeHostnameOptions {
  const f = parseFlags(argv, { tcp: 'bool', udp: 'bool', http: 'bool', close: 'bool', port: 'int' });
  if (f.positional.length > 0) throw new Error(`accepts at most 0 arg(s), received ${f.positional.length}`);
  const o = {
    tcp: flag(f, 'tcp', false),
    udp: flag(f, 'udp', false),
    http: flag(f, 'http', true),
    close: flag(f, 'close', false),
    port: flag(f, 'port', 9376),
    hostname,
  };
  if (o.http && (o.tcp || o.udp)) throw new Error("Can't server TCP/UDP mode and HTTP mode at the same time");
  return o;
}

export interface RunningServeHostname {
  /** The bound port per protocol that is served (the requested one, or the kernel's choice for 0). */
  readonly ports: { readonly tcp?: number; readonly udp?: number; readonly http?: number };
  close(): void;
}

function listen(server: Server, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ port, host: '::', ipv6Only: false }, () =>
      resolve((server.address() as AddressInfo).port),
    );
  });
}

export async function startServeHostname(o: ServeHostnameOptions): Promise<RunningServeHostname> {
  const closers: (() => void)[] = [];
  const ports: { tcp?: number; udp?: number; http?: number } = {};
  if (o.tcp) {
    const server = createTcpServer((conn) => {
      logLine(`TCP request from ${joinHostPort(unmapped(conn.remoteAddress), conn.remotePort ?? 0)}`);
      conn.on('error', () => undefined);
      conn.end(o.hostname);
    });
    ports.tcp = await listen(server, o.port);
    closers.push(() => server.close());
  }
  if (o.udp) {
    const socket: Socket = createSocket({ type: 'udp6', ipv6Only: false });
    socket.on('message', (_msg, rinfo) => {
      logLine(`UDP request from ${joinHostPort(unmapped(rinfo.address), rinfo.port)}`);
      socket.send(o.hostname, rinfo.port, rinfo.address);
    });
    await new Promise<void>((resolve, reject) => {
      socket.once('error', reject);
      socket.bind({ port: o.port, address: '::' }, () => resolve());
    });
    ports.udp = socket.address().port;
    closers.push(() => socket.close());
  }
  if (o.http) {
    const server = createHttpServer((req, res) => {
      logLine(
        `HTTP request from ${joinHostPort(unmapped(req.socket.remoteAddress), req.socket.remotePort ?? 0)}`,
      );
      req.resume();
      res.writeHead(200, {
        'content-type': 'text/plain; charset=utf-8',
        'content-length': Buffer.byteLength(o.hostname),
        ...(o.close ? { connection: 'close' } : {}),
      });
      res.end(o.hostname);
    });
    ports.http = await listen(server, o.port);
    closers.push(() => {
      server.close();
      server.closeAllConnections();
    });
  }
  logLine(`Serving on port ${o.port}.`);
  return { ports, close: () => closers.forEach((c) => c()) };
}
