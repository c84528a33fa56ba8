// Lists every object of one resource once (GET with limit/continue until the last page), for commands that read
// the cluster's state at one moment rather than follow it (`explain`). Bad items are reported, not thrown.
import type { ApiClient } from './api-client.js';
import { readBody, statusError } from './api-client.js';
import { parseListPage } from './list-page.js';
import type { KubeObject } from './object-identity.js';

export interface ListAllResult<T> {
  readonly items: T[];
  /** Items that could not be read, with why. */
  readonly problems: string[];
}

const PAGE_SIZE = '500';
const MAX_PAGE_BYTES = 256 * 1024 * 1024;

export async function listAll<T extends KubeObject>(
  client: ApiClient,
  path: string,
  namespaced: boolean,
  signal: AbortSignal,
): Promise<ListAllResult<T>> {
  const items: T[] = [];
  const problems: string[] = [];
  let continueToken = '';
  do {
    const query: Record<string, string> = { limit: PAGE_SIZE };
    if (continueToken !== '') query.continue = continueToken;
    const res = await client.get(path, query, signal);
    if (res.status < 200 || res.status > 299) throw await statusError(res, `list ${path}`);
    const parsed = parseListPage<T>(await readBody(res, MAX_PAGE_BYTES), namespaced);
    if (!parsed.ok) throw new Error(`list ${path}: ${parsed.reason}`);
    for (const item of parsed.page.items) {
      if (item.ok) items.push(item.object);
      else problems.push(`${path}: ${item.hint}: ${item.reason}`);
    }
    continueToken = parsed.page.continueToken;
  } while (continueToken !== '');
  return { items, problems };
}
