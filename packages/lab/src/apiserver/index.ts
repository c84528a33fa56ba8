// The lab's embedded Kubernetes API server: an in-memory store, the generic registry, the HTTP front end and the
// controllers (Deployments, Pods, EndpointSlices), started together on 127.0.0.1.
import { randomBytes } from 'node:crypto';
import { writeFile, mkdir } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { cpus, release, totalmem } from 'node:os';
import { dirname } from 'node:path';
import type { Clock } from 'kube-proxy-ts/util/clock.js';
import { SILENT_LOGGER, type Logger } from 'kube-proxy-ts/util/logger.js';
import { startControllers, type Controllers, type PodMetricsSource } from '../controllers/index.js';
import {
  readyPodLifecycle,
  type Kubelet,
  type PodLifecycle,
  type StreamingKubelet,
} from '../controllers/pod-lifecycle.js';
import { horizontalPodAutoscalerStrategy } from './autoscaling.js';
import { DEFAULT_EVENT_RETENTION, eventStrategy, type EventRetention } from './events.js';
import { createHandler, type ExtraRoute } from './http.js';
import { ipToBigInt, type Cidr } from './ipnet.js';
import type { JsonObject } from './json.js';
import {
  KUBERNETES_SERVICE_NAME,
  KUBERNETES_SERVICE_NAMESPACE,
  kubernetesEndpoints,
  kubernetesEndpointSlice,
  kubernetesService,
} from './kubernetes-service.js';
import {
  configMapStrategy,
  daemonSetStrategy,
  deploymentStrategy,
  endpointSliceStrategy,
  namespaceStrategy,
  nodeStrategy,
  podStrategy,
  replicaSetStrategy,
} from './kinds.js';
import { kubeconfigYaml } from './kubeconfig.js';
import { Registry, SYSTEM_NAMESPACES } from './registry.js';
import { resourceByKind } from './resources.js';
import { ServiceAllocators, serviceStrategy } from './service.js';
import {
  allocatableRanges,
  DEFAULT_SERVICE_CIDR_NAME,
  defaultServiceCIDR,
  parseServiceClusterIPRange,
  serviceCIDRStrategy,
} from './service-cidr.js';
import { ObjectStore, type StoreSnapshot } from './store.js';
import type { Strategy } from './strategy.js';
import { systemClock } from 'kube-proxy-ts/util/clock.js';
import { selfSignedCertificate, type ServingCertificate } from './tls.js';
import type { NodeSpec } from './types.js';
import { CONTROL_PLANE_LABEL, CONTROL_PLANE_TAINT } from './control-plane.js';

export type { NodeSpec } from './types.js';
export type { StoreSnapshot } from './store.js';

export interface ApiServerOptions {
  /** "127.0.0.1:PORT" or a port; default 127.0.0.1 with a free port. Only loopback addresses are allowed. */
  readonly listen?: string | number;
  readonly nodes?: readonly NodeSpec[];
  /**
   * The control-plane node (the first, when it is named control-plane) carries kubeadm's taint
   * node-role.kubernetes.io/control-plane:NoSchedule, so only Pods that tolerate it land there (`lab up
   * --control-plane-taint`). Default: untainted, every node takes Pods.
   */
  readonly controlPlaneTaint?: boolean;
  /**
   * Default 198.19.0.0/16. As kube-apiserver's --service-cluster-ip-range: one range, or one per family
   * ("198.19.0.0/16,2001:db8:ff::/112"), primary first; two make the cluster dual-stack for Services.
   */
  readonly serviceCIDR?: string;
  readonly podLifecycle?: PodLifecycle;
  /** The kubelet behind pods/log, exec and attach (the lab's namespace-backed plug is one). */
  readonly kubelet?: Kubelet & Partial<StreamingKubelet>;
  /** Routes served before the registry's (exec, attach, metrics.k8s.io). */
  readonly extraRoutes?: ExtraRoute;
  /** Default 100, as upstream. */
  readonly maxEndpointsPerSlice?: number;
  /** Pods' usage for the HorizontalPodAutoscaler controller (the lab's metrics.k8s.io figures). */
  readonly podMetrics?: PodMetricsSource;
  /** How often HorizontalPodAutoscalers are evaluated (default 15 s, as upstream). */
  readonly hpaSyncPeriodMs?: number;
  readonly clock?: Clock;
  readonly logger?: Logger;
  /** Bearer token; default: 32 random bytes, hex. */
  readonly token?: string;
  /** Writes the kubeconfig here once listening. */
  readonly kubeconfigPath?: string;
  /** Events kept for watch resumption (default 10000); older versions get 410 Expired. */
  readonly historyLimit?: number;
  /** How long Events stay after their last write and how many are kept (default 1 h, 5000). */
  readonly eventRetention?: Partial<EventRetention>;
  /** Interval of BOOKMARK events for watches that allow them (default 10 s). */
  readonly bookmarkIntervalMs?: number;
  /** Request body limit (default 3 MiB, as upstream). */
  readonly maxBodyBytes?: number;
  /** A watcher whose unread output passes this is cut off (default 16 MiB). */
  readonly maxWatchBufferedBytes?: number;
  /** Serve https with a self-signed certificate (default true; kubectl sends tokens only over TLS). */
  readonly tls?: boolean;
  /** Serving certificate to reuse (a restarted server keeps its identity); default: a fresh self-signed one. */
  readonly certificate?: ServingCertificate;
  /** State of an earlier server (its snapshot()), to restart with the same objects and resourceVersions. */
  readonly restore?: StoreSnapshot;
}

