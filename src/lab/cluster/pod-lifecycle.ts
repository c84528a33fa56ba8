// The lab's kubelet: the PodLifecycle plug backed by network namespaces. start() gives the Pod a namespace on its
// node's bridge and runs the pod server there (HTTP answers the pod's name; UDP echoes it), resolving once the
// server listens; stop() lets the Pod stay terminating for its grace period (its server keeps answering, as a
// draining container would), then kills the server and removes the namespace.
import type { CommandRunner } from '../../netfilter/command.js';
import type { Logger } from '../../util/logger.js';
import type { Pod } from '../apiserver/types.js';
import type { PodLifecycle } from '../controllers/pod-lifecycle.js';
import { startPodServerIn, type PodServerHandle } from '../netns/pod-process.js';
import { podNamespaceName, podVethName, type LabLayout } from './layout.js';
import { attachPod, detachPod } from './network.js';

/** The port the pod server listens on when the Pod declares none (TCP and UDP). */
export const DEFAULT_POD_PORT = 8080;
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
  for (const c of pod.spec?.containers ?? []) {
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

export interface NamespacePodLifecycleOptions {
  readonly runner: CommandRunner;
  readonly layout: LabLayout;
  /** For the pod servers' ready files. */
  readonly podStateDir: string;
  readonly logger: Logger;
  readonly events?: PodEvents;
  /** Real time; the lab's API server runs on the real clock too. */
  readonly now?: () => number;
}

export interface NamespacePodLifecycle extends PodLifecycle {
  /** Pod namespaces that exist now. */
  namespaces(): string[];
  /** Stops waiting for grace periods (the lab is going down; its sweep removes the namespaces). */
  close(): void;
}

export function namespacePodLifecycle(o: NamespacePodLifecycleOptions): NamespacePodLifecycle {
  const now = o.now ?? Date.now;
  const servers = new Map<string, PodServerHandle>();
  // One chain of work per namespace name: a Pod re-created under the same name waits for its predecessor's stop.
  const chains = new Map<string, Promise<void>>();
  const timers = new Set<NodeJS.Timeout>();
  const waiters = new Set<() => void>();
  let closed = false;

  const serial = (ns: string, work: () => Promise<void>): Promise<void> => {
    const prev = chains.get(ns) ?? Promise.resolve();
    const next = prev.catch(() => undefined).then(work);
    const settled = next.catch(() => undefined);
    chains.set(ns, settled);
    void settled.then(() => {
      if (chains.get(ns) === settled) chains.delete(ns);
    });
    return next;
  };

  const sleepUntil = (deadline: number): Promise<void> =>
    new Promise((resolve) => {
      const wait = Math.max(0, deadline - now());
      if (closed || wait === 0) return resolve();
      const done = (): void => {
        clearTimeout(t);
        timers.delete(t);
        waiters.delete(done);
        resolve();
      };
      const t = setTimeout(done, wait);
      timers.add(t);
      waiters.add(done);
    });

  const nsOf = (pod: Pod): string =>
    podNamespaceName(o.layout.prefix, pod.metadata.namespace ?? 'default', pod.metadata.name ?? '');

  return {
    start(pod) {
      const ns = nsOf(pod);
      return serial(ns, async () => {
        if (closed) throw new Error('the lab is shutting down');
        // A host-network pod would share the node's namespace; the lab's pods each have their own.
        if (pod.spec?.hostNetwork === true)
          throw new Error(`pod ${pod.metadata.name ?? ''}: hostNetwork pods are not supported by the lab`);
        const nodeName = pod.spec?.nodeName;
        const node = o.layout.nodes.find((n) => n.name === nodeName);
        if (!node)
          throw new Error(`pod ${pod.metadata.name ?? ''}: node ${nodeName ?? '(none)'} is not a lab node`);
        const ip = pod.status?.podIP;
        if (!ip) throw new Error(`pod ${pod.metadata.name ?? ''}: no podIP`);
        // A namespace left by a Pod of the same name (removed at its deadline while its stop still ran) goes first.
        await detachPod(o.runner, ns);
        await attachPod(o.runner, { namespace: ns, node, veth: podVethName(pod.metadata.uid ?? ns), ip });
        o.events?.added(ns, pod);
        const ports = podPorts(pod);
        const server = await startPodServerIn(o.runner, ns, {
          name: pod.metadata.name ?? ns,
          tcpPorts: ports.tcp,
          udpPorts: ports.udp,
          stateDir: o.podStateDir,
          maxLifetimeSeconds: POD_SERVER_LIFETIME_SECONDS,
          readyTimeoutMs: 60_000,
        });
        servers.set(ns, server);
        o.logger.v(2, () => ({
          msg: 'pod started',
          fields: { pod: pod.metadata.name, ns, ip, node: node.name },
        }));
      });
    },
    stop(pod) {
      const ns = nsOf(pod);
      const deadline = Date.parse(pod.metadata.deletionTimestamp ?? '');
      return serial(ns, async () => {
        if (!Number.isNaN(deadline)) await sleepUntil(deadline);
        if (closed) return;
        const server = servers.get(ns);
        servers.delete(ns);
        await server?.stop(1000);
        await detachPod(o.runner, ns);
        o.events?.removed(ns);
        o.logger.v(2, () => ({ msg: 'pod stopped', fields: { pod: pod.metadata.name, ns } }));
      });
    },
    namespaces: () => [...servers.keys()],
    close() {
      closed = true;
      for (const w of [...waiters]) w();
    },
  };
}
