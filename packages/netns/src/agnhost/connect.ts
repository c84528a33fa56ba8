// agnhost connect HOST:PORT: one TCP connection (or, with --protocol=udp, one datagram and its answer) and an exit
// code that says whether it worked. On failure stderr starts with agnhost's fixed words, which tests look for:
// UNKNOWN (bad arguments), DNS, TIMEOUT, REFUSED, OTHER. --timeout is a Go duration; 0 (the default) leaves it to
// the kernel. SCTP is not possible here (sctpUnsupportedReason).
import { lookup } from 'node:dns/promises';
import { createSocket } from 'node:dgram';
import { connect as tcpConnect, isIP } from 'node:net';
import { flag, parseFlags } from './flags.js';
import { splitHostPort, parsePortText, sctpUnsupportedReason } from './common.js';

export interface ConnectResult {
  readonly code: number;
  /** What agnhost writes to stderr; empty on success. */
  readonly message: string;
}

const fail = (message: string): ConnectResult => ({ code: 1, message: `${message}\n` });

async function resolve(host: string): Promise<string> {
  if (host === '') return '127.0.0.1';
  return isIP(host) !== 0 ? host : (await lookup(host)).address;
}

function connectTCP(host: string, port: number, timeoutMs: number): Promise<ConnectResult> {
  return new Promise((done) => {
    const socket = tcpConnect({ host, port });
    const timer = timeoutMs > 0 ? setTimeout(() => finish(fail('TIMEOUT')), timeoutMs) : undefined;
    function finish(r: ConnectResult): void {
      clearTimeout(timer);
      socket.destroy();
      done(r);
    }
    socket.once('connect', () => finish({ code: 0, message: '' }));
    socket.once('error', (e: NodeJS.ErrnoException) =>
      finish(e.code === 'ECONNREFUSED' ? fail('REFUSED') : fail(`OTHER: ${e.message}`)),
    );
  });
}

function connectUDP(host: string, port: number, timeoutMs: number, data: string): Promise<ConnectResult> {
  return new Promise((done) => {
    const socket = createSocket(isIP(host) === 6 ? 'udp6' : 'udp4');
    const timer =
      timeoutMs > 0 ? setTimeout(() => finish(fail(`TIMEOUT: read udp: i/o timeout`)), timeoutMs) : undefined;
    function finish(r: ConnectResult): void {
      clearTimeout(timer);
      socket.close();
      done(r);
    }
    socket.on('error', (e: NodeJS.ErrnoException) =>
      finish(e.code === 'ECONNREFUSED' ? fail(`REFUSED: ${e.message}`) : fail(`UNKNOWN: ${e.message}`)),
    );
    socket.on('message', (msg) =>
      finish(
        msg.length > 0
          ? { code: 0, message: '' }
          : fail(
              'OTHER: No data received from the server. Cannot guarantee the server received the request.',
            ),
      ),
    );
    socket.connect(port, host, () => socket.send(`${data}\n`));
  });
}

/** Runs `connect` with its arguments (after the subcommand); never throws. */
export async function runConnect(argv: readonly string[]): Promise<ConnectResult> {
  let parsed;
  try {
    parsed = parseFlags(argv, {
      timeout: 'duration',
      protocol: 'string',
      'udp-data': 'string',
      'sctp-data': 'string',
    });
  } catch (e) {
    return fail(`Error: ${e instanceof Error ? e.message : String(e)}`);
  }
  if (parsed.positional.length !== 1)
    return fail(`Error: accepts 1 arg(s), received ${parsed.positional.length}`);
  const dest = parsed.positional[0] ?? '';
  const timeoutMs = flag(parsed, 'timeout', 0);
  const protocol = flag(parsed, 'protocol', 'tcp');
  if (!['', 'tcp', 'udp', 'sctp'].includes(protocol)) return fail(`Unsupported protocol ${protocol}`);
  const hp = splitHostPort(dest);
  if (hp === undefined) return fail(`UNKNOWN: address ${dest}: missing port in address`);
  const port = parsePortText(hp.port);
  let host: string;
  try {
    if (port === undefined) throw new Error(`lookup ${hp.port}: unknown port`);
    host = await resolve(hp.host);
  } catch (e) {
    return fail(`DNS: ${e instanceof Error ? e.message : String(e)}`);
  }
  if (protocol === 'sctp') return fail(`OTHER: ${sctpUnsupportedReason()}`);
  if (protocol === 'udp')
    return connectUDP(host, port as number, timeoutMs, flag(parsed, 'udp-data', 'hostname'));
  return connectTCP(host, port as number, timeoutMs);
}
