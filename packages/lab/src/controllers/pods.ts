// The scheduler and kubelet of the lab, in one small controller: Pods without a node get one (scheduling.ts),
// Pods on a node get an address from the node's podCIDR and are started through the PodLifecycle plug; deleted
// Pods are stopped and removed when the plug says they are gone or their grace period ends.
import type { Clock, TimerHandle } from 'kube-proxy-ts/util/clock.js';
import type { Logger } from 'kube-proxy-ts/util/logger.js';
import type { Node } from 'kube-proxy-ts/api/objects.js';
import { nodeIPs, nodePodCIDRs } from 'kube-proxy-ts/model/node-facts.js';
import { arr, child, cloneJson, str, type JsonObject } from '../apiserver/json.js';
import { bigIntToIp, cidrContains, cidrSize, parseCidr } from '../apiserver/ipnet.js';
import { rfc3339, type Registry } from '../apiserver/registry.js';
import { resourceByKind } from '../apiserver/resources.js';
import { initContainersOf, isRestartableInitContainer, sidecarNames } from '../apiserver/init-containers.js';
import { storedPod } from '../apiserver/types.js';
import { recordScheduled, type ControlPlaneEvents } from './events.js';
import type { NodePicker } from './node-picker.js';
import type { PodLifecycle, PodStatusReport } from './pod-lifecycle.js';
import { WorkQueue } from './work-queue.js';

const POD = resourceByKind('Pod');
const NODE = resourceByKind('Node');
const meta = (o: unknown): JsonObject => child(o, 'metadata');
const keyOf = (o: unknown): string => `${str(meta(o), 'namespace') ?? ''}/${str(meta(o), 'name') ?? ''}`;

export interface PodControllerOptions {
  readonly registry: Registry;
  readonly clock: Clock;
  readonly lifecycle: PodLifecycle;
  readonly picker: NodePicker;
  readonly logger: Logger;
  /** The scheduler's and the kubelet's event recorders. */
  readonly events: ControlPlaneEvents;
}

export function isPodReady(pod: unknown): boolean {
  return arr(child(pod, 'status'), 'conditions').some(
    (c) => str(c, 'type') === 'Ready' && str(c, 'status') === 'True',
  );
}

/**
 * ContainersReady (and Ready) as the kubelet decides them from its report: the Pod is initialized and running,
 * every app container is ready, and so is every sidecar init container (upstream's GenerateContainersReadyCondition
 * counts restartable init containers: an unready sidecar keeps the Pod out of its Services' ready endpoints).
 */
export function reportedReady(pod: unknown, r: PodStatusReport): boolean {
  if (r.phase !== 'Running' || r.initialized === false || r.containerStatuses.length === 0) return false;
  const inits = r.initContainerStatuses ?? [];
  const sidecarsReady = [...sidecarNames(pod)].every((name) =>
    inits.some((c) => str(c, 'name') === name && c.ready === true),
  );
  return sidecarsReady && r.containerStatuses.every((c) => c.ready === true);
}

/**
 * An init container's status in a Pod a plug reports ready at once (no report of its own): a sidecar runs and is
 * ready, any other has completed.
 */
function doneInitStatus(c: JsonObject, now: string): JsonObject {
  const common = { name: str(c, 'name') ?? '', image: str(c, 'image') ?? '', imageID: '', restartCount: 0 };
  if (isRestartableInitContainer(c))
    return { ...common, ready: true, started: true, state: { running: { startedAt: now } } };
  const terminated = { exitCode: 0, reason: 'Completed', startedAt: now, finishedAt: now };
  return { ...common, ready: true, started: false, state: { terminated } };
}

