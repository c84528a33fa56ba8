// Decides what one sync sends (upstream-backends.md §1.9). It remembers, per service port, what it rendered last
// and which shared-set elements it owns, and what the kernel holds (elements, service chains, affinity sets), so a
// partial sync costs O(changed services): it re-renders only those, diffs only the element keys they touch, and
// keeps running totals instead of recounting. Kernel-side memory changes only in commit(), after nft succeeded;
// after a failure the owner discards the planner's view by doing a full sync (which reads the kernel back).
import { changedPorts } from './changed-ports.js';
import type { NftElement, NftOperation } from '../../netfilter/nft/objects.js';
import type { NftListing } from '../../netfilter/nft/executor.js';
import type { FeatureGates } from '../../model/feature-gates.js';
import type { NodeNetworkConfig, ProxySnapshot } from '../../sync/backend.js';
import {
  CLUSTER_IPS_SET,
  FIREWALL_IPS_MAP,
  HAIRPIN_SET,
  NO_ENDPOINT_NODEPORTS_MAP,
  NO_ENDPOINT_SERVICES_MAP,
  SERVICE_IPS_MAP,
  SERVICE_NODEPORTS_MAP,
  isAffinitySet,
  isServiceChain,
} from './naming.js';
import type { RenderedServicePort } from './service-port.js';
import { renderServicePort } from './service-port.js';
import { policyNode, servicePortPolicy } from '../../model/port-policy.js';
import { renderSetup } from './setup.js';

/** The shared sets and maps whose elements are diffed against the kernel. */
export const ELEMENT_CONTAINERS = [
  { kind: 'set', name: CLUSTER_IPS_SET },
  { kind: 'set', name: HAIRPIN_SET },
  { kind: 'map', name: SERVICE_IPS_MAP },
  { kind: 'map', name: SERVICE_NODEPORTS_MAP },
  { kind: 'map', name: FIREWALL_IPS_MAP },
  { kind: 'map', name: NO_ENDPOINT_SERVICES_MAP },
  { kind: 'map', name: NO_ENDPOINT_NODEPORTS_MAP },
] as const;

/** Milliseconds a flushed chain waits before it is deleted (kernels < 6.2 notice late that it is unreferenced). */
export const STALE_CHAIN_DELAY_MS = 1000;

/** What the kernel held when a full sync started; `undefined` parts could not be read (they are flushed). */
export interface KernelView {
  readonly listing: NftListing | undefined;
  /** container name → elements; a container absent from the map could not be read. */
  readonly elements: ReadonlyMap<string, readonly NftElement[]>;
}

export const EMPTY_KERNEL: KernelView = {
  listing: { table: { kind: 'table' }, chains: [], sets: [], maps: [], rules: [] },
  elements: new Map(ELEMENT_CONTAINERS.map((c) => [c.name, []])),
};

interface Desired {
  readonly element: NftElement;
  readonly value: string;
  owners: number;
}

/**
 * What the planner remembers of a rendered service port between syncs: what it owns in the kernel, not the rule
 * text (that is only needed in the transaction that sends it, and is most of a rendering's memory).
 */
type OwnedServicePort = Omit<RenderedServicePort, 'chainOps'>;

export interface SkippedServicePort {
  readonly key: string;
  readonly serviceName: string;
  readonly reason: string;
}

/** Operations made only as they are written (Plan.deferredOps). */
export interface DeferredOps {
  readonly count: number;
  /** The operations in order; made anew on each call, before the plan is committed. */
  make(): Iterable<NftOperation>;
}

export interface Plan {
  readonly full: boolean;
  /** Operations in apply order; setup operations are not yet validated, the rest are. */
  readonly setupOps: readonly NftOperation[];
  readonly ops: readonly NftOperation[];
  /**
   * Written after `ops`, then `tailOps`: a flat full sync's element adds, made as they are written, so that a
   * cold start's million operations never all exist at once (they were most of its peak memory).
   */
  readonly deferredOps?: DeferredOps;
  readonly tailOps?: readonly NftOperation[];
  readonly noLocalInternal: number;
  readonly noLocalExternal: number;
  /** Service ports skipped for the first time (or for a new reason) in this plan. */
  readonly newlySkipped: readonly SkippedServicePort[];
  /** Records that the kernel now holds what the plan sent. */
  commit(): void;
}

function valueOf(e: NftElement): string {
  return e.value ? e.value.join(' . ') : '';
}

function keyOf(e: NftElement): string {
  return e.key.join(' . ');
}

export class SyncPlanner {
  readonly #node: NodeNetworkConfig;
  readonly #featureGates: FeatureGates | undefined;
  readonly #nodePortIPs: () => readonly string[];

