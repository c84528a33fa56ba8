// `lab up`: the whole one-host cluster in one process. The order matters: the network first (pods need their
// node's bridge), then the API server with the namespace-backed pod plug, the socket bridge and a relay per node
// (the proxies' only way to the API server), the kube-proxy ConfigMap and DaemonSet (whose pods are the proxies,
// one per node), the cluster DNS (Deployment coredns behind Service kube-dns), names for every namespace, and
// last the `svc/web` workload. stop() undoes it all; so does `lab down` from its records.
import type { NftablesLayoutName } from 'kube-proxy-ts/config/nftables-layout.js';
import { mkdirSync, renameSync, writeFileSync, readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import {
  hostCommandRunner,
  netnsCommandRunner,
  type CommandRunner,
} from 'kube-proxy-ts/netfilter/command.js';
import { SILENT_LOGGER, type Logger } from 'kube-proxy-ts/util/logger.js';
import { defaultNodes, startApiServer, type ApiServer } from '../apiserver/index.js';
import { child, num, str } from '../apiserver/json.js';
import { kubeconfigYaml } from '../apiserver/kubeconfig.js';
import { resourceByKind } from '../apiserver/resources.js';
import { serveMetrics, type UsageSampler } from './usage.js';
import { kubeProxyDaemonSet } from './kube-proxy-daemonset.js';
import { clusterDnsObjects, clusterDnsReady, labClusterDnsIP } from './cluster-dns.js';
import {
  configMapLookup,
  followProxyConfigMap,
  LabHosts,
  labUsageSampler,
  ProxyProcesses,
} from './lab-parts.js';
import {
  DEFAULT_PREFIX,
  NODE_APISERVER_ADDRESS,
  defaultStateDir,
  labLayout,
  labPaths,
  prefixLockFile,
} from './layout.js';
import { clusterCIDRs, serviceCIDRs } from './layout.js';
import type { LabIPFamily, LabLayout, LabNodeLayout, LabPaths } from './layout.js';
import { KubeletIptables } from './kubelet-iptables.js';
import { fetchProxyMetrics, metricValue } from './metrics.js';
import { buildLabNetwork } from './network.js';
import {
  guestNodeNames,
  guestNodeRelay,
  startGuestNodes,
  underlayRelay,
  GUEST_TIME_SCALE,
  VM_NODE_TAINT,
  type GuestNode,
} from './guest-nodes.js';
import type { Guest } from '../vm/guest.js';
import { nodeEnvironment, prepareIptablesBinDir, type IptablesBackendName } from './node-env.js';
import { namespacePodLifecycle, type NamespacePodLifecycle } from './pod-lifecycle.js';
import { labCliArgv } from './processes.js';
import { openImageRuntime, type ImageRuntime } from './image-runtime.js';
import {
  CONFIGMAP_NAME,
  CONFIGMAP_NAMESPACE,
  configFromConfigMap,
  kubeProxyConfigMap,
} from './proxy-config.js';
import type { ProxyMode } from 'kube-proxy-ts/config/proxy-mode.js';
import { startSocketBridge, type Bridge } from './relay.js';
import { acquireLabLock, readLabState, writeLabState, type LabState } from './state.js';
import { Supervised } from './supervisor.js';
import { startLabWeb, type LabWeb } from '../web/index.js';
import { removeLabLeftovers, removeStateDir } from './teardown.js';
import {
  WEB,
  WEB_REPLICAS,
  WORKLOAD_NAMESPACE,
  webDeployment,
  webService,
  workloadNamespace,
} from './workload.js';

export interface LabOptions {
  readonly nodes?: number;
  readonly mode?: ProxyMode;
  /**
   * nftables mode's ruleset layout, given to every proxy as --nftables-layout (a flag, as a DaemonSet's args
   * would carry it: the ConfigMap holds upstream's configuration only); default upstream.
   */
  readonly nftablesLayout?: NftablesLayoutName;
  /**
   * Which iptables back end the proxies' plain `iptables*` names run (`lab up --iptables legacy|nft`), as a
   * kube-proxy image decides; default: the host's alternatives. Legacy is the one with the xtables lock.
   */
  readonly iptables?: IptablesBackendName;
  /**
   * `lab up --ip-family`: IPv4 only (default), IPv6 only, or dual-stack with IPv4 primary: nodes' addresses and
   * pod CIDRs, pods' addresses, the API server's service ranges and the proxies' clusterCIDR follow it.
   */
  readonly ipFamily?: LabIPFamily;
  readonly stateDir?: string;
  /** Names every namespace and /etc/netns directory; default "kptslab". */
  readonly prefix?: string;
  readonly runner?: CommandRunner;
  readonly logger?: Logger;
  /** Human progress lines (`lab up` prints them). */
  readonly progress?: (line: string) => void;
  /** Create svc/web (default true). */
  readonly workload?: boolean;
  /** How long to wait for the proxies' first sync and the web pods (default 120 s, × timeScale). */
  readonly readyTimeoutMs?: number;
  /**
   * The namespace nodes' waits and probes stretched by this factor (`lab up --time-scale N`, default 1): a lab on
   * a slow or emulated host (a whole lab in a guest, scripts/soak-remedies.sh --in-guest). Guest nodes always
   * have GUEST_TIME_SCALE.
   */
  readonly timeScale?: number;
  /**
   * Nodes get topology.kubernetes.io/zone labels from this list, round robin (`lab up --zones zone-a,zone-b`).
   */
  readonly zones?: readonly string[];
  /**
   * Give the control-plane node kubeadm's taint node-role.kubernetes.io/control-plane:NoSchedule (`lab up
   * --control-plane-taint`), as a kubeadm or kind cluster with workers has it: Pods without the toleration (svc/web,
   * a test's DaemonSet) go to the workers only; kube-proxy (tolerates everything) and CoreDNS (tolerates this
   * taint, as kubeadm's) still run there. Needs at least 2 nodes.
   */
  readonly controlPlaneTaint?: boolean;
  /**
   * Rewrite the kube-proxy pods' config volumes when the ConfigMap changes, as a kubelet's volume sync does: the
   * proxies exit on the change and are restarted. Off by default: as on a real cluster, `kubectl -n kube-system
   * rollout restart ds kube-proxy` applies an edit.
   */
  readonly followConfigMap?: boolean;
  /**
   * Serve the web view on 127.0.0.1 (default true): its URL, with the token, goes to progress and the state file
   * (`lab web` prints it). `port` picks its port (default: a free one).
   */
  readonly web?: boolean | { readonly port?: number };
  /**
   * An OCI archive of the node image (scripts/image.sh): each node's kube-proxy container runs from it, by runc,
   * with the DaemonSet's container spec (`lab up --image FILE`). Default: this checkout's CLI on the host's files.
   */
  readonly image?: string;
  /**
   * `lab up --vm-nodes N`: the last N nodes are QEMU guests on Debian's kernel (guest-nodes.ts), IPv4 only, not
   * with `image`; the wait for the proxies' first syncs then allows 15 minutes (the agent under emulation).
   */
  readonly vmNodes?: number;
  /**
   * Aborting it stops the start at its next step (`lab up` and Ctrl-C before the lab is up): what was built is
   * removed, and startLab throws the signal's reason.
   */
  readonly signal?: AbortSignal;
}

export { API_OUTAGE_MS } from './relay.js';

export class LabAlreadyUpError extends Error {
  constructor(
    readonly holder: number,
    readonly stateDir: string,
  ) {
    super(
      `a lab is already up (process ${holder}, state in ${stateDir}); run \`kube-proxy-ts lab down\` first`,
    );
  }
}

export type { ProxyView } from './lab-parts.js';
import type { ProxyView } from './lab-parts.js';

export interface NodeHandle {
  readonly name: string;
  readonly namespace: string;
  /** Runs commands on this node's side: the lab's runner, or a guest node's (commands in the guest). */
  readonly runner: CommandRunner;
  /** The guest, for a guest node. */
  readonly guest?: Guest;
  readonly proxy: ProxyView;
  readonly relay: Supervised;
}

export interface Lab {
  readonly layout: LabLayout;
  readonly paths: LabPaths;
  readonly server: ApiServer;
  readonly kubeconfigPath: string;
  readonly nodes: readonly NodeHandle[];
  readonly runner: CommandRunner;
  /** The web view, unless `web: false`. */
  readonly web?: LabWeb;
  /** Resolves when the lab stopped (stop() was called, or it failed); a crash is not noticed here, by design. */
  readonly stopped: Promise<void>;
  /**
   * An API server outage as the nodes see a restart: their connections to it are cut and refused for `ms`
   * (`lab up` does this on SIGUSR2, for 3 s: the soak's --apiserver-outage-every).
   */
  apiServerOutage(ms: number): void;
  /**
   * An API server restart as every client sees it (`lab apiserver-restart`): the nodes' connections and the API
   * server's own (kubectl's, the web view's) are cut and refused for `ms`; then it serves the same objects again.
   * Resolves once it listens again.
   */
  apiServerRestart(ms: number): Promise<void>;
  stop(): Promise<void>;
}

function writeAtomically(path: string, text: string, mode = 0o600): boolean {
  let old: string | undefined;
  try {
    old = readFileSync(path, 'utf8');
  } catch {
    old = undefined;
  }
  if (old === text) return false;
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const tmp = `${path}.tmp`;
  writeFileSync(tmp, text, { mode });
  // A rename is what a ConfigMap volume's ..data swap looks like to the proxy's watcher; it also never shows a
  // half-written file.
  renameSync(tmp, path);
  return true;
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** The state directory's and the prefix's locks, both or neither; a lab holding either is named in the error. */
function takeLabLocks(paths: LabPaths, prefix: string): { release(): void } {
  const stateLock = acquireLabLock(paths.lockFile);
  if (!stateLock.ok) throw new LabAlreadyUpError(stateLock.holder, paths.stateDir);
  const prefixLock = acquireLabLock(prefixLockFile(prefix));
  if (!prefixLock.ok) {
    stateLock.release();
    throw new LabAlreadyUpError(prefixLock.holder, `another state directory (namespace prefix ${prefix})`);
  }
  return {
    release(): void {
      prefixLock.release();
      stateLock.release();
    },
  };
}

/** A lab that died without `lab down` left namespaces behind: they go before the lab is built anew. */
async function sweepLeftovers(
  runner: CommandRunner,
  paths: LabPaths,
  prefix: string,
  progress: (line: string) => void,
): Promise<void> {
  const previous = readLabState(paths.stateFile);
  const stale = [prefix];
  if (previous.ok && previous.state.prefix !== prefix) stale.push(previous.state.prefix);
  for (const p of stale) {
    // Another prefix is only swept when no running lab holds it.
    const held = p === prefix ? undefined : acquireLabLock(prefixLockFile(p));
    if (held && !held.ok) continue;
    const r = await removeLabLeftovers(runner, p);
    held?.release();
    if (r.namespaces.length > 0)
      progress(`removed ${r.namespaces.length} namespaces a previous lab left behind`);
  }
}

/** Creates each object in `namespace` of the server's registry; an error names the kind and `what`. */
function createAll(
  server: ApiServer,
  what: string,
  objects: readonly (readonly [string, string, object])[],
): void {
  for (const [kind, namespace, obj] of objects) {
    const r = server.registry.create(resourceByKind(kind), namespace, obj);
    if (!r.ok) throw new Error(`creating ${kind} ${what}: ${r.error.message}`);
  }
}

/** Each node's handle: its directory, kubeconfig and config copy written, its relay to the API server made. */
function nodeHandles(
  runner: CommandRunner,
  layout: LabLayout,
  paths: LabPaths,
  nodeKubeconfig: string,
  configText: string,
  proxies: ProxyProcesses,
  guests: ReadonlyMap<string, GuestNode>,
  logger: Logger,
): NodeHandle[] {
  return layout.nodes.map((n) => {
    mkdirSync(paths.nodeDir(n.name), { recursive: true, mode: 0o700 });
    writeAtomically(paths.nodeKubeconfig(n.name), nodeKubeconfig);
    // A copy of config.conf for tools run by hand (`explain --config`); the proxies read their pod's volume.
    writeAtomically(paths.nodeConfig(n.name), configText);
    const proxy = proxies.view(n.name);
    const guest = guests.get(n.name);
    if (guest) {
      const relay = guestNodeRelay(guest, layout, paths, n.namespace, logger.child({ node: n.name }));
      return { name: n.name, namespace: n.namespace, runner: guest.runner, guest: guest.guest, proxy, relay };
    }
    const relay = new Supervised(
      runner,
      {
        name: `relay on ${n.name}`,
        namespace: n.namespace,
        argv: () =>
          labCliArgv(['relay', '--listen', NODE_APISERVER_ADDRESS, '--socket', paths.apiserverSocket]),
        pidFile: paths.relayPidFile(n.name),
        log: paths.relayLog(n.name),
      },
      logger.child({ node: n.name }),
    );
    return { name: n.name, namespace: n.namespace, runner, proxy, relay };
  });
}

/** The state recorded before anything else starts, so that `lab down` finds even a half-built lab. */
function initialState(options: LabOptions, prefix: string, layout: LabLayout): LabState {
  return {
    version: 1,
    pid: process.pid,
    prefix,
    nodes: layout.nodes.map((n) => n.name),
    mode: options.mode ?? 'nftables',
    ...(options.iptables !== undefined ? { iptables: options.iptables } : {}),
    ...(options.nftablesLayout !== undefined ? { nftablesLayout: options.nftablesLayout } : {}),
    ipFamily: layout.ipFamily,
    startedAt: new Date().toISOString(),
    apiserverURL: '',
    token: '',
    caPem: '',
  };
}

/** Stops everything in reverse order of start, once however often asked; then the sweep and the locks. */
class LabTeardown {
  readonly cleanups: (() => Promise<void> | void)[] = [];
  lifecycle: NamespacePodLifecycle | undefined;
  private stopping: Promise<void> | undefined;
  private resolveStopped: () => void = () => undefined;
  readonly stopped = new Promise<void>((resolve) => (this.resolveStopped = resolve));

  constructor(
    private readonly runner: CommandRunner,
    private readonly prefix: string,
    private readonly paths: LabPaths,
    private readonly lock: { release(): void },
    private readonly logger: Logger,
    private readonly progress: (line: string) => void,
  ) {}

  stop(): Promise<void> {
    return (this.stopping ??= this.run());
  }

  private async run(): Promise<void> {
    this.progress('stopping the lab');
    this.lifecycle?.close();
    for (const c of this.cleanups.reverse()) {
      try {
        await c();
      } catch (e) {
        this.logger.warn('cleanup step failed', { error: e instanceof Error ? e.message : String(e) });
      }
    }
    const r = await removeLabLeftovers(this.runner, this.prefix);
    for (const e of r.errors) this.logger.warn('teardown', { error: e });
    removeStateDir(this.paths.stateDir);
    this.lock.release();
    this.progress(`removed ${r.namespaces.length} namespaces; nothing left behind`);
    this.resolveStopped();
  }
}

export async function startLab(options: LabOptions = {}): Promise<Lab> {
  if (options.controlPlaneTaint === true && (options.nodes ?? 2) < 2)
    throw new Error(
      'the control-plane taint needs at least 2 nodes: with the control-plane node alone, Pods that do not tolerate it (svc/web) could go nowhere',
    );
  const runner = options.runner ?? hostCommandRunner;
  const logger = options.logger ?? SILENT_LOGGER;
  const progress = options.progress ?? ((): void => undefined);
  const prefix = options.prefix ?? DEFAULT_PREFIX;
  const layout = labLayout(options.nodes ?? 2, prefix, options.ipFamily);
  const guestNames = guestNodeNames(layout, options.vmNodes ?? 0);
  if (guestNames.size > 0 && options.image !== undefined)
    throw new Error('--vm-nodes and --image: the node image runs by runc on this host, not in a guest');
  const paths = labPaths(options.stateDir ?? defaultStateDir());
  const lock = takeLabLocks(paths, prefix);
  const teardown = new LabTeardown(runner, prefix, paths, lock, logger, progress);
  try {
    await sweepLeftovers(runner, paths, prefix, progress);
    const lab = await buildLab(options, {
      runner,
      logger,
      progress,
      prefix,
      layout,
      paths,
      teardown,
      guestNames,
    });
    return lab;
  } catch (e) {
    const tails = layout.nodes.flatMap((n) =>
      [paths.proxyLog(n.name), paths.relayLog(n.name)].map((f) => logTail(f, 8)).filter((t) => t !== ''),
    );
    await teardown.stop();
    if (e instanceof Error && tails.length > 0) e.message += `\n${tails.join('\n')}`;
    throw e;
  }
}

interface LabContext {
  readonly runner: CommandRunner;
  readonly logger: Logger;
  readonly progress: (line: string) => void;
  readonly prefix: string;
  readonly layout: LabLayout;
  readonly paths: LabPaths;
  readonly teardown: LabTeardown;
  /** The nodes that are guests (`vmNodes`). */
  readonly guestNames: ReadonlySet<string>;
}

/** The lab, step by step: network, kubelet, API server, nodes, web view, kube-proxy, workload; then the wait. */
async function buildLab(options: LabOptions, c: LabContext): Promise<Lab> {
  const { runner, logger, progress, layout, paths, teardown } = c;
  const { cleanups } = teardown;
  const mode = options.mode ?? 'nftables';
  // A start step: first, whether the start was called off.
  const step = (line: string): void => {
    options.signal?.throwIfAborted();
    progress(line);
  };
  const baseState = initialState(options, c.prefix, layout);
  writeLabState(paths.stateFile, baseState);

  step(
    `building the network: ${layout.nodes.length} nodes (${layout.nodes.map((n) => n.name).join(', ')}), underlay, client`,
  );
  if (options.iptables !== undefined) prepareIptablesBinDir(paths, options.iptables);
  let image: ImageRuntime | undefined;
  if (options.image !== undefined) {
    step(`unpacking the node image ${options.image} (kube-proxy runs from it, by runc)`);
    image = await openImageRuntime(runner, options.image, paths.stateDir);
  }
  await buildLabNetwork(runner, layout, c.guestNames);
  const guests = await bootGuestNodes(c);
  const runnerOf = (node: string): CommandRunner => guests.get(node)?.runner ?? runner;
  startKubeletIptables(options, c, runnerOf);

  const hosts = new LabHosts(layout, logger);
  const proxies = new ProxyProcesses(paths, logger);
  const serverRef: { current?: ApiServer } = {};
  const lifecycle = namespacePodLifecycle({
    runner,
    layout,
    ...(image ? { image } : {}),
    runnerFor: (node) => guests.get(node)?.runner,
    timeScaleFor: (node) => (guests.has(node) ? GUEST_TIME_SCALE : options.timeScale),
    podStateDir: paths.podDir(),
    logger: logger.child({ component: 'pods' }),
    configMaps: configMapLookup(() => serverRef.current),
    containerStarted: (pod, container) => proxies.containerStarted(pod, container),
    events: hosts,
  });
  teardown.lifecycle = lifecycle;
  mkdirSync(paths.podDir(), { recursive: true, mode: 0o700 });

  step('starting the API server');
  const usage = labUsageSampler(runner, layout, () => lifecycle.runningPods(), c.guestNames);
  usage.start();
  cleanups.push(() => usage.stop());
  const server = await startLabApiServer(options, c, lifecycle, usage, guests);
  serverRef.current = server;
  cleanups.push(() => server.stop());
  const serverState: LabState = {
    ...baseState,
    apiserverURL: server.url,
    token: server.token,
    caPem: server.caPem ?? '',
  };
  writeLabState(paths.stateFile, serverState);
  hosts.follow(server);
  cleanups.push(() => hosts.close());

  const bridge: Bridge = await startSocketBridge(paths.apiserverSocket, server.port);
  cleanups.push(() => bridge.close());

  // kube-system/kube-proxy, as kubeadm makes it; every node's config.conf is a copy of its config.conf key.
  const created = server.registry.create(
    resourceByKind('ConfigMap'),
    CONFIGMAP_NAMESPACE,
    kubeProxyConfigMap(mode, { clusterCIDRs: clusterCIDRs(layout) }),
  );
  if (!created.ok) throw new Error(`creating ConfigMap kube-system/kube-proxy: ${created.error.message}`);
  const configText = configFromConfigMap(created.value) ?? '';
  const nodeKubeconfig = kubeconfigYaml(`https://${NODE_APISERVER_ADDRESS}`, server.token, server.caPem);
  const nodes = nodeHandles(runner, layout, paths, nodeKubeconfig, configText, proxies, guests, logger);
  const relays = nodes.map((n) => n.relay);
  if (guests.size > 0)
    relays.push(underlayRelay(runner, layout, paths, logger.child({ component: 'underlay' })));
  cleanups.push(async () => {
    await lifecycle.stopProcesses(5000);
    await Promise.all(relays.map((r) => r.stop()));
  });
  const web = options.web !== false ? await startWeb(options, c, server, baseState.startedAt) : undefined;
  if (web) writeLabState(paths.stateFile, { ...serverState, webURL: web.url });

  step('starting a relay on every node, and DaemonSet kube-system/kube-proxy');
  for (const r of relays) r.start();
  startKubeProxy(options, c, server, nodes, configText, lifecycle);
  startClusterDns(c, server);

  if (options.workload !== false) {
    progress(
      `creating namespace ${WORKLOAD_NAMESPACE}, Deployment ${WEB} (${WEB_REPLICAS} replicas) and Service ${WEB}`,
    );
    createAll(server, WEB, [
      ['Namespace', '', workloadNamespace()],
      ['Deployment', WORKLOAD_NAMESPACE, webDeployment()],
      ['Service', WORKLOAD_NAMESPACE, webService()],
    ]);
  }

  await waitUntilReady(
    server,
    nodes,
    options.workload !== false,
    options.readyTimeoutMs ?? (guests.size > 0 ? 15 * 60_000 : 120_000 * (options.timeScale ?? 1)),
    progress,
    options.signal,
  );
  return {
    layout,
    paths,
    server,
    kubeconfigPath: paths.kubeconfig,
    nodes,
    runner,
    ...(web ? { web } : {}),
    stopped: teardown.stopped,
    stop: () => teardown.stop(),
    apiServerOutage: (ms) => {
      progress(`API server outage: the nodes' connections are cut and refused for ${ms / 1000} s`);
      bridge.outage(ms);
    },
    apiServerRestart: async (ms) => {
      progress(`API server restart: every connection is cut and refused for ${ms / 1000} s`);
      bridge.outage(ms);
      await server.outage(ms);
      progress('API server restart: serving again');
    },
  };
}

/** `vmNodes`: the guests booted and wired as nodes; stopped when the lab stops (after the kubelet's processes). */
async function bootGuestNodes(c: LabContext): Promise<ReadonlyMap<string, GuestNode>> {
  if (c.guestNames.size === 0) return new Map();
  c.progress(
    `booting ${c.guestNames.size} guest node(s) on Debian's kernel: ${[...c.guestNames].join(', ')} (QEMU, TCG: 10–60 s)`,
  );
  const guests = await startGuestNodes(c.layout, c.paths, c.guestNames);
  c.teardown.cleanups.push(() => Promise.all([...guests.values()].map((g) => g.guest.stop())).then(() => {}));
  for (const g of guests.values())
    c.progress(
      `guest node ${g.name}: kernel ${g.guest.release}, booted in ${(g.guest.bootMs / 1000).toFixed(1)} s`,
    );
  return guests;
}

/**
 * The kube-proxy DaemonSet (its pods are the proxies, one per node) and the node copies of its ConfigMap, which
 * follow it; the proxies follow it only with followConfigMap (their volumes are rewritten, each proxy exits on
 * the change and its container restarts). Otherwise `rollout restart` applies an edit.
 */
function startKubeProxy(
  options: LabOptions,
  c: LabContext,
  server: ApiServer,
  nodes: readonly NodeHandle[],
  configText: string,
  lifecycle: NamespacePodLifecycle,
): void {
  const { paths, progress } = c;
  createAll(server, 'kube-system/kube-proxy', [
    [
      'ServiceAccount',
      CONFIGMAP_NAMESPACE,
      {
        apiVersion: 'v1',
        kind: 'ServiceAccount',
        metadata: { name: 'kube-proxy', namespace: 'kube-system' },
      },
    ],
    [
      'DaemonSet',
      CONFIGMAP_NAMESPACE,
      kubeProxyDaemonSet({
        kubeconfigPath: paths.nodeKubeconfig('$(NODE_NAME)'),
        extraArgs:
          options.nftablesLayout !== undefined ? [`--nftables-layout=${options.nftablesLayout}`] : [],
        env: nodeEnvironment(paths, '$(NODE_NAME)', options.iptables, process.env.PATH ?? ''),
        stateDir: paths.nodeProxyStateDir('$(NODE_NAME)'),
      }),
    ],
  ]);

  c.teardown.cleanups.push(
    followProxyConfigMap(
      server,
      configText,
      (text) => {
        for (const n of nodes) writeAtomically(paths.nodeConfig(n.name), text);
      },
      () => {
        if (options.followConfigMap === true) {
          progress("kube-proxy ConfigMap changed: rewriting the kube-proxy pods' config volumes");
          // After the store's fan-out: the lookup reads the stored object.
          setImmediate(() => lifecycle.refreshConfigMap(CONFIGMAP_NAMESPACE, CONFIGMAP_NAME));
        } else
          progress(
            'kube-proxy ConfigMap changed: `kubectl -n kube-system rollout restart ds kube-proxy` applies it',
          );
      },
    ),
  );
}

/**
 * Each node's kubelet iptables chains (kubelet-iptables.ts): made in the node's namespace, with the proxies' back
 * end and the node's xtables lock, and kept there by a background check until the lab stops.
 */
function startKubeletIptables(
  options: LabOptions,
  c: LabContext,
  runnerOf: (node: string) => CommandRunner,
): void {
  for (const n of c.layout.nodes) {
    // The lock file's directory (nodeHandles makes it too, later).
    mkdirSync(c.paths.nodeDir(n.name), { recursive: true, mode: 0o700 });
    const kubelet = new KubeletIptables({
      node: n.name,
      commands: netnsCommandRunner(n.namespace, runnerOf(n.name)),
      variant: options.iptables ?? 'auto',
      lockFile: c.paths.nodeXtablesLock(n.name),
      logger: c.logger.child({ component: 'kubelet-iptables', node: n.name }),
    });
    kubelet.start();
    c.teardown.cleanups.push(() => kubelet.stop());
  }
}

/** Deployment kube-system/coredns behind Service kube-dns (cluster-dns.ts): the pods' nameserver. */
function startClusterDns(c: LabContext, server: ApiServer): void {
  const clusterIP = labClusterDnsIP(server);
  if (clusterIP === undefined) throw new Error('cluster DNS: the API server has no default ServiceCIDR');
  c.progress(`creating Deployment kube-system/coredns and Service kube-dns (${clusterIP}): cluster DNS`);
  createAll(
    server,
    'kube-system/coredns',
    clusterDnsObjects({
      clusterIP,
      kubeconfigPath: c.paths.nodeKubeconfig('$(NODE_NAME)'),
      apiserverSocket: c.paths.apiserverSocket,
    }),
  );
}

/** A node's InternalIPs and pod CIDRs, one per family of the lab, primary first. */
function familyAddresses(node: LabNodeLayout | undefined): { internalIPs?: string[]; podCIDRs?: string[] } {
  if (!node) return {};
  return { internalIPs: node.families.map((f) => f.ip), podCIDRs: node.families.map((f) => f.podCIDR) };
}

/** The embedded API server with the lab's kubelet, its nodes (zones in turn) and `kubectl top`'s metrics. */
function startLabApiServer(
  options: LabOptions,
  c: LabContext,
  lifecycle: NamespacePodLifecycle,
  usage: UsageSampler,
  guests: ReadonlyMap<string, GuestNode>,
): Promise<ApiServer> {
  const zones = options.zones ?? [];
  const guestFacts = (name: string): { kernelVersion?: string; taints?: (typeof VM_NODE_TAINT)[] } => {
    const g = guests.get(name);
    return g ? { kernelVersion: g.guest.release, taints: [VM_NODE_TAINT] } : {};
  };
  return startApiServer({
    nodes: defaultNodes(c.layout.nodes.length).map((n, i) => ({
      ...n,
      ...familyAddresses(c.layout.nodes[i]),
      ...(zones.length > 0 ? { zone: zones[i % zones.length] } : {}),
      ...guestFacts(n.name),
    })),
    ...(options.controlPlaneTaint === true ? { controlPlaneTaint: true } : {}),
    serviceCIDR: serviceCIDRs(c.layout).join(','),
    podLifecycle: lifecycle,
    kubelet: lifecycle,
    extraRoutes: (req, res, parts) =>
      serveMetrics(
        req,
        res,
        parts,
        usage,
        () => c.layout.nodes.map((n) => n.name),
        () =>
          lifecycle.runningPods().map((p) => ({
            namespace: p.namespace,
            name: p.name,
            containers: p.containers.map((x) => x.name),
          })),
      ),
    // The HPA controller reads what `kubectl top` shows: CPU in millicores, memory in bytes, per container.
    podMetrics: (namespace, name) => {
      const pod = lifecycle.runningPods().find((p) => p.namespace === namespace && p.name === name);
      if (!pod) return undefined;
      const containers: Record<string, { cpu: number; memory: number }> = {};
      for (const { name: container } of pod.containers) {
        const u = usage.usage(`pod/${namespace}/${name}/${container}`);
        if (u) containers[container] = { cpu: u.cpuNanoCores / 1e6, memory: u.memoryBytes };
      }
      return Object.keys(containers).length > 0 ? containers : undefined;
    },
    kubeconfigPath: c.paths.kubeconfig,
    logger: c.logger.child({ component: 'apiserver' }),
  });
}

/** The web view on this host (its URL carries the token); closed with the lab. */
async function startWeb(
  options: LabOptions,
  c: LabContext,
  server: ApiServer,
  startedAt: string,
): Promise<LabWeb> {
  const port = typeof options.web === 'object' ? options.web.port : undefined;
  const web = await startLabWeb({
    store: server.store,
    runner: c.runner,
    paths: c.paths,
    prefix: c.prefix,
    nodes: c.layout.nodes.map((n) => ({ name: n.name, namespace: n.namespace })),
    startedAt,
    nodeEnv: (node) => nodeEnvironment(c.paths, node, options.iptables, process.env.PATH ?? ''),
    ...(port !== undefined ? { port } : {}),
  });
  c.teardown.cleanups.push(() => web.close());
  c.progress(`web view (this host only, with its token): ${web.url}`);
  return web;
}

/** The last lines of a log file, headed by its path; '' when there is none (the state directory goes on stop). */
function logTail(path: string, lines: number): string {
  try {
    const text = readFileSync(path, 'utf8').trimEnd();
    if (text === '') return '';
    return `--- ${path} (last ${lines} lines):\n${text.split('\n').slice(-lines).join('\n')}`;
  } catch {
    return '';
  }
}

async function waitUntilReady(
  server: ApiServer,
  nodes: readonly NodeHandle[],
  workload: boolean,
  timeoutMs: number,
  progress: (line: string) => void,
  signal: AbortSignal | undefined,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const synced = new Set<string>();
  let lastPods = -1;
  const POD = resourceByKind('Pod');
  for (;;) {
    signal?.throwIfAborted();
    for (const n of nodes) {
      if (synced.has(n.name)) continue;
      const text = await fetchProxyMetrics(n.runner, n.namespace);
      const last = text ? metricValue(text, 'kubeproxy_sync_proxy_rules_last_timestamp_seconds') : undefined;
      if (last !== undefined && last > 0) {
        synced.add(n.name);
        progress(`kube-proxy-ts on ${n.name}: first sync done (pid ${n.proxy.pid() ?? '?'})`);
      }
    }
    const ready = workload
      ? server.store
          .list(POD, WORKLOAD_NAMESPACE)
          .filter(
            (p) =>
              str(child(p, 'status'), 'phase') === 'Running' &&
              !str(child(p, 'metadata'), 'deletionTimestamp'),
          ).length
      : 0;
    if (workload && ready !== lastPods) {
      progress(`web pods running: ${ready}/${WEB_REPLICAS}`);
      lastPods = ready;
    }
    // And the DaemonSet says so too (its pods turn ready on their probe's next round), so that the first
    // `kubectl get ds kube-proxy` a user types shows every node ready.
    const ds = server.store.get(resourceByKind('DaemonSet'), CONFIGMAP_NAMESPACE, 'kube-proxy');
    const dsReady = num(child(ds, 'status'), 'numberReady') === nodes.length;
    // And a pod created now resolves names: kube-dns has a ready endpoint.
    const dnsReady = clusterDnsReady(server);
    if (synced.size === nodes.length && dsReady && dnsReady && (!workload || ready >= WEB_REPLICAS)) return;
    if (Date.now() > deadline) {
      const waiting = nodes.filter((n) => !synced.has(n.name)).map((n) => n.name);
      throw new Error(
        `the lab did not become ready in ${Math.round(timeoutMs / 1000)} s: ` +
          (waiting.length > 0 ? `no sync yet from the proxies on ${waiting.join(', ')}; ` : '') +
          (dsReady ? '' : 'DaemonSet kube-system/kube-proxy not ready on every node; ') +
          (dnsReady ? '' : 'no ready endpoint of Service kube-system/kube-dns; ') +
          `${ready}/${WEB_REPLICAS} web pods running (proxy logs are under the state directory)`,
      );
    }
    await delay(500);
  }
}
