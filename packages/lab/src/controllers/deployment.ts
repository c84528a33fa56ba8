// Deployment → Pods, without ReplicaSets: the Deployment owns its Pods directly. Pods are named
// <deployment>-<pod-template-hash>-<5 chars>, carry the template's labels plus pod-template-hash, and are placed
// round-robin across Nodes. A template change rolls forward: new Pods are created, and old ones are removed as
// the new ones become ready. Scaling down removes not-ready Pods first, then the newest.
import { createHash } from 'node:crypto';
import type { Clock } from 'kube-proxy-ts/util/clock.js';
import type { Logger } from 'kube-proxy-ts/util/logger.js';
import { arr, child, cloneJson, jsonEqual, num, str, type JsonObject } from '../apiserver/json.js';
import { rfc3339, type Registry } from '../apiserver/registry.js';
import { resourceByKind } from '../apiserver/resources.js';
import type { NodePicker } from './node-picker.js';
import { isPodReady } from './pods.js';
import { WorkQueue } from './work-queue.js';

const POD = resourceByKind('Pod');
const DEPLOYMENT = resourceByKind('Deployment');
const SAFE_ALPHABET = 'bcdfghjklmnpqrstvwxz2456789';
const meta = (o: unknown): JsonObject => child(o, 'metadata');
const keyOf = (o: unknown): string => `${str(meta(o), 'namespace') ?? ''}/${str(meta(o), 'name') ?? ''}`;

function safeEncode(bytes: Buffer, n: number): string {
  let s = '';
  for (let i = 0; i < n; i++) s += SAFE_ALPHABET[(bytes[i] ?? 0) % SAFE_ALPHABET.length];
  return s;
}

/** A stable short hash of the Pod template, like upstream's pod-template-hash label. */
export function podTemplateHash(template: unknown): string {
  const canonical = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(canonical);
    if (typeof v === 'object' && v !== null)
      return Object.fromEntries(
        Object.keys(v)
          .sort()
          .map((k) => [k, canonical((v as JsonObject)[k])]),
      );
    return v;
  };
  return safeEncode(
    createHash('sha256')
      .update(JSON.stringify(canonical(template)))
      .digest(),
    10,
  );
}

const randomName = (n: number): string => {
  let s = '';
  for (let i = 0; i < n; i++) s += SAFE_ALPHABET[Math.floor(Math.random() * SAFE_ALPHABET.length)];
  return s;
};

export interface DeploymentControllerOptions {
  readonly registry: Registry;
  readonly picker: NodePicker;
  readonly clock: Clock;
  readonly logger: Logger;
}

export class DeploymentController {
  readonly queue: WorkQueue;
  private readonly unsubscribe: () => void;

  constructor(private readonly o: DeploymentControllerOptions) {
    this.queue = new WorkQueue('deployments', (k) => this.reconcile(k), o.logger);
    this.unsubscribe = o.registry.store.subscribe((ev) => {
      if (ev.resource.kind === 'Deployment') this.queue.add(keyOf(ev.object));
      else if (ev.resource.kind === 'Pod') {
        for (const ref of arr(meta(ev.object), 'ownerReferences'))
          if (str(ref, 'kind') === 'Deployment')
            this.queue.add(`${str(meta(ev.object), 'namespace') ?? ''}/${str(ref, 'name') ?? ''}`);
      }
    });
    for (const d of o.registry.store.list(DEPLOYMENT)) this.queue.add(keyOf(d));
  }

  private reconcile(key: string): void {
    const [ns = '', name = ''] = key.split('/');
    const reg = this.o.registry;
    const d = reg.store.get(DEPLOYMENT, ns, name);
    if (!d) return;
    const dmeta = meta(d);
    if (str(dmeta, 'deletionTimestamp')) return;
    const uid = str(dmeta, 'uid');
    const spec = child(d, 'spec');
    const replicas = num(spec, 'replicas') ?? 1;
    const template = child(spec, 'template');
    const hash = podTemplateHash(template);
    const owned = reg.store
      .list(POD, ns)
      .filter((p) => arr(meta(p), 'ownerReferences').some((r) => str(r, 'uid') === uid));
    const active = owned.filter((p) => !str(meta(p), 'deletionTimestamp'));
    const current = active.filter((p) => child(meta(p), 'labels')['pod-template-hash'] === hash);
    const old = active.filter((p) => child(meta(p), 'labels')['pod-template-hash'] !== hash);

    for (let i = current.length; i < replicas; i++) this.createPod(d, template, hash);
    // Remove the least useful first: not ready, then newest.
    const byRemovalOrder = (list: JsonObject[]): JsonObject[] =>
      [...list].sort(
        (a, b) =>
          Number(isPodReady(a)) - Number(isPodReady(b)) ||
          (str(meta(b), 'creationTimestamp') ?? '').localeCompare(str(meta(a), 'creationTimestamp') ?? '') ||
          (str(meta(b), 'name') ?? '').localeCompare(str(meta(a), 'name') ?? ''),
      );
    for (const p of byRemovalOrder(current).slice(0, Math.max(0, current.length - replicas)))
      this.deletePod(p);
    const readyNew = current.filter(isPodReady).length;
    const keepOld = Math.max(0, Math.min(old.length, replicas - readyNew));
    for (const p of byRemovalOrder(old).slice(0, old.length - keepOld)) this.deletePod(p);

    this.updateStatus(d, replicas);
  }

