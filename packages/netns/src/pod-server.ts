// The process a lab or test pod runs inside its network namespace: an HTTP server on each --tcp port and a UDP
// echo on each --udp port, both answering with the pod's name and the source address they saw. That source is
// what tests look at to tell a preserved client IP from a masqueraded one.
//
//   ip netns exec POD node --import tsx src/lab/pod-server.ts --name web-1 --tcp 8080 --udp 5353 \
//     [--ready-file /tmp/x/web-1.ready] [--max-lifetime 900]
//
// It exits by itself after --max-lifetime seconds so that a test run that dies without cleaning up cannot leave
// servers behind for long.
import { appendFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { createSocket } from 'node:dgram';
import type { AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

/** What a pod answers, parsed: its name and the client address it saw. */
export interface PodReply {
  readonly pod: string;
  readonly clientIP: string;
  readonly clientPort: number;
}

export const POD_NAME_HEADER = 'x-pod-name';
export const CLIENT_ADDRESS_HEADER = 'x-client-address';

/** The reply text, for HTTP bodies and UDP datagrams alike: "pod=web-1 client=198.18.1.10:40312\n". */
export function formatPodReply(reply: PodReply): string {
  return `pod=${reply.pod} client=${hostPort(reply.clientIP, reply.clientPort)}\n`;
}

/** Parses formatPodReply's text; undefined when it is something else (a reply from something that is no pod). */
export function parsePodReply(text: string): PodReply | undefined {
  const m = /^pod=(\S+) client=(?:\[([^\]]+)\]|([^\s:]+)):(\d+)\s*$/.exec(text);
  if (!m) return undefined;
  const clientIP = m[2] ?? m[3];
  if (m[1] === undefined || clientIP === undefined || m[4] === undefined) return undefined;
  return { pod: m[1], clientIP, clientPort: Number(m[4]) };
}

function hostPort(ip: string, port: number): string {
  return ip.includes(':') ? `[${ip}]:${port}` : `${ip}:${port}`;
}

/** Node reports IPv4 peers on a dual-stack socket as "::ffff:a.b.c.d"; pods think in plain IPv4. */
function unmapped(ip: string | undefined): string {
  if (ip === undefined) return '?';
  return ip.startsWith('::ffff:') && ip.includes('.') ? ip.slice('::ffff:'.length) : ip;
}

export interface PodServerOptions {
  readonly name: string;
  readonly tcpPorts: readonly number[];
  readonly udpPorts: readonly number[];
  readonly readyFile?: string;
  readonly maxLifetimeSeconds: number;
  /** Appends one line per request here: the pod's output, which `kubectl logs` shows. */
  readonly logFile?: string;
}

/**
 * agnhost netexec's answers for the paths the seeds use (`/hostname`, `/clientip`, `/echo?msg=`), so a request
 * written for the real image gets what it expects; undefined for every other path (the pod reply).
 */
export function netexecAnswer(url: string, reply: PodReply): string | undefined {
  const u = new URL(url, 'http://pod');
  if (u.pathname === '/hostname') return reply.pod;
  if (u.pathname === '/clientip') return hostPort(reply.clientIP, reply.clientPort);
  if (u.pathname === '/echo') return u.searchParams.get('msg') ?? '';
  return undefined;
}

/** The argv (after `node --import tsx`) that starts this file as a pod server with `options`. */
export function podServerArgs(options: PodServerOptions): string[] {
  const args = [new URL(import.meta.url).pathname, '--name', options.name];
  for (const p of options.tcpPorts) args.push('--tcp', String(p));
  for (const p of options.udpPorts) args.push('--udp', String(p));
  if (options.readyFile !== undefined) args.push('--ready-file', options.readyFile);
  args.push('--max-lifetime', String(options.maxLifetimeSeconds));
  if (options.logFile !== undefined) args.push('--log-file', options.logFile);
  return args;
}

function parsePort(text: string, flag: string): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1 || n > 65535)
    throw new Error(`${flag} ${JSON.stringify(text)}: not a port`);
  return n;
}

export function parsePodServerArgs(argv: readonly string[]): PodServerOptions {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      name: { type: 'string' },
      tcp: { type: 'string', multiple: true },
      udp: { type: 'string', multiple: true },
      'ready-file': { type: 'string' },
      'max-lifetime': { type: 'string' },
      'log-file': { type: 'string' },
    },
    strict: true,
  });
  if (!values.name) throw new Error('--name is required');
  const tcpPorts = (values.tcp ?? []).map((p) => parsePort(p, '--tcp'));
  const udpPorts = (values.udp ?? []).map((p) => parsePort(p, '--udp'));
  if (tcpPorts.length + udpPorts.length === 0) throw new Error('give at least one --tcp or --udp port');
  const lifetime = Number(values['max-lifetime'] ?? '900');
  if (!Number.isFinite(lifetime) || lifetime <= 0)
    throw new Error('--max-lifetime must be a positive number');
  return {
    name: values.name,
    tcpPorts,
    udpPorts,
    ...(values['ready-file'] !== undefined ? { readyFile: values['ready-file'] } : {}),
    maxLifetimeSeconds: lifetime,
    ...(values['log-file'] !== undefined ? { logFile: values['log-file'] } : {}),
  };
}

