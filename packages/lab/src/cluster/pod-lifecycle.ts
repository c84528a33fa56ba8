// The lab's kubelet: the PodLifecycle plug backed by network namespaces. start() gives the Pod a namespace on its
// node's bridge and runs the pod server there (HTTP answers the pod's name; UDP echoes it), resolving once the
// server listens; stop() lets the Pod stay terminating for its grace period (its server keeps answering, as a
// draining container would), then kills the server and removes the namespace.
//
// Containers that name a command run as processes instead (containers.ts): kube-proxy-ts as the pods of the
// kube-proxy DaemonSet (hostNetwork: in the node's namespace), `kubectl run … -- CMD` in its pod's namespace.
// A Pod whose containers set ephemeral-storage limits is watched for its local storage and evicted when over them
// (local-storage.ts); its containers' writable layers are removed when it stops.
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { CommandRunner } from 'kube-proxy-ts/netfilter/command.js';
import { systemClock, type Clock } from 'kube-proxy-ts/util/clock.js';
import type { Logger } from 'kube-proxy-ts/util/logger.js';
import { arr, child, str, type JsonObject } from '../apiserver/json.js';
import type { Pod } from '../apiserver/types.js';
import type {
  Kubelet,
  KubeletContainer,
  PodLifecycle,
  PodStatusReport,
  StreamingKubelet,
  StreamSession,
} from '../controllers/pod-lifecycle.js';
import { execInNamespace, followLog } from './streams.js';
import { startPodServerIn, type PodServerHandle } from '@kube-proxy-ts/netns/pod-process.js';
import { killNamespaceProcesses } from '@kube-proxy-ts/netns/index.js';
import { resolveContainer, type ImageLauncher, type VolumeMapping } from './container-spec.js';
import { imageContainerArgv, type ImageRuntime } from './image-runtime.js';
import {
  ContainerProcess,
  preStopOf,
  readinessProbeOf,
  scaledProbe,
  type RestartPolicy,
} from './containers.js';
import {
  appFirst,
  declaredContainers,
  PodContainers,
  serverSidecars,
  type DeclaredContainer,
} from './pod-containers.js';
import { podNamespaceName, podVethName, type LabLayout, type LabNodeLayout } from './layout.js';
import { emptyDirNames, StorageMonitor, storageLimitOf } from './local-storage.js';
import { attachPod, detachPod, podIPsOf } from './network.js';

/** The port the pod server listens on when the Pod declares none (TCP and UDP). */
export const DEFAULT_POD_PORT = 8080;
/**
 * How long an evicted Pod's containers get to stop: upstream evicts for local storage with a grace period of 0,
 * which its runtime raises to its minimum of 2 s.
 */
const EVICTION_GRACE_MS = 2_000;
/** Lab pod servers live as long as the lab; this only bounds an orphan after a crash without `lab down`. */
const POD_SERVER_LIFETIME_SECONDS = 7 * 24 * 3600;

export interface PodPorts {
  readonly tcp: readonly number[];
  readonly udp: readonly number[];
}

/** The ports a Pod's containers declare, by protocol; a Pod that declares none gets DEFAULT_POD_PORT on both. */
export function podPorts(pod: Pod): PodPorts {
  const tcp = new Set<number>();
  const udp = new Set<number>();
  for (const c of [...(pod.spec?.containers ?? []), ...serverSidecars(pod)]) {
    for (const p of c.ports ?? []) {
      const n = p.containerPort;
      if (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > 65535) continue;
      if ((p.protocol ?? 'TCP') === 'UDP') udp.add(n);
      else if ((p.protocol ?? 'TCP') === 'TCP') tcp.add(n);
    }
  }
  if (tcp.size + udp.size === 0) return { tcp: [DEFAULT_POD_PORT], udp: [DEFAULT_POD_PORT] };
  return { tcp: [...tcp].sort((a, b) => a - b), udp: [...udp].sort((a, b) => a - b) };
}

