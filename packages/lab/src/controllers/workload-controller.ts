// What the Deployment, ReplicaSet and DaemonSet controllers share: a queue of workload keys, fed by the workload's
// own events and by those of the objects it owns (Pods; a Deployment's ReplicaSets): one that becomes ready or goes
// away changes what its owner must do. A reconcile starts from the stored workload, never a deleted or terminating
// one.
import type { Logger } from 'kube-proxy-ts/util/logger.js';
import { child, str, type JsonObject } from '../apiserver/json.js';
import type { Registry } from '../apiserver/registry.js';
import type { ResourceType } from '../apiserver/resources.js';
import type { ControlPlaneEvents } from './events.js';
import { WorkQueue } from './work-queue.js';
import { keyOf, WorkloadPods } from './workload-pods.js';

export interface WorkloadControllerOptions {
  readonly registry: Registry;
  readonly logger: Logger;
  /** The control plane's event recorders: the workload controller's own, and the scheduler's for its Pods. */
  readonly events: ControlPlaneEvents;
}

export abstract class WorkloadController {
  readonly queue: WorkQueue;
  protected readonly pods: WorkloadPods;
  private readonly unsubscribe: () => void;

  private readonly registry: Registry;

  /**
   * `everyOn`: kinds whose every event concerns every workload (a DaemonSet's Nodes); `dependents`: the kind the
   * workload owns, whose events go to their owners.
   */
  protected constructor(
    options: WorkloadControllerOptions,
    private readonly workload: ResourceType,
    everyOn: readonly string[] = [],
    dependents = 'Pod',
  ) {
    const { registry, logger } = options;
    this.registry = registry;
    this.pods = new WorkloadPods(registry, logger, workload, options.events.scheduler);
    this.queue = new WorkQueue(workload.resource, (key) => this.reconcileKey(key), logger);
    const all = (): void => {
      for (const w of registry.store.list(workload)) this.queue.add(keyOf(w));
    };
    this.unsubscribe = registry.store.subscribe((ev) => {
      if (ev.resource.names.kind === workload.names.kind) this.queue.add(keyOf(ev.object));
      else if (ev.resource.names.kind === dependents)
        for (const k of this.pods.ownersOf(ev.object)) this.queue.add(k);
      else if (everyOn.includes(ev.resource.names.kind)) all();
    });
    all();
  }

  /** Brings the workload's Pods, then its status, to what its spec asks. */
  protected abstract reconcile(workload: JsonObject): void;

  /** The workload as stored now: a status is computed from it, after the reconcile's own writes. */
  protected stored(workload: JsonObject): JsonObject | undefined {
    const meta = child(workload, 'metadata');
    return this.registry.store.get(this.workload, str(meta, 'namespace') ?? '', str(meta, 'name') ?? '');
  }

  /** Queues the workload again: for what no event will announce (a Pod that has now been ready long enough). */
  protected requeue(workload: JsonObject): void {
    this.queue.add(keyOf(workload));
  }

  stop(): void {
    this.unsubscribe();
    this.queue.stop();
  }

  private reconcileKey(key: string): void {
    const [ns = '', name = ''] = key.split('/');
    const workload = this.registry.store.get(this.workload, ns, name);
    if (workload && !str(child(workload, 'metadata'), 'deletionTimestamp')) this.reconcile(workload);
  }
}
