// Deployment → ReplicaSets, as upstream's deployment controller rolls them (pkg/controller/deployment). Each Pod
// template gets its own ReplicaSet, named <deployment>-<pod-template-hash>, whose selector and Pod labels carry that
// hash, and whose deployment.kubernetes.io/revision annotation counts the templates (the Deployment carries the
// current one's). A template change (`kubectl rollout restart` is one) rolls: RollingUpdate grows the new
// ReplicaSet while all of them stay within replicas + maxSurge, and shrinks old ones while available Pods stay at
// least replicas - maxUnavailable (rollout.ts); Recreate empties the old ones first and starts the new one once
// their Pods are gone. The ReplicaSet controller (replicaset.ts) makes and removes the Pods. Each size change is
// reported as upstream reports it ("Scaled up replica set web-7d4b9c from 0 to 3"). Not modelled: proportional
// scaling of several live ReplicaSets during a rollout (the rolling steps converge without it), progress deadlines,
// and hash collisions. A paused Deployment is left as it is.
import type { Clock } from 'kube-proxy-ts/util/clock.js';
import type { Logger } from 'kube-proxy-ts/util/logger.js';
import { arr, child, cloneJson, isObject, jsonEqual, num, str, type JsonObject } from '../apiserver/json.js';
import { rfc3339 } from '../apiserver/registry.js';
import { resourceByKind } from '../apiserver/resources.js';
import {
  newReplicaSetSize,
  oldReplicaSetSizes,
  rollingBounds,
  rolloutComplete,
  type ReplicaSetCount,
  type RollingBounds,
} from './rollout.js';
import { WorkloadController, type WorkloadControllerOptions } from './workload-controller.js';
import { podTemplateHash } from './workload-pods.js';

const DEPLOYMENT = resourceByKind('Deployment');
const REPLICASET = resourceByKind('ReplicaSet');
const POD = resourceByKind('Pod');
export const POD_TEMPLATE_HASH = 'pod-template-hash';
export const REVISION_ANNOTATION = 'deployment.kubernetes.io/revision';
const DESIRED_ANNOTATION = 'deployment.kubernetes.io/desired-replicas';
const MAX_ANNOTATION = 'deployment.kubernetes.io/max-replicas';
const meta = (o: unknown): JsonObject => child(o, 'metadata');
const nameOf = (o: unknown): string => str(meta(o), 'name') ?? '';
const specReplicas = (o: unknown): number => num(child(o, 'spec'), 'replicas') ?? 0;
const statusCount = (o: unknown, field: string): number => num(child(o, 'status'), field) ?? 0;
const revisionOf = (rs: unknown): number =>
  Number(str(child(meta(rs), 'annotations'), REVISION_ANNOTATION) ?? 0) || 0;
const sum = (sets: readonly JsonObject[], f: (rs: JsonObject) => number): number =>
  sets.reduce((n, rs) => n + f(rs), 0);
const countOf = (rs: JsonObject): ReplicaSetCount => ({
  name: nameOf(rs),
  replicas: specReplicas(rs),
  available: statusCount(rs, 'availableReplicas'),
});

/** The template a ReplicaSet was made from: its own, less the hash label the controller added. */
function templateWithoutHash(rs: JsonObject): JsonObject {
  const template = cloneJson(child(child(rs, 'spec'), 'template'));
  delete child(meta(template), 'labels')[POD_TEMPLATE_HASH];
  return template;
}

export interface DeploymentControllerOptions extends WorkloadControllerOptions {
  readonly clock: Clock;
  readonly logger: Logger;
}

export class DeploymentController extends WorkloadController {
  private readonly unsubscribePods: () => void;