export class PodController {
  readonly queue: WorkQueue;
  private readonly started = new Set<string>();
  /** The plug's latest report per Pod uid, and whether start() has resolved (the Pod was marked running). */
  private readonly reports = new Map<string, PodStatusReport>();
  private readonly running = new Set<string>();
  private readonly stopping = new Map<string, TimerHandle | undefined>();
  /**
   * Every Pod started on the plug whose stop has not finished, by uid: its key, node and address. The address
   * stays taken until then (as a CNI plugin's IPAM frees one only on the sandbox's teardown), even after the API
   * object is gone: two pod namespaces with one address on a node's bridge would answer each other's traffic.
   * A Pod removed without a grace period (`kubectl delete --grace-period=0 --force`) is found here and stopped.
   */
  private readonly sandboxes = new Map<
    string,
    {
      readonly key: string;
      readonly node: string;
      readonly ip: string;
      readonly pod: JsonObject;
      stopRequested: boolean;
    }
  >();
  /** Keys of Pods that fit no node when last tried: tried again when the cluster changes. */
  private readonly unschedulable = new Set<string>();
  /** Per node and pod CIDR ("node cidr"), the offset in it of the address given out last. */
  private readonly lastAllocated = new Map<string, bigint>();
  private readonly unsubscribe: () => void;
  private stopped = false;

  constructor(private readonly o: PodControllerOptions) {
    this.queue = new WorkQueue('pods', (k) => this.reconcile(k), o.logger);
    this.unsubscribe = o.registry.store.subscribe((ev) => {
      const kind = ev.resource.names.kind;
      if (kind === 'Pod') this.queue.add(keyOf(ev.object));
      if (this.unschedulable.size === 0) return;
      // What can make room for an unschedulable Pod: a Node's change (labels, taints, cordon), a bound Pod's
      // (anti-affinity), a namespace's labels (namespaceSelector). kube-scheduler requeues on the same events.
      const bound = kind === 'Pod' && (str(child(ev.object, 'spec'), 'nodeName') ?? '') !== '';
      if (kind === 'Node' || kind === 'Namespace' || bound || (kind === 'Pod' && ev.type === 'DELETED'))
        for (const k of this.unschedulable) this.queue.add(k);
    });
    for (const p of o.registry.store.list(POD)) this.queue.add(keyOf(p));
  }

  private get(key: string): JsonObject | undefined {
    const [ns = '', name = ''] = key.split('/');
    return this.o.registry.store.get(POD, ns, name);
  }

  private reconcile(key: string): void {
    const pod = this.get(key);
    const uid = str(meta(pod), 'uid') ?? '';
    // Sandboxes of this key whose Pod left the store without being stopped (deleted with grace 0).
    for (const [sandboxUid, s] of this.sandboxes)
      if (s.key === key && sandboxUid !== uid && !s.stopRequested) this.stopRemoved(sandboxUid, s);
    if (!pod || str(meta(pod), 'deletionTimestamp')) this.unschedulable.delete(key);
    if (!pod) return;
    if (str(meta(pod), 'deletionTimestamp')) return this.terminate(key, uid, pod);
    const nodeName = str(child(pod, 'spec'), 'nodeName');
    if (!nodeName) return this.schedule(pod);
    this.unschedulable.delete(key);
    const status = child(pod, 'status');
    const phase = str(status, 'phase');
    if (phase !== 'Pending' || this.started.has(uid)) return;
    if (!str(status, 'podIP')) return this.assignAddress(pod, nodeName);
    this.started.add(uid);
    this.containerEvents(pod, nodeName, 'start');
    this.sandboxes.set(uid, {
      key,
      node: nodeName,
      ip: str(status, 'podIP') ?? '',
      pod,
      stopRequested: false,
    });
    this.o.lifecycle
      .start(storedPod(pod), (r) => this.report(key, uid, r))
      .then(
        () => this.markRunning(key, uid),
        (e: unknown) => this.markFailed(key, uid, String(e)),
      );
  }

  private schedule(pod: JsonObject): void {
    const key = keyOf(pod);
    const { node, message } = this.o.picker.pick(pod);
    if (node === undefined) {
      this.unschedulable.add(key);
      return this.reportUnschedulable(pod, message);
    }
    this.unschedulable.delete(key);
    const next = cloneJson(pod);
    next.spec = { ...child(next, 'spec'), nodeName: node };
    const r = this.o.registry.update(
      POD,
      str(meta(pod), 'namespace') ?? '',
      str(meta(pod), 'name') ?? '',
      next,
    );
    if (!r.ok) this.o.logger.warn('cannot schedule pod', { pod: keyOf(pod), error: r.error.message });
    else recordScheduled(this.o.events.scheduler, r.value, node);
  }

