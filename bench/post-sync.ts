// What an agent does after the backend has synced, for the bench: the proxier's own post-sync step
// (src/sync/post-sync.ts: metrics on prom-client, proxy health, the per-Service health-check servers) fed with what
// each checkout changed, and the metrics server's /metrics answered over HTTP, as a node's agent serves it. The bench
// times a change from the write until this is done (the moment the agent's next sync could start) and the scrape.
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, request } from 'node:http';
import type { Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createProxyMetrics } from 'kube-proxy-ts/server/metrics.js';
import { metricsHandler } from 'kube-proxy-ts/server/metrics-server.js';
import { ProxyHealth } from 'kube-proxy-ts/server/proxy-health.js';
import { ServiceHealthServers } from 'kube-proxy-ts/server/service-health.js';
import type { BackendSyncResult } from 'kube-proxy-ts/sync/backend.js';
import { PostSync } from 'kube-proxy-ts/sync/post-sync.js';
import { SILENT_LOGGER } from 'kube-proxy-ts/util/logger.js';
import { benchClock } from './measure.js';
import type { ScrapeSample } from './measure.js';
import type { BenchCheckout, BenchCluster } from './workload.js';

export class BenchPostSync {
  readonly #post: PostSync;
  readonly #serviceHealth: ServiceHealthServers;
  readonly #server: Server;
  readonly #dir: string;
  readonly #socket: string;
  #lastCheckout: BenchCheckout | undefined;
  /** The server's side of the last scrape: the request handed to the handler → the response handed to the OS, ms. */
  #lastAnswerMs = 0;

  private constructor(server: Server, dir: string) {
    const metrics = createProxyMetrics({ mode: 'nftables' });
    const health = new ProxyHealth({ clock: benchClock, syncPeriodMs: 30_000, metrics });
    // The bench's Services have no healthCheckNodePort, so no port is ever opened; the counts are kept as a node's.
    this.#serviceHealth = new ServiceHealthServers({
      nodeAddresses: ['127.0.0.1'],
      proxyHealth: { isHealthy: () => true },
      logger: SILENT_LOGGER,
    });
    this.#post = new PostSync({
      family: 'IPv4',
      metrics,
      logger: SILENT_LOGGER,
      health,
      serviceHealth: this.#serviceHealth,
    });
    const handler = metricsHandler({
      registry: metrics.registry,
      mode: 'nftables',
      configz: () => ({}),
      logger: SILENT_LOGGER,
    });
    server.on('request', (req, res) => {
      const t0 = performance.now();
      res.on('finish', () => (this.#lastAnswerMs = performance.now() - t0));
      handler(req, res);
    });
    this.#server = server;
    this.#dir = dir;
    this.#socket = join(dir, 'metrics.sock');
  }

  /** The metrics server listens on a Unix socket of its own (the bench's namespace has no address to bind). */
  static async start(): Promise<BenchPostSync> {
    const dir = mkdtempSync(join(tmpdir(), 'kpts-bench-metrics-'));
    const server = createServer();
    const post = new BenchPostSync(server, dir);
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(post.#socket, resolve);
    });
    return post;
  }

  /** What the proxier does right after its checkout. */
  checkedOut(cluster: BenchCluster, checkout: BenchCheckout): void {
    this.#lastCheckout = checkout;
    this.#post.checkedOut(checkout.services, checkout.endpoints, cluster.serviceMap);
  }

  /** What the proxier does once the backend's sync resolved; times on the bench clock, ms since the epoch. */
  async synced(cluster: BenchCluster, result: BackendSyncResult, startedAt: number, finishedAt: number) {
    const lastChangeTriggerTimes = this.#lastCheckout?.endpoints.lastChangeTriggerTimes ?? new Map();
    await this.#post.synced(
      { result, startedAt, finishedAt, lastChangeTriggerTimes },
      { serviceMap: cluster.serviceMap, endpointsMap: cluster.endpointsMap },
    );
  }

  /**
   * One GET /metrics from the request's start to the body's end (the client is this process too), the server's
   * own answer time within it (what a scraper in another process would wait for beyond the network), and the CPU
   * time the process spent meanwhile: on a loaded machine the wall time is mostly waiting for a CPU.
   */
  scrape(): Promise<ScrapeSample> {
    const t0 = performance.now();
    const cpu0 = process.cpuUsage();
    return new Promise((resolve, reject) => {
      const req = request({ socketPath: this.#socket, path: '/metrics' }, (res) => {
        res.on('data', () => {});
        res.on('end', () => {
          const cpu = process.cpuUsage(cpu0);
          if (res.statusCode === 200)
            resolve({
              ms: performance.now() - t0,
              answerMs: this.#lastAnswerMs,
              cpuMs: (cpu.user + cpu.system) / 1000,
            });
          else reject(new Error(`/metrics answered ${res.statusCode}`));
        });
      });
      req.on('error', reject);
      req.end();
    });
  }

  async close(): Promise<void> {
    await this.#serviceHealth.close();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
    rmSync(this.#dir, { recursive: true, force: true });
  }
}