  constructor(private readonly o: DeploymentControllerOptions) {
    super(o, DEPLOYMENT, [], 'ReplicaSet');
    // A Pod that is finally gone changes no ReplicaSet's status (it stopped counting when it began to terminate),
    // but a Recreate rollout waits for exactly that (upstream's deletePod handler).
    this.unsubscribePods = o.registry.store.subscribe((ev) => {
      if (ev.resource.names.kind !== 'Pod' || ev.type !== 'DELETED') return;
      const namespace = str(meta(ev.object), 'namespace') ?? '';
      for (const ref of arr(meta(ev.object), 'ownerReferences')) {
        if (str(ref, 'kind') !== 'ReplicaSet') continue;
        const rs = o.registry.store.get(REPLICASET, namespace, str(ref, 'name') ?? '');
        for (const owner of arr(meta(rs), 'ownerReferences'))
          if (str(owner, 'kind') === 'Deployment') this.queue.add(`${namespace}/${str(owner, 'name') ?? ''}`);
      }
    });
  }

  override stop(): void {
    this.unsubscribePods();
    super.stop();
  }

  protected reconcile(d: JsonObject): void {
    const spec = child(d, 'spec');
    const replicas = num(spec, 'replicas') ?? 1;
    const all = this.replicaSets(d);
    const template = child(spec, 'template');
    const found = all.find((rs) => jsonEqual(templateWithoutHash(rs), template));
    const old = all.filter((rs) => rs !== found).sort(oldestFirst);
    if (spec.paused !== true) {
      const recreate = str(child(spec, 'strategy'), 'type') === 'Recreate';
      const bounds = recreate
        ? { maxSurge: 0, maxUnavailable: 0 }
        : rollingBounds(child(child(spec, 'strategy'), 'rollingUpdate'), replicas);
      const newRS = this.newReplicaSet(d, found, old, recreate ? 0 : undefined, bounds);
      if (newRS) {
        if (recreate) this.recreate(d, newRS, old, replicas);
        else this.rollingUpdate(d, newRS, old, replicas, bounds);
      }
      this.cleanupOldReplicaSets(old, num(spec, 'revisionHistoryLimit') ?? 10);
    }
    this.updateStatus(d);
  }

  /** The Deployment's ReplicaSets: those it controls, by uid, terminating ones left out. */
  private replicaSets(d: JsonObject): JsonObject[] {
    const uid = str(meta(d), 'uid');
    return this.o.registry.store
      .list(REPLICASET, str(meta(d), 'namespace') ?? '')
      .filter(
        (rs) =>
          !str(meta(rs), 'deletionTimestamp') &&
          arr(meta(rs), 'ownerReferences').some((r) => isObject(r) && r.uid === uid && r.controller === true),
      );
  }

  /**
   * The ReplicaSet of the current template, made when there is none, with the next revision (as is an old one
   * whose template came back: a rollback), and the Deployment's revision annotation following it.
   */
  private newReplicaSet(
    d: JsonObject,
    found: JsonObject | undefined,
    old: readonly JsonObject[],
    initialSize: number | undefined,
    bounds: RollingBounds,
  ): JsonObject | undefined {
    const maxOld = Math.max(0, ...old.map(revisionOf));
    let rs = found;
    const revision = found && revisionOf(found) > maxOld ? revisionOf(found) : maxOld + 1;
    if (!rs) {
      const replicas = specReplicas(d);
      const size =
        initialSize ??
        newReplicaSetSize(replicas, bounds, { name: '', replicas: 0, available: 0 }, old.map(countOf));
      rs = this.createReplicaSet(d, revision, size, bounds);
    } else if (revisionOf(rs) !== revision)
      rs = this.writeReplicaSet(rs, { [REVISION_ANNOTATION]: String(revision) });
    if (rs) this.setDeploymentRevision(d, revision);
    return rs;
  }

