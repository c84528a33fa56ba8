// DaemonSet → one Pod per matching Node (scheduling.ts's daemonPodPlacement: node selector and affinity, taints),
// as upstream's daemon controller keeps it (pkg/controller/daemon), without ControllerRevisions: the revision is
// the template's hash, carried by each Pod as `controller-revision-hash`.
// Pods are named <daemonset>-<5 chars> and bound to their node by spec.nodeName. A template change (a new
// generation; `kubectl rollout restart` is one) rolls node by node: an old Pod is deleted only while the number
// of nodes without an available Pod stays within maxUnavailable (maxSurge 0: the new Pod follows once the old one
// is gone, so a host-network Pod never meets its predecessor on its ports). OnDelete leaves old Pods alone.
import { child, jsonEqual, num, str, type JsonObject } from '../apiserver/json.js';
import { resourceByKind } from '../apiserver/resources.js';
import { isPodReady } from './pods.js';
import { daemonPodPlacement } from './scheduling.js';
import { WorkloadController, type WorkloadControllerOptions } from './workload-controller.js';
import { podTemplateHash } from './workload-pods.js';

const NODE = resourceByKind('Node');
const DAEMONSET = resourceByKind('DaemonSet');
export const REVISION_HASH_LABEL = 'controller-revision-hash';
const meta = (o: unknown): JsonObject => child(o, 'metadata');

/** maxUnavailable as a number of nodes: an integer, or a percentage of the desired count rounded up (upstream). */
export function scaledMaxUnavailable(value: unknown, desired: number): number {
  if (typeof value === 'number' && Number.isInteger(value) && value >= 0) return value;
  if (typeof value === 'string') {
    const m = /^(\d+)%$/.exec(value);
    if (m) return Math.ceil((Number(m[1]) * desired) / 100);
    if (/^\d+$/.test(value)) return Number(value);
  }
  return 1;
}

export type DaemonSetControllerOptions = WorkloadControllerOptions;

export class DaemonSetController extends WorkloadController {
  constructor(private readonly o: DaemonSetControllerOptions) {
    super(o, DAEMONSET, ['Node']);
  }

  protected reconcile(ds: JsonObject): void {
    const reg = this.o.registry;
    const spec = child(ds, 'spec');
    const template = child(spec, 'template');
    const hash = podTemplateHash(template);
    // Nodes that should run the Pod, and those that may keep one they have (a NoSchedule taint added later).
    const nodes: string[] = [];
    const mayKeep = new Set<string>();
    for (const n of reg.store.list(NODE)) {
      const name = str(meta(n), 'name') ?? '';
      const { shouldRun, shouldContinueRunning } = daemonPodPlacement(template, n);
      if (name !== '' && shouldRun) nodes.push(name);
      if (name !== '' && shouldContinueRunning) mayKeep.add(name);
    }
    const owned = this.pods.owned(ds);
    const byNode = new Map<string, JsonObject[]>();
    for (const p of owned) {
      const node = str(child(p, 'spec'), 'nodeName') ?? '';
      byNode.set(node, [...(byNode.get(node) ?? []), p]);
    }
    const active = (node: string): JsonObject[] =>
      (byNode.get(node) ?? []).filter((p) => !str(meta(p), 'deletionTimestamp'));
    const isCurrent = (p: JsonObject): boolean => child(meta(p), 'labels')[REVISION_HASH_LABEL] === hash;

    // A node that lost its Pod gets a new one, once its predecessor has gone.
    for (const node of nodes) {
      if (active(node).length > 0) continue;
      if ((byNode.get(node) ?? []).length > 0) continue;
      this.createPod(ds, template, hash, node);
    }
    // Pods on nodes that no longer match, and duplicates (keep the newest current one).
    for (const [node, pods] of byNode) {
      const live = pods.filter((p) => !str(meta(p), 'deletionTimestamp'));
      if (!mayKeep.has(node)) live.forEach((p) => this.deletePod(ds, p));
      else if (live.length > 1) {
        const keep = [...live].sort((a, b) => Number(isCurrent(b)) - Number(isCurrent(a)))[0];
        live.filter((p) => p !== keep).forEach((p) => this.deletePod(ds, p));
      }
    }

    if (str(child(spec, 'updateStrategy'), 'type') !== 'OnDelete') {
      const maxUnavailable = scaledMaxUnavailable(
        child(child(spec, 'updateStrategy'), 'rollingUpdate').maxUnavailable,
        nodes.length,
      );
      const unavailable = nodes.filter((n) => !active(n).some(isPodReady)).length;
      let budget = Math.max(maxUnavailable, 1) - unavailable;
      const old = nodes.flatMap((n) => active(n).filter((p) => !isCurrent(p)));
      // An old Pod that is not ready costs no availability: replace those first.
      for (const p of old.filter((x) => !isPodReady(x))) this.deletePod(ds, p);
      for (const p of old.filter(isPodReady)) {
        if (budget <= 0) break;
        this.deletePod(ds, p);
        budget--;
      }
    }
    this.updateStatus(ds, nodes);
  }

