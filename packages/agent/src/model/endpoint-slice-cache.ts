// Per-Service cache of EndpointSlices (upstream pkg/proxy/endpointslicecache.go): endpoints move between a
// Service's slices, so merging per slice keeps them from vanishing while one slice is updated before another.
import type { EndpointSlice } from '../api/objects.js';
import { LABEL_SERVICE_NAME } from '../api/objects.js';
import type { Endpoint } from './endpoint.js';
import { fingerprint } from './fingerprint.js';
import { DEFAULT_FEATURE_GATES } from './feature-gates.js';
import type { FeatureGates } from './feature-gates.js';
import type { IPFamily } from './ip.js';
import { namespacedNameString } from './service-port-name.js';
import { addDeduplicated, HintSets, sliceEndpoints, sortedEndpoints } from './slice-endpoints.js';
import type { SliceEndpoints, SliceEndpointsOptions } from './slice-endpoints.js';
import { describeValue, field, isRecord, stringField } from './unknown.js';

/** servicePortKey → endpoints, sorted by endpoint string, de-duplicated; keys with no endpoints are absent. */
export type EndpointsMap = Map<string, readonly Endpoint[]>;

export interface EndpointsMapChange {
  readonly previous: EndpointsMap;
  readonly current: EndpointsMap;
}

export interface EndpointSliceCacheOptions {
  readonly family: IPFamily;
  /** This node's name; endpoints with this nodeName are local. */
  readonly nodeName: string;
  readonly featureGates?: FeatureGates;
  readonly onProblem?: (sliceName: string, reason: string) => void;
}

/** Where a slice belongs: its Service ("ns/name", from the kubernetes.io/service-name label) and its own name. */
export interface SliceIdentity {
  readonly namespace: string;
  readonly serviceName: string;
  /** "ns/service" */
  readonly service: string;
  readonly sliceName: string;
}

/** The slice's identity, or the reason it has none (no namespace, no name, no service-name label). */
export function sliceIdentity(slice: unknown): SliceIdentity | string {
  if (!isRecord(slice)) return `not an object: ${describeValue(slice)}`;
  const meta = field(slice, 'metadata');
  const namespace = stringField(meta, 'namespace');
  const sliceName = stringField(meta, 'name');
  if (namespace === undefined || namespace === '' || sliceName === undefined || sliceName === '') {
    return 'metadata.namespace or metadata.name is missing';
  }
  const serviceName = stringField(field(meta, 'labels'), LABEL_SERVICE_NAME);
  if (serviceName === undefined || serviceName === '') return `label ${LABEL_SERVICE_NAME} is missing`;
  return {
    namespace,
    serviceName,
    service: namespacedNameString({ namespace, name: serviceName }),
    sliceName,
  };
}

/**
 * What the agent's store keeps of a slice it has handed to the trackers: all a later removal of it reads (the
 * address type the tracker filters on, and the identity above), and nothing of its endpoints. The cache holds the
 * endpoints it built; holding the object as well cost more than they did (at 100,000 Services × 10 endpoints,
 * ≈ 120 MiB of the bench's plain objects, more for an API server's, with conditions and target references).
 */
export function sliceRemnant(slice: EndpointSlice): EndpointSlice {
  const meta = isRecord(slice) ? field(slice, 'metadata') : undefined;
  const serviceName = stringField(field(meta, 'labels'), LABEL_SERVICE_NAME);
  // Literals of one shape each (no spread, no computed key): built by spreading, every remnant got a hidden
  // class of its own, a few hundred bytes more.
  const namespace = stringField(meta, 'namespace') ?? '';
  const name = stringField(meta, 'name') ?? '';
  const resourceVersion = stringField(meta, 'resourceVersion') ?? '';
  const metadata =
    serviceName === undefined
      ? { namespace, name, resourceVersion }
      : { namespace, name, resourceVersion, labels: { 'kubernetes.io/service-name': serviceName } };
  const addressType = isRecord(slice) ? field(slice, 'addressType') : undefined;
  return typeof addressType === 'string' ? { metadata, addressType } : { metadata };
}

