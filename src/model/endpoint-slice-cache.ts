// Per-Service cache of EndpointSlices (upstream pkg/proxy/endpointslicecache.go): endpoints move between a
// Service's slices, so merging per slice keeps them from vanishing while one slice is updated before another.
import type { EndpointSlice } from '../kube/objects.js';
import { LABEL_SERVICE_NAME } from '../kube/objects.js';
import { endpointString } from './endpoint.js';
import type { Endpoint } from './endpoint.js';
import { fingerprint } from './fingerprint.js';
import { DEFAULT_FEATURE_GATES } from './feature-gates.js';
import type { FeatureGates } from './feature-gates.js';
import { parseIPSloppy } from './ip.js';
import type { IPFamily } from './ip.js';
import { namespacedNameString, parseProtocol, servicePortKey } from './service-port-name.js';
import { arrayField, describeValue, field, isPortNumber, isRecord, stringField } from './unknown.js';

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
 * One slice as the cache keeps it. Not the object: a fingerprint of it for the change test, and what the
 * endpoints maps are built from, worked out once when the slice arrives.
 */
interface SliceState {
  readonly fingerprint: string;
  /**
   * servicePortKey → this slice's endpoints, sorted and de-duplicated as a one-slice Service's map would be. Keys
   * whose endpoints are all skipped map to an empty list, so merging keeps the order in which keys first appear.
   */
  readonly endpoints: EndpointsMap;
  /** `endpoints` has no empty list, so a Service with only this slice can use it as its map as it is. */
  readonly complete: boolean;
  /** What was wrong with the slice, repeated whenever its Service's map is built (as a rebuild from the object would). */
  readonly problems: readonly string[];
}

type PendingSlice =
  | { readonly remove: false; readonly slice: SliceState }
  | { readonly remove: true; readonly fingerprint: string };

interface ServiceSlices {
  readonly namespace: string;
  readonly name: string;
  /** What the proxier last consumed, by slice name, in the order slices first arrived. */
  readonly applied: Map<string, SliceState>;
  /** Changes since, by slice name; undefined when there are none (most Services, most of the time). */
  pending: Map<string, PendingSlice> | undefined;
  /** The map built from `applied` at the last checkout: the next checkout's `previous`. */
  appliedMap: EndpointsMap;
}

const NO_PROBLEMS: readonly string[] = Object.freeze([]);
const NO_ENDPOINTS: readonly Endpoint[] = Object.freeze([]);

// Shared by every unhinted endpoint; typed ReadonlySet so nothing can add to it.
const NO_HINTS: ReadonlySet<string> = new Set<string>();

function hintNames(list: unknown): ReadonlySet<string> {
  if (!Array.isArray(list) || list.length === 0) return NO_HINTS;
  const out = new Set<string>();
  for (const h of list) {
    const name = stringField(h, 'name');
    if (name !== undefined && name !== '') out.add(name);
  }
  return out.size === 0 ? NO_HINTS : out;
}

function byEndpointString(a: Endpoint, b: Endpoint): number {
  return a.endpoint < b.endpoint ? -1 : a.endpoint > b.endpoint ? 1 : 0;
}

/**
 * Adds `ep` under its endpoint string unless an earlier one is there and `ep` is terminating: a later duplicate
 * replaces an earlier one unless the later one is terminating (§3 dedup). Applying this per slice and then again
 * across slices, in slice order, picks the same winner as applying it once to the whole sequence: the winner is
 * the last non-terminating duplicate after the first, else the first.
 */
function addDeduplicated(set: Map<string, Endpoint>, ep: Endpoint): void {
  if (ep.terminating && set.has(ep.endpoint)) return;
  set.set(ep.endpoint, ep);
}

function sortedList(set: ReadonlyMap<string, Endpoint>): readonly Endpoint[] {
  return set.size === 0 ? NO_ENDPOINTS : Object.freeze([...set.values()].sort(byEndpointString));
}

export class EndpointSliceCache {
  readonly #family: IPFamily;
  readonly #nodeName: string;
  readonly #nodeHints: boolean;
  readonly #onProblem: (sliceName: string, reason: string) => void;
  readonly #services = new Map<string, ServiceSlices>();
  /** Services with pending entries, so checkout is O(changes), not O(cluster). */
  readonly #dirty = new Set<string>();

