// The parts startLab (lab.ts) wires together, each with the state it keeps: every namespace's /etc files (a pod's
// resolv.conf naming the cluster DNS; the nodes' hosts files kept to the Services), each node's kube-proxy process
// as its DaemonSet pod runs it, `kubectl top`'s process groups, and the node copies of the kube-proxy ConfigMap.
import { mkdirSync, rmSync, symlinkSync } from 'node:fs';
import type { CommandRunner } from 'kube-proxy-ts/netfilter/command.js';
import type { Logger } from 'kube-proxy-ts/util/logger.js';
import { namespacePids } from '@kube-proxy-ts/netns/index.js';
import type { ApiServer } from '../apiserver/index.js';
import { child, str } from '../apiserver/json.js';
import { resourceByKind } from '../apiserver/resources.js';
import type { Pod } from '../apiserver/types.js';
import type { ContainerProcess } from './containers.js';
import { labClusterDnsIP } from './cluster-dns.js';
import {
  CLUSTER_DOMAIN,
  HostsFiles,
  podResolvConf,
  serviceName,
  type HostsTarget,
  type ServiceName,
} from './hosts.js';
import { KUBE_PROXY_LABELS } from './kube-proxy-daemonset.js';
import type { LabLayout, LabPaths } from './layout.js';
import type { ConfigMapLookup, PodEvents, RunningPod } from './pod-lifecycle.js';
import { CONFIGMAP_NAME, CONFIGMAP_NAMESPACE, configFromConfigMap } from './proxy-config.js';
import { UsageSampler } from './usage.js';

export function serviceNames(server: ApiServer): ServiceName[] {
  return server.store.list(resourceByKind('Service')).flatMap((s) => serviceName(s) ?? []);
}

/**
 * Every lab namespace's /etc files (hosts.ts): a pod's hosts file and resolv.conf are written once, the moment its
 * namespace exists (they name the pod and the cluster DNS, which do not change); the client's and each node's
 * hosts file follows the Services, debounced so that a burst writes once.
 */
export class LabHosts implements PodEvents {
  private readonly files = new HostsFiles();
  private server: ApiServer | undefined;
  private timer: NodeJS.Timeout | undefined;
  private unsubscribe: (() => void) | undefined;

  constructor(
    private readonly layout: LabLayout,
    private readonly logger: Logger,
  ) {}

  added(ns: string, pod: Pod): void {
    const spec = child(pod, 'spec');
    const name = str(spec, 'hostname') ?? pod.metadata.name ?? ns;
    const podNamespace = pod.metadata.namespace ?? 'default';
    const subdomain = str(spec, 'subdomain');
    const resolvConf = podResolvConf(pod, this.server ? labClusterDnsIP(this.server) : undefined);
    const target: HostsTarget = {
      netns: ns,
      podNamespace,
      self: {
        name,
        ip: pod.status?.podIP ?? '127.0.0.1',
        ...(subdomain ? { fqdn: `${name}.${subdomain}.${podNamespace}.svc.${CLUSTER_DOMAIN}` } : {}),
      },
      ...(resolvConf ? { resolvConf } : {}),
    };
    // At once, not debounced: `ip netns exec` binds a file only if it exists when a process starts, and a pod's
    // command (kubectl run … -- curl http://web.svc/) starts right after this.
    this.write(target);
  }

  removed(ns: string): void {
    this.files.remove(ns);
  }

  /** From now on the nodes' and the client's files follow `server`'s Services; each is written now. */
  follow(server: ApiServer): void {
    this.server = server;
    this.unsubscribe = server.store.subscribe((ev) => {
      if (ev.resource.names.kind !== 'Service' || this.timer) return;
      this.timer = setTimeout(() => {
        this.timer = undefined;
        this.writeHosts();
      }, 50);
    });
    this.writeHosts();
  }

  close(): void {
    this.unsubscribe?.();
    if (this.timer) clearTimeout(this.timer);
  }

  private writeHosts(): void {
    if (!this.server) return;
    const services = serviceNames(this.server);
    const targets: HostsTarget[] = [
      { netns: this.layout.clientNamespace },
      ...this.layout.nodes.map((n) => ({ netns: n.namespace })),
    ];
    for (const t of targets) this.write(t, services);
  }

  private write(target: HostsTarget, services: readonly ServiceName[] = []): void {
    try {
      this.files.write(target, services);
    } catch (e) {
      this.logger.warn('cannot write /etc/netns files', { netns: target.netns, error: String(e) });
    }
  }
}

/** The node's kube-proxy, as its DaemonSet pod's container runs it. */
export interface ProxyView {
  /** How many kube-proxy processes this node has started (every pod, every restart). */
  readonly starts: number;
  readonly running: boolean;
  pid(): number | undefined;
}

