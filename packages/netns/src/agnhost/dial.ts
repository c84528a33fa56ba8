// netexec's /dial: from this pod, send `request` to host:port over HTTP or UDP `tries` times and report what came
// back. The e2e Service tests use it to ask "which backends does a client in this pod reach?" The answer is
// {"responses": [...]} and/or {"errors": [...]}, with agnhost's quirk kept: responses are listed only when the
// last try succeeded with a non-empty answer.
import { lookup } from 'node:dns/promises';
import { createSocket } from 'node:dgram';
import { request as httpRequest } from 'node:http';
import { isIP } from 'node:net';
import { parseGoInt } from './flags.js';
import { joinHostPort, parsePortText, sctpUnsupportedReason } from './common.js';

/** agnhost's client timeout for one try, HTTP and UDP alike. */
export const DIAL_TIMEOUT_MS = 5000;

export interface DialAnswer {
  readonly status: number;
  readonly body: string;
}

type Dialer = (request: string, host: string, port: number) => Promise<string>;

/** Go's error text for a failed connect, so a test that greps agnhost's errors finds the same words. */
function connectErrorText(e: NodeJS.ErrnoException, network: string, address: string): string {
  const what: Readonly<Record<string, string>> = {
    ECONNREFUSED: 'connection refused',
    EHOSTUNREACH: 'no route to host',
    ENETUNREACH: 'network is unreachable',
    ECONNRESET: 'connection reset by peer',
  };
  const reason = what[e.code ?? ''];
  // Anything but a failed connect (a broken answer, say) is reported as it is.
  return reason === undefined ? e.message : `dial ${network} ${address}: connect: ${reason}`;
}

export const dialHTTP: Dialer = (request, host, port) => {
  const url = `http://${joinHostPort(host, port)}/${request}`;
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { agent: false, timeout: DIAL_TIMEOUT_MS }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (b: Buffer) => chunks.push(b));
      res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
      res.on('error', (e) => reject(new Error(`Get ${JSON.stringify(url)}: ${e.message}`)));
    });
    req.on('timeout', () => {
      req.destroy();
      reject(
        new Error(
          `Get ${JSON.stringify(url)}: context deadline exceeded (Client.Timeout exceeded while awaiting headers)`,
        ),
      );
    });
    req.on('error', (e: NodeJS.ErrnoException) =>
      reject(
        new Error(`Get ${JSON.stringify(url)}: ${connectErrorText(e, 'tcp', joinHostPort(host, port))}`),
      ),
    );
    req.end();
  });
};

export const dialUDP: Dialer = (request, host, port) =>
  new Promise((resolve, reject) => {
    const socket = createSocket(isIP(host) === 6 ? 'udp6' : 'udp4');
    const finish = (error: Error | undefined, text?: string): void => {
      clearTimeout(timer);
      socket.close();
      if (error) reject(error);
      else resolve(text ?? '');
    };
    const timer = setTimeout(
      () =>
        finish(
          new Error(
            `reading from udp connection failed. err:'read udp ${joinHostPort(host, port)}: i/o timeout'`,
          ),
        ),
      DIAL_TIMEOUT_MS,
    );
    socket.on('error', (e) => finish(new Error(`udp connection write failed. err:${e.message}`)));
    socket.on('message', (msg) => {
      if (msg.length === 0) return;
      // agnhost reads into a 2048-byte buffer: a longer answer is cut there.
      finish(undefined, msg.subarray(0, 2048).toString('utf8'));
    });
    socket.connect(port, host, () => socket.send(request));
  });

const dialSCTP: Dialer = () => Promise.reject(new Error(`sctp dial failed. err:${sctpUnsupportedReason()}`));

/** Resolves a dial target as Go's ResolveTCPAddr would: an IP as is, a name through the resolver (hosts files). */
async function resolveHost(host: string): Promise<string> {
  if (host === '') return '127.0.0.1';
  if (isIP(host) !== 0) return host;
  return (await lookup(host)).address;
}

function badRequest(message: string): DialAnswer {
  return { status: 400, body: `${message}\n` };
}

/** Answers a /dial request given its query parameters. */
export async function dialAnswer(query: URLSearchParams): Promise<DialAnswer> {
  const host = query.get('host') ?? '';
  const portText = query.get('port') ?? '';
  const request = query.get('request') ?? '';
  const protocol = (query.get('protocol') ?? '').toLowerCase();
  const triesText = query.get('tries') ?? '';
  const tries = triesText === '' ? 1 : parseGoInt(triesText);
  if (tries === undefined)
    return badRequest(
      `tries parameter is invalid. strconv.Atoi: parsing ${JSON.stringify(triesText)}: invalid syntax`,
    );
  if (request === '') return badRequest('request parameter not specified. <nil>');
  const dialers: Readonly<Record<string, Dialer>> = {
    '': dialHTTP,
    http: dialHTTP,
    udp: dialUDP,
    sctp: dialSCTP,
  };
  const dialer = dialers[protocol];
  if (dialer === undefined) return badRequest(`unsupported protocol. ${query.get('protocol') ?? ''}`);
  const port = parsePortText(portText);
  let address: string;
  try {
    if (port === undefined) throw new Error(`invalid port ${JSON.stringify(portText)}`);
    address = await resolveHost(host);
  } catch (e) {
    return badRequest(`host and/or port param are invalid. ${e instanceof Error ? e.message : String(e)}`);
  }
  const responses: string[] = [];
  const errors: string[] = [];
  let last = '';
  for (let i = 0; i < tries; i++) {
    try {
      last = await dialer(request, address, port as number);
      responses.push(last);
    } catch (e) {
      last = '';
      errors.push(e instanceof Error ? e.message : String(e));
    }
  }
  // Go marshals a map with its keys sorted: "errors" comes before "responses".
  const output: Record<string, string[]> = {};
  if (errors.length > 0) output.errors = errors;
  if (last.length > 0) output.responses = responses;
  return { status: 200, body: JSON.stringify(output) };
}
