// What one EndpointSlice contributes to its Service's endpoints, worked out once when the slice arrives (upstream
// builds the same from the stored object at every merge, in endpointslicecache.go addEndpoints). Keeping this
// instead of the object is what lets the cache drop the object.
import { endpointString } from './endpoint.js';
import type { Endpoint } from './endpoint.js';
import { parseIPSloppy } from './ip.js';
import type { IPFamily } from './ip.js';
import { parseProtocol, servicePortKey } from './service-port-name.js';
import { arrayField, describeValue, field, isPortNumber, stringField } from './unknown.js';

export interface SliceEndpoints {
  /**
   * servicePortKey of each usable port, in the order the keys first appear in the slice; `lists[i]` are the
   * endpoints for `keys[i]`, sorted by endpoint string and de-duplicated, possibly empty (every endpoint
   * skipped). Two arrays rather than a Map: most slices have one port, and a Map costs ~5 times as much.
   */
  readonly keys: readonly string[];
  readonly lists: readonly (readonly Endpoint[])[];
  /** What was wrong with the slice (endpoint problems, then port problems), for the caller to report. */
  readonly problems: readonly string[];
}

export interface SliceEndpointsOptions {
  readonly family: IPFamily;
  /** This node's name; endpoints with this nodeName are local. "" never matches. */
  readonly nodeName: string;
  /** PreferSameTrafficDistribution: read node hints. */
  readonly nodeHints: boolean;
  /** Where equal hint sets are shared; without one, sharing is within this slice only. */
  readonly hintSets?: HintSets;
}

const NO_PROBLEMS: readonly string[] = Object.freeze([]);
const NO_ENDPOINTS: readonly Endpoint[] = Object.freeze([]);

// Shared by every unhinted endpoint; typed ReadonlySet so nothing can add to it.
const NO_HINTS: ReadonlySet<string> = new Set<string>();

/**
 * Equal hint sets share one Set (and its name strings): with topology hints on, the endpoints of a cluster name a
 * handful of zones, and a Set per endpoint costs ~200 bytes. Shared sets are typed ReadonlySet, like NO_HINTS.
 * At most `limit` distinct sets are remembered (names come from cluster objects, so the table must stay bounded);
 * past that, new combinations get a Set of their own, which is correct, only larger.
 */
export class HintSets {
  readonly #sets = new Map<string, ReadonlySet<string>>();
  readonly #limit: number;

  constructor(limit = 4096) {
    this.#limit = limit;
  }

  /** The names in a `forZones` / `forNodes` list (entries `{ name }`; others ignored), as a shared set. */
  of(list: unknown): ReadonlySet<string> {
    if (!Array.isArray(list) || list.length === 0) return NO_HINTS;
    const names = new Set<string>();
    for (const h of list) {
      const name = stringField(h, 'name');
      if (name !== undefined && name !== '') names.add(name);
    }
    if (names.size === 0) return NO_HINTS;
    const key = JSON.stringify([...names].sort());
    const known = this.#sets.get(key);
    if (known !== undefined) return known;
    if (this.#sets.size < this.#limit) this.#sets.set(key, names);
    return names;
  }

  /** Distinct sets remembered. */
  get size(): number {
    return this.#sets.size;
  }
}

/** An endpoint's conditions as the proxy reads them. */
export interface EndpointConditions {
  readonly ready: boolean;
  readonly serving: boolean;
  readonly terminating: boolean;
}

/**
 * An EndpointSlice endpoint's `conditions` with upstream's defaults: a nil ready or serving means true (serving is
 * not derived from ready), a nil terminating means false. Every view of an endpoint's state reads it through this.
 */
export function endpointConditions(conditions: unknown): EndpointConditions {
  return {
    ready: field(conditions, 'ready') !== false,
    serving: field(conditions, 'serving') !== false,
    terminating: field(conditions, 'terminating') === true,
  };
}

/**
 * Adds `ep` under its endpoint string unless one is there already and `ep` is terminating: a later duplicate
 * replaces an earlier one unless the later one is terminating (§3 dedup). Applying this within each slice and
 * then across slices, in slice order, picks the same winner as applying it once to the whole sequence: the
 * last non-terminating duplicate after the first, else the first.
 */
export function addDeduplicated(set: Map<string, Endpoint>, ep: Endpoint): void {
  if (ep.terminating && set.has(ep.endpoint)) return;
  set.set(ep.endpoint, ep);
}

/**
 * The set's endpoints sorted by endpoint string, frozen (a shared empty list when there are none). Sorted by the
 * set's keys, which are those strings: an endpoint's own may be made anew at each read (SliceEndpoint).
 */
export function sortedEndpoints(set: ReadonlyMap<string, Endpoint>): readonly Endpoint[] {
  if (set.size === 0) return NO_ENDPOINTS;
  // The default sort compares strings by UTF-16 code units, as `<` does.
  return Object.freeze([...set.keys()].sort().map((key) => set.get(key) as Endpoint));
}

type EndpointBase = Omit<Endpoint, 'port' | 'endpoint'>;

// The four conditions of a SliceEndpoint, as bits of one small integer.
const LOCAL = 1;
const READY = 2;
const SERVING = 4;
const TERMINATING = 8;

/**
 * An Endpoint as the cache keeps it (over a million of them at 100,000 Services × 10 endpoints): five fields
 * instead of nine, 64 bytes instead of 96, and no "ip:port" string of its own (40 bytes more each). The four
 * booleans are one small integer read through getters; `endpoint` is made when read, which only the model's
 * merges, topology's rare union, explain and the iptables backend do (nftables never does). The Endpoint
 * interface is unchanged, and every reader reads the same values.
 */
class SliceEndpoint implements Endpoint {
  readonly ip: string;
  readonly port: number;
  readonly zoneHints: ReadonlySet<string>;
  readonly nodeHints: ReadonlySet<string>;
  readonly #flags: number;

