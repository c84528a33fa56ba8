// One line of a watch stream, decoded: {"type": ADDED|MODIFIED|DELETED|BOOKMARK|ERROR, "object": …}.
import { checkObject, isRecord, objectHint } from './object-identity.js';
import type { KubeObject, ObjectIdentity } from './object-identity.js';
import { errorMessage } from '../util/error-message.js';

export type WatchEvent<T> =
  | { readonly type: 'ADDED' | 'MODIFIED' | 'DELETED'; readonly object: T; readonly id: ObjectIdentity }
  | { readonly type: 'BOOKMARK'; readonly resourceVersion: string }
  | { readonly type: 'ERROR'; readonly status: ApiStatus };

/** The fields of a metav1.Status the reflector acts on (code 410 means: relist). */
export interface ApiStatus {
  readonly code?: number;
  readonly reason?: string;
  readonly message?: string;
  /** details.causes[].reason, e.g. "ResourceVersionTooLarge". */
  readonly causes?: readonly string[];
}

/**
 * True when the status says our resourceVersion cannot be watched from and only a relist helps: 410 Gone /
 * reason Expired (compacted), or "Too large resource version" (the server's history restarted below it, e.g. after
 * an etcd restore). client-go's reflector relists on both.
 */
export function isResourceVersionUnavailable(status: ApiStatus): boolean {
  if (status.code === 410 || status.reason === 'Expired' || status.reason === 'Gone') return true;
  return (
    (status.causes ?? []).includes('ResourceVersionTooLarge') ||
    /too large resource version/i.test(status.message ?? '')
  );
}

export type DecodedLine<T> =
  | { readonly ok: true; readonly event: WatchEvent<T> }
  | { readonly ok: false; readonly reason: string; readonly hint: string };

export function parseStatus(value: unknown): ApiStatus {
  if (!isRecord(value)) return {};
  const causes =
    isRecord(value.details) && Array.isArray(value.details.causes)
      ? value.details.causes.flatMap((c: unknown) =>
          isRecord(c) && typeof c.reason === 'string' ? [c.reason] : [],
        )
      : [];
  return {
    ...(causes.length > 0 ? { causes } : {}),
    ...(typeof value.code === 'number' ? { code: value.code } : {}),
    ...(typeof value.reason === 'string' ? { reason: value.reason } : {}),
    ...(typeof value.message === 'string' ? { message: value.message } : {}),
  };
}

function snippet(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > 80 ? `${flat.slice(0, 77)}...` : flat;
}

export function decodeWatchLine<T extends KubeObject>(text: string, namespaced: boolean): DecodedLine<T> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    const why = errorMessage(err);
    return { ok: false, reason: `line is not JSON (${why})`, hint: snippet(text) };
  }
  if (!isRecord(value)) return { ok: false, reason: 'watch event is not an object', hint: snippet(text) };
  const { type, object } = value;
  switch (type) {
    case 'ADDED':
    case 'MODIFIED':
    case 'DELETED': {
      const checked = checkObject<T>(object, namespaced);
      if (!checked.ok) return { ok: false, reason: `${type} event: ${checked.reason}`, hint: checked.hint };
      return { ok: true, event: { type, object: checked.object, id: checked.id } };
    }
    case 'BOOKMARK': {
      const rv = isRecord(object) && isRecord(object.metadata) ? object.metadata.resourceVersion : undefined;
      if (typeof rv !== 'string' || rv === '')
        return {
          ok: false,
          reason: 'BOOKMARK event without metadata.resourceVersion',
          hint: objectHint(object),
        };
      return { ok: true, event: { type, resourceVersion: rv } };
    }
    case 'ERROR':
      return { ok: true, event: { type, status: parseStatus(object) } };
    default:
      return { ok: false, reason: `unknown watch event type ${JSON.stringify(type)}`, hint: snippet(text) };
  }
}
