// DaemonSet → one Pod per matching Node, as upstream's daemon controller keeps it (pkg/controller/daemon), without
// ControllerRevisions: the revision is the template's hash, carried by each Pod as `controller-revision-hash`.
// Pods are named <daemonset>-<5 chars> and bound to their node by spec.nodeName. A template change (a new
// generation; `kubectl rollout restart` is one) rolls node by node: an old Pod is deleted only while the number
// of nodes without an available Pod stays within maxUnavailable (maxSurge 0: the new Pod follows once the old one
// is gone, so a host-network Pod never meets its predecessor on its ports). OnDelete leaves old Pods alone.
import type { Logger } from 'kube-proxy-ts/util/logger.js';
import { arr, child, jsonEqual, num, str, type JsonObject } from '../apiserver/json.js';
import { labelsMatchSelector } from '../apiserver/kinds.js';
import type { Registry } from '../apiserver/registry.js';
import { resourceByKind } from '../apiserver/resources.js';
import { podTemplateHash } from './deployment.js';
import { isPodReady } from './pods.js';
import { WorkQueue } from './work-queue.js';

const POD = resourceByKind('Pod');
const NODE = resourceByKind('Node');
const DAEMONSET = resourceByKind('DaemonSet');
const SAFE_ALPHABET = 'bcdfghjklmnpqrstvwxz2456789';
export const REVISION_HASH_LABEL = 'controller-revision-hash';
const meta = (o: unknown): JsonObject => child(o, 'metadata');
const keyOf = (o: unknown): string => `${str(meta(o), 'namespace') ?? ''}/${str(meta(o), 'name') ?? ''}`;

const randomName = (n: number): string => {
  let s = '';
  for (let i = 0; i < n; i++) s += SAFE_ALPHABET[Math.floor(Math.random() * SAFE_ALPHABET.length)];
  return s;
};

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

export interface DaemonSetControllerOptions {
  readonly registry: Registry;
  readonly logger: Logger;
}

export class DaemonSetController {
  readonly queue: WorkQueue;
  private readonly unsubscribe: () => void;

  constructor(private readonly o: DaemonSetControllerOptions) {
    this.queue = new WorkQueue('daemonsets', (k) => this.reconcile(k), o.logger);
    const all = (): void => {
      for (const d of o.registry.store.list(DAEMONSET)) this.queue.add(keyOf(d));
    };
    this.unsubscribe = o.registry.store.subscribe((ev) => {
      if (ev.resource.kind === 'DaemonSet') this.queue.add(keyOf(ev.object));
      else if (ev.resource.kind === 'Node') all();
      else if (ev.resource.kind === 'Pod') {
        for (const ref of arr(meta(ev.object), 'ownerReferences'))
          if (str(ref, 'kind') === 'DaemonSet')
            this.queue.add(`${str(meta(ev.object), 'namespace') ?? ''}/${str(ref, 'name') ?? ''}`);
      }
    });
    all();
  }

  private reconcile(key: string): void {
    const [ns = '', name = ''] = key.split('/');
    const reg = this.o.registry;
    const ds = reg.store.get(DAEMONSET, ns, name);
    if (!ds || str(meta(ds), 'deletionTimestamp')) return;
    const spec = child(ds, 'spec');
    const template = child(spec, 'template');
    const hash = podTemplateHash(template);
    const nodeSelector = child(child(template, 'spec'), 'nodeSelector');
    const nodes = reg.store
      .list(NODE)
      .filter((n) => labelsMatchSelector({ matchLabels: nodeSelector }, child(meta(n), 'labels')))
      .map((n) => str(meta(n), 'name') ?? '')
      .filter((n) => n !== '');
    const owned = this.ownedPods(ds);
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
      if (!nodes.includes(node)) live.forEach((p) => this.deletePod(p));
      else if (live.length > 1) {
        const keep = [...live].sort((a, b) => Number(isCurrent(b)) - Number(isCurrent(a)))[0];
        live.filter((p) => p !== keep).forEach((p) => this.deletePod(p));
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
      for (const p of old.filter((x) => !isPodReady(x))) this.deletePod(p);
      for (const p of old.filter(isPodReady)) {
        if (budget <= 0) break;
        this.deletePod(p);
        budget--;
      }
    }
    this.updateStatus(ds, nodes);
  }

  private ownedPods(ds: JsonObject): JsonObject[] {
    const uid = str(meta(ds), 'uid');
    return this.o.registry.store
      .list(POD, str(meta(ds), 'namespace') ?? '')
      .filter((p) => arr(meta(p), 'ownerReferences').some((r) => str(r, 'uid') === uid));
  }

  private createPod(ds: JsonObject, template: JsonObject, hash: string, node: string): void {
    const dmeta = meta(ds);
    const dname = str(dmeta, 'name') ?? '';
    const tmeta = meta(template);
    const annotations = child(tmeta, 'annotations');
    const pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: `${dname}-${randomName(5)}`,
        namespace: str(dmeta, 'namespace'),
        labels: {
          ...child(tmeta, 'labels'),
          [REVISION_HASH_LABEL]: hash,
          'pod-template-generation': String(num(dmeta, 'generation') ?? 1),
        },
        ...(Object.keys(annotations).length > 0 ? { annotations } : {}),
        ownerReferences: [
          {
            apiVersion: 'apps/v1',
            kind: 'DaemonSet',
            name: dname,
            uid: str(dmeta, 'uid'),
            controller: true,
            blockOwnerDeletion: true,
          },
        ],
      },
      spec: { ...child(template, 'spec'), nodeName: node },
    };
    const r = this.o.registry.create(POD, str(dmeta, 'namespace') ?? '', pod);
    if (!r.ok)
      this.o.logger.warn('cannot create pod', { daemonset: keyOf(ds), node, error: r.error.message });
  }

  private deletePod(p: JsonObject): void {
    const r = this.o.registry.delete(POD, str(meta(p), 'namespace') ?? '', str(meta(p), 'name') ?? '');
    if (!r.ok && r.error.code !== 404)
      this.o.logger.warn('cannot delete pod', { pod: keyOf(p), error: r.error.message });
  }

  /** The fields `kubectl get ds` prints and `kubectl rollout status` waits on. */
  private updateStatus(ds: JsonObject, nodes: readonly string[]): void {
    const [ns, name] = [str(meta(ds), 'namespace') ?? '', str(meta(ds), 'name') ?? ''];
    const reg = this.o.registry;
    const fresh = reg.store.get(DAEMONSET, ns, name);
    if (!fresh) return;
    const hash = podTemplateHash(child(child(fresh, 'spec'), 'template'));
    const live = this.ownedPods(fresh).filter((p) => !str(meta(p), 'deletionTimestamp'));
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
    const r = reg.update(DAEMONSET, ns, name, { ...fresh, status }, 'status');
    if (!r.ok)
      this.o.logger.warn('cannot update daemonset status', {
        daemonset: `${ns}/${name}`,
        error: r.error.message,
      });
  }

  stop(): void {
    this.unsubscribe();
    this.queue.stop();
  }
}
