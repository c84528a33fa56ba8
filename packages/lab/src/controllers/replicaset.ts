// ReplicaSet → Pods, as upstream's ReplicaSet controller keeps them (pkg/controller/replicaset): as many active
// Pods (not terminating, not finished) as spec.replicas, created from the template and named <replicaset>-<5 chars>,
// placed by the scheduling filters (scheduling.ts) among the nodes that fit. Extra Pods go least useful first
// (upstream's ActivePods ordering): unscheduled, then not running, then not ready, then ready for less time, then
// restarted more, then newest. Pods are the ReplicaSet's by their controller reference only (no adoption of orphans).
// Its status counts what the Deployment controller rolls by: ready Pods, and available ones (ready for
// minReadySeconds).
import type { Clock } from 'kube-proxy-ts/util/clock.js';
import { arr, child, cloneJson, jsonEqual, num, str, type JsonObject } from '../apiserver/json.js';
import { resourceByKind } from '../apiserver/resources.js';
import type { EventRecorder } from './events.js';
import type { NodePicker } from './node-picker.js';
import { isPodReady } from './pods.js';
import { WorkloadController, type WorkloadControllerOptions } from './workload-controller.js';

const REPLICASET = resourceByKind('ReplicaSet');
const meta = (o: unknown): JsonObject => child(o, 'metadata');

export interface ReplicaSetControllerOptions extends WorkloadControllerOptions {
  readonly picker: NodePicker;
  readonly clock: Clock;
  /** The replicaset-controller's recorder: SuccessfulCreate and SuccessfulDelete on the ReplicaSet. */
  readonly recorder: EventRecorder;
}

/** A Pod that counts toward a ReplicaSet's size: not terminating, not finished (upstream's FilterActivePods). */
export function isActivePod(pod: JsonObject): boolean {
  const phase = str(child(pod, 'status'), 'phase');
  return !str(meta(pod), 'deletionTimestamp') && phase !== 'Succeeded' && phase !== 'Failed';
}

/** When the Pod last became Ready (ms), or undefined when it is not ready. */
function readySince(pod: JsonObject): number | undefined {
  const ready = arr(child(pod, 'status'), 'conditions').find((c) => str(c, 'type') === 'Ready');
  if (str(ready, 'status') !== 'True') return undefined;
  const t = Date.parse(str(ready, 'lastTransitionTime') ?? '');
  return Number.isNaN(t) ? 0 : t;
}

/** Ready for at least minReadySeconds (upstream's IsPodAvailable). */
export function isPodAvailable(pod: JsonObject, minReadySeconds: number, now: number): boolean {
  const since = readySince(pod);
  return since !== undefined && (minReadySeconds === 0 || since + minReadySeconds * 1000 <= now);
}

const PHASE_RANK: Readonly<Record<string, number>> = { Pending: 0, Unknown: 1, Running: 2 };
const restarts = (p: JsonObject): number =>
  arr(child(p, 'status'), 'containerStatuses').reduce<number>((n, c) => n + (num(c, 'restartCount') ?? 0), 0);

/** Negative when `a` should go before `b` (upstream's ActivePods Less, without its co-location rank). */
export function deletionOrder(a: JsonObject, b: JsonObject): number {
  const node = (p: JsonObject): number => Number(Boolean(str(child(p, 'spec'), 'nodeName')));
  const phase = (p: JsonObject): number => PHASE_RANK[str(child(p, 'status'), 'phase') ?? 'Pending'] ?? 0;
  const since = (p: JsonObject): number => readySince(p) ?? 0;
  const created = (p: JsonObject): string => str(meta(p), 'creationTimestamp') ?? '';
  return (
    node(a) - node(b) ||
    phase(a) - phase(b) ||
    Number(isPodReady(a)) - Number(isPodReady(b)) ||
    since(b) - since(a) ||
    restarts(b) - restarts(a) ||
    created(b).localeCompare(created(a)) ||
    (str(meta(b), 'name') ?? '').localeCompare(str(meta(a), 'name') ?? '')
  );
}

