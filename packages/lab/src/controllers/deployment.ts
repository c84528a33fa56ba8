// Deployment → Pods, without ReplicaSets: the Deployment owns its Pods directly. Pods are named
// <deployment>-<pod-template-hash>-<5 chars>, carry the template's labels plus pod-template-hash, and are placed
// by the scheduling filters (scheduling.ts), round robin among the nodes that fit. A template change rolls
// forward: new Pods are created, and old ones are removed as the new ones become ready. Scaling down removes
// not-ready Pods first, then the newest.
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
  /**
   * The size last reported for each "replica set" (deployment uid/template hash). The lab has no ReplicaSets: the
   * Pods of one template hash, named <deployment>-<hash>-…, stand in for the ReplicaSet upstream would name
   * <deployment>-<hash>, and a change of how many of them the Deployment wants is reported with upstream's
   * ScalingReplicaSet wording. A Pod replaced at the same size is no scaling (upstream's ReplicaSet controller
   * would do it, on the ReplicaSet), so it is not reported.
   */
  private readonly scales = new Map<string, number>();

  constructor(private readonly o: DeploymentControllerOptions) {
    super(o, DEPLOYMENT);
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
    const removedOld = byRemovalOrder(old).slice(0, old.length - keepOld);
    for (const p of removedOld) this.pods.delete(p);

    this.reportScale(d, hash, current.length, replicas);
    const hashOf = (p: JsonObject): string => str(child(meta(p), 'labels'), 'pod-template-hash') ?? '';
    for (const oldHash of new Set(old.map(hashOf))) {
      const before = old.filter((p) => hashOf(p) === oldHash).length;
      this.reportScale(d, oldHash, before, before - removedOld.filter((p) => hashOf(p) === oldHash).length);
    }
    this.updateStatus(d, replicas);
  }

  /** upstream's deployment controller: "Scaled up replica set web-7d4b9c from 0 to 3" (pkg/controller/deployment). */
  private reportScale(d: JsonObject, hash: string, present: number, wanted: number): void {
    const key = `${str(meta(d), 'uid') ?? ''}/${hash}`;
    const from = this.scales.get(key) ?? present;
    if (wanted === 0) this.scales.delete(key);
    else this.scales.set(key, wanted);
    if (from === wanted) return;
    const name = `${str(meta(d), 'name') ?? ''}-${hash}`;
    this.o.events.deployments.event(d, {
      type: 'Normal',
      reason: 'ScalingReplicaSet',
      message: `Scaled ${wanted > from ? 'up' : 'down'} replica set ${name} from ${from} to ${wanted}`,
    });
  }

  private createPod(d: JsonObject, template: JsonObject, hash: string): void {
    const labels = { 'pod-template-hash': hash };
    const spec = cloneJson(child(template, 'spec'));
    // The Pod as the scheduler will see it (its namespace and labels matter to pod affinity). One that fits no
    // node is created unbound: the pod controller reports it Unschedulable and retries as the cluster changes.
    const candidate = {
      metadata: {
        namespace: str(meta(d), 'namespace'),
        labels: { ...child(meta(template), 'labels'), ...labels },
      },
      spec,
    };
    const { node } = this.o.picker.pick(candidate);
    this.pods.create(d, template, {
      generateName: `${str(meta(d), 'name') ?? ''}-${hash}-`,
      labels,
      spec: node === undefined ? spec : { ...spec, nodeName: node },
    });
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
