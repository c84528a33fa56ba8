// What the workload controllers (ReplicaSet, DaemonSet) share about the Pods they own: which Pods are theirs (by
// the owner's uid in an ownerReference, as upstream's ControllerRef), the reference and name a new Pod gets, the
// template hash that tells current Pods from old ones, and the writes whose failure is logged, not thrown.
import { createHash } from 'node:crypto';
import type { Logger } from 'kube-proxy-ts/util/logger.js';
import { arr, child, str, type JsonObject } from '../apiserver/json.js';
import type { Registry } from '../apiserver/registry.js';
import { resourceByKind, type ResourceType } from '../apiserver/resources.js';
import { recordScheduled, type EventRecorder } from './events.js';

const POD = resourceByKind('Pod');
/** Upstream's alphabet for generated names (rand.SafeEncodeString): no vowels, no look-alike characters. */
const SAFE_ALPHABET = 'bcdfghjklmnpqrstvwxz2456789';
const meta = (o: unknown): JsonObject => child(o, 'metadata');

/** "namespace/name": a workload's key in its controller's queue. */
export const keyOf = (o: unknown): string =>
  `${str(meta(o), 'namespace') ?? ''}/${str(meta(o), 'name') ?? ''}`;

/** `n` random characters of a generated Pod name. */
function randomSuffix(n: number): string {
  let s = '';
  for (let i = 0; i < n; i++) s += SAFE_ALPHABET[Math.floor(Math.random() * SAFE_ALPHABET.length)];
  return s;
}

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

export interface NewPod {
  /** The name's prefix, as upstream's metadata.generateName: five random characters follow it. */
  readonly generateName: string;
  /** Added to the template's labels. */
  readonly labels: Readonly<Record<string, string>>;
  readonly spec: JsonObject;
}

/**
 * The Pods of one workload kind (ReplicaSet, DaemonSet), as its controller reads and writes them. A failed write
 * is logged, not thrown: the workload's next event reconciles it again.
 */
export class WorkloadPods {
  constructor(
    private readonly registry: Registry,
    private readonly logger: Logger,
    /** The workload's resource: its kind names it in ownerReferences, its singular name in log lines. */
    private readonly workload: ResourceType,
    /** The scheduler's recorder: the workload controllers place their Pods themselves (the lab's scheduler). */
    private readonly scheduler: EventRecorder,
  ) {}

  /** The Pods in the owner's namespace that name it in an ownerReference, terminating ones included. */
  owned(owner: JsonObject): JsonObject[] {
    const uid = str(meta(owner), 'uid');
    return this.registry.store
      .list(POD, str(meta(owner), 'namespace') ?? '')
      .filter((p) => arr(meta(p), 'ownerReferences').some((r) => str(r, 'uid') === uid));
  }

  /** The keys of the workloads an object (a Pod, a ReplicaSet) names as owners: whose reconcile its event calls for. */
  ownersOf(pod: unknown): string[] {
    return arr(meta(pod), 'ownerReferences')
      .filter((ref) => str(ref, 'kind') === this.workload.names.kind)
      .map((ref) => `${str(meta(pod), 'namespace') ?? ''}/${str(ref, 'name') ?? ''}`);
  }

  /**
   * Creates a Pod from the owner's template, controlled by the owner; `context` goes into a failure's log line.
   * Returns the stored Pod, or undefined when the create failed.
   */
  create(
    owner: JsonObject,
    template: JsonObject,
    pod: NewPod,
    context: Readonly<Record<string, string>> = {},
  ): JsonObject | undefined {
    const tmeta = meta(template);
    const annotations = child(tmeta, 'annotations');
    const namespace = str(meta(owner), 'namespace');
    const obj = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: `${pod.generateName}${randomSuffix(5)}`,
        namespace,
        labels: { ...child(tmeta, 'labels'), ...pod.labels },
        ...(Object.keys(annotations).length > 0 ? { annotations } : {}),
        ownerReferences: [this.controllerRef(owner)],
      },
      spec: pod.spec,
    };
    const r = this.registry.create(POD, namespace ?? '', obj);
    if (!r.ok) {
      this.logger.warn('cannot create pod', {
        [this.workload.names.singular]: keyOf(owner),
        ...context,
        error: r.error.message,
      });
      return undefined;
    }
    // Upstream's scheduler binds these Pods and says so; in the lab the Pod is born bound.
    const node = str(pod.spec, 'nodeName');
    if (node) recordScheduled(this.scheduler, r.value, node);
    return r.value;
  }

  /** Deletes a Pod; one already gone is no failure. True when this call deleted it (or began to). */
  delete(pod: JsonObject): boolean {
    const r = this.registry.delete(POD, str(meta(pod), 'namespace') ?? '', str(meta(pod), 'name') ?? '');
    if (!r.ok && r.error.code !== 404)
      this.logger.warn('cannot delete pod', { pod: keyOf(pod), error: r.error.message });
    return r.ok;
  }

  /** Writes the workload's status subresource. */
  writeStatus(workload: JsonObject, status: JsonObject): void {
    const [ns, name] = [str(meta(workload), 'namespace') ?? '', str(meta(workload), 'name') ?? ''];
    const r = this.registry.update(this.workload, ns, name, { ...workload, status }, 'status');
    if (!r.ok)
      this.logger.warn(`cannot update ${this.workload.names.singular} status`, {
        [this.workload.names.singular]: `${ns}/${name}`,
        error: r.error.message,
      });
  }

  /** The Pod's ownerReference: the workload is its controller, and a foreground delete of it waits for the Pod. */
  private controllerRef(owner: JsonObject): JsonObject {
    return {
      apiVersion: 'apps/v1',
      kind: this.workload.names.kind,
      name: str(meta(owner), 'name') ?? '',
      uid: str(meta(owner), 'uid'),
      controller: true,
      blockOwnerDeletion: true,
    };
  }
}