export interface PodEvents {
  /** A pod namespace now exists (hosts files follow it). */
  added(namespace: string, pod: Pod): void;
  removed(namespace: string): void;
}

/** What `kubectl logs` and `kubectl exec` need of a running Pod's container. */
export type PodContainerView = KubeletContainer;

export interface RunningPod {
  readonly namespace: string;
  readonly name: string;
  readonly node: string;
  readonly hostNetwork: boolean;
  readonly netns: string;
  readonly containers: readonly { readonly name: string; pid(): number | undefined }[];
}

/** The data of a ConfigMap, for configMap volumes; undefined when it does not exist. */
export type ConfigMapLookup = (namespace: string, name: string) => Record<string, string> | undefined;

export interface NamespacePodLifecycleOptions {
  /** ConfigMaps for configMap volumes (bound late: the API server is made after its plug). */
  readonly configMaps?: () => ConfigMapLookup;
  /** A container process started (the lab follows its kube-proxy pods' PIDs and logs). */
  readonly containerStarted?: (pod: Pod, container: ContainerProcess) => void;
  readonly runner: CommandRunner;
  /**
   * The runner of a node whose commands run elsewhere (a guest node's: packages/lab/src/vm/node.ts); undefined,
   * or no function: `runner`. Everything a Pod's kubelet does on its node goes through its node's runner.
   */
  readonly runnerFor?: (node: string) => CommandRunner | undefined;
  /**
   * How many times slower than this host a node runs things (a guest node under emulation: 5); its Pods' readiness
   * probes and pod servers' start get that many times longer. Default 1.
   */
  readonly timeScaleFor?: (node: string) => number | undefined;
  readonly layout: LabLayout;
  /** For the pod servers' ready files. */
  readonly podStateDir: string;
  readonly logger: Logger;
  readonly events?: PodEvents;
  /** Real time; the lab's API server runs on the real clock too. */
  readonly now?: () => number;
  /** The eviction manager's timer (default: the system clock). */
  readonly clock?: Clock;
  /** `lab up --image`: kube-proxy containers run from this image, by runc. */
  readonly image?: ImageRuntime;
}

export interface NamespacePodLifecycle extends PodLifecycle, Kubelet, StreamingKubelet {
  /** Pod namespaces that exist now. */
  namespaces(): string[];
  /** Every Pod this kubelet runs, with its containers' main PIDs (for `kubectl top`). */
  runningPods(): RunningPod[];
  /** Rewrites every configMap volume of this ConfigMap (`lab up --follow-configmap`: the kubelet's volume sync). */
  refreshConfigMap(namespace: string, name: string): void;
  /** Stops waiting for grace periods (the lab is going down; its sweep removes the namespaces). */
  close(): void;
  /** Stops every container process (SIGTERM, SIGKILL after `graceMs`); none is restarted afterwards. */
  stopProcesses(graceMs: number): Promise<void>;
}

/** The launcher of a Pod's kube-proxy containers under `lab up --image`: one bundle per container, in its dir. */
function imageLauncher(
  runtime: ImageRuntime,
  pod: { readonly podDir: string; readonly netns: string; readonly hostname: string; readonly uid: string },
): ImageLauncher {
  return (words, env, volumes, container) =>
    imageContainerArgv(runtime, {
      dir: join(pod.podDir, 'containers', container),
      id: `${pod.uid}-${container}`,
      words,
      env,
      volumes,
      netns: pod.netns,
      hostname: pod.hostname,
    });
}