  private createReplicaSet(
    d: JsonObject,
    revision: number,
    size: number,
    bounds: RollingBounds,
  ): JsonObject | undefined {
    const spec = child(d, 'spec');
    const template = cloneJson(child(spec, 'template'));
    const hash = podTemplateHash(template);
    const labels = { ...child(meta(template), 'labels'), [POD_TEMPLATE_HASH]: hash };
    const selector = cloneJson(child(spec, 'selector'));
    selector.matchLabels = { ...child(selector, 'matchLabels'), [POD_TEMPLATE_HASH]: hash };
    const namespace = str(meta(d), 'namespace') ?? '';
    const replicas = specReplicas(d);
    const body = {
      apiVersion: 'apps/v1',
      kind: 'ReplicaSet',
      metadata: {
        name: `${nameOf(d)}-${hash}`,
        namespace,
        labels,
        annotations: {
          [REVISION_ANNOTATION]: String(revision),
          [DESIRED_ANNOTATION]: String(replicas),
          [MAX_ANNOTATION]: String(replicas + bounds.maxSurge),
        },
        ownerReferences: [
          {
            apiVersion: 'apps/v1',
            kind: 'Deployment',
            name: nameOf(d),
            uid: str(meta(d), 'uid'),
            controller: true,
            blockOwnerDeletion: true,
          },
        ],
      },
      spec: {
        replicas: size,
        minReadySeconds: num(spec, 'minReadySeconds') ?? 0,
        selector,
        template: { ...template, metadata: { ...meta(template), labels } },
      },
    };
    const r = this.o.registry.create(REPLICASET, namespace, body);
    if (!r.ok) {
      this.o.logger.warn('cannot create replica set', {
        deployment: `${namespace}/${nameOf(d)}`,
        error: r.error.message,
      });
      return undefined;
    }
    if (size > 0) this.scalingEvent(d, nameOf(r.value), 0, size);
    return r.value;
  }

  private rollingUpdate(
    d: JsonObject,
    newRS: JsonObject,
    old: readonly JsonObject[],
    replicas: number,
    bounds: RollingBounds,
  ): void {
    // Nothing to roll (a scaling event, or a finished rollout): the one live ReplicaSet takes the size at once.
    if (old.every((rs) => specReplicas(rs) === 0)) {
      this.scaleReplicaSet(d, newRS, replicas, bounds);
      return;
    }
    const next = newReplicaSetSize(replicas, bounds, countOf(newRS), [newRS, ...old].map(countOf));
    // As upstream, one kind of step per pass: the write brings the ReplicaSet's event, and the next pass.
    if (next !== specReplicas(newRS)) {
      this.scaleReplicaSet(d, newRS, next, bounds);
      return;
    }
    const sizes = oldReplicaSetSizes(replicas, bounds, countOf(newRS), old.map(countOf));
    for (const rs of old) {
      const size = sizes.get(nameOf(rs));
      if (size !== undefined) this.scaleReplicaSet(d, rs, size, bounds);
    }
  }

  /** Recreate: every old ReplicaSet to zero, and the new one up only once none of their Pods runs. */
  private recreate(d: JsonObject, newRS: JsonObject, old: readonly JsonObject[], replicas: number): void {
    const bounds = { maxSurge: 0, maxUnavailable: 0 };
    const live = old.filter((rs) => specReplicas(rs) > 0);
    for (const rs of live) this.scaleReplicaSet(d, rs, 0, bounds);
    if (live.length > 0 || this.oldPodsRunning(old)) return;
    this.scaleReplicaSet(d, newRS, replicas, bounds);
  }

  /**
   * Old ReplicaSets beyond revisionHistoryLimit, oldest revision first, once they are empty: what
   * `kubectl rollout undo` can go back to is the rest (upstream's cleanupDeployment).
   */
  private cleanupOldReplicaSets(old: readonly JsonObject[], limit: number): void {
    const empty = old.filter((rs) => specReplicas(rs) === 0 && statusCount(rs, 'replicas') === 0);
    const excess = empty.length - Math.max(0, limit);
    if (excess <= 0) return;
    const byRevision = [...empty].sort((a, b) => revisionOf(a) - revisionOf(b));
    for (const rs of byRevision.slice(0, excess)) {
      const r = this.o.registry.delete(REPLICASET, str(meta(rs), 'namespace') ?? '', nameOf(rs));
      if (!r.ok && r.error.code !== 404)
        this.o.logger.warn('cannot delete replica set', { replicaset: nameOf(rs), error: r.error.message });
    }
  }