export interface ApiServer {
  readonly url: string;
  readonly port: number;
  readonly token: string;
  /** PEM of the serving certificate (its own CA), when serving TLS. */
  readonly caPem?: string;
  readonly kubeconfigPath?: string;
  readonly store: ObjectStore;
  readonly registry: Registry;
  kubeconfig(): string;
  writeKubeconfig(path: string): Promise<void>;
  /** Resolves when the controllers have no queued work. */
  idle(): Promise<void>;
  snapshot(): StoreSnapshot;
  /** Ends watches, stops controllers and closes the listener; safe to call twice. */
  stop(): Promise<void>;
  /** Ends every open watch stream (clients re-watch from their last version), as an API server restart would. */
  dropWatches(): void;
  /** Watch streams open now (over HTTP). */
  watchCount(): number;
  /**
   * Restarts in place: same port, token, certificate and objects (resourceVersions continue). The new listener is
   * up before old connections are cut, so clients that reconnect at once find it.
   */
  restart(overrides?: Partial<ApiServerOptions>): Promise<ApiServer>;
  /**
   * Down for `ms` as a restarting kube-apiserver is, on this same object: the listener closes and every connection
   * and watch is cut, so clients see refused connections and re-list or re-watch; then it listens again on the
   * same port with the same objects (resourceVersions continue). Resolves once it listens again.
   */
  outage(ms: number): Promise<void>;
}

/** control-plane, worker, worker2, … as kind names them. */
export function defaultNodeNames(n: number): string[] {
  return Array.from({ length: n }, (_, i) => (i === 0 ? 'control-plane' : i === 1 ? 'worker' : `worker${i}`));
}

export function defaultNodes(n: number): NodeSpec[] {
  return defaultNodeNames(n).map((name, i) => ({
    name,
    podCIDR: `198.18.${10 + i}.0/24`,
    internalIP: `198.18.0.${10 + i}`,
  }));
}

function parseListen(listen: string | number | undefined): { host: string; port: number } {
  if (listen === undefined) return { host: '127.0.0.1', port: 0 };
  if (typeof listen === 'number') return { host: '127.0.0.1', port: listen };
  const m = /^(?:(.*):)?(\d+)$/.exec(listen);
  if (!m) throw new Error(`--listen: expected HOST:PORT, got "${listen}"`);
  const host = m[1] ?? '127.0.0.1';
  if (host !== '127.0.0.1' && host !== 'localhost')
    throw new Error(`--listen: the lab API server listens on 127.0.0.1 only, got "${host}"`);
  return { host: '127.0.0.1', port: Number(m[2]) };
}

function hostResources(): Record<string, string> {
  return { cpu: String(cpus().length), memory: `${Math.floor(totalmem() / 1024)}Ki`, pods: '110' };
}