/** What the lab's kubelet keeps of each Pod it runs. */
interface PodRuntime {
  readonly uid: string;
  readonly namespace: string;
  readonly name: string;
  readonly node: string;
  readonly netns: string;
  readonly hostNetwork: boolean;
  readonly pids: { readonly name: string; pid(): number | undefined }[];
  readonly processes: ContainerProcess[];
  /** Its containers in the kubelet's order: init containers, sidecars, app containers. */
  readonly containers: PodContainers;
  readonly views: PodContainerView[];
  /** Its local-storage watch (idle when no container sets an ephemeral-storage limit). */
  readonly storage: StorageMonitor;
  /** Rewrites the pod's configMap volumes from the current ConfigMaps. */
  readonly refreshVolumes: (namespace: string, name: string) => void;
}

/** Writes a configMap volume's keys (or its items) as files: the directory its mountPath stands for. */
function writeConfigMapVolume(
  dir: string,
  volume: JsonObject,
  data: Record<string, string> | undefined,
): void {
  const cmName = str(child(volume, 'configMap'), 'name') ?? '';
  if (!data) throw new Error(`configmap "${cmName}" not found (volume ${str(volume, 'name') ?? ''})`);
  const items = arr(child(volume, 'configMap'), 'items');
  const files: [string, string][] =
    items.length > 0
      ? items.flatMap((it) => {
          const key = str(it, 'key') ?? '';
          return key in data ? [[str(it, 'path') ?? key, data[key] ?? ''] as [string, string]] : [];
        })
      : Object.entries(data);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  for (const [path, text] of files) {
    if (path.includes('..') || path.startsWith('/')) continue;
    const target = join(dir, path);
    // A rename, as the kubelet's atomic writer swaps ..data: a watcher never sees half a file.
    writeFileSync(`${target}.tmp`, text, { mode: 0o600 });
    renameSync(`${target}.tmp`, target);
  }
}

/** The pod's volumes as host paths (configMap and emptyDir under its state directory, hostPath as given). */
function volumeMappings(podObj: JsonObject, podDir: string, container: JsonObject): VolumeMapping[] {
  const volumes = new Map(
    arr(child(podObj, 'spec'), 'volumes').map((v) => [str(v, 'name') ?? '', v as JsonObject]),
  );
  return arr(container, 'volumeMounts').flatMap((m) => {
    const v = volumes.get(str(m, 'name') ?? '');
    const mountPath = str(m, 'mountPath');
    if (!v || !mountPath) return [];
    const hostPath = str(child(v, 'hostPath'), 'path');
    const dir = join(podDir, 'volumes', str(v, 'name') ?? '');
    const sub = str(m, 'subPath');
    const hostPathType = str(child(v, 'hostPath'), 'type');
    if (hostPath !== undefined) return [{ mountPath, hostPath, ...(hostPathType ? { hostPathType } : {}) }];
    if ('configMap' in v || 'emptyDir' in v) return [{ mountPath, hostPath: sub ? join(dir, sub) : dir }];
    return [];
  });
}

function restartPolicyOf(pod: Pod): RestartPolicy {
  const policy = pod.spec?.restartPolicy;
  return policy === 'Never' || policy === 'OnFailure' ? policy : 'Always';
}

/** A Pod as the kubelet starts it: where it runs, its state directory, its containers resolved to commands. */
interface PodStart {
  readonly pod: Pod;
  readonly podObj: JsonObject;
  readonly ns: string;
  readonly name: string;
  readonly podNamespace: string;
  readonly node: LabNodeLayout;
  readonly ip: string;
  readonly uid: string;
  readonly podDir: string;
  readonly hostNetwork: boolean;
  readonly netns: string;
  /** Init containers (plain and sidecars) then app containers, resolved. */
  readonly declared: readonly DeclaredContainer[];
}

class NamespaceKubelet implements NamespacePodLifecycle {
  private readonly now: () => number;
  private readonly servers = new Map<string, PodServerHandle>();
  /** By "namespace/name" of the Pod. */
  private readonly runtimes = new Map<string, PodRuntime>();
  /** One chain of work per namespace name: a Pod re-created under the same name waits for its predecessor's stop. */
  private readonly chains = new Map<string, Promise<void>>();
  private readonly waiters = new Set<() => void>();
  private closed = false;

