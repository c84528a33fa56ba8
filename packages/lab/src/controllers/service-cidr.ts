// The ServiceCIDR controller (upstream's pkg/controller/servicecidrs): every ServiceCIDR gets the protection
// finalizer and a Ready condition; one being deleted keeps its finalizer, with Ready=False and reason Terminating,
// while Services hold addresses that no other ServiceCIDR contains, and loses it (so it goes) once none do. The
// lab's allocator is synchronous, so upstream's grace period before the finalizer is removed (a window for
// allocators that have not yet seen the deletion) is not needed here.
import type { Clock } from 'kube-proxy-ts/util/clock.js';
import type { Logger } from 'kube-proxy-ts/util/logger.js';
import { arr, child, cloneJson, jsonEqual, str, type JsonObject } from '../apiserver/json.js';
import type { Registry } from '../apiserver/registry.js';
import { rfc3339 } from '../apiserver/registry.js';
import { resourceByKind } from '../apiserver/resources.js';
import { orphanedBy, SERVICE_CIDR_FINALIZER } from '../apiserver/service-cidr.js';
import { WorkQueue } from './work-queue.js';

const SERVICE = resourceByKind('Service');
const SERVICE_CIDR = resourceByKind('ServiceCIDR');
const meta = (o: unknown): JsonObject => child(o, 'metadata');
const nameOf = (o: unknown): string => str(meta(o), 'name') ?? '';
const clusterIPsOf = (svc: unknown): string[] =>
  arr(child(svc, 'spec'), 'clusterIPs').filter((ip): ip is string => typeof ip === 'string' && ip !== 'None');
const terminating = (o: unknown): boolean => str(meta(o), 'deletionTimestamp') !== undefined;

/** upstream's condition when the ServiceCIDR may be used, and when its deletion waits for addresses to go. */
const READY = { status: 'True', message: 'Kubernetes Service CIDR is ready' } as const;
const TERMINATING = {
  status: 'False',
  reason: 'Terminating',
  message:
    'There are still IPAddresses referencing the ServiceCIDR, please remove them or create a new ServiceCIDR',
} as const;

export interface ServiceCIDRControllerOptions {
  readonly registry: Registry;
  readonly clock: Clock;
  readonly logger: Logger;
}

export class ServiceCIDRController {
  readonly queue: WorkQueue;
  private readonly unsubscribe: () => void;

  constructor(private readonly o: ServiceCIDRControllerOptions) {
    this.queue = new WorkQueue('servicecidrs', (name) => this.reconcile(name), o.logger);
    this.unsubscribe = o.registry.store.subscribe((ev) => {
      if (ev.resource.names.kind === 'ServiceCIDR') {
        this.queue.add(nameOf(ev.object));
        // A range appearing or going can free a terminating one, or hold it.
        this.enqueueTerminating();
      } else if (
        ev.resource.names.kind === 'Service' &&
        (ev.type === 'DELETED' || !jsonEqual(clusterIPsOf(ev.object), clusterIPsOf(ev.old)))
      )
        this.enqueueTerminating();
    });
    for (const c of o.registry.store.list(SERVICE_CIDR)) this.queue.add(nameOf(c));
  }

  private enqueueTerminating(): void {
    for (const c of this.o.registry.store.list(SERVICE_CIDR)) if (terminating(c)) this.queue.add(nameOf(c));
  }

  private reconcile(name: string): void {
    const current = this.o.registry.store.get(SERVICE_CIDR, '', name);
    if (!current) return;
    if (!terminating(current)) {
      if (!arr(meta(current), 'finalizers').includes(SERVICE_CIDR_FINALIZER)) {
        const next = cloneJson(current);
        meta(next).finalizers = [...arr(meta(current), 'finalizers'), SERVICE_CIDR_FINALIZER];
        this.write(name, next, undefined);
      }
      this.setReady(name, READY);
      return;
    }
    const others = this.o.registry.store.list(SERVICE_CIDR).filter((c) => nameOf(c) !== name);
    const held = this.o.registry.store.list(SERVICE).flatMap(clusterIPsOf);
    if (orphanedBy(current, others, held).length > 0) {
      this.setReady(name, TERMINATING);
      return;
    }
    // The registry removes an object being deleted once its last finalizer is gone.
    const next = cloneJson(current);
    meta(next).finalizers = arr(meta(current), 'finalizers').filter((f) => f !== SERVICE_CIDR_FINALIZER);
    this.write(name, next, undefined);
  }

  /** The Ready condition as wanted; its lastTransitionTime moves only when its status does. */
  private setReady(name: string, want: { status: string; reason?: string; message: string }): void {
    const current = this.o.registry.store.get(SERVICE_CIDR, '', name);
    if (!current) return;
    const conditions = arr(child(current, 'status'), 'conditions');
    const before = conditions.find((c) => str(c, 'type') === 'Ready');
    const same =
      str(before, 'status') === want.status &&
      str(before, 'reason') === want.reason &&
      str(before, 'message') === want.message;
    if (same) return;
    const condition = {
      type: 'Ready',
      status: want.status,
      ...(want.reason ? { reason: want.reason } : {}),
      message: want.message,
      lastTransitionTime:
        str(before, 'status') === want.status
          ? str(before, 'lastTransitionTime')
          : rfc3339(this.o.clock.now()),
    };
    const next = cloneJson(current);
    next.status = {
      ...child(current, 'status'),
      conditions: [...conditions.filter((c) => str(c, 'type') !== 'Ready'), condition],
    };
    this.write(name, next, 'status');
  }

  private write(name: string, next: JsonObject, sub: 'status' | undefined): void {
    const r = this.o.registry.update(SERVICE_CIDR, '', name, next, sub);
    if (!r.ok) this.o.logger.warn('cannot update servicecidr', { servicecidr: name, error: r.error.message });
  }

  stop(): void {
    this.unsubscribe();
    this.queue.stop();
  }
}