  /** Any Pod of an old ReplicaSet not yet finished, terminating ones included (upstream's oldPodsRunning). */
  private oldPodsRunning(old: readonly JsonObject[]): boolean {
    if (old.length === 0) return false;
    const uids = new Set(old.map((rs) => str(meta(rs), 'uid')));
    const namespace = str(meta(old[0]), 'namespace') ?? '';
    return this.o.registry.store.list(POD, namespace).some((p) => {
      const phase = str(child(p, 'status'), 'phase');
      const owned = arr(meta(p), 'ownerReferences').some((r) => uids.has(str(r, 'uid')));
      return owned && phase !== 'Succeeded' && phase !== 'Failed';
    });
  }

  /** A ReplicaSet to `size`, with the Deployment's size and bound in its annotations, as upstream keeps them. */
  private scaleReplicaSet(d: JsonObject, rs: JsonObject, size: number, bounds: RollingBounds): void {
    const from = specReplicas(rs);
    const replicas = specReplicas(d);
    const written = this.writeReplicaSet(
      rs,
      { [DESIRED_ANNOTATION]: String(replicas), [MAX_ANNOTATION]: String(replicas + bounds.maxSurge) },
      size,
    );
    if (written && from !== size) this.scalingEvent(d, nameOf(rs), from, size);
  }

  /** Writes annotations (and a size) onto a ReplicaSet; the stored one, or undefined when the write failed. */
  private writeReplicaSet(
    rs: JsonObject,
    annotations: Readonly<Record<string, string>>,
    size = specReplicas(rs),
  ): JsonObject | undefined {
    const m = meta(rs);
    const merged = { ...child(m, 'annotations'), ...annotations };
    if (size === specReplicas(rs) && jsonEqual(merged, child(m, 'annotations'))) return rs;
    const next = {
      ...rs,
      metadata: { ...m, annotations: merged },
      spec: { ...child(rs, 'spec'), replicas: size },
    };
    const r = this.o.registry.update(REPLICASET, str(m, 'namespace') ?? '', nameOf(rs), next);
    if (r.ok) return r.value;
    this.o.logger.warn('cannot update replica set', { replicaset: nameOf(rs), error: r.error.message });
    return undefined;
  }

  private setDeploymentRevision(d: JsonObject, revision: number): void {
    const fresh = this.stored(d);
    if (!fresh || str(child(meta(fresh), 'annotations'), REVISION_ANNOTATION) === String(revision)) return;
    const m = meta(fresh);
    const next = {
      ...fresh,
      metadata: {
        ...m,
        annotations: { ...child(m, 'annotations'), [REVISION_ANNOTATION]: String(revision) },
      },
    };
    const r = this.o.registry.update(DEPLOYMENT, str(m, 'namespace') ?? '', nameOf(fresh), next);
    if (!r.ok)
      this.o.logger.warn('cannot update deployment revision', {
        deployment: nameOf(fresh),
        error: r.error.message,
      });
  }

  /** upstream's deployment controller: "Scaled up replica set web-7d4b9c from 0 to 3". */
  private scalingEvent(d: JsonObject, rsName: string, from: number, to: number): void {
    this.o.events.deployments.event(d, {
      type: 'Normal',
      reason: 'ScalingReplicaSet',
      message: `Scaled ${to > from ? 'up' : 'down'} replica set ${rsName} from ${from} to ${to}`,
    });
  }