  constructor(private readonly o: NamespacePodLifecycleOptions) {
    this.now = o.now ?? Date.now;
  }

  private timeScaleOf(node: string): number {
    return this.o.timeScaleFor?.(node) ?? 1;
  }

  /** Where the commands for a Pod on `node` run. */
  private runnerOf(node: string | undefined): CommandRunner {
    return (node !== undefined ? this.o.runnerFor?.(node) : undefined) ?? this.o.runner;
  }

  start(pod: Pod, report?: (status: PodStatusReport) => void): Promise<void> {
    const ns = this.nsOf(pod);
    return this.serial(ns, async () => {
      if (this.closed) throw new Error('the lab is shutting down');
      const s = this.prepare(pod, ns);
      if (!s.hostNetwork) {
        // A namespace left by a Pod of the same name (removed at its deadline while its stop still ran) goes first.
        const runner = this.runnerOf(s.node.name);
        await detachPod(runner, ns);
        const ips = podIPsOf(pod);
        await attachPod(runner, { namespace: ns, node: s.node, veth: podVethName(s.uid), ips });
        this.o.events?.added(ns, pod);
      }
      const views: PodContainerView[] = [];
      const containers = this.podContainers(s, views, report);
      const processes = containers.processes;
      const storage = this.storageMonitor(s, containers);
      this.runtimes.set(this.keyOf(pod), {
        uid: s.uid,
        namespace: s.podNamespace,
        name: s.name,
        node: s.node.name,
        netns: s.netns,
        hostNetwork: s.hostNetwork,
        pids: appFirst(s.declared).map(({ resolved: r }) => {
          const p = processes.find((x) => x.name === r.name);
          return { name: r.name, pid: () => (p ? p.pid() : this.servers.get(ns)?.pid) };
        }),
        processes,
        containers,
        views,
        storage,
        refreshVolumes: (cmNamespace, cmName) => this.writeVolumes(s, cmNamespace, cmName),
      });
      storage.start();
      // Init containers first, then the app containers (at once, or in the background while init containers run).
      await containers.begin();
      this.o.logger.v(2, () => ({
        msg: 'pod started',
        fields: { pod: s.name, ns: s.netns, ip: s.ip, node: s.node.name, processes: processes.length },
      }));
    });
  }

  stop(pod: Pod): Promise<void> {
    const ns = this.nsOf(pod);
    const deadline = Date.parse(pod.metadata.deletionTimestamp ?? '');
    const key = this.keyOf(pod);
    return this.serial(ns, async () => {
      const rt = this.runtimes.get(key);
      const same = rt !== undefined && rt.uid === (pod.metadata.uid ?? ns);
      if (same) {
        // Processes get SIGTERM at once and the rest of the grace period to exit, as a container runtime gives.
        const grace = Number.isNaN(deadline) ? 1000 : Math.max(1000, deadline - this.now());
        rt.storage.stop();
        await rt.containers.stop(grace);
        for (const p of rt.processes) p.removeWritableLayer();
      }
      if (!Number.isNaN(deadline) && this.servers.has(ns)) await this.sleepUntil(deadline);
      if (this.closed) return;
      if (same) this.runtimes.delete(key);
      const server = this.servers.get(ns);
      this.servers.delete(ns);
      await server?.stop(1000);
      if (pod.spec?.hostNetwork !== true) {
        await detachPod(this.runnerOf(pod.spec?.nodeName), ns);
        this.o.events?.removed(ns);
      }
      this.o.logger.v(2, () => ({ msg: 'pod stopped', fields: { pod: pod.metadata.name, ns } }));
    });
  }

  containers(podNamespace: string, podName: string): readonly PodContainerView[] | undefined {
    return this.runtimes.get(`${podNamespace}/${podName}`)?.views;
  }

