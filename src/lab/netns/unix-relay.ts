// A TCP-to-Unix-socket relay, run inside a network namespace so that a process there (a proxy under test) can
// reach a server in the root namespace without any route, link or rule in the root namespace: a filesystem path
// is reachable from every network namespace, a host's 127.0.0.1 is not.
//
//   ip netns exec NS node --import tsx src/lab/netns/unix-relay.ts --listen 127.0.0.1:6443 --to /tmp/x/api.sock \
//     [--max-lifetime 900]
//
// Each accepted TCP connection gets its own Unix-socket connection, piped both ways; when either side closes or
// fails, the other is closed too, so a server that cuts a connection is seen as a cut by the client. Prints
// "listening HOST:PORT" on stdout once accepting. Exits by itself after --max-lifetime seconds, so that a run that
// dies without cleaning up cannot leave relays behind for long.
import { createConnection, createServer } from 'node:net';
import type { AddressInfo, Server, Socket } from 'node:net';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

export interface UnixRelayOptions {
  readonly host: string;
  /** 0 picks a free port. */
  readonly port: number;
  readonly socketPath: string;
}

export interface UnixRelay {
  readonly host: string;
  readonly port: number;
  close(): Promise<void>;
}

/** Ties two sockets together: data and clean ends are piped, an error or a close on one side closes the other. */
export function joinSockets(a: Socket, b: Socket): void {
  a.pipe(b);
  b.pipe(a);
  const closeOther = (other: Socket) => (hadError: boolean) => {
    // After a clean end pipe() has already ended the other side's writable; an error means the stream was cut.
    if (hadError) other.destroy();
    else other.end();
  };
  a.on('close', closeOther(b));
  b.on('close', closeOther(a));
  // Errors are expected (resets, refused upstream); 'close' follows each one and does the cleanup.
  a.on('error', () => {});
  b.on('error', () => {});
}

export function startUnixRelay(options: UnixRelayOptions): Promise<UnixRelay> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    sockets.add(client);
    client.on('close', () => sockets.delete(client));
    const upstream = createConnection({ path: options.socketPath });
    sockets.add(upstream);
    upstream.on('close', () => sockets.delete(upstream));
    joinSockets(client, upstream);
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      const addr = server.address() as AddressInfo;
      resolve({
        host: addr.address,
        port: addr.port,
        close: () =>
          new Promise<void>((done) => {
            for (const s of sockets) s.destroy();
            server.close(() => done());
          }),
      });
    });
  });
}

/** Parses "HOST:PORT" (IPv4 or a name; "[v6]:PORT" for IPv6). */
export function parseListen(text: string): { host: string; port: number } | undefined {
  const m = /^(?:\[([^\]]+)\]|([^:]+)):(\d{1,5})$/.exec(text);
  const host = m?.[1] ?? m?.[2];
  const port = Number(m?.[3]);
  if (host === undefined || !Number.isInteger(port) || port > 65535) return undefined;
  return { host, port };
}

async function main(argv: readonly string[]): Promise<void> {
  const { values } = parseArgs({
    args: [...argv],
    strict: true,
    options: {
      listen: { type: 'string' },
      to: { type: 'string' },
      'max-lifetime': { type: 'string', default: '900' },
    },
  });
  const listen = parseListen(values.listen ?? '');
  if (!listen) throw new Error(`--listen: expected HOST:PORT, got ${JSON.stringify(values.listen)}`);
  if (!values.to) throw new Error('--to: the Unix socket path is required');
  const lifetime = Number(values['max-lifetime']);
  if (!(lifetime > 0)) throw new Error('--max-lifetime must be a positive number of seconds');
  const relay = await startUnixRelay({ ...listen, socketPath: values.to });
  process.stdout.write(`listening ${relay.host}:${relay.port}\n`);
  // The listening server keeps the process alive; this ends it at the latest after its lifetime.
  setTimeout(() => process.exit(0), lifetime * 1000).unref();
}

const invokedAs = process.argv[1];
if (invokedAs !== undefined && import.meta.url === pathToFileURL(invokedAs).href) {
  main(process.argv.slice(2)).catch((error: unknown) => {
    process.stderr.write(`unix-relay: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(2);
  });
}