  /**
   * A Pod no node fits stays Pending with upstream's PodScheduled=False/Unschedulable condition and a
   * FailedScheduling event, both carrying the scheduler's message. Written only when the message changes: the
   * retries (on every Node and bound Pod change) would otherwise rewrite the same status over and over.
   */
  private reportUnschedulable(pod: JsonObject, message: string): void {
    const status = child(pod, 'status');
    const old = arr(status, 'conditions').find((c) => str(c, 'type') === 'PodScheduled');
    if (
      str(old, 'status') === 'False' &&
      str(old, 'reason') === 'Unschedulable' &&
      str(old, 'message') === message
    )
      return;
    const now = rfc3339(this.o.clock.now());
    const condition = {
      type: 'PodScheduled',
      status: 'False',
      lastProbeTime: null,
      lastTransitionTime: str(old, 'status') === 'False' ? (str(old, 'lastTransitionTime') ?? now) : now,
      reason: 'Unschedulable',
      message,
    };
    const others = arr(status, 'conditions').filter((c) => str(c, 'type') !== 'PodScheduled');
    this.writeStatus(pod, { ...status, phase: 'Pending', conditions: [...others, condition] });
    this.o.events.scheduler.event(pod, { type: 'Warning', reason: 'FailedScheduling', message });
  }

  /**
   * The kubelet's events for each container (upstream kuberuntime_container.go): at start the image (the lab has
   * none to pull, so "already present", as for an IfNotPresent image on the node), Created, Started; at stop,
   * Killing. The plug starts the containers right after this, so the events say what is happening.
   */
  private containerEvents(pod: JsonObject, node: string, what: 'start' | 'stop'): void {
    const kubelet = this.o.events.kubelet;
    const all = [
      ...initContainersOf(pod).map((c) => ({ c, field: 'initContainers' })),
      ...arr(child(pod, 'spec'), 'containers').map((c) => ({ c, field: 'containers' })),
    ];
    for (const { c, field } of all) {
      const name = str(c, 'name') ?? '';
      const at = { type: 'Normal', fieldPath: `spec.${field}{${name}}`, host: node } as const;
      if (what === 'stop') {
        kubelet.event(pod, { ...at, reason: 'Killing', message: `Stopping container ${name}` });
        continue;
      }
      const image = JSON.stringify(str(c, 'image') ?? '');
      kubelet.event(pod, {
        ...at,
        reason: 'Pulled',
        message: `Container image ${image} already present on machine`,
      });
      kubelet.event(pod, { ...at, reason: 'Created', message: `Created container: ${name}` });
      kubelet.event(pod, { ...at, reason: 'Started', message: `Started container ${name}` });
    }
  }

  /**
   * The next free address of the node's podCIDR after the one given out last, round robin (after the network
   * address and the gateway, .1), as CNI's host-local IPAM allocates: a freed address comes back only when the
   * range has wrapped around. Lowest-free handed a deleted pod's address to the next pod at once, so a proxy that
   * had not yet synced the removal sent the old pod's traffic to the new one (the soak's "wrong endpoint").
   */
  private allocateIP(nodeName: string, cidrText: string): string | undefined {
    const cidr = parseCidr(cidrText);
    if (!cidr) return undefined;
    const used = new Set<string>();
    for (const sb of this.sandboxes.values()) if (sb.node === nodeName) used.add(sb.ip);
    for (const p of this.o.registry.store.list(POD)) {
      if (str(child(p, 'spec'), 'nodeName') !== nodeName) continue;
      const status = child(p, 'status');
      for (const ip of [str(status, 'podIP'), ...arr(status, 'podIPs').map((x) => str(x, 'ip'))])
        if (ip && cidrContains(cidr, ip)) used.add(ip);
    }
    const first = 2n;
    const end = cidrSize(cidr) - (cidr.family === 4 ? 1n : 0n);
    if (end <= first) return undefined;
    const key = `${nodeName} ${cidr.text}`;
    const previous = this.lastAllocated.get(key);
    const start = previous === undefined || previous + 1n >= end ? first : previous + 1n;
    // At most one pass over the range (a /64's is endless in practice: the first free address is near `start`).
    for (let i = start, n = 0n; n < end - first; n++, i = i + 1n >= end ? first : i + 1n) {
      const ip = bigIntToIp(cidr.family, cidr.base + i);
      if (used.has(ip)) continue;
      this.lastAllocated.set(key, i);
      return ip;
    }
    return undefined;
  }

