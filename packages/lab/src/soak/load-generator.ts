// The soak's load: a process inside one lab namespace (the client host, or a pod) that keeps a steady rate of
// short TCP connections (one HTTP request each) and UDP requests to Service frontends, plus a few long-lived TCP
// connections that send a request every interval on the same connection. Each outcome is one NDJSON record in a
// file the soak reads; the pod servers answer "pod=NAME client=IP:PORT", so a record names the endpoint that
// answered. Only the lab's addresses are ever dialled (the soak gives them); the rate and duration are bounded.
//
//   kube-proxy-ts lab load --config FILE --out FILE      (internal: the soak starts it with `ip netns exec`)
import { appendFileSync, readFileSync } from 'node:fs';
import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import { connect, type Socket } from 'node:net';
import { POD_NAME_HEADER, parsePodReply } from '@kube-proxy-ts/netns/pod-server.js';

/** How a request ended. `other`: an answer that is not a pod's (or a protocol error). */
export const OUTCOMES = ['ok', 'refused', 'timeout', 'reset', 'other'] as const;
export type Outcome = (typeof OUTCOMES)[number];

export interface LoadTarget {
  readonly service: string;
  readonly protocol: 'tcp' | 'udp';
  /**
   * How the Service is reached: its ClusterIP, or a node's address and the NodePort; `podIP` is the control, a
   * pod's own address, which no kube-proxy rule rewrites.
   */
  readonly via: 'clusterIP' | 'nodePort' | 'podIP';
  readonly host: string;
  readonly port: number;
  /** The node whose rules carry this traffic (the client pod's node; a NodePort's node). */
  readonly node?: string;
}

/**
 * The control target's service name: requests straight to a pod's address. When they fail too, the machine
 * (a starved CPU, the pod itself) failed, not kube-proxy's rules.
 */
export const CONTROL_SERVICE = '(control)';

export interface LongTarget extends Omit<LoadTarget, 'protocol'> {
  readonly connections: number;
}

export interface LoadConfig {
  readonly durationMs: number;
  /** Short requests per second over all targets (round robin). */
  readonly ratePerSecond: number;
  readonly timeoutMs: number;
  readonly targets: readonly LoadTarget[];
  readonly long: readonly LongTarget[];
  /** Between two requests on a long-lived connection. */
  readonly longIntervalMs: number;
}

/** How a request ended, and the pod that answered it when one did. */
export interface RequestAnswer {
  readonly r: Outcome;
  readonly pod?: string;
}

/** One short request: target index, start and end (ms since the epoch), outcome, the pod that answered. */
export interface RequestRecord extends RequestAnswer {
  readonly k: 'req';
  readonly i: number;
  readonly t0: number;
  readonly t1: number;
}

/** One request on long-lived connection `c` (of long target `i`); `r` ≠ ok ends the connection. */
export interface LongRecord extends RequestAnswer {
  readonly k: 'long';
  readonly i: number;
  readonly c: number;
  readonly t: number;
}

export type LoadRecord = RequestRecord | LongRecord;

const LIMITS = { maxRate: 2000, maxDurationMs: 2 * 3600_000, maxConnections: 64 };

/** The config file, validated: an error names the field. */
export function parseLoadConfig(text: string): LoadConfig {
  const raw: unknown = JSON.parse(text);
  const o = raw as Partial<LoadConfig>;
  const num = (v: unknown, name: string, min: number, max: number): number => {
    if (typeof v !== 'number' || !Number.isFinite(v) || v < min || v > max)
      throw new Error(`load config: ${name} must be a number in ${min}…${max}`);
    return v;
  };
  num(o.durationMs, 'durationMs', 1, LIMITS.maxDurationMs);
  num(o.ratePerSecond, 'ratePerSecond', 0, LIMITS.maxRate);
  num(o.timeoutMs, 'timeoutMs', 10, 60_000);
  num(o.longIntervalMs, 'longIntervalMs', 10, 60_000);
  const target = (t: unknown, where: string): void => {
    const x = t as Partial<LoadTarget>;
    if (typeof x.service !== 'string' || typeof x.host !== 'string')
      throw new Error(`load config: ${where}: service and host must be strings`);
    // The lab's own addresses only (198.18.0.0/15): a typo must not send load anywhere else.
    if (!/^198\.(18|19)\.\d{1,3}\.\d{1,3}$/.test(x.host))
      throw new Error(`load config: ${where}: ${x.host} is not a lab address (198.18.0.0/15)`);
    num(x.port, `${where}.port`, 1, 65535);
    if (x.via !== 'clusterIP' && x.via !== 'nodePort' && x.via !== 'podIP')
      throw new Error(`load config: ${where}: via`);
  };
  if (!Array.isArray(o.targets) || !Array.isArray(o.long))
    throw new Error('load config: targets, long: lists');
  o.targets.forEach((t, i) => {
    target(t, `targets[${i}]`);
    if (t.protocol !== 'tcp' && t.protocol !== 'udp') throw new Error(`load config: targets[${i}].protocol`);
  });
  o.long.forEach((t, i) => {
    target(t, `long[${i}]`);
    num(t.connections, `long[${i}].connections`, 1, LIMITS.maxConnections);
  });
  return raw as LoadConfig;
}