  constructor(base: EndpointBase, port: number) {
    this.ip = base.ip;
    this.port = port;
    this.zoneHints = base.zoneHints;
    this.nodeHints = base.nodeHints;
    this.#flags =
      (base.isLocal ? LOCAL : 0) |
      (base.ready ? READY : 0) |
      (base.serving ? SERVING : 0) |
      (base.terminating ? TERMINATING : 0);
  }

  get endpoint(): string {
    return endpointString(this.ip, this.port);
  }

  get isLocal(): boolean {
    return (this.#flags & LOCAL) !== 0;
  }

  get ready(): boolean {
    return (this.#flags & READY) !== 0;
  }

  get serving(): boolean {
    return (this.#flags & SERVING) !== 0;
  }

  get terminating(): boolean {
    return (this.#flags & TERMINATING) !== 0;
  }
}

function endpointBase(
  ep: unknown,
  i: number,
  o: SliceEndpointsOptions,
  hintSets: HintSets,
  problem: (reason: string) => void,
): EndpointBase | undefined {
  const addresses = arrayField(ep, 'addresses');
  if (addresses === undefined || addresses.length === 0) {
    return void problem(`endpoints[${i}] has no addresses; skipped`);
  }
  const first = addresses[0];
  const parsed = typeof first === 'string' ? parseIPSloppy(first) : undefined;
  if (parsed === undefined) {
    return void problem(`endpoints[${i}].addresses[0] ${describeValue(first)} is not an IP; skipped`);
  }
  if (parsed.family !== o.family) {
    return void problem(`endpoints[${i}].addresses[0] ${describeValue(first)} is not ${o.family}; skipped`);
  }
  const conditions = endpointConditions(field(ep, 'conditions'));
  const nodeName = field(ep, 'nodeName');
  const hints = field(ep, 'hints');
  return {
    // The slice's own string when it is already canonical (the usual case): the reflector's store holds that
    // string anyway, so the endpoint adds none of its own.
    ip: parsed.text === first ? first : parsed.text,
    isLocal: o.nodeName !== '' && nodeName === o.nodeName,
    ready: conditions.ready,
    serving: conditions.serving,
    terminating: conditions.terminating,
    zoneHints: hintSets.of(field(hints, 'forZones')),
    nodeHints: o.nodeHints ? hintSets.of(field(hints, 'forNodes')) : NO_HINTS,
  };
}

/**
 * The endpoints of `slice` per service port of `service` (the slice's kubernetes.io/service-name Service). Only
 * addresses[0] is used; ports with a nil name, a bad number or an unknown protocol and endpoints without a usable
 * address of this family are skipped with a problem (a 0 or nil port number silently, as upstream). Never throws.
 */
export function sliceEndpoints(
  slice: unknown,
  service: { readonly namespace: string; readonly name: string },
  o: SliceEndpointsOptions,
): SliceEndpoints {
  let problems: string[] | undefined;
  const problem = (reason: string): void => void (problems ??= []).push(reason);
  const ports = arrayField(slice, 'ports') ?? [];
  const endpoints = arrayField(slice, 'endpoints') ?? [];
  // Endpoint facts that do not depend on the port, computed once per slice endpoint.
  const hintSets = o.hintSets ?? new HintSets();
  const bases = endpoints.map((ep, i) => endpointBase(ep, i, o, hintSets, problem));
  const byKey = new Map<string, Map<string, Endpoint>>();
  ports.forEach((p, i) => {
    const portName = field(p, 'name');
    if (typeof portName !== 'string') {
      return void problem(`ports[${i}].name ${describeValue(portName)} is not a string; port skipped`);
    }
    const portNumber = field(p, 'port');
    if (portNumber === undefined || portNumber === null || portNumber === 0) return; // upstream skips silently
    if (!isPortNumber(portNumber)) {
      return void problem(`ports[${i}].port ${describeValue(portNumber)} is not a port number; port skipped`);
    }
    const rawProtocol = field(p, 'protocol');
    const protocol =
      rawProtocol === undefined || rawProtocol === null || typeof rawProtocol === 'string'
        ? parseProtocol(rawProtocol)
        : undefined;
    if (protocol === undefined) {
      return void problem(`ports[${i}].protocol ${describeValue(rawProtocol)} is unknown; port skipped`);
    }
    const key = servicePortKey({
      namespace: service.namespace,
      name: service.name,
      port: portName,
      protocol,
    });
    let set = byKey.get(key);
    if (set === undefined) byKey.set(key, (set = new Map()));
    for (const base of bases)
      if (base !== undefined) addDeduplicated(set, new SliceEndpoint(base, portNumber));
  });
  // Built at their final length: an array grown by push from empty reserves 17 slots.
  const keys = [...byKey.keys()];
  const lists = [...byKey.values()].map(sortedEndpoints);
  return { keys, lists, problems: problems ?? NO_PROBLEMS };
}