  // Desired state (rebuilt by a full sync, patched by a partial one).
  #rendered = new Map<string, OwnedServicePort>();
  /** Service name → its service-port keys (arrays: almost every Service has one or two ports). */
  #portsByService = new Map<string, string[]>();
  #trackedPorts = 0;
  #skipped = new Map<string, string>();
  #desired = new Map<string, Map<string, Desired>>();
  #noLocalInternal = 0;
  #noLocalExternal = 0;

  // What the kernel holds (changed only by commit()).
  #kernelElements = new Map<string, Map<string, string>>();
  #kernelChains = new Set<string>();
  #kernelAffinitySets = new Set<string>();
  /** Flushed service chains → when they became stale (ms). */
  readonly staleChains = new Map<string, number>();

  constructor(node: NodeNetworkConfig, nodePortIPs: () => readonly string[], featureGates?: FeatureGates) {
    this.#node = node;
    this.#nodePortIPs = nodePortIPs;
    this.#featureGates = featureGates;
  }

  /** Stale chains old enough to delete at `now`. */
  chainsToDelete(now: number): string[] {
    const out: string[] = [];
    for (const [name, since] of this.staleChains) if (now - since >= STALE_CHAIN_DELAY_MS) out.push(name);
    return out;
  }

  /** After the cleanup transaction succeeded. */
  chainsDeleted(names: readonly string[]): void {
    for (const n of names) {
      this.staleChains.delete(n);
      this.#kernelChains.delete(n);
    }
  }