  constructor(options: EndpointSliceCacheOptions) {
    this.#family = options.family;
    this.#nodeName = options.nodeName;
    this.#nodeHints = (options.featureGates ?? DEFAULT_FEATURE_GATES).preferSameTrafficDistribution;
    this.#onProblem = options.onProblem ?? (() => {});
  }

  /**
   * Records a slice add/update (remove=false) or delete (remove=true) as pending. Returns whether it changes
   * anything: compared with the pending entry, else the applied one; equality is deep equality of the whole
   * object (metadata included), tested through its fingerprint, plus the remove flag.
   */
  updatePending(slice: EndpointSlice, remove: boolean): boolean {
    const id = sliceIdentity(slice);
    if (typeof id === 'string') {
      this.#onProblem(stringField(field(slice, 'metadata'), 'name') ?? '<unnamed>', id);
      return false;
    }
    let fp: string;
    try {
      fp = fingerprint(slice);
    } catch (e) {
      // Only an object no API response decodes to (a cycle, a throwing getter) gets here.
      this.#onProblem(
        `${id.namespace}/${id.sliceName}`,
        `unreadable EndpointSlice object: ${e instanceof Error ? e.message : describeValue(e)}; skipped`,
      );
      return false;
    }
    let svc = this.#services.get(id.service);
    const pendingEntry = svc?.pending?.get(id.sliceName);
    let changed: boolean;
    if (pendingEntry !== undefined) {
      changed =
        pendingEntry.remove !== remove ||
        (pendingEntry.remove ? pendingEntry.fingerprint : pendingEntry.slice.fingerprint) !== fp;
    } else {
      const appliedSlice = svc?.applied.get(id.sliceName);
      changed = appliedSlice === undefined ? !remove : remove || appliedSlice.fingerprint !== fp;
    }
    if (!changed) return false;
    if (svc === undefined) {
      svc = {
        namespace: id.namespace,
        name: id.serviceName,
        applied: new Map(),
        pending: undefined,
        appliedMap: new Map(),
      };
      this.#services.set(id.service, svc);
    }
    svc.pending ??= new Map();
    svc.pending.set(
      id.sliceName,
      remove ? { remove: true, fingerprint: fp } : { remove: false, slice: this.#sliceState(svc, slice, fp) },
    );
    this.#dirty.add(id.service);
    return true;
  }

  /** Moves pending into applied; returns, per Service ("ns/name") that had pending entries, its maps before and after. */
  checkoutChanges(): Map<string, EndpointsMapChange> {
    const changes = new Map<string, EndpointsMapChange>();
    for (const service of this.#dirty) {
      const svc = this.#services.get(service);
      if (svc === undefined) continue;
      const previous = svc.appliedMap;
      for (const [name, p] of svc.pending ?? []) {
        if (p.remove) svc.applied.delete(name);
        else svc.applied.set(name, p.slice);
      }
      svc.pending = undefined;
      const current = this.#buildEndpointsMap(svc);
      svc.appliedMap = current;
      if (svc.applied.size === 0) this.#services.delete(service);
      changes.set(service, { previous, current });
    }
    this.#dirty.clear();
    return changes;
  }