/** How a socket error reads as an outcome. */
export function outcomeOf(err: NodeJS.ErrnoException): Outcome {
  switch (err.code) {
    case 'ECONNREFUSED':
      return 'refused';
    case 'ECONNRESET':
    case 'EPIPE':
      return 'reset';
    case 'ETIMEDOUT':
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return 'timeout';
    default:
      return 'other';
  }
}

/** The pod named by an HTTP response (the pod server's x-pod-name header); undefined when it is none. */
export function podFromHttpResponse(text: string): string | undefined {
  const at = text.indexOf('\r\n\r\n');
  if (!text.startsWith('HTTP/1.1 200') || at < 0) return undefined;
  const header = new RegExp(`\r\n${POD_NAME_HEADER}:[ \t]*([^\r\n]+)\r\n`, 'i').exec(text.slice(0, at + 2));
  return header?.[1]?.trim();
}

/** A reply that names a pod is an answer from it; one that names none is `other`. */
const answerOf = (pod: string | undefined): RequestAnswer =>
  pod === undefined ? { r: 'other' } : { r: 'ok', pod };

/**
 * A short request's end, whichever comes first: a reply, a socket error or the timeout. The first settles the
 * request and closes its socket; what comes after it is ignored.
 */
class RequestEnd {
  private done = false;
  private readonly timer: NodeJS.Timeout;

  constructor(
    timeoutMs: number,
    private readonly close: () => void,
    private readonly resolve: (answer: RequestAnswer) => void,
  ) {
    this.timer = setTimeout(() => this.settle({ r: 'timeout' }), timeoutMs);
  }

  settle(answer: RequestAnswer): void {
    if (this.stop()) this.resolve(answer);
  }

  /** Gives up this attempt and lets `next` settle the request; false when it had ended already. */
  retry(next: () => Promise<RequestAnswer>): boolean {
    if (!this.stop()) return false;
    void next().then(this.resolve);
    return true;
  }

  private stop(): boolean {
    if (this.done) return false;
    this.done = true;
    clearTimeout(this.timer);
    this.close();
    return true;
  }
}

function tcpRequest(t: LoadTarget, timeoutMs: number): Promise<RequestAnswer> {
  return new Promise((resolve) => {
    let data = '';
    const socket: Socket = connect({ host: t.host, port: t.port });
    const end = new RequestEnd(timeoutMs, () => socket.destroy(), resolve);
    socket.on('connect', () =>
      socket.end(`GET / HTTP/1.1\r\nHost: ${t.service}\r\nConnection: close\r\n\r\n`),
    );
    socket.on('data', (b: Buffer) => (data += b.toString('utf8')));
    socket.on('end', () => end.settle(answerOf(podFromHttpResponse(data))));
    socket.on('error', (e) => end.settle({ r: outcomeOf(e) }));
  });
}

/**
 * UDP source ports, handed out in turn from a range of 40,000: at the soak's rates a port comes round again only
 * after several minutes, past conntrack's UDP timeouts (30 s, 120 s once answered). With the kernel's random
 * choice a port is often reused within seconds, and the request then belongs to the earlier flow's conntrack
 * entry, DNATed to that flow's endpoint: if that pod has just died, the request is lost until the proxy's
 * conntrack clean-up after its next sync removes the entry. That window is real (upstream has it too), but it
 * is conntrack's, not the rules', and it would make every request's fate depend on port luck.
 */
class UdpPorts {
  private next = 20_000 + Math.floor(Math.random() * 40_000);

  take(): number {
    const port = this.next;
    this.next = this.next >= 59_999 ? 20_000 : this.next + 1;
    return port;
  }
}
const udpPorts = new UdpPorts();

/**
 * One UDP request from a fresh socket on a fresh source port: the first datagram of a new flow, so it is
 * load-balanced like a new TCP connection. A connected socket hears of ICMP port unreachable as ECONNREFUSED.
 */
function udpRequest(t: LoadTarget, timeoutMs: number, triesLeft = 10): Promise<RequestAnswer> {
  return new Promise((resolve) => {
    const socket: UdpSocket = createSocket('udp4');
    const end = new RequestEnd(timeoutMs, () => socket.close(), resolve);
    socket.on('message', (msg) => end.settle(answerOf(parsePodReply(msg.toString('utf8'))?.pod)));
    socket.on('error', (e: NodeJS.ErrnoException) => {
      // The port is still taken (a socket of ours not yet closed): a new socket on the next one.
      const retried =
        e.code === 'EADDRINUSE' && triesLeft > 0 && end.retry(() => udpRequest(t, timeoutMs, triesLeft - 1));
      if (!retried) end.settle({ r: outcomeOf(e) });
    });
    socket.bind(udpPorts.take(), () =>
      socket.connect(t.port, t.host, () => socket.send(`soak ${t.service}`)),
    );
  });
}