  private createPod(ds: JsonObject, template: JsonObject, hash: string, node: string): void {
    const dmeta = meta(ds);
    const pod = {
      generateName: `${str(dmeta, 'name') ?? ''}-`,
      labels: {
        [REVISION_HASH_LABEL]: hash,
        'pod-template-generation': String(num(dmeta, 'generation') ?? 1),
      },
      spec: { ...child(template, 'spec'), nodeName: node },
    };
    const created = this.pods.create(ds, template, pod, { node });
    if (created) this.podEvent(ds, 'SuccessfulCreate', `Created pod: ${str(meta(created), 'name') ?? ''}`);
  }

  private deletePod(ds: JsonObject, pod: JsonObject): void {
    if (this.pods.delete(pod))
      this.podEvent(ds, 'SuccessfulDelete', `Deleted pod: ${str(meta(pod), 'name') ?? ''}`);
  }

  /** Upstream's daemon controller reports each Pod it creates or deletes on the DaemonSet (pkg/controller/daemon). */
  private podEvent(ds: JsonObject, reason: string, message: string): void {
    this.o.events.daemonSets.event(ds, { type: 'Normal', reason, message });
  }

  /** The fields `kubectl get ds` prints and `kubectl rollout status` waits on. */
  private updateStatus(ds: JsonObject, nodes: readonly string[]): void {
    const fresh = this.stored(ds);
    if (!fresh) return;
    const hash = podTemplateHash(child(child(fresh, 'spec'), 'template'));
    const live = this.pods.owned(fresh).filter((p) => !str(meta(p), 'deletionTimestamp'));
    const onNode = (p: JsonObject): boolean => nodes.includes(str(child(p, 'spec'), 'nodeName') ?? '');
    const scheduled = new Set(live.filter(onNode).map((p) => str(child(p, 'spec'), 'nodeName')));
    const ready = live.filter((p) => onNode(p) && isPodReady(p));
    const updated = live.filter((p) => onNode(p) && child(meta(p), 'labels')[REVISION_HASH_LABEL] === hash);
    const available = ready.length;
    const status: JsonObject = {
      currentNumberScheduled: scheduled.size,
      numberMisscheduled: live.filter((p) => !onNode(p)).length,
      desiredNumberScheduled: nodes.length,
      numberReady: ready.length,
      observedGeneration: num(meta(fresh), 'generation') ?? 1,
      updatedNumberScheduled: updated.length,
      numberAvailable: available,
      ...(nodes.length - available > 0 ? { numberUnavailable: nodes.length - available } : {}),
    };
    if (jsonEqual(status, child(fresh, 'status'))) return;
    this.pods.writeStatus(fresh, status);
  }
}
