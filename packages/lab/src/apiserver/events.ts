// Events: one stored object, two APIs. kube-apiserver keeps every Event in core/v1's shape and serves
// events.k8s.io/v1 by renaming fields on the way in and out (upstream pkg/apis/events/v1/conversion.go); the lab
// does the same, so an event a controller writes through core/v1 is listed by events.k8s.io/v1 and the other way
// round. Events also expire: kube-apiserver gives each write an etcd lease of --event-ttl (1 h); here a bound on age
// since the last write and on the number kept does that job, so a long soak does not grow the store for good.
import type { Clock } from 'kube-proxy-ts/util/clock.js';
import { child, cloneJson, isObject, str, type JsonObject } from './json.js';
import { cause, type StatusCause } from './status.js';
import type { ObjectStore } from './store.js';
import type { Strategy } from './strategy.js';
import { apiVersionOf, resourceByKind, type ResourceType } from './resources.js';
import { hpaFromV1, hpaToV1, isHpaV1 } from './autoscaling.js';

export const EVENTS_V1 = 'events.k8s.io/v1';

/** core/v1 name → events.k8s.io/v1 name, for the fields the two APIs spell differently. */
const RENAMED: readonly (readonly [core: string, eventsV1: string])[] = [
  ['involvedObject', 'regarding'],
  ['message', 'note'],
  ['reportingComponent', 'reportingController'],
  ['source', 'deprecatedSource'],
  ['firstTimestamp', 'deprecatedFirstTimestamp'],
  ['lastTimestamp', 'deprecatedLastTimestamp'],
  ['count', 'deprecatedCount'],
];

function renamed(obj: JsonObject, from: 0 | 1, apiVersion: string): JsonObject {
  const out = cloneJson(obj);
  for (const pair of RENAMED) {
    const [a, b] = [pair[from], pair[1 - from] as string];
    if (out[a] !== undefined) out[b] = out[a];
    delete out[a];
  }
  out.apiVersion = apiVersion;
  out.kind = 'Event';
  return out;
}

/** An events.k8s.io/v1 Event in the stored (core/v1) shape. */
export const eventToCore = (obj: JsonObject): JsonObject => renamed(obj, 1, 'v1');
/** A stored (core/v1) Event as events.k8s.io/v1 shows it. */
export const eventToEventsV1 = (obj: JsonObject): JsonObject => renamed(obj, 0, EVENTS_V1);

const isEventsV1 = (t: ResourceType): boolean => t.names.kind === 'Event' && apiVersionOf(t) === EVENTS_V1;

/**
 * The object as resource `t` serves it: the stored object itself for every resource but the two served through a
 * second API (events.k8s.io's Events, autoscaling/v1's HorizontalPodAutoscalers: apiserver/autoscaling.ts).
 */
export function servedForm(t: ResourceType, stored: JsonObject): JsonObject {
  if (isHpaV1(t)) return hpaToV1(stored);
  return isEventsV1(t) ? eventToEventsV1(stored) : stored;
}

/** The object as it is stored, from a body written through resource `t`. */
export function storedForm(t: ResourceType, served: JsonObject): JsonObject {
  if (isHpaV1(t)) return hpaFromV1(served);
  return isEventsV1(t) ? eventToCore(served) : served;
}

export interface EventRetention {
  /** Longest an event stays after its last write (kube-apiserver's --event-ttl default: 1 h). */
  readonly ttlMs: number;
  /** Most events kept across all namespaces; the least recently written go first. */
  readonly maxEvents: number;
}

export const DEFAULT_EVENT_RETENTION: EventRetention = { ttlMs: 60 * 60 * 1000, maxEvents: 5000 };

const keyOf = (obj: JsonObject): string =>
  `${str(child(obj, 'metadata'), 'namespace') ?? ''}/${str(child(obj, 'metadata'), 'name') ?? ''}`;

/**
 * Validation (a light version of upstream's ValidateEvent: the type, and the involved object's namespace matching
 * the event's) and retention. The order of last writes is a Map's insertion order (a write moves its key to the
 * end), so expiry looks only at the front: O(1) per write in the common case.
 */
export function eventStrategy(store: ObjectStore, clock: Clock, retention: EventRetention): Strategy {
  const events = resourceByKind('Event');
  const lastWrite = new Map<string, number>();
  let seeded = false;
  // A restored store's events join the order once, oldest write first (their timestamps say when).
  const seed = (): void => {
    if (seeded) return;
    seeded = true;
    const when = (o: JsonObject): number =>
      Date.parse(str(o, 'lastTimestamp') ?? str(o, 'eventTime') ?? '') || clock.now();
    const restored = store.list(events).map((o) => [keyOf(o), when(o)] as const);
    for (const [k, t] of restored.sort((a, b) => a[1] - b[1])) lastWrite.set(k, t);
  };
  const expire = (newest: string): void => {
    const oldestAllowed = clock.now() - retention.ttlMs;
    for (const [k, t] of lastWrite) {
      if (k === newest) break;
      if (lastWrite.size <= Math.max(1, retention.maxEvents) && t >= oldestAllowed) break;
      lastWrite.delete(k);
      const [ns = '', name = ''] = k.split('/');
      const obj = store.get(events, ns, name);
      if (obj) store.commit('DELETED', events, obj, obj);
    }
  };
  return {
    validate(obj) {
      const out: StatusCause[] = [];
      const type = obj.type;
      if (type !== undefined && type !== '' && type !== 'Normal' && type !== 'Warning')
        out.push(
          cause('type', `Unsupported value: ${JSON.stringify(type)}: supported values: "Normal", "Warning"`),
        );
      const involved = obj.involvedObject;
      if (!isObject(involved)) out.push(cause('involvedObject', 'Required value', 'FieldValueRequired'));
      else {
        const ns = str(involved, 'namespace');
        if (ns && ns !== str(child(obj, 'metadata'), 'namespace'))
          out.push(
            cause('involvedObject.namespace', `Invalid value: "${ns}": does not match event.namespace`),
          );
      }
      return out;
    },
    committed(obj, old) {
      seed();
      if (!obj) {
        if (old) lastWrite.delete(keyOf(old));
        return;
      }
      const k = keyOf(obj);
      lastWrite.delete(k);
      lastWrite.set(k, clock.now());
      expire(k);
    },
  };
}
