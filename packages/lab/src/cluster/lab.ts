// `lab up`: the whole one-host cluster in one process. The order matters: the network first (pods need their
// node's bridge), then the API server with the namespace-backed pod plug, the socket bridge and a relay per node
// (the proxies' only way to the API server), the kube-proxy ConfigMap and DaemonSet (whose pods are the proxies,
// one per node), service names for every namespace, and last the `svc/web` workload. stop() undoes it all; so
// does `lab down` from its records.
import type { NftablesLayoutName } from 'kube-proxy-ts/config/nftables-layout.js';
import { mkdirSync, renameSync, rmSync, symlinkSync, writeFileSync, readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { hostCommandRunner, type CommandRunner } from 'kube-proxy-ts/netfilter/command.js';
import { SILENT_LOGGER, type Logger } from 'kube-proxy-ts/util/logger.js';
import { defaultNodes, startApiServer, type ApiServer } from '../apiserver/index.js';
import { child, num, str } from '../apiserver/json.js';
import { kubeconfigYaml } from '../apiserver/kubeconfig.js';
import { resourceByKind } from '../apiserver/resources.js';
import type { Pod } from '../apiserver/types.js';
import type { ContainerProcess } from './containers.js';
import { namespacePids } from '@kube-proxy-ts/netns/index.js';
import { serveMetrics, UsageSampler } from './usage.js';
import { KUBE_PROXY_LABELS, kubeProxyDaemonSet } from './kube-proxy-daemonset.js';
import { HostsFiles, serviceName, type HostsTarget, type ServiceName } from './hosts.js';
import {
  DEFAULT_PREFIX,
  NODE_APISERVER_ADDRESS,
  defaultStateDir,
  labLayout,
  labPaths,
  prefixLockFile,
} from './layout.js';
import type { LabLayout, LabPaths } from './layout.js';
import { fetchProxyMetrics, metricValue } from './metrics.js';
import { buildLabNetwork } from './network.js';
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
  readonly stateDir?: string;
  /** Names every namespace and /etc/netns directory; default "kptslab". */
  readonly prefix?: string;
  readonly runner?: CommandRunner;
  readonly logger?: Logger;
  /** Human progress lines (`lab up` prints them). */
  readonly progress?: (line: string) => void;
  /** Create svc/web (default true). */
  readonly workload?: boolean;
  /** How long to wait for the proxies' first sync and the web pods (default 120 s). */
  readonly readyTimeoutMs?: number;
  /**
   * Nodes get topology.kubernetes.io/zone labels from this list, round robin (`lab up --zones zone-a,zone-b`).
   */
  readonly zones?: readonly string[];
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

/** The node's kube-proxy, as its DaemonSet pod's container runs it. */
export interface ProxyView {
  /** How many kube-proxy processes this node has started (every pod, every restart). */
  readonly starts: number;
  readonly running: boolean;
  pid(): number | undefined;
}

export interface NodeHandle {
  readonly name: string;
  readonly namespace: string;
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

export async function startLab(options: LabOptions = {}): Promise<Lab> {
  const runner = options.runner ?? hostCommandRunner;
  const logger = options.logger ?? SILENT_LOGGER;
  const progress = options.progress ?? ((): void => undefined);
  // A start step: first, whether the start was called off.
  const step = (line: string): void => {
    options.signal?.throwIfAborted();
    progress(line);
  };
  const prefix = options.prefix ?? DEFAULT_PREFIX;
  const mode = options.mode ?? 'nftables';
  const layout = labLayout(options.nodes ?? 2, prefix);
  const paths = labPaths(options.stateDir ?? defaultStateDir());

  const stateLock = acquireLabLock(paths.lockFile);
  if (!stateLock.ok) throw new LabAlreadyUpError(stateLock.holder, paths.stateDir);
  const prefixLock = acquireLabLock(prefixLockFile(prefix));
  if (!prefixLock.ok) {
    stateLock.release();
    throw new LabAlreadyUpError(prefixLock.holder, `another state directory (namespace prefix ${prefix})`);
  }
  const lock = {
    release(): void {
      prefixLock.release();
      stateLock.release();
    },
  };
  // A lab that died without `lab down` left namespaces behind: clean them before building anew.
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

  const baseState: LabState = {
    version: 1,
    pid: process.pid,
    prefix,
    nodes: layout.nodes.map((n) => n.name),
    mode,
    ...(options.iptables !== undefined ? { iptables: options.iptables } : {}),
    ...(options.nftablesLayout !== undefined ? { nftablesLayout: options.nftablesLayout } : {}),
    startedAt: new Date().toISOString(),
    apiserverURL: '',
    token: '',
    caPem: '',
  };
  writeLabState(paths.stateFile, baseState);

  const cleanups: (() => Promise<void> | void)[] = [];
  let lifecycle: NamespacePodLifecycle | undefined;
  let resolveStopped: () => void = () => undefined;
  const stopped = new Promise<void>((resolve) => (resolveStopped = resolve));
  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> =>
    (stopping ??= (async () => {
      progress('stopping the lab');
      lifecycle?.close();
      for (const c of cleanups.reverse()) {
        try {
          await c();
        } catch (e) {
          logger.warn('cleanup step failed', { error: e instanceof Error ? e.message : String(e) });
        }
      }
      const r = await removeLabLeftovers(runner, prefix);
      for (const e of r.errors) logger.warn('teardown', { error: e });
      removeStateDir(paths.stateDir);
      lock.release();
      progress(`removed ${r.namespaces.length} namespaces; nothing left behind`);
      resolveStopped();
    })());

  try {
    step(
      `building the network: ${layout.nodes.length} nodes (${layout.nodes.map((n) => n.name).join(', ')}), underlay, client`,
    );
    if (options.iptables !== undefined) prepareIptablesBinDir(paths, options.iptables);
    let image: ImageRuntime | undefined;
    if (options.image !== undefined) {
      step(`unpacking the node image ${options.image} (kube-proxy runs from it, by runc)`);
      image = await openImageRuntime(runner, options.image, paths.stateDir);
    }
    await buildLabNetwork(runner, layout);

    const hosts = new HostsFiles();
    const podTargets = new Map<string, HostsTarget>();
    let refreshHosts: () => void = () => undefined;
    // Each node's kube-proxy: the container process of its DaemonSet pod. Its PID file and log are linked at the
    // node's paths (`lab status`, the walkthrough's `tail`), whichever pod runs it now.
    const proxyProcesses = new Map<string, { starts: number; current?: ContainerProcess }>();
    const serverRef: { current?: ApiServer } = {};
    lifecycle = namespacePodLifecycle({
      runner,
      layout,
      ...(image ? { image } : {}),
      podStateDir: paths.podDir(),
      logger: logger.child({ component: 'pods' }),
      configMaps: () => (namespace, name) => {
        const cm = serverRef.current?.store.get(resourceByKind('ConfigMap'), namespace, name);
        if (!cm) return undefined;
        const data: Record<string, string> = {};
        for (const [k, v] of Object.entries(child(cm, 'data'))) if (typeof v === 'string') data[k] = v;
        return data;
      },
      containerStarted: (pod, container) => {
        const labels = pod.metadata.labels ?? {};
        if (
          pod.metadata.namespace !== CONFIGMAP_NAMESPACE ||
          labels['k8s-app'] !== KUBE_PROXY_LABELS['k8s-app']
        )
          return;
        const node = pod.spec?.nodeName ?? '';
        const entry = proxyProcesses.get(node) ?? { starts: 0 };
        entry.starts++;
        entry.current = container;
        proxyProcesses.set(node, entry);
        for (const [link, target] of [
          [paths.proxyPidFile(node), container.pidFile],
          [paths.proxyLog(node), container.logFile()],
        ] as const) {
          if (target === undefined) continue;
          try {
            mkdirSync(paths.nodeDir(node), { recursive: true, mode: 0o700 });
            rmSync(link, { force: true });
            symlinkSync(target, link);
          } catch (e) {
            logger.warn('cannot link the proxy file', { link, error: String(e) });
          }
        }
      },
      events: {
        added: (ns: string, pod: Pod) => {
          const target: HostsTarget = {
            netns: ns,
            podNamespace: pod.metadata.namespace ?? 'default',
            self: { name: pod.metadata.name ?? ns, ip: pod.status?.podIP ?? '127.0.0.1' },
          };
          podTargets.set(ns, target);
          // At once, not debounced: `ip netns exec` binds the file only if it exists when a process starts, and a
          // pod's command (kubectl run … -- curl http://web.svc/) starts right after this.
          try {
            hosts.write(target, serverRef.current ? serviceNames(serverRef.current) : []);
          } catch (e) {
            logger.warn('cannot write hosts file', { netns: ns, error: String(e) });
          }
        },
        removed: (ns: string) => {
          podTargets.delete(ns);
          hosts.remove(ns);
        },
      },
    });
    mkdirSync(paths.podDir(), { recursive: true, mode: 0o700 });

    step('starting the API server');
    // kubectl top: each pod's processes (its namespace's, or its containers' on the host network), each node's.
    const pidsOf = async (netns: string): Promise<number[]> => namespacePids(runner, netns).catch(() => []);
    const usage = new UsageSampler(async () => {
      const groups = new Map<string, number[]>();
      const byNode = new Map<string, number[]>();
      for (const n of layout.nodes) byNode.set(n.name, await pidsOf(n.namespace));
      for (const p of lifecycle?.runningPods() ?? []) {
        const own = p.containers.flatMap((c) => c.pid() ?? []);
        const inNs = p.hostNetwork ? [] : await pidsOf(p.netns);
        p.containers.forEach((c, i) => {
          const pid = c.pid();
          // A pod server's namespace may hold helpers too: the rest of the namespace counts for its first container.
          const rest = i === 0 ? inNs.filter((x) => !own.includes(x)) : [];
          groups.set(`pod/${p.namespace}/${p.name}/${c.name}`, [
            ...(pid !== undefined ? [pid] : []),
            ...rest,
          ]);
        });
        byNode.get(p.node)?.push(...own, ...inNs);
      }
      for (const [node, pids] of byNode) groups.set(`node/${node}`, pids);
      return groups;
    });
    usage.start();
    cleanups.push(() => usage.stop());
    const zones = options.zones ?? [];
    const server = await startApiServer({
      nodes: defaultNodes(layout.nodes.length).map((n, i) =>
        zones.length > 0 ? { ...n, zone: zones[i % zones.length] } : n,
      ),
      podLifecycle: lifecycle,
      kubelet: lifecycle,
      extraRoutes: (req, res, parts) =>
        serveMetrics(
          req,
          res,
          parts,
          usage,
          () => layout.nodes.map((n) => n.name),
          () =>
            (lifecycle?.runningPods() ?? []).map((p) => ({
              namespace: p.namespace,
              name: p.name,
              containers: p.containers.map((c) => c.name),
            })),
        ),
      kubeconfigPath: paths.kubeconfig,
      logger: logger.child({ component: 'apiserver' }),
    });
    serverRef.current = server;
    cleanups.push(() => server.stop());
    const serverState: LabState = {
      ...baseState,
      apiserverURL: server.url,
      token: server.token,
      caPem: server.caPem ?? '',
    };
    writeLabState(paths.stateFile, serverState);

    // Service names: every namespace's hosts file follows the Services (debounced: a burst writes once).
    let hostsTimer: NodeJS.Timeout | undefined;
    const writeAllHosts = (): void => {
      const services = serviceNames(server);
      const targets: HostsTarget[] = [
        { netns: layout.clientNamespace },
        ...layout.nodes.map((n) => ({ netns: n.namespace })),
        ...podTargets.values(),
      ];
      for (const t of targets) {
        try {
          hosts.write(t, services);
        } catch (e) {
          logger.warn('cannot write hosts file', { netns: t.netns, error: String(e) });
        }
      }
    };
    refreshHosts = () => {
      if (hostsTimer) return;
      hostsTimer = setTimeout(() => {
        hostsTimer = undefined;
        writeAllHosts();
      }, 50);
    };
    const unsubscribeHosts = server.store.subscribe((ev) => {
      if (ev.resource.kind === 'Service') refreshHosts();
    });
    cleanups.push(() => {
      unsubscribeHosts();
      if (hostsTimer) clearTimeout(hostsTimer);
    });
    writeAllHosts();

    const bridge: Bridge = await startSocketBridge(paths.apiserverSocket, server.port);
    cleanups.push(() => bridge.close());

    // kube-system/kube-proxy, as kubeadm makes it; every node's config.conf is a copy of its config.conf key.
    const CONFIGMAP = resourceByKind('ConfigMap');
    const created = server.registry.create(CONFIGMAP, CONFIGMAP_NAMESPACE, kubeProxyConfigMap(mode));
    if (!created.ok) throw new Error(`creating ConfigMap kube-system/kube-proxy: ${created.error.message}`);
    let configText = configFromConfigMap(created.value) ?? '';
    const nodeKubeconfig = kubeconfigYaml(`https://${NODE_APISERVER_ADDRESS}`, server.token, server.caPem);

    const nodes: NodeHandle[] = layout.nodes.map((n) => {
      mkdirSync(paths.nodeDir(n.name), { recursive: true, mode: 0o700 });
      writeAtomically(paths.nodeKubeconfig(n.name), nodeKubeconfig);
      // A copy of config.conf for tools run by hand (`explain --config`); the proxies read their pod's volume.
      writeAtomically(paths.nodeConfig(n.name), configText);
      const nlog = logger.child({ node: n.name });
      const relay = new Supervised(
        runner,
        {
          name: `relay on ${n.name}`,
          namespace: n.namespace,
          argv: () =>
            labCliArgv(['relay', '--listen', NODE_APISERVER_ADDRESS, '--socket', paths.apiserverSocket]),
          pidFile: `${paths.nodeDir(n.name)}/relay.pid`,
          log: paths.relayLog(n.name),
        },
        nlog,
      );
      const proxy: ProxyView = {
        get starts() {
          return proxyProcesses.get(n.name)?.starts ?? 0;
        },
        get running() {
          return proxyProcesses.get(n.name)?.current?.running ?? false;
        },
        pid: () => proxyProcesses.get(n.name)?.current?.pid(),
      };
      return { name: n.name, namespace: n.namespace, proxy, relay };
    });
    cleanups.push(async () => {
      await lifecycle?.stopProcesses(5000);
      await Promise.all(nodes.map((n) => n.relay.stop()));
    });
    let web: LabWeb | undefined;
    if (options.web !== false) {
      const port = typeof options.web === 'object' ? options.web.port : undefined;
      web = await startLabWeb({
        store: server.store,
        runner,
        paths,
        prefix,
        nodes: layout.nodes.map((n) => ({ name: n.name, namespace: n.namespace })),
        startedAt: baseState.startedAt,
        nodeEnv: (node) => nodeEnvironment(paths, node, options.iptables, process.env.PATH ?? ''),
        ...(port !== undefined ? { port } : {}),
      });
      const running = web;
      cleanups.push(() => running.close());
      writeLabState(paths.stateFile, { ...serverState, webURL: web.url });
      progress(`web view (this host only, with its token): ${web.url}`);
    }
    step('starting a relay on every node, and DaemonSet kube-system/kube-proxy');
    for (const n of nodes) n.relay.start();
    for (const [kind, obj] of [
      [
        'ServiceAccount',
        {
          apiVersion: 'v1',
          kind: 'ServiceAccount',
          metadata: { name: 'kube-proxy', namespace: 'kube-system' },
        },
      ],
      [
        'DaemonSet',
        kubeProxyDaemonSet({
          kubeconfigPath: paths.nodeKubeconfig('$(NODE_NAME)'),
          extraArgs:
            options.nftablesLayout !== undefined ? [`--nftables-layout=${options.nftablesLayout}`] : [],
          env: nodeEnvironment(paths, '$(NODE_NAME)', options.iptables, process.env.PATH ?? ''),
        }),
      ],
    ] as const) {
      const r = server.registry.create(resourceByKind(kind), CONFIGMAP_NAMESPACE, obj);
      if (!r.ok) throw new Error(`creating ${kind} kube-system/kube-proxy: ${r.error.message}`);
    }

    // The node copies follow the ConfigMap; the proxies do only with followConfigMap (their volumes are rewritten,
    // each proxy exits on the change and its container restarts). Otherwise `rollout restart` applies an edit.
    const unsubscribeConfig = server.store.subscribe((ev) => {
      if (ev.resource.kind !== 'ConfigMap') return;
      const meta = child(ev.object, 'metadata');
      if (str(meta, 'namespace') !== CONFIGMAP_NAMESPACE || str(meta, 'name') !== CONFIGMAP_NAME) return;
      if (ev.type === 'DELETED') return;
      const text = configFromConfigMap(ev.object);
      if (text === undefined || text === configText) return;
      configText = text;
      for (const n of nodes) writeAtomically(paths.nodeConfig(n.name), text);
      if (options.followConfigMap === true) {
        progress("kube-proxy ConfigMap changed: rewriting the kube-proxy pods' config volumes");
        // After the store's fan-out: the lookup reads the stored object.
        setImmediate(() => lifecycle?.refreshConfigMap(CONFIGMAP_NAMESPACE, CONFIGMAP_NAME));
      } else
        progress(
          'kube-proxy ConfigMap changed: `kubectl -n kube-system rollout restart ds kube-proxy` applies it',
        );
    });
    cleanups.push(unsubscribeConfig);

    if (options.workload !== false) {
      progress(
        `creating namespace ${WORKLOAD_NAMESPACE}, Deployment ${WEB} (${WEB_REPLICAS} replicas) and Service ${WEB}`,
      );
      for (const [kind, ns, obj] of [
        ['Namespace', '', workloadNamespace()],
        ['Deployment', WORKLOAD_NAMESPACE, webDeployment()],
        ['Service', WORKLOAD_NAMESPACE, webService()],
      ] as const) {
        const r = server.registry.create(resourceByKind(kind), ns, obj);
        if (!r.ok) throw new Error(`creating ${kind} ${WEB}: ${r.error.message}`);
      }
    }

    await waitUntilReady(
      runner,
      server,
      nodes,
      options.workload !== false,
      options.readyTimeoutMs ?? 120_000,
      progress,
      options.signal,
    );
    const lab: Lab = {
      layout,
      paths,
      server,
      kubeconfigPath: paths.kubeconfig,
      nodes,
      runner,
      ...(web ? { web } : {}),
      stopped,
      stop,
      apiServerOutage: (ms) => {
        progress(`API server outage: the nodes' connections are cut and refused for ${ms / 1000} s`);
        bridge.outage(ms);
      },
    };
    return lab;
  } catch (e) {
    const tails = layout.nodes.flatMap((n) =>
      [paths.proxyLog(n.name), paths.relayLog(n.name)].map((f) => logTail(f, 8)).filter((t) => t !== ''),
    );
    await stop();
    if (e instanceof Error && tails.length > 0) e.message += `\n${tails.join('\n')}`;
    throw e;
  }
}

function serviceNames(server: ApiServer): ServiceName[] {
  return server.store.list(resourceByKind('Service')).flatMap((s) => serviceName(s) ?? []);
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
  runner: CommandRunner,
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
      const text = await fetchProxyMetrics(runner, n.namespace);
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
    if (synced.size === nodes.length && dsReady && (!workload || ready >= WEB_REPLICAS)) return;
    if (Date.now() > deadline) {
      const waiting = nodes.filter((n) => !synced.has(n.name)).map((n) => n.name);
      throw new Error(
        `the lab did not become ready in ${Math.round(timeoutMs / 1000)} s: ` +
          (waiting.length > 0 ? `no sync yet from the proxies on ${waiting.join(', ')}; ` : '') +
          (dsReady ? '' : 'DaemonSet kube-system/kube-proxy not ready on every node; ') +
          `${ready}/${WEB_REPLICAS} web pods running (proxy logs are under the state directory)`,
      );
    }
    await delay(500);
  }
}
