// After a relist, the handlers must see what changed while we were not watching: the difference between the store
// we had and the list we got, as the events a watch would have delivered. An object whose resourceVersion did not
// change is not an update (client-go's informer makes the same call in its Replace).
import type { KubeObject } from './object-identity.js';

export interface StoredObject<T> {
  readonly object: T;
  readonly resourceVersion: string;
}

export type StoreChange<T> =
  | { readonly type: 'add'; readonly key: string; readonly object: T }
  | { readonly type: 'update'; readonly key: string; readonly old: T; readonly object: T }
  | { readonly type: 'delete'; readonly key: string; readonly object: T };

/** Adds and updates in list order, then deletes (in the old store's order). */
export function diffStores<T extends KubeObject>(
  old: ReadonlyMap<string, StoredObject<T>>,
  next: ReadonlyMap<string, StoredObject<T>>,
): StoreChange<T>[] {
  const changes: StoreChange<T>[] = [];
  for (const [key, now] of next) {
    const before = old.get(key);
    if (!before) changes.push({ type: 'add', key, object: now.object });
    else if (before.resourceVersion !== now.resourceVersion)
      changes.push({ type: 'update', key, old: before.object, object: now.object });
  }
  for (const [key, before] of old) {
    if (!next.has(key)) changes.push({ type: 'delete', key, object: before.object });
  }
  return changes;
}
