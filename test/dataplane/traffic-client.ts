// The client side of the dataplane tests, run inside a namespace (`ip netns exec NS node --import tsx …`): sends
// requests one after another, each on a fresh connection (HTTP) or a fresh socket (UDP) so that every request is
// a new conntrack flow and a new load-balancing decision, and prints one JSON line per request.
//
//   --proto http|udp --target 198.19.0.10:80 --count 60 [--interval-ms 0] [--timeout-ms 2000]
//   [--stop-file F] (stop early once F exists) [--out F] (also append each line to F as it happens)
import { appendFileSync, existsSync } from 'node:fs';
import { createSocket } from 'node:dgram';
import { request } from 'node:http';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { parsePodReply } from '../../packages/netns/src/pod-server.js';

export type RequestOutcome =
  | {
      readonly seq: number;
      readonly startedAt: number;
      readonly ok: true;
      readonly pod: string;
      readonly clientIP: string;
      readonly clientPort: number;
    }
  | { readonly seq: number; readonly startedAt: number; readonly ok: false; readonly error: string };

type Attempt = { ok: true; pod: string; clientIP: string; clientPort: number } | { ok: false; error: string };

export const TIMEOUT = 'TIMEOUT';

function errorCode(e: unknown): string {
  if (typeof e === 'object' && e !== null && 'code' in e && typeof e.code === 'string') return e.code;
  return e instanceof Error ? e.message : String(e);
}

function fromReplyText(text: string): Attempt {
  const reply = parsePodReply(text);
  return reply
    ? { ok: true, ...reply }
    : { ok: false, error: `BAD_REPLY ${JSON.stringify(text.slice(0, 80))}` };
}

function httpOnce(host: string, port: number, timeoutMs: number): Promise<Attempt> {
  return new Promise((resolve) => {
    let settled = false;
    const finish = (a: Attempt) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(a);
    };
    const req = request({ host, port, path: '/', method: 'GET', agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (b: Buffer) => chunks.push(b));
      res.on('end', () => finish(fromReplyText(Buffer.concat(chunks).toString('utf8'))));
      res.on('error', (e) => finish({ ok: false, error: errorCode(e) }));
    });
    // The request's own timeout (an unanswered request is an outcome), not a wait.
    const timer = setTimeout(() => {
      finish({ ok: false, error: TIMEOUT });
      req.destroy();
    }, timeoutMs);
    req.on('error', (e) => finish({ ok: false, error: errorCode(e) }));
    req.end();
  });
}

function udpOnce(host: string, port: number, timeoutMs: number): Promise<Attempt> {
  return new Promise((resolve) => {
    const socket = createSocket(host.includes(':') ? 'udp6' : 'udp4');
    let settled = false;
    const finish = (a: Attempt) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.close();
      resolve(a);
    };
    const timer = setTimeout(() => finish({ ok: false, error: TIMEOUT }), timeoutMs); // the request's timeout
    socket.on('message', (msg) => finish(fromReplyText(msg.toString('utf8'))));
    // A connected UDP socket hears ICMP errors (port unreachable → ECONNREFUSED), so a reject is not a timeout.
    socket.on('error', (e) => finish({ ok: false, error: errorCode(e) }));
    socket.connect(port, host, () => socket.send('ping'));
  });
}

interface ClientOptions {
  readonly proto: 'http' | 'udp';
  readonly host: string;
  readonly port: number;
  readonly count: number;
  readonly intervalMs: number;
  readonly timeoutMs: number;
  readonly stopFile?: string;
  readonly out?: string;
}

function parseClientArgs(argv: readonly string[]): ClientOptions {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      proto: { type: 'string' },
      target: { type: 'string' },
      count: { type: 'string' },
      'interval-ms': { type: 'string' },
      'timeout-ms': { type: 'string' },
      'stop-file': { type: 'string' },
      out: { type: 'string' },
    },
    strict: true,
  });
  const proto = values.proto;
  if (proto !== 'http' && proto !== 'udp') throw new Error(`--proto ${String(proto)}: want http or udp`);
  const m = /^(.+):(\d+)$/.exec(values.target ?? '');
  if (!m || m[1] === undefined || m[2] === undefined)
    throw new Error(`--target ${String(values.target)}: want ip:port`);
  return {
    proto,
    host: m[1].replace(/^\[|\]$/g, ''),
    port: Number(m[2]),
    count: Number(values.count ?? '1'),
    intervalMs: Number(values['interval-ms'] ?? '0'),
    timeoutMs: Number(values['timeout-ms'] ?? '2000'),
    ...(values['stop-file'] !== undefined ? { stopFile: values['stop-file'] } : {}),
    ...(values.out !== undefined ? { out: values.out } : {}),
  };
}

async function main(): Promise<void> {
  const options = parseClientArgs(process.argv.slice(2));
  const once = options.proto === 'http' ? httpOnce : udpOnce;
  for (let seq = 0; seq < options.count; seq++) {
    if (options.stopFile !== undefined && existsSync(options.stopFile)) break;
    const startedAt = Date.now();
    const outcome: RequestOutcome = {
      seq,
      startedAt,
      ...(await once(options.host, options.port, options.timeoutMs)),
    };
    const line = JSON.stringify(outcome) + '\n';
    process.stdout.write(line);
    if (options.out !== undefined) appendFileSync(options.out, line);
    if (options.intervalMs > 0) await new Promise((r) => setTimeout(r, options.intervalMs)); // the load's pace
  }
}

const invokedAs = process.argv[1];
if (invokedAs !== undefined && import.meta.url === pathToFileURL(invokedAs).href) {
  main().catch((e: unknown) => {
    console.error(`traffic-client: ${e instanceof Error ? e.message : String(e)}`);
    process.exit(2);
  });
}