  #render(
    snapshot: ProxySnapshot,
    key: string,
    newlySkipped: SkippedServicePort[],
  ): RenderedServicePort | undefined {
    const sp = snapshot.serviceMap.get(key);
    if (!sp) return undefined;
    const node = policyNode(snapshot.topology, this.#node.nodeIPs[0], this.#featureGates);
    const policy = servicePortPolicy(sp, snapshot.endpointsMap.get(key) ?? [], node);
    const r = renderServicePort(policy, { node: this.#node });
    if (r.ok) {
      this.#skipped.delete(key);
      return r.value;
    }
    if (this.#skipped.get(key) !== r.reason)
      newlySkipped.push({ key, serviceName: r.serviceName, reason: r.reason });
    this.#skipped.set(key, r.reason);
    return undefined;
  }

  #track(serviceName: string, key: string): void {
    const keys = this.#portsByService.get(serviceName);
    if (!keys) this.#portsByService.set(serviceName, [key]);
    else if (!keys.includes(key)) keys.push(key);
    else return;
    this.#trackedPorts++;
  }

  #claim(r: OwnedServicePort, touched: Map<string, Set<string>> | undefined): void {
    for (const e of r.elements) {
      let set = this.#desired.get(e.set);
      if (!set) this.#desired.set(e.set, (set = new Map()));
      const key = keyOf(e);
      const d = set.get(key);
      if (d) d.owners++;
      else set.set(key, { element: e, value: valueOf(e), owners: 1 });
      if (touched) touch(touched, e.set, key);
    }
    if (r.noLocalInternal) this.#noLocalInternal++;
    if (r.noLocalExternal) this.#noLocalExternal++;
  }

  #release(r: OwnedServicePort, touched: Map<string, Set<string>>): void {
    for (const e of r.elements) {
      const set = this.#desired.get(e.set);
      const key = keyOf(e);
      const d = set?.get(key);
      if (d && --d.owners === 0) set?.delete(key);
      touch(touched, e.set, key);
    }
    if (r.noLocalInternal) this.#noLocalInternal--;
    if (r.noLocalExternal) this.#noLocalExternal--;
  }

  /** Element operations for the given keys: adds (delete+add for a new value) first, then deletes. */
  #diffElements(
    keysBySet: Iterable<[string, Iterable<string>]>,
    adds: NftOperation[],
    deletes: NftOperation[],
    kernelUpdates: [string, string, string | undefined][],
  ): void {
    for (const [setName, keys] of keysBySet) {
      const desired = this.#desired.get(setName);
      const kernel = this.#kernelElements.get(setName);
      for (const key of keys) {
        const d = desired?.get(key);
        const k = kernel?.get(key);
        if (d) {
          if (k === d.value) continue;
          if (k !== undefined) adds.push({ verb: 'delete', object: deleteElement(d.element) });
          adds.push({ verb: 'add', object: d.element });
          kernelUpdates.push([setName, key, d.value]);
        } else if (k !== undefined) {
          deletes.push({ verb: 'delete', object: { kind: 'element', set: setName, key: key.split(' . ') } });
          kernelUpdates.push([setName, key, undefined]);
        }
      }
    }
  }

  #applyKernelUpdates(updates: readonly [string, string, string | undefined][]): void {
    for (const [setName, key, value] of updates) {
      let set = this.#kernelElements.get(setName);
      if (!set) this.#kernelElements.set(setName, (set = new Map()));
      if (value === undefined) set.delete(key);
      else set.set(key, value);
    }
  }

  /** Everything, diffed against what the kernel holds (`kernel`, read back just before). */
  planFull(snapshot: ProxySnapshot, kernel: KernelView, now: number, firstSync: boolean): Plan {
    return this.renderFull(snapshot).plan(kernel, now, firstSync);
  }

  /**
   * The first half of a full sync, which needs nothing from the kernel: renders every service port and rebuilds
   * the desired state. The caller may read the table back meanwhile, then diff with `plan(kernel, …)`.
   */
  renderFull(snapshot: ProxySnapshot): {
    plan(kernel: KernelView, now: number, firstSync: boolean): Plan;
  } {
    const newlySkipped: SkippedServicePort[] = [];
    this.#rendered = new Map();
    this.#portsByService = new Map();
    this.#trackedPorts = 0;
    this.#desired = new Map();
    this.#noLocalInternal = 0;
    this.#noLocalExternal = 0;
    const chainOps: NftOperation[] = [];
    const activeChains = new Set<string>();
    const activeAffinitySets = new Set<string>();
    const seenSkipped = new Map<string, string>();
    for (const [key, sp] of snapshot.serviceMap) {
      this.#track(sp.serviceName, key);
      const r = this.#render(snapshot, key, newlySkipped);
      if (!r) {
        seenSkipped.set(key, this.#skipped.get(key) ?? '');
        continue;
      }
      this.#rendered.set(key, owned(r));
      this.#claim(r, undefined);
      for (const op of r.chainOps) chainOps.push(op);
      for (const c of r.chains) activeChains.add(c);
      for (const s of r.affinitySets) activeAffinitySets.add(s);
    }
    this.#skipped = seenSkipped;
    return {
      plan: (kernel, now, firstSync) =>
        this.#diffFull(kernel, now, firstSync, chainOps, newlySkipped, activeChains, activeAffinitySets),
    };
  }

  #diffFull(
    kernel: KernelView,
    now: number,
    firstSync: boolean,
    chainOps: readonly NftOperation[],
    newlySkipped: readonly SkippedServicePort[],
    activeChains: ReadonlySet<string>,
    activeAffinitySets: Set<string>,
  ): Plan {
    const setupOps = renderSetup(this.#node, { firstSync, nodePortIPs: this.#nodePortIPs() });

    // The kernel as read back; containers we could not read are flushed and count as empty.
    const kernelElements = new Map<string, Map<string, string>>();
    const ops: NftOperation[] = [];
    for (const c of ELEMENT_CONTAINERS) {
      const listed = kernel.elements.get(c.name);
      if (listed === undefined) ops.push({ verb: 'flush', object: { kind: c.kind, name: c.name } });
      kernelElements.set(c.name, new Map((listed ?? []).map((e) => [keyOf(e), valueOf(e)])));
    }
    this.#kernelElements = kernelElements;
    const kernelChains = new Set((kernel.listing?.chains ?? []).map((c) => c.name).filter(isServiceChain));
    const kernelAffinitySets = new Set((kernel.listing?.sets ?? []).map((s) => s.name).filter(isAffinitySet));
    for (const op of chainOps) ops.push(op);

    const adds: NftOperation[] = [];
    const deletes: NftOperation[] = [];
    const kernelUpdates: [string, string, string | undefined][] = [];
    const allKeys = ELEMENT_CONTAINERS.map((c): [string, Iterable<string>] => [
      c.name,
      keysOfEither(this.#desired.get(c.name), kernelElements.get(c.name)),
    ]);
    this.#diffElements(allKeys, adds, deletes, kernelUpdates);
    // Not push(...adds): a spread of 100,000s of arguments overflows the stack.
    for (const op of adds) ops.push(op);
    for (const op of deletes) ops.push(op);

    const newStale = new Map<string, number>();
    for (const name of kernelChains) {
      if (activeChains.has(name)) continue;
      ops.push({ verb: 'flush', object: { kind: 'chain', name } });
      newStale.set(name, this.staleChains.get(name) ?? now);
    }
    for (const name of kernelAffinitySets) {
      if (!activeAffinitySets.has(name)) ops.push({ verb: 'delete', object: { kind: 'set', name } });
    }

    return {
      full: true,
      setupOps,
      ops,
      noLocalInternal: this.#noLocalInternal,
      noLocalExternal: this.#noLocalExternal,
      newlySkipped,
      commit: () => {
        this.#applyKernelUpdates(kernelUpdates);
        this.#kernelChains = new Set([...kernelChains, ...activeChains]);
        this.#kernelAffinitySets = activeAffinitySets;
        this.staleChains.clear();
        for (const [n, t] of newStale) this.staleChains.set(n, t);
      },
    };
  }

  /** Only the Services in `changed`: their chains are rewritten, their elements diffed, their leftovers flushed. */
  planPartial(snapshot: ProxySnapshot, changed: ReadonlySet<string>, now: number): Plan {
    const newlySkipped: SkippedServicePort[] = [];
    const serviceMap = snapshot.serviceMap;

    const { oldKeys, newKeys } = changedPorts(changed, this.#portsByService, this.#trackedPorts, serviceMap);

    const touched = new Map<string, Set<string>>();
    const ops: NftOperation[] = [];
    const oldChains = new Set<string>();
    const newChains = new Set<string>();
    const oldSets = new Set<string>();
    const newSets = new Set<string>();
    for (const name of changed) {
      for (const key of oldKeys.get(name) ?? []) {
        const old = this.#rendered.get(key);
        if (old) {
          this.#release(old, touched);
          for (const c of old.chains) oldChains.add(c);
          for (const s of old.affinitySets) oldSets.add(s);
          this.#rendered.delete(key);
        }
        this.#skipped.delete(key);
      }
      const tracked = this.#portsByService.get(name);
      if (tracked) this.#trackedPorts -= tracked.length;
      this.#portsByService.delete(name);
      for (const key of newKeys.get(name) ?? []) {
        this.#track(name, key);
        const r = this.#render(snapshot, key, newlySkipped);
        if (!r) continue;
        this.#rendered.set(key, owned(r));
        this.#claim(r, touched);
        for (const op of r.chainOps) ops.push(op);
        for (const c of r.chains) newChains.add(c);
        for (const s of r.affinitySets) newSets.add(s);
      }
    }

    const adds: NftOperation[] = [];
    const deletes: NftOperation[] = [];
    const kernelUpdates: [string, string, string | undefined][] = [];
    this.#diffElements(touched, adds, deletes, kernelUpdates);
    // Not push(...adds): a spread of 100,000s of arguments overflows the stack.
    for (const op of adds) ops.push(op);
    for (const op of deletes) ops.push(op);

    const becameStale: string[] = [];
    for (const c of oldChains) {
      if (newChains.has(c) || !this.#kernelChains.has(c) || this.staleChains.has(c)) continue;
      ops.push({ verb: 'flush', object: { kind: 'chain', name: c } });
      becameStale.push(c);
    }
    const deletedSets: string[] = [];
    for (const s of oldSets) {
      if (newSets.has(s) || !this.#kernelAffinitySets.has(s)) continue;
      ops.push({ verb: 'delete', object: { kind: 'set', name: s } });
      deletedSets.push(s);
    }

    return {
      full: false,
      setupOps: [],
      ops,
      noLocalInternal: this.#noLocalInternal,
      noLocalExternal: this.#noLocalExternal,
      newlySkipped,
      commit: () => {
        this.#applyKernelUpdates(kernelUpdates);
        for (const c of newChains) {
          this.#kernelChains.add(c);
          this.staleChains.delete(c);
        }
        for (const c of becameStale) this.staleChains.set(c, now);
        for (const s of newSets) this.#kernelAffinitySets.add(s);
        for (const s of deletedSets) this.#kernelAffinitySets.delete(s);
      },
    };
  }
}

/** Every key of `a`, then the keys of `b` that `a` lacks, without building their union. */
function* keysOfEither(
  a: ReadonlyMap<string, unknown> | undefined,
  b: ReadonlyMap<string, unknown> | undefined,
): Generator<string> {
  if (a) yield* a.keys();
  if (b) for (const k of b.keys()) if (!a?.has(k)) yield k;
}

function owned(r: RenderedServicePort): OwnedServicePort {
  return {
    key: r.key,
    serviceName: r.serviceName,
    chains: r.chains,
    affinitySets: r.affinitySets,
    elements: r.elements,
    noLocalInternal: r.noLocalInternal,
    noLocalExternal: r.noLocalExternal,
  };
}

function touch(touched: Map<string, Set<string>>, set: string, key: string): void {
  const keys = touched.get(set);
  if (keys) keys.add(key);
  else touched.set(set, new Set([key]));
}

function deleteElement(e: NftElement): NftElement {
  return { kind: 'element', set: e.set, key: e.key };
}

/** Every operation of a plan after its setup, in apply order. */
export function* planOperations(plan: Plan): Generator<NftOperation> {
  yield* plan.ops;
  if (plan.deferredOps) yield* plan.deferredOps.make();
  if (plan.tailOps) yield* plan.tailOps;
}

/** How many operations planOperations() gives. */
export function planSize(plan: Plan): number {
  return plan.ops.length + (plan.deferredOps?.count ?? 0) + (plan.tailOps?.length ?? 0);
}