  /** The counts `kubectl get deploy` prints and `kubectl rollout status` waits on, and the two conditions. */
  private updateStatus(d: JsonObject): void {
    const fresh = this.stored(d);
    if (!fresh) return;
    const spec = child(fresh, 'spec');
    const replicas = num(spec, 'replicas') ?? 1;
    const all = this.replicaSets(fresh);
    const newRS = all.find((rs) => jsonEqual(templateWithoutHash(rs), child(spec, 'template')));
    const available = sum(all, (rs) => statusCount(rs, 'availableReplicas'));
    const counts = {
      replicas: sum(all, (rs) => statusCount(rs, 'replicas')),
      updatedReplicas: newRS ? statusCount(newRS, 'replicas') : 0,
      readyReplicas: sum(all, (rs) => statusCount(rs, 'readyReplicas')),
      availableReplicas: available,
    };
    const unavailable = Math.max(0, sum(all, specReplicas) - available);
    const rolling = str(child(spec, 'strategy'), 'type') !== 'Recreate';
    const maxUnavailable = rolling
      ? rollingBounds(child(child(spec, 'strategy'), 'rollingUpdate'), replicas).maxUnavailable
      : 0;
    const prev = child(fresh, 'status');
    const status: JsonObject = {
      observedGeneration: num(meta(fresh), 'generation') ?? 1,
      ...counts,
      ...(unavailable > 0 ? { unavailableReplicas: unavailable } : {}),
      conditions: this.conditions(
        prev,
        available >= replicas - maxUnavailable,
        newRS,
        rolloutComplete(replicas, counts),
      ),
    };
    if (jsonEqual(status, prev)) return;
    const r = this.o.registry.update(
      DEPLOYMENT,
      str(meta(fresh), 'namespace') ?? '',
      nameOf(fresh),
      { ...fresh, status },
      'status',
    );
    if (!r.ok)
      this.o.logger.warn('cannot update deployment status', {
        deployment: nameOf(fresh),
        error: r.error.message,
      });
  }

  /** Available and Progressing, as upstream words them; a condition keeps its times while it says the same. */
  private conditions(
    prev: JsonObject,
    available: boolean,
    newRS: JsonObject | undefined,
    complete: boolean,
  ): JsonObject[] {
    const now = rfc3339(this.o.clock.now());
    const rsName = newRS ? nameOf(newRS) : '';
    const wanted: { type: string; status: string; reason: string; message: string }[] = [
      available
        ? {
            type: 'Available',
            status: 'True',
            reason: 'MinimumReplicasAvailable',
            message: 'Deployment has minimum availability.',
          }
        : {
            type: 'Available',
            status: 'False',
            reason: 'MinimumReplicasUnavailable',
            message: 'Deployment does not have minimum availability.',
          },
      complete
        ? {
            type: 'Progressing',
            status: 'True',
            reason: 'NewReplicaSetAvailable',
            message: `ReplicaSet "${rsName}" has successfully progressed.`,
          }
        : {
            type: 'Progressing',
            status: 'True',
            reason: 'ReplicaSetUpdated',
            message: `ReplicaSet "${rsName}" is progressing.`,
          },
    ];
    return wanted.map((c) => {
      const before = arr(prev, 'conditions').find((x) => str(x, 'type') === c.type);
      const same = str(before, 'status') === c.status;
      const unchanged = same && str(before, 'reason') === c.reason && str(before, 'message') === c.message;
      return {
        ...c,
        lastUpdateTime: unchanged ? (str(before, 'lastUpdateTime') ?? now) : now,
        lastTransitionTime: same ? (str(before, 'lastTransitionTime') ?? now) : now,
      };
    });
  }
}

/** Oldest first, by creation and then name (upstream's ReplicaSetsByCreationTimestamp). */
function oldestFirst(a: JsonObject, b: JsonObject): number {
  return (
    (str(meta(a), 'creationTimestamp') ?? '').localeCompare(str(meta(b), 'creationTimestamp') ?? '') ||
    nameOf(a).localeCompare(nameOf(b))
  );
}