  private assignAddress(pod: JsonObject, nodeName: string): void {
    const node = this.o.registry.store.get(NODE, '', nodeName);
    if (!node) return;
    // The kubelet's hostIPs: the node's IPs, chosen as the proxy chooses them (primary first).
    const hostIPs = nodeIPs(node as unknown as Node);
    const hostIP = hostIPs[0];
    // One address per pod CIDR (per family, in the Node's order), as a dual-stack CNI gives them.
    const ips =
      child(pod, 'spec').hostNetwork === true
        ? hostIPs
        : nodePodCIDRs(node as unknown as Node).map((c) => this.allocateIP(nodeName, c));
    const ip = ips[0];
    if (!ip || ips.some((x) => x === undefined)) {
      this.o.logger.warn('no address for pod', { pod: keyOf(pod), node: nodeName });
      return;
    }
    const now = rfc3339(this.o.clock.now());
    const status = {
      ...child(pod, 'status'),
      phase: 'Pending',
      podIP: ip,
      podIPs: ips.map((x) => ({ ip: x })),
      ...(hostIP ? { hostIP, hostIPs: hostIPs.map((x) => ({ ip: x })) } : {}),
      startTime: now,
      conditions: [
        { type: 'PodScheduled', status: 'True', lastTransitionTime: now },
        { type: 'Initialized', status: 'True', lastTransitionTime: now },
        { type: 'ContainersReady', status: 'False', lastTransitionTime: now },
        { type: 'Ready', status: 'False', lastTransitionTime: now },
      ],
    };
    this.writeStatus(pod, status);
  }

  private writeStatus(pod: JsonObject, status: JsonObject): void {
    const r = this.o.registry.update(
      POD,
      str(meta(pod), 'namespace') ?? '',
      str(meta(pod), 'name') ?? '',
      { ...pod, status },
      'status',
    );
    if (!r.ok) this.o.logger.warn('cannot update pod status', { pod: keyOf(pod), error: r.error.message });
  }

  /** A container changed state (exit, restart, back-off): the Pod's status says so, as the kubelet's would. */
  private report(key: string, uid: string, r: PodStatusReport): void {
    this.reports.set(uid, r);
    if (!this.running.has(uid)) return; // markRunning writes it
    const pod = this.get(key);
    if (this.stopped || !pod || str(meta(pod), 'uid') !== uid) return;
    this.writeReport(pod, r);
  }

  private writeReport(pod: JsonObject, r: PodStatusReport): void {
    const now = rfc3339(this.o.clock.now());
    const ready = reportedReady(pod, r);
    const initialized = r.initialized !== false;
    const old = arr(child(pod, 'status'), 'conditions');
    const condition = (type: string, status: string): JsonObject => {
      const prev = old.find((c) => str(c, 'type') === type);
      return {
        type,
        status,
        lastTransitionTime: str(prev, 'status') === status ? (str(prev, 'lastTransitionTime') ?? now) : now,
      };
    };
    const evicted = r.evicted;
    // The eviction manager's event, once: before the status that says so, as upstream records it.
    if (evicted && str(child(pod, 'status'), 'reason') !== 'Evicted')
      this.o.events.kubelet.event(pod, { type: 'Warning', reason: 'Evicted', message: evicted.message });
    this.writeStatus(pod, {
      ...child(pod, 'status'),
      phase: r.phase,
      ...(evicted ? { reason: 'Evicted', message: evicted.message } : {}),
      conditions: [
        condition('PodScheduled', 'True'),
        condition('Initialized', initialized ? 'True' : 'False'),
        condition('ContainersReady', ready ? 'True' : 'False'),
        condition('Ready', ready ? 'True' : 'False'),
      ],
      containerStatuses: r.containerStatuses,
      ...(r.initContainerStatuses ? { initContainerStatuses: r.initContainerStatuses } : {}),
    });
  }