/** A keep-alive HTTP connection asking /keepalive every interval until it fails or the run ends. */
async function longConnection(
  t: LongTarget,
  interval: number,
  timeoutMs: number,
  until: number,
  record: (r: Outcome, pod?: string) => void,
): Promise<void> {
  const socket: Socket = connect({ host: t.host, port: t.port });
  let buffer = '';
  let pending: ((r: RequestAnswer) => void) | undefined;
  const settle = (r: RequestAnswer): void => {
    const p = pending;
    pending = undefined;
    p?.(r);
  };
  let failure: Outcome | undefined;
  socket.on('data', (b: Buffer) => {
    buffer += b.toString('utf8');
    const head = buffer.indexOf('\r\n\r\n');
    if (head < 0) return;
    const length = Number(/\r\ncontent-length:\s*(\d+)/i.exec(buffer.slice(0, head))?.[1] ?? 'NaN');
    if (!Number.isFinite(length) || buffer.length < head + 4 + length) return;
    const response = buffer.slice(0, head + 4 + length);
    buffer = buffer.slice(head + 4 + length);
    settle(answerOf(podFromHttpResponse(response)));
  });
  socket.on('error', (e) => {
    failure ??= outcomeOf(e);
    settle({ r: failure });
  });
  socket.on('close', () => {
    failure ??= 'reset';
    settle({ r: failure });
  });
  const connected = await new Promise<boolean>((resolve) => {
    socket.once('connect', () => resolve(true));
    socket.once('close', () => resolve(false));
  });
  if (!connected) {
    record(failure ?? 'refused');
    return;
  }
  while (Date.now() < until) {
    const answer = await new Promise<RequestAnswer>((resolve) => {
      if (failure !== undefined) return resolve({ r: failure });
      const timer = setTimeout(() => settle({ r: 'timeout' }), timeoutMs);
      pending = (r) => {
        clearTimeout(timer);
        resolve(r);
      };
      socket.write(`GET /keepalive HTTP/1.1\r\nHost: ${t.service}\r\n\r\n`);
    });
    record(answer.r, answer.pod);
    if (answer.r !== 'ok') break;
    await new Promise((resolve) => setTimeout(resolve, interval));
  }
  socket.destroy();
}

/** Runs the load for config.durationMs, handing each record to `emit`. */
export async function runLoad(config: LoadConfig, emit: (r: LoadRecord) => void): Promise<void> {
  const started = Date.now();
  const until = started + config.durationMs;
  const inFlight = new Set<Promise<void>>();
  const longs: Promise<void>[] = [];
  config.long.forEach((t, i) => {
    for (let c = 0; c < t.connections; c++)
      longs.push(
        longConnection(t, config.longIntervalMs, config.timeoutMs, until, (r, pod) =>
          emit({ k: 'long', i, c, t: Date.now(), r, ...(pod !== undefined ? { pod } : {}) }),
        ),
      );
  });
  let sent = 0;
  let next = 0;
  while (Date.now() < until && config.targets.length > 0 && config.ratePerSecond > 0) {
    const due = Math.floor(((Date.now() - started) / 1000) * config.ratePerSecond);
    // Bounded: a stalled network must not pile up thousands of sockets.
    while (sent < due && inFlight.size < 512) {
      const i = next++ % config.targets.length;
      const t = config.targets[i];
      if (t === undefined) break;
      sent++;
      const t0 = Date.now();
      const request = t.protocol === 'udp' ? udpRequest : tcpRequest;
      const p = request(t, config.timeoutMs).then((a) => {
        emit({ k: 'req', i, t0, t1: Date.now(), r: a.r, ...(a.pod !== undefined ? { pod: a.pod } : {}) });
      });
      inFlight.add(p);
      void p.finally(() => inFlight.delete(p));
    }
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  await Promise.all([...inFlight, ...longs]);
}

/** `lab load --config FILE --out FILE`: runs the load, appending records to FILE (flushed every 200 ms). */
export async function loadMain(configPath: string, outPath: string): Promise<number> {
  let config: LoadConfig;
  try {
    config = parseLoadConfig(readFileSync(configPath, 'utf8'));
  } catch (e) {
    process.stderr.write(`lab load: ${configPath}: ${e instanceof Error ? e.message : String(e)}\n`);
    return 2;
  }
  let batch: string[] = [];
  const flush = (): void => {
    if (batch.length === 0) return;
    appendFileSync(outPath, batch.join(''));
    batch = [];
  };
  const timer = setInterval(flush, 200);
  const stop = (): void => {
    flush();
    process.exit(0);
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  await runLoad(config, (r) => batch.push(`${JSON.stringify(r)}\n`));
  clearInterval(timer);
  flush();
  return 0;
}