  private createPod(d: JsonObject, template: JsonObject, hash: string): void {
    const dmeta = meta(d);
    const dname = str(dmeta, 'name') ?? '';
    const tmeta = meta(template);
    const pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: `${dname}-${hash}-${randomName(5)}`,
        namespace: str(dmeta, 'namespace'),
        labels: { ...child(tmeta, 'labels'), 'pod-template-hash': hash },
        ...(Object.keys(child(tmeta, 'annotations')).length > 0
          ? { annotations: child(tmeta, 'annotations') }
          : {}),
        ownerReferences: [
          {
            apiVersion: 'apps/v1',
            kind: 'Deployment',
            name: dname,
            uid: str(dmeta, 'uid'),
            controller: true,
            blockOwnerDeletion: true,
          },
        ],
      },
      spec: { ...cloneJson(child(template, 'spec')), ...this.nodeFor() },
    };
    const r = this.o.registry.create(POD, str(dmeta, 'namespace') ?? '', pod);
    if (!r.ok) this.o.logger.warn('cannot create pod', { deployment: keyOf(d), error: r.error.message });
  }

  private nodeFor(): { nodeName?: string } {
    const n = this.o.picker.pick();
    return n ? { nodeName: n } : {};
  }

  private deletePod(p: JsonObject): void {
    const r = this.o.registry.delete(POD, str(meta(p), 'namespace') ?? '', str(meta(p), 'name') ?? '');
    if (!r.ok && r.error.code !== 404)
      this.o.logger.warn('cannot delete pod', { pod: keyOf(p), error: r.error.message });
  }

  private updateStatus(d: JsonObject, replicas: number): void {
    const [ns, name] = [str(meta(d), 'namespace') ?? '', str(meta(d), 'name') ?? ''];
    const reg = this.o.registry;
    const fresh = reg.store.get(DEPLOYMENT, ns, name);
    if (!fresh) return;
    const uid = str(meta(fresh), 'uid');
    const hash = podTemplateHash(child(child(fresh, 'spec'), 'template'));
    const active = reg.store
      .list(POD, ns)
      .filter((p) => arr(meta(p), 'ownerReferences').some((r) => str(r, 'uid') === uid))
      .filter((p) => !str(meta(p), 'deletionTimestamp'));
    const ready = active.filter(isPodReady).length;
    const updated = active.filter((p) => child(meta(p), 'labels')['pod-template-hash'] === hash).length;
    const prev = child(fresh, 'status');
    const available = ready >= replicas;
    const prevCond = arr(prev, 'conditions').find((c) => str(c, 'type') === 'Available');
    const availStatus = available ? 'True' : 'False';
    const now = rfc3339(this.o.clock.now());
    const status: JsonObject = {
      observedGeneration: num(meta(fresh), 'generation') ?? 1,
      replicas: active.length,
      updatedReplicas: updated,
      readyReplicas: ready,
      availableReplicas: ready,
      ...(replicas - ready > 0 ? { unavailableReplicas: replicas - ready } : {}),
      conditions: [
        {
          type: 'Available',
          status: availStatus,
          reason: available ? 'MinimumReplicasAvailable' : 'MinimumReplicasUnavailable',
          message: available
            ? 'Deployment has minimum availability.'
            : 'Deployment does not have minimum availability.',
          lastUpdateTime:
            str(prevCond, 'status') === availStatus ? (str(prevCond, 'lastUpdateTime') ?? now) : now,
          lastTransitionTime:
            str(prevCond, 'status') === availStatus ? (str(prevCond, 'lastTransitionTime') ?? now) : now,
        },
        {
          type: 'Progressing',
          status: 'True',
          reason: updated >= replicas && ready >= replicas ? 'NewReplicaSetAvailable' : 'ReplicaSetUpdated',
          message: `Deployment "${name}" ${updated >= replicas && ready >= replicas ? 'has successfully progressed' : 'is progressing'}.`,
        },
      ],
    };
    if (jsonEqual(status, prev)) return;
    const r = reg.update(DEPLOYMENT, ns, name, { ...fresh, status }, 'status');
    if (!r.ok)
      this.o.logger.warn('cannot update deployment status', {
        deployment: `${ns}/${name}`,
        error: r.error.message,
      });
  }

  stop(): void {
    this.unsubscribe();
    this.queue.stop();
  }
}