export class ReplicaSetController extends WorkloadController {
  /** ReplicaSets with a wake-up pending for a Pod that will have been ready for minReadySeconds. */
  private readonly wakeups = new Set<string>();

  constructor(private readonly o: ReplicaSetControllerOptions) {
    super(o, REPLICASET);
  }

  protected reconcile(rs: JsonObject): void {
    const spec = child(rs, 'spec');
    const replicas = num(spec, 'replicas') ?? 1;
    const active = this.pods.owned(rs).filter(isActivePod);
    const template = child(spec, 'template');
    for (let i = active.length; i < replicas; i++) this.createPod(rs, template);
    const extra = [...active].sort(deletionOrder).slice(0, Math.max(0, active.length - replicas));
    for (const pod of extra)
      if (this.pods.delete(pod))
        this.podEvent(rs, 'SuccessfulDelete', `Deleted pod: ${str(meta(pod), 'name') ?? ''}`);
    this.updateStatus(rs);
  }

  private createPod(rs: JsonObject, template: JsonObject): void {
    const spec = cloneJson(child(template, 'spec'));
    // The Pod as the scheduler will see it (its namespace and labels matter to pod affinity). One that fits no
    // node is created unbound: the pod controller reports it Unschedulable and retries as the cluster changes.
    const candidate = {
      metadata: { namespace: str(meta(rs), 'namespace'), labels: child(meta(template), 'labels') },
      spec,
    };
    const { node } = this.o.picker.pick(candidate);
    const created = this.pods.create(rs, template, {
      generateName: `${str(meta(rs), 'name') ?? ''}-`,
      labels: {},
      spec: node === undefined ? spec : { ...spec, nodeName: node },
    });
    if (created) this.podEvent(rs, 'SuccessfulCreate', `Created pod: ${str(meta(created), 'name') ?? ''}`);
  }

  private podEvent(rs: JsonObject, reason: string, message: string): void {
    this.o.recorder.event(rs, { type: 'Normal', reason, message });
  }

  /** The counts `kubectl get rs` prints and the Deployment controller rolls by. */
  private updateStatus(rs: JsonObject): void {
    const fresh = this.stored(rs);
    if (!fresh) return;
    const minReady = num(child(fresh, 'spec'), 'minReadySeconds') ?? 0;
    const now = this.o.clock.now();
    const active = this.pods.owned(fresh).filter(isActivePod);
    const ready = active.filter(isPodReady);
    const available = ready.filter((p) => isPodAvailable(p, minReady, now));
    if (available.length < ready.length) this.wakeWhenAvailable(fresh, ready, minReady, now);
    const prev = child(fresh, 'status');
    const status: JsonObject = {
      replicas: active.length,
      fullyLabeledReplicas: active.length,
      readyReplicas: ready.length,
      availableReplicas: available.length,
      observedGeneration: num(meta(fresh), 'generation') ?? 1,
      ...(prev.conditions !== undefined ? { conditions: prev.conditions } : {}),
    };
    if (jsonEqual(status, prev)) return;
    this.pods.writeStatus(fresh, status);
  }

  /** No event says "ready long enough": the clock does, once, at the first such moment. */
  private wakeWhenAvailable(
    rs: JsonObject,
    ready: readonly JsonObject[],
    minReady: number,
    now: number,
  ): void {
    const key = `${str(meta(rs), 'namespace') ?? ''}/${str(meta(rs), 'name') ?? ''}`;
    if (this.wakeups.has(key)) return;
    const due = Math.min(...ready.map((p) => (readySince(p) ?? now) + minReady * 1000));
    this.wakeups.add(key);
    this.o.clock.setTimeout(
      () => {
        this.wakeups.delete(key);
        this.requeue(rs);
      },
      Math.max(0, due - now),
    );
  }
}
