// The metrics and proxy-healthz servers' lifecycle (upstream cmd/kube-proxy/app/server.go serveMetrics and
// serveHealthz): bind; if that fails, log and try again every 5 s for ever, or, with bindAddressHardFail, report a
// fatal error to the caller (upstream's Run returns and the process exits). Time comes from an injected Clock.
import { createServer } from 'node:http';
import type { RequestListener, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Clock, TimerHandle } from '../util/clock.js';
import type { Logger } from '../util/logger.js';
import { parseBindAddress } from './bind-address.js';
import { closeServer, listen } from './listen.js';
import type { ListenError } from './listen.js';

/** Upstream retries a failed bind every 5 seconds. */
export const BIND_RETRY_MS = 5_000;

export interface ServerFatalError extends ListenError {
  /** Which server: "metrics" or "healthz". */
  readonly server: string;
}

export interface RetryingServerOptions {
  readonly name: string;
  readonly host: string;
  readonly port: number;
  readonly handler: RequestListener;
  readonly clock: Clock;
  readonly logger: Logger;
  /** bindAddressHardFail: a failed bind is fatal instead of retried. */
  readonly hardFail: boolean;
  /** Called once, with hardFail, when the bind failed. */
  readonly onFatal?: (error: ServerFatalError) => void;
  readonly retryMs?: number;
}

/** A server on an address from the configuration, as run.ts starts the metrics and healthz servers. */
export interface BoundServerOptions extends Pick<
  RetryingServerOptions,
  'clock' | 'logger' | 'hardFail' | 'onFatal'
> {
  /** The configured "host:port" (metricsBindAddress, healthzBindAddress). */
  readonly bindAddress: string;
}

export type CreateServerResult =
  { readonly ok: true; readonly server: RetryingHttpServer } | { readonly ok: false; readonly error: string };

/**
 * Builds the server `name` on the address in setting `setting`; call start() on it. A malformed bind address is an
 * error value naming the setting, not a throw.
 */
export function createBoundServer(
  name: string,
  setting: string,
  handler: RequestListener,
  o: BoundServerOptions,
): CreateServerResult {
  const addr = parseBindAddress(o.bindAddress);
  if (!addr.ok) return { ok: false, error: `${setting}: ${addr.error}` };
  const server = new RetryingHttpServer({
    name,
    host: addr.value.host,
    port: addr.value.port,
    handler,
    clock: o.clock,
    logger: o.logger,
    hardFail: o.hardFail,
    ...(o.onFatal ? { onFatal: o.onFatal } : {}),
  });
  return { ok: true, server };
}

export type AttemptOutcome = 'listening' | 'retrying' | 'fatal' | 'stopped';

export class RetryingHttpServer {
  readonly #o: RetryingServerOptions;
  #server: Server | undefined;
  #timer: TimerHandle | undefined;
  #stopped = false;
  #address: AddressInfo | undefined;
  #waiters: ((a: AddressInfo) => void)[] = [];
  #attempts = 0;

  constructor(options: RetryingServerOptions) {
    this.#o = options;
  }

  /** Makes the first bind attempt; later attempts run on the clock. Resolves with the first attempt's outcome. */
  start(): Promise<AttemptOutcome> {
    return this.#attempt();
  }

  /** Bind attempts made so far. */
  get attempts(): number {
    return this.#attempts;
  }

  /** The bound address, once listening. */
  get address(): AddressInfo | undefined {
    return this.#address;
  }

  /** Resolves once the server is bound (at once when it already is). */
  listening(): Promise<AddressInfo> {
    if (this.#address) return Promise.resolve(this.#address);
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer) this.#o.clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#server) await closeServer(this.#server);
    this.#server = undefined;
    this.#address = undefined;
  }

  async #attempt(): Promise<AttemptOutcome> {
    if (this.#stopped) return 'stopped';
    this.#attempts++;
    const { name, host, port, logger } = this.#o;
    const server = createServer(this.#o.handler);
    const result = await listen(server, host, port);
    if (this.#stopped) {
      await closeServer(server);
      return 'stopped';
    }
    if (result.ok) {
      this.#server = server;
      this.#address = result.address;
      logger.v(3, () => ({ msg: `Starting ${name} HTTP server`, fields: { address: result.address } }));
      for (const w of this.#waiters.splice(0)) w(result.address);
      return 'listening';
    }
    if (this.#o.hardFail) {
      logger.error(`Failed to start ${name} server`, { ...result.error, fatal: true });
      this.#o.onFatal?.({ server: name, ...result.error });
      return 'fatal';
    }
    const retryMs = this.#o.retryMs ?? BIND_RETRY_MS;
    logger.error(`Failed to start ${name} server, will retry`, { ...result.error, retryAfterMs: retryMs });
    this.#timer = this.#o.clock.setTimeout(() => {
      this.#timer = undefined;
      void this.#attempt();
    }, retryMs);
    return 'retrying';
  }
}
