// Per-Service health-check servers (upstream pkg/proxy/healthcheck/service_health.go): for each LoadBalancer
// Service with externalTrafficPolicy Local, an HTTP server on its healthCheckNodePort that tells the cloud load
// balancer whether this node has a local endpoint for it. Any path, any method: 200 iff the Service has local
// endpoints here and the proxy is healthy, else 503; the X-Load-Balancing-Endpoint-Weight header carries the count.
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { Logger } from '../util/logger.js';
import { writeAnswer } from './http-answer.js';
import type { HttpAnswer } from './http-answer.js';
import { closeServer, listen } from './listen.js';
import type { ListenError } from './listen.js';

/** The response for one Service, as upstream writes it (tab-indented JSON, no trailing newline). */
export function serviceHealthAnswer(
  service: string,
  localEndpoints: number,
  proxyHealthy: boolean,
): HttpAnswer {
  const slash = service.indexOf('/');
  const namespace = slash === -1 ? '' : service.slice(0, slash);
  const name = slash === -1 ? service : service.slice(slash + 1);
  const body = JSON.stringify(
    { service: { namespace, name }, localEndpoints, serviceProxyHealthy: proxyHealthy },
    null,
    '\t',
  );
  return {
    status: localEndpoints > 0 && proxyHealthy ? 200 : 503,
    headers: {
      'Content-Type': 'application/json',
      'X-Content-Type-Options': 'nosniff',
      'X-Load-Balancing-Endpoint-Weight': String(localEndpoints),
    },
    body,
  };
}

export interface ServiceHealthServersOptions {
  /**
   * Where each health-check port listens: this node's IPs that match nodePortAddresses. Empty or absent means
   * 0.0.0.0 (nodePortAddresses matches every address). Tests pass ["127.0.0.1"].
   */
  readonly nodeAddresses?: readonly string[];
  /** Proxy health without node eligibility (upstream uses Health().Healthy here, not /healthz's answer). */
  readonly proxyHealth: { isHealthy(): boolean };
  readonly logger: Logger;
}

export interface HealthCheckListenFailure {
  /** "ns/name". */
  readonly service: string;
  readonly port: number;
  readonly error: ListenError;
}

export interface SyncServicesResult {
  readonly opened: readonly string[];
  readonly closed: readonly string[];
  /** Services whose port could not be opened; each is tried again on the next syncServices. */
  readonly failed: readonly HealthCheckListenFailure[];
}

interface Instance {
  readonly port: number;
  readonly servers: readonly Server[];
}

export class ServiceHealthServers {
  readonly #o: ServiceHealthServersOptions;
  readonly #hosts: readonly string[];
  readonly #instances = new Map<string, Instance>();
  #endpoints: ReadonlyMap<string, number> = new Map();
  // syncServices calls run one after another: an await inside one must not let the next see half a change.
  #queue: Promise<unknown> = Promise.resolve();

  constructor(options: ServiceHealthServersOptions) {
    this.#o = options;
    this.#hosts =
      options.nodeAddresses && options.nodeAddresses.length > 0 ? options.nodeAddresses : ['0.0.0.0'];
  }

  /** Services with an open health-check port, and the port. */
  listening(): ReadonlyMap<string, number> {
    return new Map([...this.#instances].map(([svc, inst]) => [svc, inst.port]));
  }

  /**
   * Brings the set of servers to `ports` ("ns/name" → healthCheckNodePort): closes those no longer wanted or
   * whose port changed, opens the new ones. A port that cannot be opened is logged and reported, and tried again
   * on the next call.
   */
  async syncServices(ports: ReadonlyMap<string, number>): Promise<void> {
    await this.syncServicesReport(ports);
  }

  /** syncServices, returning what was opened, closed and could not be opened (for callers and tests that ask). */
  syncServicesReport(ports: ReadonlyMap<string, number>): Promise<SyncServicesResult> {
    const run = this.#queue.then(() => this.#syncServices(new Map(ports)));
    this.#queue = run.catch(() => {});
    return run;
  }

  /**
   * Sets each Service's count of local ready endpoints ("ns/name" → n). Services absent from the map count 0.
   * The latest map is kept whole, so a server opened later answers with the current count at once.
   */
  syncEndpoints(counts: ReadonlyMap<string, number>): void {
    this.#endpoints = new Map(counts);
  }

  /** Closes every server. */
  async close(): Promise<void> {
    await this.syncServices(new Map());
  }

  #answer(service: string): HttpAnswer {
    const count = this.#endpoints.get(service) ?? 0;
    return serviceHealthAnswer(
      service,
      Number.isFinite(count) && count > 0 ? count : 0,
      this.#o.proxyHealth.isHealthy(),
    );
  }

  async #syncServices(wanted: Map<string, number>): Promise<SyncServicesResult> {
    const { logger } = this.#o;
    const opened: string[] = [];
    const closed: string[] = [];
    const failed: HealthCheckListenFailure[] = [];

    for (const [service, inst] of [...this.#instances]) {
      if (wanted.get(service) === inst.port) continue;
      logger.v(2, () => ({ msg: 'Closing healthcheck', fields: { service, port: inst.port } }));
      this.#instances.delete(service);
      await Promise.all(inst.servers.map(closeServer));
      closed.push(service);
    }

    for (const [service, port] of wanted) {
      if (this.#instances.has(service)) continue;
      if (!Number.isInteger(port) || port <= 0 || port > 65535) {
        const error = { address: `:${port}`, code: 'EINVAL', message: `invalid healthCheckNodePort ${port}` };
        logger.error('Failed to start healthcheck', { service, port, error: error.message });
        failed.push({ service, port, error });
        continue;
      }
      logger.v(2, () => ({ msg: 'Opening healthcheck', fields: { service, port } }));
      const servers: Server[] = [];
      let failure: ListenError | undefined;
      for (const host of this.#hosts) {
        const server = createServer((_req, res) => writeAnswer(res, this.#answer(service)));
        const result = await listen(server, host, port);
        if (!result.ok) {
          failure = result.error;
          break;
        }
        servers.push(server);
      }
      if (failure) {
        // Close what did open, so the next sync starts clean (or another owner of the port can take it).
        await Promise.all(servers.map(closeServer));
        logger.error('Failed to start healthcheck', {
          service,
          port,
          ...failure,
          event: 'FailedToStartServiceHealthcheck',
        });
        failed.push({ service, port, error: failure });
        continue;
      }
      this.#instances.set(service, { port, servers });
      opened.push(service);
    }
    return { opened, closed, failed };
  }
}
