// The host side of the path from a proxy in a network namespace to an API server the test runs on the host's
// 127.0.0.1: a Unix socket (reachable from every namespace through the filesystem) whose connections are piped to
// the server's TCP port. Inside the namespace, src/lab/netns/unix-relay.ts turns 127.0.0.1:6443 into this socket.
// When the server cuts a connection, the cut travels back through both relays; when the server is down, a new
// connection is refused here and closed at once, as a refused TCP connection would be.
import { createConnection, createServer } from 'node:net';
import type { Server, Socket } from 'node:net';
import { rmSync } from 'node:fs';
import { joinSockets } from '../../../src/lab/netns/unix-relay.js';

export interface UnixBridge {
  readonly path: string;
  close(): Promise<void>;
}

export function startUnixBridge(path: string, target: { host: string; port: number }): Promise<UnixBridge> {
  rmSync(path, { force: true });
  const sockets = new Set<Socket>();
  const track = (s: Socket): void => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  };
  const server: Server = createServer((client) => {
    track(client);
    const upstream = createConnection({ host: target.host, port: target.port });
    track(upstream);
    joinSockets(client, upstream);
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(path, () => {
      server.off('error', reject);
      resolve({
        path,
        close: () =>
          new Promise<void>((done) => {
            for (const s of sockets) s.destroy();
            server.close(() => {
              rmSync(path, { force: true });
              done();
            });
          }),
      });
    });
  });
}