/**
 * What the change test compares for a slice, standing for the whole object (upstream compares whole objects with
 * reflect.DeepEqual). An object an API server wrote carries its uid and a resourceVersion, and no two different
 * objects ever carry the same pair: the resourceVersion is the revision of the write that made this content (an
 * update gets a new one, a deleted and recreated slice a new uid). So for such an object the pair decides exactly
 * as a deep comparison would, without reading the object again: at 100,000 slices of 10 endpoints, the fingerprint
 * of every slice of a list cost ≈ 1.4 s of the agent's start and its text ≈ 200 MiB of garbage. Any other object
 * (a hand-made one, a store's remnant) is fingerprinted whole (fingerprint.ts); a digest's bytes equal a
 * `uid@version` text no more often than two digests collide.
 */
function sliceVersion(slice: EndpointSlice): string {
  const meta = field(slice, 'metadata');
  const uid = stringField(meta, 'uid');
  const resourceVersion = stringField(meta, 'resourceVersion');
  // Joined, not a template: a template's result is kept as a tree of its pieces, uid and all (≈ 90 bytes more a
  // slice, held as long as the slice is).
  if (uid !== undefined && uid !== '' && resourceVersion !== undefined && resourceVersion !== '')
    return [uid, resourceVersion].join('@');
  return fingerprint(slice);
}

/**
 * One slice as the cache keeps it: not the object, but what stands for it in the change test (sliceVersion) and
 * the endpoints it contributes.
 */
interface SliceState extends SliceEndpoints {
  readonly name: string;
  readonly removed: false;
  readonly version: string;
}

/** A pending delete: only what the next event's change test needs. */
interface RemovedSlice {
  readonly name: string;
  readonly removed: true;
  readonly version: string;
}

// Arrays, not Maps, by slice name: a Service has one slice or a few (100 endpoints each by default), and an empty
// or one-entry Map costs several times a one-element array. Lookups are linear in the Service's slice count.
interface ServiceSlices {
  readonly namespace: string;
  readonly name: string;
  /** What the proxier last consumed, in the order slices first arrived; replaced, never grown, at checkout. */
  applied: readonly SliceState[];
  /** Changes since, one entry per slice name; undefined when there are none (most Services, most of the time). */
  pending: (SliceState | RemovedSlice)[] | undefined;
  /**
   * With two or more applied slices, their merge as of the last checkout (the next checkout's `previous`), so a
   * change to a large Service merges once, not twice. With one slice the map is rebuilt from its lists.
   */
  merged: EndpointsMap | undefined;
}

/** A literal of one shape: spread in, the endpoints' fields went to an out-of-object property array per slice. */
function sliceState(name: string, version: string, e: SliceEndpoints): SliceState {
  return { name, removed: false, version, keys: e.keys, lists: e.lists, problems: e.problems };
}

function byName<T extends { readonly name: string }>(list: readonly T[] | undefined, name: string): number {
  if (list === undefined) return -1;
  for (let i = 0; i < list.length; i++) if (list[i]?.name === name) return i;
  return -1;
}

/** `applied` with `pending` applied: replaced in place, removed, or added at the end (first-arrival order). */
function applyPending(
  applied: readonly SliceState[],
  pending: readonly (SliceState | RemovedSlice)[],
): readonly SliceState[] {
  const next = [...applied];
  for (const p of pending) {
    const at = byName(next, p.name);
    if (p.removed) {
      if (at >= 0) next.splice(at, 1);
    } else if (at >= 0) next[at] = p;
    else next.push(p);
  }
  // A copy at the final length: push onto a short array reserves 17 slots, and most Services keep one slice.
  return next.slice();
}

/** A Service's endpoints map from its slices (upstream getEndpointsMap / addEndpoints): keys with no endpoints absent. */
function endpointsMapOf(slices: readonly SliceState[]): EndpointsMap {
  const out: EndpointsMap = new Map();
  const only = slices.length === 1 ? slices[0] : undefined;
  if (only !== undefined) {
    // One slice: its lists are already sorted and de-duplicated.
    only.keys.forEach((key, i) => {
      const eps = only.lists[i];
      if (eps !== undefined && eps.length > 0) out.set(key, eps);
    });
    return out;
  }
  const byKey = new Map<string, Map<string, Endpoint>>();
  for (const slice of slices) {
    slice.keys.forEach((key, i) => {
      let set = byKey.get(key);
      if (set === undefined) byKey.set(key, (set = new Map()));
      for (const ep of slice.lists[i] ?? []) addDeduplicated(set, ep);
    });
  }
  for (const [key, set] of byKey) if (set.size > 0) out.set(key, sortedEndpoints(set));
  return out;
}