  runningPods(): RunningPod[] {
    return [...this.runtimes.values()].map((rt) => ({
      namespace: rt.namespace,
      name: rt.name,
      node: rt.node,
      hostNetwork: rt.hostNetwork,
      netns: rt.netns,
      containers: rt.pids,
    }));
  }

  exec(
    podNamespace: string,
    podName: string,
    container: string,
    command: readonly string[],
    session: StreamSession,
  ): void {
    const rt = this.runtimes.get(`${podNamespace}/${podName}`);
    const view = rt?.views.find((v) => v.name === container);
    if (!rt || !view)
      return session.finish({ error: `container ${container} of pod ${podName} is not running` });
    void execInNamespace(view.netns, command, session);
  }

  attach(podNamespace: string, podName: string, container: string, session: StreamSession): void {
    const rt = this.runtimes.get(`${podNamespace}/${podName}`);
    const p = rt?.processes.find((x) => x.name === container);
    if (p) return p.attach(session);
    // The pod server: its request log from now on, for as long as the pod runs.
    const log = rt?.views.find((v) => v.name === container)?.logFile(false);
    const server = this.servers.get(rt?.netns ?? '');
    if (!rt || log === undefined || !server)
      return session.finish({ error: `container ${container} of pod ${podName} is not running` });
    followLog(
      log,
      session,
      server.exited.then((r) => r.code),
    );
  }

  refreshConfigMap(namespace: string, name: string): void {
    for (const rt of this.runtimes.values()) {
      try {
        rt.refreshVolumes(namespace, name);
      } catch (e) {
        this.o.logger.warn('cannot refresh a configMap volume', {
          configMap: `${namespace}/${name}`,
          error: String(e),
        });
      }
    }
  }

  namespaces(): string[] {
    return [...this.servers.keys()];
  }

  close(): void {
    this.closed = true;
    for (const w of [...this.waiters]) w();
  }

  async stopProcesses(graceMs: number): Promise<void> {
    await Promise.all([...this.runtimes.values()].map((rt) => rt.containers.stop(graceMs)));
  }

  /** Where the Pod runs and what it runs, its state directory and volumes made; throws what is wrong with it. */
  private prepare(pod: Pod, ns: string): PodStart {
    const podObj = pod as unknown as JsonObject;
    const name = pod.metadata.name ?? '';
    const podNamespace = pod.metadata.namespace ?? 'default';
    const nodeName = pod.spec?.nodeName;
    const node = this.o.layout.nodes.find((n) => n.name === nodeName);
    if (!node) throw new Error(`pod ${name}: node ${nodeName ?? '(none)'} is not a lab node`);
    const ip = pod.status?.podIP;
    if (!ip) throw new Error(`pod ${name}: no podIP`);
    const uid = pod.metadata.uid ?? ns;
    // Absolute: containers run in their writable layers, and their runtimes' bundles are found from there.
    const podDir = resolve(this.o.podStateDir, `${podNamespace}_${name}_${uid}`);
    mkdirSync(podDir, { recursive: true, mode: 0o700 });
    // The volumes before the containers: a container's mounts are resolved from what they hold.
    this.writeVolumes({ podObj, podDir, podNamespace });
    const hostNetwork = pod.spec?.hostNetwork === true;
    const netns = hostNetwork ? node.namespace : ns;
    const launcher = this.o.image
      ? imageLauncher(this.o.image, { podDir, netns, hostname: node.name, uid })
      : undefined;
    const declared = declaredContainers(podObj, (c) =>
      resolveContainer(podObj, c, volumeMappings(podObj, podDir, c), launcher),
    );
    const needsServer = declared.some((d) => d.role !== 'init' && d.resolved.argv === undefined);
    // A host-network pod shares its node's namespace: the lab runs only commands there, never a pod server
    // (its ports would collide with the node's).
    if (hostNetwork && needsServer)
      throw new Error(`pod ${name}: hostNetwork pods must name a command for every container in the lab`);
    return {
      pod,
      podObj,
      ns,
      name,
      podNamespace,
      node,
      ip,
      uid,
      podDir,
      hostNetwork,
      netns,
      declared,
    };
  }

