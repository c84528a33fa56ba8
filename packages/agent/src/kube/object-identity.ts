// The only fields the reflector trusts: metadata.name (and namespace) to key the store, metadata.resourceVersion to
// tell an update from a repeat. Everything else in an object is checked by the model that reads it.
import type { ObjectMeta } from '../api/objects.js';

export interface KubeObject {
  readonly metadata: ObjectMeta;
}

export interface ObjectIdentity {
  /** "namespace/name" for namespaced objects, "name" for cluster-scoped ones (client-go's MetaNamespaceKey). */
  readonly key: string;
  readonly resourceVersion: string;
}

export type CheckedObject<T> =
  | { readonly ok: true; readonly object: T; readonly id: ObjectIdentity }
  | {
      readonly ok: false;
      readonly reason: string;
      /** what we could tell about the object, for the log */ readonly hint: string;
    };

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

/** A best-effort name for an object we are about to reject, so the log can point at it. */
export function objectHint(value: unknown): string {
  if (!isRecord(value) || !isRecord(value.metadata)) return describe(value);
  const { name, namespace } = value.metadata;
  const n = typeof name === 'string' ? name : '?';
  return typeof namespace === 'string' && namespace !== '' ? `${namespace}/${n}` : n;
}

export function checkObject<T extends KubeObject>(value: unknown, namespaced: boolean): CheckedObject<T> {
  const fail = (reason: string): CheckedObject<T> => ({ ok: false, reason, hint: objectHint(value) });
  if (!isRecord(value)) return fail(`object is ${describe(value)}, not an object`);
  const meta = value.metadata;
  if (!isRecord(meta)) return fail('metadata is missing or not an object');
  if (typeof meta.name !== 'string' || meta.name === '')
    return fail('metadata.name is missing or not a string');
  if (typeof meta.resourceVersion !== 'string' || meta.resourceVersion === '')
    return fail('metadata.resourceVersion is missing or not a string');
  let key = meta.name;
  if (namespaced) {
    if (typeof meta.namespace !== 'string' || meta.namespace === '')
      return fail('metadata.namespace is missing or not a string');
    key = `${meta.namespace}/${meta.name}`;
  } else if (meta.namespace !== undefined && meta.namespace !== '') {
    return fail('metadata.namespace is set on a cluster-scoped object');
  }
  // The shape beyond metadata is the model's to check: objects.ts describes what we expect, not what we trust.
  return { ok: true, object: value as unknown as T, id: { key, resourceVersion: meta.resourceVersion } };
}