export class EndpointSliceCache {
  readonly #options: SliceEndpointsOptions;
  readonly #onProblem: (sliceName: string, reason: string) => void;
  readonly #services = new Map<string, ServiceSlices>();
  /** Services with pending entries, so checkout is O(changes), not O(cluster). */
  readonly #dirty = new Set<string>();

  constructor(options: EndpointSliceCacheOptions) {
    this.#options = {
      family: options.family,
      nodeName: options.nodeName,
      nodeHints: (options.featureGates ?? DEFAULT_FEATURE_GATES).preferSameTrafficDistribution,
      hintSets: new HintSets(),
    };
    this.#onProblem = options.onProblem ?? (() => {});
  }

  /**
   * Records a slice add/update (remove=false) or delete (remove=true) as pending. Returns whether it changes
   * anything: compared with the pending entry, else the applied one; equality is deep equality of the whole
   * object (metadata included), tested through sliceVersion, plus the remove flag.
   */
  updatePending(slice: EndpointSlice, remove: boolean): boolean {
    const id = sliceIdentity(slice);
    if (typeof id === 'string') {
      this.#onProblem(stringField(field(slice, 'metadata'), 'name') ?? '<unnamed>', id);
      return false;
    }
    let version: string;
    try {
      version = sliceVersion(slice);
    } catch (e) {
      // Only an object no API response decodes to (a cycle, a throwing getter) gets here.
      this.#onProblem(
        `${id.namespace}/${id.sliceName}`,
        `unreadable EndpointSlice object: ${e instanceof Error ? e.message : describeValue(e)}; skipped`,
      );
      return false;
    }
    let svc = this.#services.get(id.service);
    const pendingAt = byName(svc?.pending, id.sliceName);
    const existing =
      pendingAt >= 0 ? svc?.pending?.[pendingAt] : svc?.applied[byName(svc.applied, id.sliceName)];
    const changed =
      existing === undefined ? !remove : existing.removed !== remove || existing.version !== version;
    if (!changed) return false;
    if (svc === undefined) {
      svc = {
        namespace: id.namespace,
        name: id.serviceName,
        applied: [],
        pending: undefined,
        merged: undefined,
      };
      this.#services.set(id.service, svc);
    }
    const entry: SliceState | RemovedSlice = remove
      ? { name: id.sliceName, removed: true, version }
      : sliceState(id.sliceName, version, sliceEndpoints(slice, svc, this.#options));
    // A literal for the first entry: one slot, not the 17 a push onto an empty array reserves.
    if (svc.pending === undefined) svc.pending = [entry];
    else if (pendingAt >= 0) svc.pending[pendingAt] = entry;
    else svc.pending.push(entry);
    this.#dirty.add(id.service);
    return true;
  }

  /** Moves pending into applied; returns, per Service ("ns/name") that had pending entries, its maps before and after. */
  checkoutChanges(): Map<string, EndpointsMapChange> {
    const changes = new Map<string, EndpointsMapChange>();
    for (const service of this.#dirty) {
      const svc = this.#services.get(service);
      if (svc === undefined) continue;
      const previous = svc.merged ?? endpointsMapOf(svc.applied);
      svc.applied = applyPending(svc.applied, svc.pending ?? []);
      svc.pending = undefined;
      // Every applied slice's problems, each time its Service's map is built, as a merge from the objects would.
      for (const slice of svc.applied) {
        for (const reason of slice.problems) this.#onProblem(`${svc.namespace}/${slice.name}`, reason);
      }
      const current = endpointsMapOf(svc.applied);
      svc.merged = svc.applied.length > 1 ? current : undefined;
      if (svc.applied.length === 0) this.#services.delete(service);
      changes.set(service, { previous, current });
    }
    this.#dirty.clear();
    return changes;
  }
}