  /**
   * The Pod's volumes under its state directory: every configMap and emptyDir one, or (given a ConfigMap) only
   * the configMap volumes of that ConfigMap.
   */
  private writeVolumes(
    s: Pick<PodStart, 'podObj' | 'podDir' | 'podNamespace'>,
    cmNamespace?: string,
    cmName?: string,
  ): void {
    if (cmNamespace !== undefined && cmNamespace !== s.podNamespace) return;
    for (const v of arr(child(s.podObj, 'spec'), 'volumes')) {
      const volume = v as JsonObject;
      const dir = join(s.podDir, 'volumes', str(volume, 'name') ?? '');
      if ('configMap' in volume) {
        const name = str(child(volume, 'configMap'), 'name') ?? '';
        if (cmName === undefined || name === cmName)
          writeConfigMapVolume(dir, volume, this.o.configMaps?.()(s.podNamespace, name));
      } else if ('emptyDir' in volume && cmName === undefined)
        mkdirSync(dir, { recursive: true, mode: 0o700 });
    }
  }

  /** The pod server in the Pod's namespace, answering for the containers that name no command. */
  private async startPodServer(s: PodStart): Promise<PodContainerView> {
    const serverName =
      s.declared.find((d) => d.role !== 'init' && d.resolved.argv === undefined)?.resolved.name ??
      'pod-server';
    const logDir = join(s.podDir, 'containers', serverName);
    mkdirSync(logDir, { recursive: true, mode: 0o700 });
    const ports = podPorts(s.pod);
    const server = await startPodServerIn(this.runnerOf(s.node.name), s.ns, {
      name: s.name,
      tcpPorts: ports.tcp,
      udpPorts: ports.udp,
      stateDir: this.o.podStateDir,
      maxLifetimeSeconds: POD_SERVER_LIFETIME_SECONDS,
      readyTimeoutMs: 60_000 * this.timeScaleOf(s.node.name),
      logFile: join(logDir, '0.log'),
    });
    this.servers.set(s.ns, server);
    return {
      name: serverName,
      restartCount: 0,
      netns: s.netns,
      logFile: (previous) => (previous ? undefined : join(logDir, '0.log')),
    };
  }

  /**
   * The Pod's containers in the kubelet's order, a process for each that names a command (not started yet); each
   * one's view, and the pod server's once it runs, is added to `views`.
   */
  private podContainers(
    s: PodStart,
    views: PodContainerView[],
    report: ((status: PodStatusReport) => void) | undefined,
  ): PodContainers {
    const names = appFirst(s.declared);
    const order = (v: PodContainerView): number => names.findIndex((d) => d.resolved.name === v.name);
    const addView = (v: PodContainerView): void => {
      views.push(v);
      views.sort((a, b) => order(a) - order(b));
    };
    return new PodContainers({
      containers: s.declared,
      restartPolicy: restartPolicyOf(s.pod),
      process: (d, policy, changed) => {
        const p = this.containerProcess(s, d, policy, changed);
        addView({
          name: p.name,
          get restartCount() {
            return p.restartCount;
          },
          netns: s.netns,
          logFile: (previous) => p.logFile(previous),
        });
        return p;
      },
      startServer: async () => addView(await this.startPodServer(s)),
      startTime: s.pod.status?.startTime ?? '',
      report: (status) => report?.(status),
      failed: (e) => this.o.logger.warn('pod failed to start', { pod: s.name, error: String(e) }),
    });
  }

