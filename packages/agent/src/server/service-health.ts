// Per-Service health-check servers (upstream pkg/proxy/healthcheck/service_health.go): for each LoadBalancer
// Service with externalTrafficPolicy Local, an HTTP server on its healthCheckNodePort that tells the cloud load
// balancer whether this node has a local endpoint for it. Any path, any method: 200 iff the Service has local
// endpoints here and the proxy is healthy, else 503; the X-Load-Balancing-Endpoint-Weight header carries the count.
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import { applyServiceHealthChanges } from '../model/service-health-state.js';
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
  /** "ns/name" → the healthCheckNodePort wanted (Services without one are absent). */
  readonly #wanted = new Map<string, number>();
  /** Wanted Services whose port could not be opened: tried again on every update. */
  readonly #failed = new Set<string>();
  /** "ns/name" → local ready endpoints (absent = 0). */
  readonly #endpoints = new Map<string, number>();
  // Updates run one after another: an await inside one must not let the next see half a change.
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
   * Applies changes ("ns/name" → healthCheckNodePort, 0 = none now) and brings those Services' servers in line:
   * closes those no longer wanted or whose port changed, opens the new ones. Ports that could not be opened
   * (now or on an earlier call) are logged, reported, and tried again on the next call. Work in proportion to
   * the changes and the failures, whatever the number of Services.
   */
  async updateServices(changes: ReadonlyMap<string, number>): Promise<void> {
    await this.updateServicesReport(changes);
  }

  /** updateServices, returning what was opened, closed and could not be opened (for callers and tests that ask). */
  updateServicesReport(changes: ReadonlyMap<string, number>): Promise<SyncServicesResult> {
    const copy = new Map(changes);
    const run = this.#queue.then(() => this.#update(copy));
    this.#queue = run.catch(() => {});
    return run;
  }

  /** Brings the whole set of servers to `ports` ("ns/name" → healthCheckNodePort): updateServices of the difference. */
  async syncServices(ports: ReadonlyMap<string, number>): Promise<void> {
    await this.syncServicesReport(ports);
  }

  /** syncServices, returning what was opened, closed and could not be opened. */
  syncServicesReport(ports: ReadonlyMap<string, number>): Promise<SyncServicesResult> {
    const wanted = new Map(ports);
    const run = this.#queue.then(() => {
      const changes = new Map(wanted);
      for (const service of this.#wanted.keys()) if (!wanted.has(service)) changes.set(service, 0);
      return this.#update(changes);
    });
    this.#queue = run.catch(() => {});
    return run;
  }

  /**
   * Applies changes to the counts of local ready endpoints ("ns/name" → n, 0 = none). Every Service's count is
   * kept, so a server opened later answers with the current count at once.
   */
  updateEndpoints(changes: ReadonlyMap<string, number>): void {
    applyServiceHealthChanges(this.#endpoints, changes);
  }

  /** Replaces every count of local ready endpoints ("ns/name" → n); Services absent from the map count 0. */
  syncEndpoints(counts: ReadonlyMap<string, number>): void {
    this.#endpoints.clear();
    applyServiceHealthChanges(this.#endpoints, counts);
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

  async #update(changes: ReadonlyMap<string, number>): Promise<SyncServicesResult> {
    // The changed Services and those still waiting for their port. A 0 for a Service that has neither a wanted
    // port nor a server is nothing to do: most Services have no health check (and a first sync names them all).
    const candidates = new Set(this.#failed);
    for (const [service, port] of changes) {
      if (port !== 0) this.#wanted.set(service, port);
      else if (!this.#wanted.delete(service) && !this.#instances.has(service)) continue;
      candidates.add(service);
    }
    // Closes first, so that a port one Service gives up can be taken by another in the same update.
    const closed: string[] = [];
    for (const service of candidates) {
      const inst = this.#instances.get(service);
      if (inst === undefined || this.#wanted.get(service) === inst.port) continue;
      this.#o.logger.v(2, () => ({ msg: 'Closing healthcheck', fields: { service, port: inst.port } }));
      this.#instances.delete(service);
      await Promise.all(inst.servers.map(closeServer));
      closed.push(service);
    }
    const opened: string[] = [];
    const failed: HealthCheckListenFailure[] = [];
    for (const service of candidates) {
      const port = this.#wanted.get(service);
      this.#failed.delete(service);
      if (port === undefined || this.#instances.has(service)) continue;
      const error = await this.#open(service, port);
      if (error === undefined) {
        opened.push(service);
      } else {
        this.#failed.add(service);
        failed.push({ service, port, error });
      }
    }
    return { opened, closed, failed };
  }

  /** Opens the Service's server on every host; on failure closes what did open and returns the error. */
  async #open(service: string, port: number): Promise<ListenError | undefined> {
    const { logger } = this.#o;
    if (!Number.isInteger(port) || port <= 0 || port > 65535) {
      const error = { address: `:${port}`, code: 'EINVAL', message: `invalid healthCheckNodePort ${port}` };
      logger.error('Failed to start healthcheck', { service, port, error: error.message });
      return error;
    }
    logger.v(2, () => ({ msg: 'Opening healthcheck', fields: { service, port } }));
    const servers: Server[] = [];
    for (const host of this.#hosts) {
      const server = createServer((_req, res) => writeAnswer(res, this.#answer(service)));
      const result = await listen(server, host, port);
      if (!result.ok) {
        // Close what did open, so the next update starts clean (or another owner of the port can take it).
        await Promise.all(servers.map(closeServer));
        logger.error('Failed to start healthcheck', {
          service,
          port,
          ...result.error,
          event: 'FailedToStartServiceHealthcheck',
        });
        return result.error;
      }
      servers.push(server);
    }
    this.#instances.set(service, { port, servers });
    return undefined;
  }
}
