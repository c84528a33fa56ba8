// The lab's event recorder, as the controllers, the scheduler and the kubelet use client-go's
// (tools/record): an Event about an object, named <object>.<hex nanoseconds>, in the object's namespace ("default"
// for cluster-scoped ones). A repeat of the same event (same source, object, type, reason and message) is not a new
// object: the stored one gets count+1 and a new lastTimestamp, as client-go's EventCorrelator aggregates. Writes go
// straight to the registry (the lab's controllers run in the API server's process); a failed write is logged once
// per reason and never stops the caller.
import type { Clock } from 'kube-proxy-ts/util/clock.js';
import type { Logger } from 'kube-proxy-ts/util/logger.js';
import { child, num, str, type JsonObject } from '../apiserver/json.js';
import type { Registry } from '../apiserver/registry.js';
import { resourceByKind } from '../apiserver/resources.js';

const EVENT = resourceByKind('Event');
/** client-go's LRU of recent events is 4096 entries; a repeat older than that starts a new object. */
const REMEMBERED = 4096;

export interface EventSource {
  /** source.component and reportingComponent: "default-scheduler", "kubelet", "deployment-controller". */
  readonly component: string;
  /** source.host and reportingInstance (the kubelet's node); none for the controllers, as upstream's. */
  readonly host?: string;
}

export interface EventDetails {
  readonly type: 'Normal' | 'Warning';
  readonly reason: string;
  readonly message: string;
  /** involvedObject.fieldPath: the container an event is about ("spec.containers{web}"). */
  readonly fieldPath?: string;
  /** The kubelet's events come from the node that runs the Pod. */
  readonly host?: string;
  /** events.k8s.io's action (the scheduler's "Binding"). */
  readonly action?: string;
}

/** The involved object's reference, as client-go's reference.GetReference makes it. */
function referenceTo(obj: JsonObject, fieldPath: string | undefined): JsonObject {
  const meta = child(obj, 'metadata');
  return {
    kind: str(obj, 'kind') ?? '',
    ...(str(meta, 'namespace') ? { namespace: str(meta, 'namespace') } : {}),
    name: str(meta, 'name') ?? '',
    uid: str(meta, 'uid') ?? '',
    apiVersion: str(obj, 'apiVersion') ?? '',
    resourceVersion: str(meta, 'resourceVersion') ?? '',
    ...(fieldPath ? { fieldPath } : {}),
  };
}

/** RFC 3339 with seconds, as metav1.Time serializes. */
const seconds = (ms: number): string =>
  new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');

/** The last event-name timestamp given out, per API server (its registry). */
const LAST_NANOS = new WeakMap<Registry, bigint>();

export class EventRecorder {
  /** Aggregation key → the stored event's namespace/name, oldest first (a Map keeps insertion order). */
  private readonly recent = new Map<string, string>();
  private readonly failedReasons = new Set<string>();

  constructor(
    private readonly registry: Registry,
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly source: EventSource,
  ) {}

  /** Records an event about `obj` (an object as stored: kind, apiVersion and metadata set). */
  event(obj: JsonObject, d: EventDetails): void {
    const ref = referenceTo(obj, d.fieldPath);
    const host = d.host ?? this.source.host;
    // The reference's resourceVersion changes with every write of the object; client-go leaves it out of the key.
    const key = JSON.stringify([
      this.source.component,
      host ?? '',
      { ...ref, resourceVersion: undefined },
      d.type,
      d.reason,
      d.message,
    ]);
    const now = this.clock.now();
    const previous = this.recent.get(key);
    if (previous !== undefined && this.bump(previous, now)) {
      this.recent.delete(key);
      this.recent.set(key, previous);
      return;
    }
    const namespace = str(ref, 'namespace') ?? 'default';
    const name = `${str(ref, 'name') ?? ''}.${this.nanos(now).toString(16)}`;
    const body: JsonObject = {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name, namespace },
      involvedObject: ref,
      reason: d.reason,
      message: d.message,
      source: { component: this.source.component, ...(host ? { host } : {}) },
      firstTimestamp: seconds(now),
      lastTimestamp: seconds(now),
      count: 1,
      type: d.type,
      ...(d.action ? { action: d.action } : {}),
      reportingComponent: this.source.component,
      reportingInstance: host ?? '',
    };
    const r = this.registry.create(EVENT, namespace, body);
    if (!r.ok) return this.failed(d.reason, r.error.message);
    this.recent.set(key, `${namespace}/${name}`);
    if (this.recent.size > REMEMBERED) {
      const oldest = this.recent.keys().next();
      if (!oldest.done) this.recent.delete(oldest.value);
    }
  }

  /** count+1 and lastTimestamp on the stored event; false when it is gone (expired, deleted): make a new one. */
  private bump(nsName: string, now: number): boolean {
    const [ns = '', name = ''] = nsName.split('/');
    const current = this.registry.store.get(EVENT, ns, name);
    if (!current) return false;
    const next = { ...current, count: (num(current, 'count') ?? 1) + 1, lastTimestamp: seconds(now) };
    const r = this.registry.update(EVENT, ns, name, next);
    if (!r.ok) this.failed(str(current, 'reason') ?? '', r.error.message);
    return r.ok;
  }

  /**
   * Unique names within one millisecond: client-go's are nanoseconds, our clock has milliseconds. Shared by every
   * recorder of one API server: two controllers' events about objects of one name (Deployment web, Service web)
   * in one millisecond would otherwise take the same name, and the second would be lost.
   */
  private nanos(nowMs: number): bigint {
    let n = BigInt(nowMs) * 1_000_000n;
    const last = LAST_NANOS.get(this.registry) ?? 0n;
    if (n <= last) n = last + 1n;
    LAST_NANOS.set(this.registry, n);
    return n;
  }

  private failed(reason: string, error: string): void {
    if (this.failedReasons.has(reason)) return;
    this.failedReasons.add(reason);
    this.logger.warn('cannot record event', { component: this.source.component, reason, error });
  }
}

/** The recorders of the lab's control plane, one per upstream component, shared by the controllers. */
export interface ControlPlaneEvents {
  readonly scheduler: EventRecorder;
  readonly kubelet: EventRecorder;
  readonly deployments: EventRecorder;
  readonly daemonSets: EventRecorder;
}

export function controlPlaneEvents(registry: Registry, clock: Clock, logger: Logger): ControlPlaneEvents {
  const recorder = (component: string): EventRecorder =>
    new EventRecorder(registry, clock, logger, { component });
  return {
    scheduler: recorder('default-scheduler'),
    kubelet: recorder('kubelet'),
    deployments: recorder('deployment-controller'),
    daemonSets: recorder('daemonset-controller'),
  };
}

/** The scheduler's event when it binds a Pod (upstream schedule_one.go: reason Scheduled, action Binding). */
export function recordScheduled(recorder: EventRecorder, pod: JsonObject, node: string): void {
  const meta = child(pod, 'metadata');
  recorder.event(pod, {
    type: 'Normal',
    reason: 'Scheduled',
    message: `Successfully assigned ${str(meta, 'namespace') ?? ''}/${str(meta, 'name') ?? ''} to ${node}`,
    action: 'Binding',
  });
}