  /** The eviction manager's watch of the Pod's containers that run a command, and of its emptyDir volumes. */
  private storageMonitor(s: PodStart, containers: PodContainers): StorageMonitor {
    const key = this.keyOf(s.pod);
    // The containers that keep running (app containers, sidecars): a plain init container has finished by then.
    const watched = s.declared.filter((d) => d.role !== 'init');
    return new StorageMonitor({
      clock: this.o.clock ?? systemClock,
      containers: watched.flatMap((d) => {
        const p = containers.processes.find((x) => x.name === d.resolved.name);
        const limit = storageLimitOf(d.spec);
        return p ? [{ name: p.name, dir: p.dir, ...(limit ? { limit } : {}) }] : [];
      }),
      volumeDirs: emptyDirNames(s.podObj).map((v) => join(s.podDir, 'volumes', v)),
      evict: (message) => {
        if (this.runtimes.get(key)?.uid !== s.uid) return;
        this.o.logger.info('evicting pod', { pod: key, message });
        this.evict(s, containers, message).catch((e: unknown) =>
          this.o.logger.warn('evicting a pod failed', { pod: key, error: String(e) }),
        );
      },
    });
  }

  /**
   * Ends everything an evicted Pod runs, as upstream's kubelet kills its sandbox: its containers, its pod server,
   * and what their shells left behind (`sh -c "…; sleep 10000"` loses only the shell to SIGTERM). Its namespace
   * stays until the Pod is deleted.
   */
  private async evict(s: PodStart, containers: PodContainers, message: string): Promise<void> {
    await containers.evict(message, EVICTION_GRACE_MS);
    // Deleted (and perhaps made again under the same namespace name) meanwhile: the stop has done the rest.
    if (s.hostNetwork || this.runtimes.get(this.keyOf(s.pod))?.uid !== s.uid) return;
    const server = this.servers.get(s.ns);
    this.servers.delete(s.ns);
    await server?.stop(EVICTION_GRACE_MS);
    await killNamespaceProcesses(this.runnerOf(s.node.name), s.ns, 'KILL');
  }

  private containerProcess(
    s: PodStart,
    d: DeclaredContainer,
    policy: RestartPolicy,
    changed: () => void,
  ): ContainerProcess {
    const r = d.resolved;
    return new ContainerProcess(
      this.runnerOf(s.node.name),
      s.netns,
      { ...r, argv: r.argv ?? [] },
      s.podDir,
      policy,
      `${s.name}_${s.podNamespace}(${s.uid})`,
      { started: (c) => this.o.containerStarted?.(s.pod, c), changed },
      this.o.logger,
      scaledProbe(readinessProbeOf(d.spec), this.timeScaleOf(s.node.name)),
      preStopOf(d.spec),
    );
  }

  private serial(ns: string, work: () => Promise<void>): Promise<void> {
    const prev = this.chains.get(ns) ?? Promise.resolve();
    const next = prev.catch(() => undefined).then(work);
    const settled = next.catch(() => undefined);
    this.chains.set(ns, settled);
    void settled.then(() => {
      if (this.chains.get(ns) === settled) this.chains.delete(ns);
    });
    return next;
  }

  /** Resolves at `deadline`, or at once when the lifecycle is closed (then or later). */
  private sleepUntil(deadline: number): Promise<void> {
    return new Promise((resolve) => {
      const wait = Math.max(0, deadline - this.now());
      if (this.closed || wait === 0) return resolve();
      const done = (): void => {
        clearTimeout(t);
        this.waiters.delete(done);
        resolve();
      };
      const t = setTimeout(done, wait);
      this.waiters.add(done);
    });
  }

  private nsOf(pod: Pod): string {
    return podNamespaceName(
      this.o.layout.prefix,
      pod.metadata.namespace ?? 'default',
      pod.metadata.name ?? '',
    );
  }

  private keyOf(pod: Pod): string {
    return `${pod.metadata.namespace ?? 'default'}/${pod.metadata.name ?? ''}`;
  }
}

export function namespacePodLifecycle(o: NamespacePodLifecycleOptions): NamespacePodLifecycle {
  return new NamespaceKubelet(o);
}