function nodeObject(spec: NodeSpec, index: number, controlPlaneTaint: boolean): object {
  const controlPlane = index === 0 && spec.name === 'control-plane';
  const podCIDRs = spec.podCIDRs ?? [spec.podCIDR ?? `198.18.${10 + index}.0/24`];
  const ips = spec.internalIPs ?? [spec.internalIP ?? `198.18.0.${10 + index}`];
  const taints = [
    ...(controlPlane && controlPlaneTaint ? [{ ...CONTROL_PLANE_TAINT }] : []),
    ...(spec.taints ?? []).map((t) => ({ ...t })),
  ];
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name: spec.name,
      labels: {
        'kubernetes.io/hostname': spec.name,
        'kubernetes.io/os': 'linux',
        'kubernetes.io/arch': 'amd64',
        ...(controlPlane ? { [CONTROL_PLANE_LABEL]: '' } : {}),
        ...(spec.zone ? { 'topology.kubernetes.io/zone': spec.zone } : {}),
        ...(spec.labels ?? {}),
      },
    },
    spec: {
      podCIDR: podCIDRs[0],
      podCIDRs,
      ...(taints.length > 0 ? { taints } : {}),
    },
    status: {
      addresses: [
        ...ips.map((address) => ({ type: 'InternalIP', address })),
        { type: 'Hostname', address: spec.name },
      ],
      // The host's, on every node (they share it): kubectl top prints usage as a share of allocatable.
      capacity: hostResources(),
      allocatable: hostResources(),
      conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'lab node is ready' }],
      nodeInfo: {
        kubeletVersion: 'v1.32.0-kpts',
        kubeProxyVersion: '',
        kernelVersion: spec.kernelVersion ?? release(),
        osImage: 'kube-proxy-ts lab',
        architecture: 'amd64',
        operatingSystem: 'linux',
      },
    },
  };
}

/** The store (restored when asked) and its registry, with the system namespaces and the asked-for Nodes. */
function openRegistry(
  options: ApiServerOptions,
  cidrs: readonly Cidr[],
  clock: Clock,
): { store: ObjectStore; registry: Registry } {
  const store = new ObjectStore({ historyLimit: options.historyLimit ?? 10_000 }, options.restore);
  const serviceCIDRType = resourceByKind('ServiceCIDR');
  // Read at each allocation: a ServiceCIDR's deletion starts with a deletionTimestamp the strategies never see.
  const allocators = new ServiceAllocators(cidrs, () => allocatableRanges(store.list(serviceCIDRType)));
  const strategies = new Map<string, Strategy>([
    ['Namespace', namespaceStrategy],
    ['Node', nodeStrategy],
    ['Pod', podStrategy],
    ['ConfigMap', configMapStrategy],
    ['EndpointSlice', endpointSliceStrategy],
    ['Deployment', deploymentStrategy],
    ['DaemonSet', daemonSetStrategy],
    ['ReplicaSet', replicaSetStrategy],
    ['HorizontalPodAutoscaler', horizontalPodAutoscalerStrategy],
    ['Service', serviceStrategy(allocators)],
    ['ServiceCIDR', serviceCIDRStrategy],
    ['Event', eventStrategy(store, clock, { ...DEFAULT_EVENT_RETENTION, ...options.eventRetention })],
  ]);
  const registry = new Registry(store, strategies, clock);
  for (const svc of store.list(resourceByKind('Service'))) allocators.record(svc, undefined);
  const nsType = resourceByKind('Namespace');
  for (const ns of SYSTEM_NAMESPACES)
    if (!store.get(nsType, '', ns)) registry.create(nsType, '', { metadata: { name: ns } });
  // Before any Service: the range it allocates from (upstream's default-servicecidr controller creates it at start,
  // and again should it be deleted).
  if (!store.get(serviceCIDRType, '', DEFAULT_SERVICE_CIDR_NAME)) {
    const r = registry.create(serviceCIDRType, '', defaultServiceCIDR(cidrs));
    if (!r.ok) throw new Error(`default ServiceCIDR: ${r.error.message}`);
  }
  const nodeType = resourceByKind('Node');
  for (const [i, spec] of (options.nodes ?? []).entries()) {
    if (store.get(nodeType, '', spec.name)) continue;
    const r = registry.create(nodeType, '', nodeObject(spec, i, options.controlPlaneTaint === true));
    if (!r.ok) throw new Error(`node ${spec.name}: ${r.error.message}`);
  }
  createKubernetesService(store, registry, cidrs[0], store.list(nodeType)[0]);
  return { store, registry };
}