export interface RunningPodServer {
  /** The ports actually bound, in option order (a requested port 0 becomes the kernel's choice). */
  readonly tcpPorts: readonly number[];
  readonly udpPorts: readonly number[];
  close(): void;
}

/** Starts every listener; resolves once all are bound. */
export async function startPodServer(options: PodServerOptions): Promise<RunningPodServer> {
  const log = (line: string): void => {
    if (options.logFile === undefined) return;
    try {
      appendFileSync(options.logFile, `${line}\n`);
    } catch {
      // A log that cannot be written must not stop the answers.
    }
  };
  const closers: (() => void)[] = [];
  const tcpPorts: number[] = [];
  const udpPorts: number[] = [];
  for (const port of options.tcpPorts) {
    const server = createServer((req, res) => {
      const reply = {
        pod: options.name,
        clientIP: unmapped(req.socket.remoteAddress),
        clientPort: req.socket.remotePort ?? 0,
      };
      // Drain the request so keep-alive clients stay well-behaved, then answer once.
      req.resume();
      // One request per connection, so that every curl is a new connection (and a new endpoint choice), except on
      // /keepalive: a client that holds its connection open across many requests (the soak's long-lived
      // connections, which must survive a proxy restart).
      const keepAlive = (req.url ?? '/').startsWith('/keepalive');
      const body = netexecAnswer(req.url ?? '/', reply) ?? formatPodReply(reply);
      res.writeHead(200, {
        'content-type': 'text/plain',
        'content-length': Buffer.byteLength(body),
        ...(keepAlive ? {} : { connection: 'close' }),
        [POD_NAME_HEADER]: reply.pod,
        [CLIENT_ADDRESS_HEADER]: hostPort(reply.clientIP, reply.clientPort),
      });
      res.end(body);
      log(
        `${new Date().toISOString()} ${req.method ?? '?'} ${req.url ?? '/'} from ${hostPort(reply.clientIP, reply.clientPort)}`,
      );
    });
    server.keepAliveTimeout = 60_000;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen({ port, host: '::', ipv6Only: false }, () => resolve());
    });
    tcpPorts.push((server.address() as AddressInfo).port);
    closers.push(() => server.close());
  }
  for (const port of options.udpPorts) {
    const socket = createSocket({ type: 'udp6', ipv6Only: false });
    socket.on('message', (_msg, rinfo) => {
      const text = formatPodReply({
        pod: options.name,
        clientIP: unmapped(rinfo.address),
        clientPort: rinfo.port,
      });
      socket.send(text, rinfo.port, rinfo.address);
    });
    await new Promise<void>((resolve, reject) => {
      socket.once('error', reject);
      socket.bind({ port, address: '::' }, () => resolve());
    });
    udpPorts.push(socket.address().port);
    closers.push(() => socket.close());
  }
  log(
    `${new Date().toISOString()} pod-server ${options.name}: listening on ${[
      ...tcpPorts.map((p) => `${p}/tcp`),
      ...udpPorts.map((p) => `${p}/udp`),
    ].join(', ')}`,
  );
  return { tcpPorts, udpPorts, close: () => closers.forEach((close) => close()) };
}

async function main(): Promise<void> {
  let options: PodServerOptions;
  try {
    options = parsePodServerArgs(process.argv.slice(2));
  } catch (e) {
    console.error(`pod-server: ${e instanceof Error ? e.message : String(e)}`);
    process.exit(2);
  }
  const { close } = await startPodServer(options);
  // The only timer: listeners keep the process alive until a signal arrives or the lifetime ends.
  setTimeout(() => {
    close();
    process.exit(0);
  }, options.maxLifetimeSeconds * 1000);
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.on(signal, () => {
      close();
      process.exit(0);
    });
  }
  if (options.readyFile !== undefined) writeFileSync(options.readyFile, `${process.pid}\n`);
}

const invokedAs = process.argv[1];
if (invokedAs !== undefined && import.meta.url === pathToFileURL(invokedAs).href) {
  void main().catch((e: unknown) => {
    console.error(`pod-server: ${e instanceof Error ? e.message : String(e)}`);
    process.exit(1);
  });
}