  private markRunning(key: string, uid: string): void {
    const pod = this.get(key);
    if (this.stopped || !pod || str(meta(pod), 'uid') !== uid || str(meta(pod), 'deletionTimestamp')) return;
    this.running.add(uid);
    const reported = this.reports.get(uid);
    if (reported) return this.writeReport(pod, reported);
    const now = rfc3339(this.o.clock.now());
    const containers = arr(child(pod, 'spec'), 'containers');
    const inits = initContainersOf(pod);
    this.writeStatus(pod, {
      ...child(pod, 'status'),
      phase: 'Running',
      conditions: ['PodScheduled', 'Initialized', 'ContainersReady', 'Ready'].map((type) => ({
        type,
        status: 'True',
        lastTransitionTime: now,
      })),
      containerStatuses: containers.map((c) => ({
        name: str(c, 'name') ?? '',
        image: str(c, 'image') ?? '',
        imageID: '',
        ready: true,
        started: true,
        restartCount: 0,
        state: { running: { startedAt: now } },
      })),
      ...(inits.length > 0 ? { initContainerStatuses: inits.map((c) => doneInitStatus(c, now)) } : {}),
    });
  }

  private markFailed(key: string, uid: string, reason: string): void {
    const pod = this.get(key);
    if (this.stopped || !pod || str(meta(pod), 'uid') !== uid) return;
    this.o.logger.warn('pod failed to start', { pod: key, reason });
    this.writeStatus(pod, { ...child(pod, 'status'), phase: 'Failed', message: reason });
  }

  private terminate(key: string, uid: string, pod: JsonObject): void {
    if (this.stopping.has(uid)) return;
    const removeNow = (): void => {
      const cur = this.get(key);
      const timer = this.stopping.get(uid);
      if (timer) this.o.clock.clearTimeout(timer);
      this.stopping.delete(uid);
      this.started.delete(uid);
      this.reports.delete(uid);
      this.running.delete(uid);
      if (this.stopped || !cur || str(meta(cur), 'uid') !== uid) return;
      this.o.registry.remove(POD, cur, cur);
    };
    const deadline = Date.parse(str(meta(pod), 'deletionTimestamp') ?? '');
    const wait = Number.isNaN(deadline) ? 0 : Math.max(0, deadline - this.o.clock.now());
    this.stopping.set(uid, this.o.clock.setTimeout(removeNow, wait));
    // A Pod that never started (no address yet) has nothing to stop.
    const sandbox = this.sandboxes.get(uid);
    if (sandbox) sandbox.stopRequested = true;
    if (this.started.has(uid)) this.containerEvents(pod, str(child(pod, 'spec'), 'nodeName') ?? '', 'stop');
    const stop = this.started.has(uid) ? this.o.lifecycle.stop(storedPod(pod)) : Promise.resolve();
    stop.then(
      () => {
        this.sandboxes.delete(uid);
        removeNow();
      },
      (e: unknown) => {
        this.sandboxes.delete(uid);
        this.o.logger.warn('pod stop failed; waiting for its grace period', { pod: key, error: String(e) });
      },
    );
  }

  /** Stops the sandbox of a Pod that is no longer in the store (it was removed without a grace period). */
  private stopRemoved(uid: string, sandbox: { readonly pod: JsonObject; stopRequested: boolean }): void {
    sandbox.stopRequested = true;
    this.started.delete(uid);
    this.reports.delete(uid);
    this.running.delete(uid);
    const done = (): void => void this.sandboxes.delete(uid);
    this.o.lifecycle.stop(storedPod(sandbox.pod)).then(done, (e: unknown) => {
      this.o.logger.warn('stopping a removed pod failed', { pod: keyOf(sandbox.pod), error: String(e) });
      done();
    });
  }

  stop(): void {
    this.stopped = true;
    this.unsubscribe();
    this.queue.stop();
    for (const t of this.stopping.values()) if (t) this.o.clock.clearTimeout(t);
    this.stopping.clear();
  }
}