/**
 * Each node's kube-proxy: the container process of its DaemonSet pod. Its PID file and log are linked at the
 * node's paths (`lab status`, the walkthrough's `tail`), whichever pod runs it now.
 */
export class ProxyProcesses {
  private readonly byNode = new Map<string, { starts: number; current?: ContainerProcess }>();

  constructor(
    private readonly paths: LabPaths,
    private readonly logger: Logger,
  ) {}

  /** The pod lifecycle's containerStarted: only the kube-proxy DaemonSet's containers count. */
  containerStarted(pod: Pod, container: ContainerProcess): void {
    const labels = pod.metadata.labels ?? {};
    if (pod.metadata.namespace !== CONFIGMAP_NAMESPACE || labels['k8s-app'] !== KUBE_PROXY_LABELS['k8s-app'])
      return;
    const node = pod.spec?.nodeName ?? '';
    const entry = this.byNode.get(node) ?? { starts: 0 };
    entry.starts++;
    entry.current = container;
    this.byNode.set(node, entry);
    for (const [link, target] of [
      [this.paths.proxyPidFile(node), container.pidFile],
      [this.paths.proxyLog(node), container.logFile()],
    ] as const) {
      if (target === undefined) continue;
      try {
        mkdirSync(this.paths.nodeDir(node), { recursive: true, mode: 0o700 });
        rmSync(link, { force: true });
        symlinkSync(target, link);
      } catch (e) {
        this.logger.warn('cannot link the proxy file', { link, error: String(e) });
      }
    }
  }

  view(node: string): ProxyView {
    const byNode = this.byNode;
    return {
      get starts() {
        return byNode.get(node)?.starts ?? 0;
      },
      get running() {
        return byNode.get(node)?.current?.running ?? false;
      },
      pid: () => byNode.get(node)?.current?.pid(),
    };
  }
}

/** A ConfigMap's string data as a configMap volume gets it, from `server`'s store once there is one. */
export function configMapLookup(server: () => ApiServer | undefined): () => ConfigMapLookup {
  return () => (namespace, name) => {
    const cm = server()?.store.get(resourceByKind('ConfigMap'), namespace, name);
    if (!cm) return undefined;
    const data: Record<string, string> = {};
    for (const [k, v] of Object.entries(child(cm, 'data'))) if (typeof v === 'string') data[k] = v;
    return data;
  };
}

/**
 * `kubectl top`'s process groups: each pod container's processes (a pod server's namespace may hold helpers too:
 * the rest of the namespace counts for its first container), and each node's (its namespace's and its pods').
 */
export function labUsageSampler(
  runner: CommandRunner,
  layout: LabLayout,
  runningPods: () => readonly RunningPod[],
  /** Nodes whose processes are not this host's (guest nodes): no usage for them or their Pods. */
  elsewhere: ReadonlySet<string> = new Set(),
): UsageSampler {
  const pidsOf = async (netns: string): Promise<number[]> => namespacePids(runner, netns).catch(() => []);
  return new UsageSampler(async () => {
    const groups = new Map<string, number[]>();
    const byNode = new Map<string, number[]>();
    for (const n of layout.nodes) if (!elsewhere.has(n.name)) byNode.set(n.name, await pidsOf(n.namespace));
    for (const p of runningPods()) {
      if (elsewhere.has(p.node)) continue;
      const own = p.containers.flatMap((c) => c.pid() ?? []);
      const inNs = p.hostNetwork ? [] : await pidsOf(p.netns);
      p.containers.forEach((c, i) => {
        const pid = c.pid();
        const rest = i === 0 ? inNs.filter((x) => !own.includes(x)) : [];
        groups.set(`pod/${p.namespace}/${p.name}/${c.name}`, [...(pid !== undefined ? [pid] : []), ...rest]);
      });
      byNode.get(p.node)?.push(...own, ...inNs);
    }
    for (const [node, pids] of byNode) groups.set(`node/${node}`, pids);
    return groups;
  });
}

/**
 * The node copies of kube-system/kube-proxy's config.conf follow the ConfigMap; `changed` is told of each new
 * text after the copies are written. Returns the unsubscribe.
 */
export function followProxyConfigMap(
  server: ApiServer,
  initial: string,
  writeCopies: (text: string) => void,
  changed: () => void,
): () => void {
  let current = initial;
  return server.store.subscribe((ev) => {
    if (ev.resource.names.kind !== 'ConfigMap' || ev.type === 'DELETED') return;
    const meta = child(ev.object, 'metadata');
    if (str(meta, 'namespace') !== CONFIGMAP_NAMESPACE || str(meta, 'name') !== CONFIGMAP_NAME) return;
    const text = configFromConfigMap(ev.object);
    if (text === undefined || text === current) return;
    current = text;
    writeCopies(text);
    changed();
  });
}