/**
 * default/kubernetes and its EndpointSlice, as kube-apiserver makes them at start (kubernetes-service.ts), unless a
 * restored store has them. The endpoint is the first node's InternalIP of the primary family; with no node, the
 * Service has no EndpointSlice.
 */
function createKubernetesService(
  store: ObjectStore,
  registry: Registry,
  primary: Cidr | undefined,
  firstNode: JsonObject | undefined,
): void {
  if (primary === undefined) return;
  const serviceType = resourceByKind('Service');
  if (!store.get(serviceType, KUBERNETES_SERVICE_NAMESPACE, KUBERNETES_SERVICE_NAME)) {
    const r = registry.create(serviceType, KUBERNETES_SERVICE_NAMESPACE, kubernetesService(primary));
    if (!r.ok) throw new Error(`service default/kubernetes: ${r.error.message}`);
  }
  const address = nodeInternalIPs(firstNode).find((ip) => ipToBigInt(ip)?.family === primary.family);
  if (address === undefined) return;
  const endpoints: [string, JsonObject][] = [
    ['EndpointSlice', kubernetesEndpointSlice(address, primary.family)],
    ['Endpoints', kubernetesEndpoints(address)],
  ];
  for (const [kind, object] of endpoints) {
    const type = resourceByKind(kind);
    if (store.get(type, KUBERNETES_SERVICE_NAMESPACE, KUBERNETES_SERVICE_NAME)) continue;
    const r = registry.create(type, KUBERNETES_SERVICE_NAMESPACE, object);
    if (!r.ok) throw new Error(`${kind} default/kubernetes: ${r.error.message}`);
  }
}

function nodeInternalIPs(node: JsonObject | undefined): string[] {
  const status = node?.status as { addresses?: { type?: string; address?: string }[] } | undefined;
  return (status?.addresses ?? []).flatMap((a) => (a.type === 'InternalIP' && a.address ? [a.address] : []));
}

/**
 * Every raw socket of `srv`, including ones still in their TLS handshake, which closeAllConnections() does not
 * see: a client reconnecting just as the server closes would otherwise hold close() open for good.
 */
function trackSockets(srv: Server): { count(): number; destroyAll(): void } {
  const sockets = new Set<Socket>();
  srv.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  return {
    count: () => sockets.size,
    destroyAll(): void {
      for (const socket of sockets) socket.destroy();
      sockets.clear();
    },
  };
}

/** Listens on `port` (0: any) of `host`; the port bound. */
async function listen(srv: Server, port: number, host: string): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    srv.once('error', reject);
    srv.listen(port, host, () => {
      srv.off('error', reject);
      resolve();
    });
  });
  return (srv.address() as AddressInfo).port;
}

/** Listens again on the port it had: a port closed a moment ago may still be held briefly, so retry briefly. */
async function listenOnReleasedPort(srv: Server, port: number, host: string): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    try {
      await listen(srv, port, host);
      return;
    } catch (e) {
      if (attempt >= 50 || !(e instanceof Error) || !('code' in e) || e.code !== 'EADDRINUSE') throw e;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
}

/** A restart on the same port: the old listener's port is released a moment after close(), so retry briefly. */
async function startOnReleasedPort(options: ApiServerOptions): Promise<ApiServer> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await startApiServer(options);
    } catch (e) {
      if (attempt >= 50 || !(e instanceof Error) || !('code' in e) || e.code !== 'EADDRINUSE') throw e;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
}

