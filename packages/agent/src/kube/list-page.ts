// One page of a paginated list (GET …?limit=500&continue=…): the items, the snapshot's resourceVersion and the
// token for the next page. Bad items are returned as rejections next to the good ones, never as a failed page.
import { checkObject, isRecord } from './object-identity.js';
import type { CheckedObject, KubeObject } from './object-identity.js';
import { errorMessage } from '../util/error-message.js';

export interface ListPage<T> {
  readonly resourceVersion: string;
  /** Empty on the last page. */
  readonly continueToken: string;
  readonly items: readonly CheckedObject<T>[];
}

export type ParsedListPage<T> =
  { readonly ok: true; readonly page: ListPage<T> } | { readonly ok: false; readonly reason: string };

export function parseListPage<T extends KubeObject>(body: string, namespaced: boolean): ParsedListPage<T> {
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch (err) {
    return { ok: false, reason: `list body is not JSON (${errorMessage(err)})` };
  }
  if (!isRecord(value)) return { ok: false, reason: 'list body is not an object' };
  const meta = value.metadata;
  if (!isRecord(meta)) return { ok: false, reason: 'list metadata is missing' };
  if (typeof meta.resourceVersion !== 'string' || meta.resourceVersion === '')
    return { ok: false, reason: 'list metadata.resourceVersion is missing or not a string' };
  const cont = meta.continue;
  if (cont !== undefined && typeof cont !== 'string')
    return { ok: false, reason: 'list metadata.continue is not a string' };
  // An empty list may come back as "items": null.
  const items = value.items ?? [];
  if (!Array.isArray(items)) return { ok: false, reason: 'list items is not an array' };
  return {
    ok: true,
    page: {
      resourceVersion: meta.resourceVersion,
      continueToken: cont ?? '',
      items: items.map((item: unknown) => checkObject<T>(item, namespaced)),
    },
  };
}
