// Byte pipes that carry the API server's TLS stream into node namespaces without touching the root namespace:
//
//   proxy in node ns ── tcp 127.0.0.1:6443 ──▶ relay (in node ns) ── unix socket ──▶ socket bridge (lab process)
//                                                                                   ── tcp 127.0.0.1:PORT ──▶ API server
//
// A loopback address is private to its namespace, but a filesystem path is not: the socket is the one door. TLS is
// end to end (the relays see ciphertext), and the serving certificate names 127.0.0.1, which is where the proxy
// connects in its own namespace too, so the lab's CA and token work unchanged.
import { chmodSync, rmSync } from 'node:fs';
import { connect, createServer, type Server, type Socket } from 'node:net';

function splice(a: Socket, b: Socket): void {
  a.pipe(b);
  b.pipe(a);
  const end = (): void => {
    a.destroy();
    b.destroy();
  };
  a.on('error', end);
  b.on('error', end);
  a.on('close', end);
  b.on('close', end);
}

export interface Pipe {
  close(): Promise<void>;
}

function closer(server: Server, sockets: Set<Socket>, after?: () => void): () => Promise<void> {
  return () =>
    new Promise<void>((resolve) => {
      server.close(() => {
        after?.();
        resolve();
      });
      for (const s of sockets) s.destroy();
    });
}

function track(server: Server, sockets: Set<Socket>): void {
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
}

/** How long one API server outage lasts when `lab up` is sent SIGUSR2 (the soak's --apiserver-outage-every). */
export const API_OUTAGE_MS = 3000;

export interface Bridge extends Pipe {
  /**
   * What the nodes see of an API server restart: every open connection is cut, and new ones are refused
   * (closed at once) for `ms`; then the bridge forwards again.
   */
  outage(ms: number): void;
}

/** In the lab process: accept on a Unix socket (root only), forward each connection to 127.0.0.1:port. */
export async function startSocketBridge(socketPath: string, port: number): Promise<Bridge> {
  rmSync(socketPath, { force: true });
  const sockets = new Set<Socket>();
  let refuseUntil = 0;
  const server = createServer((client) => {
    if (Date.now() < refuseUntil) return void client.destroy();
    splice(client, connect(port, '127.0.0.1'));
  });
  track(server, sockets);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socketPath, () => {
      server.off('error', reject);
      resolve();
    });
  });
  chmodSync(socketPath, 0o600);
  return {
    close: closer(server, sockets, () => rmSync(socketPath, { force: true })),
    outage(ms) {
      refuseUntil = Date.now() + ms;
      for (const s of sockets) s.destroy();
    },
  };
}

/** Where a relay forwards to: a Unix socket's path, or a TCP address (a guest node's relay, across the underlay). */
export type RelayTarget = string | { readonly host: string; readonly port: number };

/**
 * In a node namespace: accept on host:port, forward each connection to `target`. A guest node's needs TCP to TCP:
 * a Unix socket does not cross into a guest (one on a 9p share connects nowhere), so its relay forwards over the
 * underlay to a relay beside the underlay bridge, which forwards to the socket (packages/lab/src/vm/README.md).
 */
export async function startRelay(
  listen: { host: string; port: number },
  target: RelayTarget,
): Promise<Pipe & { readonly port: number }> {
  const sockets = new Set<Socket>();
  const dial = (): Socket =>
    typeof target === 'string' ? connect(target) : connect(target.port, target.host);
  const server = createServer((client) => splice(client, dial()));
  track(server, sockets);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(listen.port, listen.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  return { close: closer(server, sockets), port: typeof address === 'object' && address ? address.port : 0 };
}

/** "127.0.0.1:6443" → parts; undefined when it is not HOST:PORT. */
export function parseHostPort(text: string): { host: string; port: number } | undefined {
  const m = /^(.+):(\d+)$/.exec(text);
  if (!m || m[1] === undefined) return undefined;
  const port = Number(m[2]);
  return port >= 1 && port <= 65535 ? { host: m[1], port } : undefined;
}