export async function startApiServer(options: ApiServerOptions = {}): Promise<ApiServer> {
  const clock = options.clock ?? systemClock;
  const logger = options.logger ?? SILENT_LOGGER;
  const cidrs = parseServiceClusterIPRange(options.serviceCIDR ?? '198.19.0.0/16');
  if (typeof cidrs === 'string') throw new Error(`serviceCIDR: ${cidrs}`);
  const { host, port: wantPort } = parseListen(options.listen);
  const token = options.token ?? randomBytes(32).toString('hex');

  const { store, registry } = openRegistry(options, cidrs, clock);

  let server: Server | undefined;
  let controllers: Controllers | undefined;
  let boundPort = 0;
  const handler = createHandler({
    token,
    registry,
    clock,
    logger,
    maxBodyBytes: options.maxBodyBytes ?? 3 * 1024 * 1024,
    bookmarkIntervalMs: options.bookmarkIntervalMs ?? 10_000,
    maxWatchBufferedBytes: options.maxWatchBufferedBytes ?? 16 * 1024 * 1024,
    serverAddress: () => `${host}:${boundPort}`,
    ...(options.kubelet ? { kubelet: options.kubelet } : {}),
    ...(options.extraRoutes ? { extraRoutes: options.extraRoutes } : {}),
  });
  controllers = startControllers({
    registry,
    clock,
    logger,
    podLifecycle: options.podLifecycle ?? readyPodLifecycle(),
    maxEndpointsPerSlice: options.maxEndpointsPerSlice ?? 100,
    ...(options.podMetrics ? { podMetrics: options.podMetrics } : {}),
    ...(options.hpaSyncPeriodMs !== undefined ? { hpaSyncPeriodMs: options.hpaSyncPeriodMs } : {}),
  });

  const cert =
    options.tls === false
      ? undefined
      : (options.certificate ?? selfSignedCertificate('kpts-lab-apiserver', Date.now()));
  const srv: Server = cert
    ? createHttpsServer({ cert: cert.certPem, key: cert.keyPem, keepAliveTimeout: 30_000 }, handler.handle)
    : createServer({ keepAliveTimeout: 30_000 }, handler.handle);
  server = srv;
  srv.on('upgrade', handler.upgrade);
  const sockets = trackSockets(srv);
  boundPort = await listen(srv, wantPort, host);
  const url = `${cert ? 'https' : 'http'}://${host}:${boundPort}`;
  const kubeconfig = (): string => kubeconfigYaml(url, token, cert?.certPem);
  const writeKubeconfig = async (path: string): Promise<void> => {
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, kubeconfig(), { mode: 0o600 });
  };
  if (options.kubeconfigPath) await writeKubeconfig(options.kubeconfigPath);
  logger.info('lab API server listening', { url });

  let stopping: Promise<void> | undefined;
  const self: ApiServer = {
    url,
    port: boundPort,
    token,
    ...(cert ? { caPem: cert.certPem } : {}),
    ...(options.kubeconfigPath ? { kubeconfigPath: options.kubeconfigPath } : {}),
    store,
    registry,
    kubeconfig,
    writeKubeconfig,
    idle: () => controllers?.idle() ?? Promise.resolve(),
    snapshot: () => store.snapshot(),
    stop() {
      stopping ??= (async () => {
        controllers?.stop();
        controllers = undefined;
        const s = server;
        server = undefined;
        if (!s) return;
        const closed = new Promise<void>((resolve) => s.close(() => resolve()));
        handler.closeWatches();
        s.closeIdleConnections();
        s.closeAllConnections();
        sockets.destroyAll();
        await closed;
      })();
      return stopping;
    },
    dropWatches: () => handler.closeWatches(),
    watchCount: () => handler.watchCount(),
    async outage(ms) {
      const s = server;
      if (!s || stopping) return;
      const closed = new Promise<void>((resolve) => s.close(() => resolve()));
      handler.closeWatches();
      s.closeAllConnections();
      sockets.destroyAll();
      await closed;
      await new Promise((resolve) => setTimeout(resolve, ms));
      // stop() while down: the listener stays closed.
      if (!stopping && server === s) await listenOnReleasedPort(s, boundPort, host);
    },
    async restart(overrides = {}) {
      const s = server;
      controllers?.stop();
      controllers = undefined;
      server = undefined;
      const closed = s ? new Promise<void>((resolve) => s.close(() => resolve())) : Promise.resolve();
      const restartOptions: ApiServerOptions = {
        ...options,
        listen: boundPort,
        token,
        ...(cert ? { certificate: cert } : {}),
        restore: store.snapshot(),
        ...overrides,
      };
      const next = await startOnReleasedPort(restartOptions);
      // A graceful hand-over: idle keep-alive connections close first (so clients drop them from their pools), then
      // watches end cleanly (their connections are not reused: clients re-watch on a fresh connection to the new
      // listener, already up); only what is still open after a grace period is cut.
      s?.closeIdleConnections();
      await new Promise((resolve) => setTimeout(resolve, 100));
      handler.closeWatches();
      const deadline = Date.now() + 2_000;
      while (sockets.count() > 0 && Date.now() < deadline) {
        s?.closeIdleConnections();
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
      s?.closeAllConnections();
      sockets.destroyAll();
      await closed;
      stopping = Promise.resolve();
      return next;
    },
  };
  return self;
}
