// The lab's cluster DNS as a process (`kube-proxy-ts-lab dns-server`, what the coredns pods of kube-system run):
// it follows every Service and EndpointSlice with the agent's Reflector (list, then watch; relist on 410), keeps
// them in a ClusterRecords table, and answers on port 53 over UDP and TCP. Beside it, CoreDNS's two HTTP
// endpoints: /health (the process is up) on 8080 and /ready (both lists are in) on 8181, which the Deployment's
// probes ask, so that kube-dns has an endpoint only once this server knows the cluster.
//
// The pod has its own network namespace, where nothing listens on the API server's address: given the API
// server's Unix socket (a path, reachable from every namespace), the process runs its own relay from the
// kubeconfig's host:port (127.0.0.1:6443, as on the nodes) to that socket, so the node kubeconfig works unchanged.
import { createServer, type Server } from 'node:http';
import type { EndpointSlice, Service } from 'kube-proxy-ts/api/objects.js';
import { createApiClient } from 'kube-proxy-ts/kube/api-client.js';
import { loadClientConfig, type ClientConfig } from 'kube-proxy-ts/kube/client-config.js';
import { Reflector, type ResourceSpec } from 'kube-proxy-ts/kube/reflector.js';
import { ENDPOINT_SLICES, SERVICES } from 'kube-proxy-ts/kube/watches.js';
import { systemClock } from 'kube-proxy-ts/util/clock.js';
import type { Logger } from 'kube-proxy-ts/util/logger.js';
import { startRelay, type Pipe } from '../cluster/relay.js';
import { ClusterRecords, CLUSTER_DOMAIN } from './records.js';
import { respond } from './responder.js';
import { startDnsServer, type DnsServer } from './server.js';

/** One of kube-proxy's resources without its selectors: DNS needs headless Services and their slices too. */
const everyObject = ({ name, path, namespaced }: ResourceSpec): ResourceSpec => ({ name, path, namespaced });
const ALL_SERVICES = everyObject(SERVICES);
const ALL_ENDPOINT_SLICES = everyObject(ENDPOINT_SLICES);

export interface ClusterDnsOptions {
  readonly kubeconfig: string;
  /** The API server's Unix socket: relayed from the kubeconfig's address inside this namespace. */
  readonly apiserverSocket?: string;
  /** Default 53. */
  readonly port?: number;
  /** /health's port (default 8080; 0 for none). */
  readonly healthPort?: number;
  /** /ready's port (default 8181; 0 for none). */
  readonly readyPort?: number;
  readonly zone?: string;
  readonly logger: Logger;
}

export interface ClusterDns {
  readonly records: ClusterRecords;
  readonly port: number;
  /** Resolves once Services and EndpointSlices have both been listed. */
  readonly synced: Promise<void>;
  close(): Promise<void>;
}

function clientConfig(kubeconfig: string): ClientConfig {
  const loaded = loadClientConfig({ kubeconfig });
  if (!loaded.ok)
    throw new Error(`--kubeconfig ${kubeconfig}: ${loaded.error.field ?? ''} ${loaded.error.message}`);
  return loaded.config;
}

/** Reflectors that keep `records` to the API server's Services and EndpointSlices. */
function followCluster(
  config: ClientConfig,
  options: ClusterDnsOptions,
  records: ClusterRecords,
): { services: Reflector<Service>; slices: Reflector<EndpointSlice> } {
  const client = createApiClient(config, { clock: systemClock, userAgent: 'kube-proxy-ts-lab-dns' });
  const common = { client, clock: systemClock, logger: options.logger };
  const services = new Reflector<Service>({
    ...common,
    resource: ALL_SERVICES,
    handlers: {
      onAdd: (s) => records.setService(s),
      onUpdate: (_, s) => records.setService(s),
      onDelete: (s) => records.deleteService(s),
    },
  });
  const slices = new Reflector<EndpointSlice>({
    ...common,
    resource: ALL_ENDPOINT_SLICES,
    handlers: {
      onAdd: (s) => records.setSlice(s),
      onUpdate: (_, s) => records.setSlice(s),
      onDelete: (s) => records.deleteSlice(s),
    },
  });
  return { services, slices };
}

/** A one-path HTTP server: 200 "OK" while `ok()`, 503 otherwise. */
async function probeServer(port: number, path: string, ok: () => boolean): Promise<Server> {
  const server = createServer((req, res) => {
    const good = req.url === path && ok();
    res.writeHead(req.url === path ? (good ? 200 : 503) : 404, { 'content-type': 'text/plain' });
    res.end(good ? 'OK' : '');
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, () => resolve());
  });
  return server;
}

export async function startClusterDns(options: ClusterDnsOptions): Promise<ClusterDns> {
  const records = new ClusterRecords(options.zone ?? CLUSTER_DOMAIN);
  const closers: (() => Promise<void> | void)[] = [];
  const close = async (): Promise<void> => {
    for (const c of closers.reverse()) await c();
  };
  try {
    const config = clientConfig(options.kubeconfig);
    const { services, slices } = followCluster(config, options, records);
    if (options.apiserverSocket !== undefined) {
      const relay: Pipe = await startRelay(relayAddress(config), options.apiserverSocket);
      closers.push(() => relay.close());
    }
    services.start();
    slices.start();
    closers.push(
      () => services.stop(),
      () => slices.stop(),
    );
    const dns: DnsServer = await startDnsServer({
      port: options.port ?? 53,
      handle: (query, transport) => respond(records, query, transport),
      logger: options.logger,
    });
    closers.push(() => dns.close());
    const synced = (): boolean => services.hasSynced && slices.hasSynced;
    for (const [port, path, ok] of [
      [options.healthPort ?? 8080, '/health', () => true],
      [options.readyPort ?? 8181, '/ready', synced],
    ] as const) {
      if (port === 0) continue;
      const server = await probeServer(port, path, ok);
      closers.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
    }
    return {
      records,
      port: dns.port,
      synced: Promise.all([services.waitForSync(), slices.waitForSync()]).then(() => undefined),
      close,
    };
  } catch (e) {
    await close();
    throw e;
  }
}

/** Where the kubeconfig's server is: the address the relay takes in this namespace. */
function relayAddress(config: ClientConfig): { host: string; port: number } {
  const url = config.server;
  const port = url.port !== '' ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
  return { host: url.hostname.replace(/^\[|\]$/g, ''), port };
}
