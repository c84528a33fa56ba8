// DNS over UDP and TCP on one port (RFC 1035 §4.2, RFC 7766): each UDP datagram is a query; a TCP connection
// carries queries each behind a two-byte length, answered in order, and is closed after IDLE_MS without one (or
// at the first malformed frame). Both sockets listen on every address of the namespace (IPv6 with IPv4 mapped,
// or IPv4 alone where the namespace has no IPv6), since the pod's address is what kube-proxy sends to.
import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import type { Logger } from 'kube-proxy-ts/util/logger.js';
import type { Transport } from './responder.js';

/** From a query to its response; undefined sends nothing. */
export type DnsHandler = (query: Buffer, transport: Transport) => Buffer | undefined;

export interface DnsServer {
  /** The UDP and TCP port (the same; useful when 0 was asked for). */
  readonly port: number;
  close(): Promise<void>;
}

export interface DnsServerOptions {
  /** Default: every address (:: with IPv4 mapped, or 0.0.0.0). */
  readonly host?: string;
  /** Default 53. */
  readonly port?: number;
  readonly handle: DnsHandler;
  readonly logger: Logger;
}

/** A TCP connection with no query for this long is closed (RFC 7766 suggests seconds, not minutes). */
const IDLE_MS = 10_000;

function bindUdp(host: string | undefined, port: number, onMessage: (m: Buffer, r: Rinfo) => void) {
  const tryBind = (type: 'udp4' | 'udp6', address: string): Promise<UdpSocket> =>
    new Promise((resolve, reject) => {
      const socket = createSocket({ type, ipv6Only: false });
      socket.once('error', reject);
      socket.on('message', onMessage);
      socket.bind(port, address, () => {
        socket.off('error', reject);
        resolve(socket);
      });
    });
  if (host !== undefined) return tryBind(host.includes(':') ? 'udp6' : 'udp4', host);
  return tryBind('udp6', '::').catch(() => tryBind('udp4', '0.0.0.0'));
}

interface Rinfo {
  readonly address: string;
  readonly port: number;
}

function listenTcp(server: Server, host: string | undefined, port: number): Promise<void> {
  const listen = (address: string): Promise<void> =>
    new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen({ port, host: address, ipv6Only: false }, () => {
        server.off('error', reject);
        resolve();
      });
    });
  if (host !== undefined) return listen(host);
  return listen('::').catch(() => listen('0.0.0.0'));
}

/** Reads length-prefixed queries from one TCP connection and writes each answer back. */
function serveConnection(socket: Socket, handle: DnsHandler, logger: Logger): void {
  let pending = Buffer.alloc(0);
  socket.setTimeout(IDLE_MS, () => socket.destroy());
  socket.on('error', () => socket.destroy());
  socket.on('data', (chunk: Buffer) => {
    pending = Buffer.concat([pending, chunk]);
    while (pending.length >= 2) {
      const length = pending.readUInt16BE(0);
      if (pending.length < 2 + length) return;
      const query = pending.subarray(2, 2 + length);
      pending = pending.subarray(2 + length);
      const reply = safely(handle, query, 'tcp', logger);
      if (!reply) return void socket.destroy();
      const frame = Buffer.alloc(2 + reply.length);
      frame.writeUInt16BE(reply.length, 0);
      reply.copy(frame, 2);
      socket.write(frame);
    }
  });
}

/** A handler that throws is a bug in this server, not the client's doing: logged, and the query dropped. */
function safely(handle: DnsHandler, query: Buffer, transport: Transport, logger: Logger): Buffer | undefined {
  try {
    return handle(query, transport);
  } catch (e) {
    logger.warn('answering a DNS query failed', { transport, error: String(e) });
    return undefined;
  }
}

export async function startDnsServer(options: DnsServerOptions): Promise<DnsServer> {
  const { handle, logger } = options;
  const tcp = createServer((socket) => serveConnection(socket, handle, logger));
  await listenTcp(tcp, options.host, options.port ?? 53);
  const port = (tcp.address() as AddressInfo).port;
  let udp: UdpSocket;
  try {
    udp = await bindUdp(options.host, port, (message, from) => {
      const reply = safely(handle, message, 'udp', logger);
      if (reply) udp.send(reply, from.port, from.address);
    });
  } catch (e) {
    tcp.close();
    throw e;
  }
  udp.on('error', (e) => logger.warn('DNS UDP socket error', { error: String(e) }));
  const connections = new Set<Socket>();
  tcp.on('connection', (s: Socket) => {
    connections.add(s);
    s.on('close', () => connections.delete(s));
  });
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        udp.close();
        for (const s of connections) s.destroy();
        tcp.close(() => resolve());
      }),
  };
}