  /**
   * Merges a Service's applied slices into one map (upstream getEndpointsMap / addEndpoints). A Service with one
   * slice (the usual case) uses that slice's map itself; callers must not mutate the maps they are given.
   */
  #buildEndpointsMap(svc: ServiceSlices): EndpointsMap {
    for (const [sliceName, slice] of svc.applied) {
      for (const reason of slice.problems) this.#onProblem(`${svc.namespace}/${sliceName}`, reason);
    }
    if (svc.applied.size === 1) {
      for (const only of svc.applied.values()) {
        if (only.complete) return only.endpoints;
      }
    }
    const byKey = new Map<string, Map<string, Endpoint>>();
    for (const slice of svc.applied.values()) {
      for (const [key, eps] of slice.endpoints) {
        let set = byKey.get(key);
        if (set === undefined) byKey.set(key, (set = new Map()));
        for (const ep of eps) addDeduplicated(set, ep);
      }
    }
    const out: EndpointsMap = new Map();
    for (const [key, set] of byKey) if (set.size > 0) out.set(key, sortedList(set));
    return out;
  }

  /** Parses a slice into what the cache keeps of it (endpoints per port key, problems). */
  #sliceState(svc: ServiceSlices, slice: EndpointSlice, fp: string): SliceState {
    let problems: string[] | undefined;
    const problem = (reason: string): void => void (problems ??= []).push(reason);
    const byKey = new Map<string, Map<string, Endpoint>>();
    const ports = arrayField(slice, 'ports') ?? [];
    const endpoints = arrayField(slice, 'endpoints') ?? [];
    // Endpoint facts that do not depend on the port, computed once per slice endpoint.
    const bases: (Omit<Endpoint, 'port' | 'endpoint'> | undefined)[] = endpoints.map((ep, i) =>
      this.#endpointBase(ep, i, problem),
    );
    ports.forEach((p, i) => {
      const portName = field(p, 'name');
      if (typeof portName !== 'string') {
        return void problem(`ports[${i}].name ${describeValue(portName)} is not a string; port skipped`);
      }
      const portNumber = field(p, 'port');
      if (portNumber === undefined || portNumber === null || portNumber === 0) return; // upstream skips silently
      if (!isPortNumber(portNumber)) {
        return void problem(
          `ports[${i}].port ${describeValue(portNumber)} is not a port number; port skipped`,
        );
      }
      const rawProtocol = field(p, 'protocol');
      const protocol =
        rawProtocol === undefined || rawProtocol === null || typeof rawProtocol === 'string'
          ? parseProtocol(rawProtocol)
          : undefined;
      if (protocol === undefined) {
        return void problem(`ports[${i}].protocol ${describeValue(rawProtocol)} is unknown; port skipped`);
      }
      const key = servicePortKey({ namespace: svc.namespace, name: svc.name, port: portName, protocol });
      let set = byKey.get(key);
      if (set === undefined) byKey.set(key, (set = new Map()));
      for (const base of bases) {
        if (base === undefined) continue;
        // An explicit literal (one hidden class, no spread) keeps the initial 100k-endpoint build cheap.
        addDeduplicated(set, {
          ip: base.ip,
          port: portNumber,
          endpoint: endpointString(base.ip, portNumber),
          isLocal: base.isLocal,
          ready: base.ready,
          serving: base.serving,
          terminating: base.terminating,
          zoneHints: base.zoneHints,
          nodeHints: base.nodeHints,
        });
      }
    });
    const out: EndpointsMap = new Map();
    let complete = true;
    for (const [key, set] of byKey) {
      if (set.size === 0) complete = false;
      out.set(key, sortedList(set));
    }
    return { fingerprint: fp, endpoints: out, complete, problems: problems ?? NO_PROBLEMS };
  }

  #endpointBase(
    ep: unknown,
    i: number,
    problem: (reason: string) => void,
  ): Omit<Endpoint, 'port' | 'endpoint'> | undefined {
    const addresses = arrayField(ep, 'addresses');
    if (addresses === undefined || addresses.length === 0) {
      return void problem(`endpoints[${i}] has no addresses; skipped`);
    }
    const first = addresses[0];
    const parsed = typeof first === 'string' ? parseIPSloppy(first) : undefined;
    if (parsed === undefined) {
      return void problem(`endpoints[${i}].addresses[0] ${describeValue(first)} is not an IP; skipped`);
    }
    if (parsed.family !== this.#family) {
      return void problem(
        `endpoints[${i}].addresses[0] ${describeValue(first)} is not ${this.#family}; skipped`,
      );
    }
    const conditions = field(ep, 'conditions');
    const nodeName = field(ep, 'nodeName');
    const hints = field(ep, 'hints');
    return {
      ip: parsed.text,
      isLocal: this.#nodeName !== '' && nodeName === this.#nodeName,
      // Upstream defaults: a nil ready or serving means true, a nil terminating means false.
      ready: field(conditions, 'ready') !== false,
      serving: field(conditions, 'serving') !== false,
      terminating: field(conditions, 'terminating') === true,
      zoneHints: hintNames(field(hints, 'forZones')),
      nodeHints: this.#nodeHints ? hintNames(field(hints, 'forNodes')) : NO_HINTS,
    };
  }
}
