// Deployment → Pods, without ReplicaSets: the Deployment owns its Pods directly. Pods are named
// <deployment>-<pod-template-hash>-<5 chars>, carry the template's labels plus pod-template-hash, and are placed
// round-robin across Nodes. A template change rolls forward: new Pods are created, and old ones are removed as
// the new ones become ready. Scaling down removes not-ready Pods first, then the newest.
import type { Clock } from 'kube-proxy-ts/util/clock.js';
import { arr, child, cloneJson, jsonEqual, num, str, type JsonObject } from '../apiserver/json.js';
import { rfc3339 } from '../apiserver/registry.js';
import { resourceByKind } from '../apiserver/resources.js';
import type { NodePicker } from './node-picker.js';
import { isPodReady } from './pods.js';
import { WorkloadController, type WorkloadControllerOptions } from './workload-controller.js';
import { podTemplateHash } from './workload-pods.js';

const DEPLOYMENT = resourceByKind('Deployment');
const meta = (o: unknown): JsonObject => child(o, 'metadata');

export interface DeploymentControllerOptions extends WorkloadControllerOptions {
  readonly picker: NodePicker;
  readonly clock: Clock;
}

export class DeploymentController extends WorkloadController {
  constructor(private readonly o: DeploymentControllerOptions) {
    super(o.registry, o.logger, DEPLOYMENT);
  }

  protected reconcile(d: JsonObject): void {
    const spec = child(d, 'spec');
    const replicas = num(spec, 'replicas') ?? 1;
    const template = child(spec, 'template');
    const hash = podTemplateHash(template);
    const active = this.pods.owned(d).filter((p) => !str(meta(p), 'deletionTimestamp'));
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
      this.pods.delete(p);
    const readyNew = current.filter(isPodReady).length;
    const keepOld = Math.max(0, Math.min(old.length, replicas - readyNew));
    for (const p of byRemovalOrder(old).slice(0, old.length - keepOld)) this.pods.delete(p);

    this.updateStatus(d, replicas);
  }

  private createPod(d: JsonObject, template: JsonObject, hash: string): void {
    this.pods.create(d, template, {
      generateName: `${str(meta(d), 'name') ?? ''}-${hash}-`,
      labels: { 'pod-template-hash': hash },
      spec: { ...cloneJson(child(template, 'spec')), ...this.nodeFor() },
    });
  }

  private nodeFor(): { nodeName?: string } {
    const n = this.o.picker.pick();
    return n ? { nodeName: n } : {};
  }

  private updateStatus(d: JsonObject, replicas: number): void {
    const fresh = this.stored(d);
    if (!fresh) return;
    const name = str(meta(fresh), 'name') ?? '';
    const hash = podTemplateHash(child(child(fresh, 'spec'), 'template'));
    const active = this.pods.owned(fresh).filter((p) => !str(meta(p), 'deletionTimestamp'));
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
    this.pods.writeStatus(fresh, status);
  }
}
