// The object store: every object of every resource, one global resourceVersion counter, and a bounded history
// of changes that watches resume from. Writes are synchronous and each one is delivered to every subscriber
// before the next write can start, which is what keeps watch streams complete and in order.
import type { ResourceType } from './resources.js';
import type { JsonObject } from './json.js';

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED';

export interface StoreEvent {
  readonly type: WatchEventType;
  readonly resource: ResourceType;
  /** The object after the change; for DELETED, the last state stamped with the deletion's resourceVersion. */
  readonly object: JsonObject;
  /** The object before the change (MODIFIED, DELETED), so a filtered watch can tell "left the selection". */
  readonly old?: JsonObject;
  readonly rv: number;
}

export type StoreSubscriber = (event: StoreEvent) => void;

export interface StoreSnapshot {
  readonly rv: number;
  readonly objects: readonly { readonly resource: string; readonly object: JsonObject }[];
}

export interface StoreOptions {
  /** How many events the history keeps; a watch from an older resourceVersion gets 410 Expired. */
  readonly historyLimit?: number;
}

const keyOf = (namespace: string, name: string): string => `${namespace}/${name}`;

function metaOf(obj: JsonObject): JsonObject {
  const m = obj.metadata;
  return typeof m === 'object' && m !== null && !Array.isArray(m) ? (m as JsonObject) : {};
}

export class ObjectStore {
  private rv = 0;
  private readonly objects = new Map<string, Map<string, JsonObject>>();
  private readonly history: StoreEvent[] = [];
  private historyStart = 0;
  /** Events at or below this resourceVersion are no longer in the history. */
  private compacted = 0;
  private readonly subscribers = new Set<StoreSubscriber>();
  private readonly historyLimit: number;

  constructor(options: StoreOptions = {}, snapshot?: StoreSnapshot) {
    this.historyLimit = Math.max(1, options.historyLimit ?? 10_000);
    if (snapshot) {
      this.rv = snapshot.rv;
      this.compacted = snapshot.rv;
      for (const { resource, object } of snapshot.objects) {
        const m = metaOf(object);
        this.bucket(resource).set(keyOf(String(m.namespace ?? ''), String(m.name ?? '')), object);
      }
    }
  }

  get resourceVersion(): number {
    return this.rv;
  }

  /** The newest resourceVersion no longer covered by the history. */
  get compactedResourceVersion(): number {
    return this.compacted;
  }

  private bucket(resource: string): Map<string, JsonObject> {
    let b = this.objects.get(resource);
    if (!b) {
      b = new Map();
      this.objects.set(resource, b);
    }
    return b;
  }

  get(resource: ResourceType, namespace: string, name: string): JsonObject | undefined {
    return this.objects.get(resource.resource)?.get(keyOf(namespace, name));
  }

  /** Objects of a resource (in one namespace, or all), sorted by namespace/name as the real server lists them. */
  list(resource: ResourceType, namespace?: string): JsonObject[] {
    const b = this.objects.get(resource.resource);
    if (!b) return [];
    const prefix = namespace === undefined ? undefined : `${namespace}/`;
    const keys = [...b.keys()].filter((k) => prefix === undefined || k.startsWith(prefix)).sort();
    return keys.map((k) => b.get(k) as JsonObject);
  }

  /** Sorted keys (namespace/name) with their objects, for pagination. */
  listKeyed(resource: ResourceType, namespace?: string): [string, JsonObject][] {
    const b = this.objects.get(resource.resource);
    if (!b) return [];
    const prefix = namespace === undefined ? undefined : `${namespace}/`;
    return [...b.entries()]
      .filter(([k]) => prefix === undefined || k.startsWith(prefix))
      .sort(([a], [c]) => (a < c ? -1 : a > c ? 1 : 0));
  }

  count(resource: ResourceType, namespace?: string): number {
    const b = this.objects.get(resource.resource);
    if (!b) return 0;
    if (namespace === undefined) return b.size;
    let n = 0;
    for (const k of b.keys()) if (k.startsWith(`${namespace}/`)) n++;
    return n;
  }

  /**
   * Writes one change. `object` gets the next resourceVersion stamped into its metadata (the caller's value is
   * not modified). Returns the stored object.
   */
  commit(type: WatchEventType, resource: ResourceType, object: JsonObject, old?: JsonObject): JsonObject {
    const rv = ++this.rv;
    const stored: JsonObject = { ...object, metadata: { ...metaOf(object), resourceVersion: String(rv) } };
    const m = metaOf(stored);
    const key = keyOf(String(m.namespace ?? ''), String(m.name ?? ''));
    if (type === 'DELETED') this.objects.get(resource.resource)?.delete(key);
    else this.bucket(resource.resource).set(key, stored);
    const event: StoreEvent = old
      ? { type, resource, object: stored, old, rv }
      : { type, resource, object: stored, rv };
    this.history.push(event);
    if (this.history.length - this.historyStart > this.historyLimit) {
      const dropped = this.history[this.historyStart];
      this.historyStart++;
      if (dropped) this.compacted = dropped.rv;
      // Compact the array now and then rather than shifting on every write.
      if (this.historyStart > 4096 && this.historyStart * 2 > this.history.length) {
        this.history.splice(0, this.historyStart);
        this.historyStart = 0;
      }
    }
    for (const s of [...this.subscribers]) s(event);
    return stored;
  }

  /** Events after `rv` for a resource, or 'expired' when the history no longer reaches back that far. */
  eventsSince(resource: ResourceType, rv: number): StoreEvent[] | 'expired' {
    if (rv < this.compacted) return 'expired';
    const out: StoreEvent[] = [];
    for (let i = this.historyStart; i < this.history.length; i++) {
      const e = this.history[i];
      if (e && e.rv > rv && e.resource.resource === resource.resource) out.push(e);
    }
    return out;
  }

  subscribe(fn: StoreSubscriber): () => void {
    this.subscribers.add(fn);
    return () => this.subscribers.delete(fn);
  }

  /** Drops all history (tests: forces the next watch from an old resourceVersion to get 410). */
  compact(): void {
    this.compacted = this.rv;
    this.history.length = 0;
    this.historyStart = 0;
  }

  snapshot(): StoreSnapshot {
    const objects: { resource: string; object: JsonObject }[] = [];
    for (const [resource, b] of this.objects)
      for (const object of b.values()) objects.push({ resource, object });
    return { rv: this.rv, objects };
  }
}
