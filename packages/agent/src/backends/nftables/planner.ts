// Decides what one sync sends (upstream-backends.md §1.9), for either ruleset layout: the layout renders one
// service port (PortRendering) and this planner does everything else. It remembers, per service port, what the
// port owns (its claims in the element ledger, its chains and affinity sets, the shared chains it points at) and
// what the kernel holds, so a partial sync costs O(changed services): it re-renders only those, diffs only the
// element keys they touched, and keeps running totals instead of recounting. Kernel-side memory changes only in
// commit(), after nft succeeded; after a failure the owner discards the planner's view by doing a full sync (which
// flushes and refills every container of a live table, so it needs no view of the kernel's elements).
import { changedPorts } from './changed-ports.js';
import { ElementLedger, KernelUpdates, Touched } from './element-ledger.js';
import type { ElementRun } from './element-ledger.js';
import type { ElementContainer, LayoutPlanner } from './layout.js';
import { isAffinitySet, isServiceChain } from './naming.js';
import type { RenderedServicePort } from './service-port.js';
import type { NftOperation } from '../../netfilter/nft/objects.js';
import type { NftListing } from '../../netfilter/nft/executor.js';
import type { FeatureGates } from '../../model/feature-gates.js';
import { policyNode, servicePortPolicy } from '../../model/port-policy.js';
import type { PolicyNode, ServicePortPolicy } from '../../model/port-policy.js';
import type { NodeNetworkConfig, ProxySnapshot } from '../../sync/backend.js';

/** Milliseconds a flushed chain waits before it is deleted (kernels < 6.2 notice late that it is unreferenced). */
export const STALE_CHAIN_DELAY_MS = 1000;

/** What the kernel held when a full sync started (`listing` undefined: its objects could not be read). */
export interface KernelView {
  readonly listing: NftListing | undefined;
  /**
   * Whether the table's sets and maps may hold elements (a live table): the full sync then flushes and refills
   * every container, in the transaction that writes its elements. No element is ever read back: the kernel's dump
   * of a million-element map is quadratic (docs/nftables-layouts.md). False for a table the sync makes.
   */
  readonly holdsElements: boolean;
  /** The containers hold exactly the wanted elements (adopted()): nothing to flush or add. */
  readonly elementsAsWanted?: boolean;
}

/** A live table's view for a full sync that flushes and refills every container: its objects, no element. */
export function refill(listing: NftListing | undefined): KernelView {
  return { listing, holdsElements: true };
}

/**
 * A live table whose elements are known to be exactly the wanted ones (a restart that found the table the last
 * agent left, untouched: state.ts): the full sync rewrites the table's objects and writes no element.
 */
export function adopted(listing: NftListing): KernelView {
  return { listing, holdsElements: true, elementsAsWanted: true };
}

export type RenderOutcome<R> =
  | { readonly ok: true; readonly value: R }
  | { readonly ok: false; readonly key: string; readonly serviceName: string; readonly reason: string };

/** What a layout gives the planner: its containers, its fixed objects, and how it renders one service port. */
export interface PortRendering<R extends RenderedServicePort, M> {
  /** The shared sets and maps whose elements are diffed, in the order a full sync writes their adds. */
  readonly containers: readonly ElementContainer[];
  /** The table's fixed objects (chains, sets, maps, base rules), written first by every full sync. */
  setup(firstSync: boolean, nodePortIPs: readonly string[]): NftOperation[];
  /** Renders one port; `previous` is what memo() kept of its last rendering (undefined: it had none). */
  render(policy: ServicePortPolicy, previous: M | undefined): RenderOutcome<R>;
  /** What to keep of a rendering for the next one (the flat layout's slots). */
  memo(rendered: R): M;
  /**
   * Whether a rendering's memo holds what a rendering with none would not give (the flat layout's moved slots):
   * such memos are carried over a restart (state.ts). Absent: none is.
   */
  carries?(rendered: R): boolean;
  /** A carried memo read back from a saved state, or undefined when it is not one this layout keeps. */
  readMemo?(value: unknown): M | undefined;
  /** Whether a listed chain is one of the layout's shared chains (RenderedServicePort.sharedChains). */
  isSharedChain(name: string): boolean;
  /** A shared chain's add, flush and rule. */
  sharedChainOps(name: string): readonly NftOperation[];
}

export interface SkippedServicePort {
  readonly key: string;
  readonly serviceName: string;
  readonly reason: string;
}

/** The set or map an element part's operation is about (its flush), '' for anything else. */
function containerOf(op: NftOperation): string {
  return op.object.kind === 'set' || op.object.kind === 'map' ? op.object.name : '';
}

/** Operations made only as they are written (Plan.deferredOps). */
export interface DeferredOps {
  readonly count: number;
  /** How many of them make(only) gives. */
  countOf(only: (container: string) => boolean): number;
  /**
   * The operations in order; made anew on each call, before the plan is committed. With `only`, just those of the
   * sets and maps it accepts (by name), the others not made at all.
   */
  make(only?: (container: string) => boolean): Iterable<NftOperation>;
}

export interface Plan {
  readonly full: boolean;
  /** Operations in apply order; setup operations are not yet validated, the rest are. */
  readonly setupOps: readonly NftOperation[];
  readonly ops: readonly NftOperation[];
  /**
   * Written after `ops`, then `tailOps`: a full sync's element part (the flushes of the containers it did not
   * read, then its element adds), made as it is written, so that a cold start's million operations never all
   * exist at once (they were most of its peak memory).
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

/**
 * What the planner keeps of a rendered port between syncs: what it owns in the kernel, not its rule text (that is
 * needed only in the transaction that sends it) nor its elements (the ledger holds them as text; `claims` is the
 * port's (set, key) pairs there, for release).
 */
type OwnedPort<M> = Pick<
  RenderedServicePort,
  'sharedChains' | 'chains' | 'affinitySets' | 'noLocalInternal' | 'noLocalExternal'
> & { readonly claims: readonly string[]; readonly memo: M };

/** What re-rendering some ports produced: their chain operations and the chains and sets they use. */
class Rendering {
  readonly chainOps: NftOperation[] = [];
  readonly chains = new Set<string>();
  readonly affinitySets = new Set<string>();
  readonly sharedChains = new Set<string>();
  readonly newlySkipped: SkippedServicePort[] = [];

  add(r: RenderedServicePort): void {
    for (const op of r.chainOps) this.chainOps.push(op);
    for (const c of r.chains) this.chains.add(c);
    for (const s of r.affinitySets) this.affinitySets.add(s);
    for (const c of r.sharedChains) this.sharedChains.add(c);
  }
}

/** What a partial sync's released ports used before. */
interface Released {
  readonly chains: Set<string>;
  readonly affinitySets: Set<string>;
}

export class SyncPlanner<R extends RenderedServicePort, M> implements LayoutPlanner {
  readonly #layout: PortRendering<R, M>;
  readonly #node: NodeNetworkConfig;
  readonly #featureGates: FeatureGates | undefined;
  readonly #nodePortIPs: () => readonly string[];
  readonly #ledger = new ElementLedger();

  // Desired state (rebuilt by a full sync, patched by a partial one).
  #rendered = new Map<string, OwnedPort<M>>();
  /** Service name → its service-port keys (arrays: almost every Service has one or two ports). */
  #portsByService = new Map<string, string[]>();
  #trackedPorts = 0;
  #skipped = new Map<string, string>();
  /** Ports whose memo the layout carries over a restart (PortRendering.carries). */
  #carried = new Set<string>();
  /** Memos read from a saved state, for the next full sync's rendering of ports it has none of. */
  #seeded: Map<string, M> | undefined;
  #noLocalInternal = 0;
  #noLocalExternal = 0;
  /** Shared chain → how many rendered ports point at it. */
  #sharedUsers = new Map<string, number>();

  // What the kernel holds (changed only by commit()).
  /** Shared chains that exist with their rule. */
  #kernelShared = new Set<string>();
  #kernelChains = new Set<string>();
  #kernelAffinitySets = new Set<string>();
  /** Flushed chains → when they became stale (ms). */
  readonly staleChains = new Map<string, number>();

  constructor(
    layout: PortRendering<R, M>,
    node: NodeNetworkConfig,
    nodePortIPs: () => readonly string[],
    featureGates?: FeatureGates,
  ) {
    this.#layout = layout;
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
      this.#kernelShared.delete(n);
    }
  }

  /** What the layout kept of a port's last rendering (tests; the planner's memory between syncs). */
  memoOf(key: string): M | undefined {
    return this.#rendered.get(key)?.memo;
  }

  #policyNode(snapshot: ProxySnapshot): PolicyNode {
    return policyNode(snapshot.topology, this.#node.nodeIPs[0], this.#featureGates);
  }

  /** Renders one port into `out`; a port that cannot be rendered is skipped (and said once). */
  #renderPort(
    snapshot: ProxySnapshot,
    node: PolicyNode,
    key: string,
    previous: M | undefined,
    out: Rendering,
  ): R | undefined {
    const sp = snapshot.serviceMap.get(key);
    if (!sp) return undefined;
    const policy = servicePortPolicy(sp, snapshot.endpointsMap.get(key) ?? [], node);
    const r = this.#layout.render(policy, previous);
    if (!r.ok) {
      if (this.#skipped.get(key) !== r.reason)
        out.newlySkipped.push({ key, serviceName: r.serviceName, reason: r.reason });
      this.#skipped.set(key, r.reason);
      return undefined;
    }
    this.#skipped.delete(key);
    out.add(r.value);
    return r.value;
  }

  #track(serviceName: string, key: string): void {
    const keys = this.#portsByService.get(serviceName);
    if (!keys) this.#portsByService.set(serviceName, [key]);
    else if (!keys.includes(key)) keys.push(key);
    else return;
    this.#trackedPorts++;
  }

  /** Claims a freshly rendered port's elements and shared chains and keeps what the planner owns of it. */
  #claim(key: string, r: R, touched: Touched | undefined): void {
    const claims = this.#ledger.claim(r.elements, r.runs ?? NO_RUNS, touched);
    for (const c of r.sharedChains) this.#sharedUsers.set(c, (this.#sharedUsers.get(c) ?? 0) + 1);
    if (r.noLocalInternal) this.#noLocalInternal++;
    if (r.noLocalExternal) this.#noLocalExternal++;
    this.#rendered.set(key, owned(r, claims, this.#layout.memo(r)));
    if (this.#layout.carries?.(r)) this.#carried.add(key);
    else this.#carried.delete(key);
  }

  #release(key: string, r: OwnedPort<M>, touched: Touched, released: Released): void {
    this.#ledger.release(r.claims, touched);
    for (const c of r.sharedChains) {
      const n = (this.#sharedUsers.get(c) ?? 0) - 1;
      if (n > 0) this.#sharedUsers.set(c, n);
      else this.#sharedUsers.delete(c);
    }
    if (r.noLocalInternal) this.#noLocalInternal--;
    if (r.noLocalExternal) this.#noLocalExternal--;
    for (const c of r.chains) released.chains.add(c);
    for (const s of r.affinitySets) released.affinitySets.add(s);
    this.#rendered.delete(key);
    this.#carried.delete(key);
  }

  /** Each shared chain's operations; nft resolves a chain before any element that points at it. */
  #sharedChainOps(names: Iterable<string>, ops: NftOperation[]): string[] {
    const made: string[] = [];
    for (const name of names) {
      for (const op of this.#layout.sharedChainOps(name)) ops.push(op);
      made.push(name);
    }
    return made;
  }

  /** The memos a restart needs to render what this planner rendered (PortRendering.carries), by port. */
  carriedMemos(): [key: string, memo: M][] {
    const out: [string, M][] = [];
    for (const key of this.#carried) {
      const memo = this.#rendered.get(key)?.memo;
      if (memo !== undefined) out.push([key, memo]);
    }
    return out;
  }

  /**
   * Memos saved by an agent that stopped, for the next full sync's rendering of the ports this planner has none
   * of; returns how many the layout accepted (readMemo).
   */
  seedMemos(entries: readonly (readonly [string, unknown])[]): number {
    const read = this.#layout.readMemo;
    if (!read) return 0;
    const seeded = new Map<string, M>();
    for (const [key, value] of entries) {
      const memo = read(value);
      if (memo !== undefined) seeded.set(key, memo);
    }
    this.#seeded = seeded;
    return seeded.size;
  }

  /** The wanted elements' digest (ElementLedger.desiredDigest). */
  desiredDigest(seed: number): string {
    return this.#ledger.desiredDigest(seed);
  }

  /** The digest of what the kernel holds, when that is known to be the wanted elements; else undefined. */
  kernelDigest(seed: number): string | undefined {
    return this.#ledger.kernelIsKnownDesired ? this.#ledger.desiredDigest(seed) : undefined;
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
    const previous = this.#rendered;
    this.#rendered = new Map();
    this.#portsByService = new Map();
    this.#trackedPorts = 0;
    this.#ledger.resetDesired();
    this.#carried = new Set();
    const seeded = this.#seeded;
    this.#seeded = undefined;
    this.#sharedUsers = new Map();
    this.#noLocalInternal = 0;
    this.#noLocalExternal = 0;
    const rendering = new Rendering();
    const node = this.#policyNode(snapshot);
    const seenSkipped = new Map<string, string>();
    for (const [key, sp] of snapshot.serviceMap) {
      this.#track(sp.serviceName, key);
      const memo = previous.get(key)?.memo ?? seeded?.get(key);
      const r = this.#renderPort(snapshot, node, key, memo, rendering);
      if (r) this.#claim(key, r, undefined);
      else seenSkipped.set(key, this.#skipped.get(key) ?? '');
    }
    this.#skipped = seenSkipped;
    return { plan: (kernel, now, firstSync) => this.#diffFull(kernel, now, firstSync, rendering) };
  }

  #diffFull(kernel: KernelView, now: number, firstSync: boolean, rendering: Rendering): Plan {
    const setupOps = this.#layout.setup(firstSync, this.#nodePortIPs());
    const ops: NftOperation[] = [];
    // A live table's containers are emptied in the transaction that refills them; the ledger counts them empty.
    const asWanted = kernel.elementsAsWanted === true;
    const flushes: NftOperation[] =
      kernel.holdsElements && !asWanted
        ? this.#layout.containers.map((c) => ({ verb: 'flush', object: { kind: c.kind, name: c.name } }))
        : [];
    const listedChains = (kernel.listing?.chains ?? []).map((c) => c.name);
    const kernelChains = new Set(listedChains.filter(isServiceChain));
    const kernelShared = listedChains.filter((n) => this.#layout.isSharedChain(n));
    const kernelAffinitySets = (kernel.listing?.sets ?? []).map((s) => s.name).filter(isAffinitySet);
    const inUse = [...this.#sharedUsers.keys()];

    this.#sharedChainOps(inUse, ops);
    for (const op of rendering.chainOps) ops.push(op);
    // The element adds (at a cold start, over a million) are made as they are written, after the flushes of the
    // containers that were not read (all of them on a live table): the element part of the plan, which the
    // backend may apply on its own (the flat layout in-process). The rest follows them.
    const tailOps: NftOperation[] = [];
    const diffed = this.#ledger.fullDiff(asWanted ? [] : this.#layout.containers.map((c) => c.name));
    const adds: DeferredOps = {
      count: flushes.length + diffed.count,
      countOf: (only) => flushes.filter((op) => only(containerOf(op))).length + diffed.countOf(only),
      *make(only) {
        for (const op of flushes) if (!only || only(containerOf(op))) yield op;
        yield* diffed.make(only);
      },
    };
    const newStale = new Map<string, number>();
    for (const name of [...kernelChains, ...kernelShared]) {
      if (rendering.chains.has(name) || this.#sharedUsers.has(name)) continue;
      tailOps.push({ verb: 'flush', object: { kind: 'chain', name } });
      newStale.set(name, this.staleChains.get(name) ?? now);
    }
    for (const name of kernelAffinitySets)
      if (!rendering.affinitySets.has(name)) tailOps.push({ verb: 'delete', object: { kind: 'set', name } });

    const commit = (): void => {
      // Every wanted element was added to emptied containers (or was there, adopted): the kernel holds what is wanted.
      this.#ledger.kernelIsDesired();
      this.#kernelChains = new Set([...kernelChains, ...rendering.chains]);
      this.#kernelShared = new Set(inUse);
      this.#kernelAffinitySets = new Set(rendering.affinitySets);
      this.staleChains.clear();
      for (const [n, t] of newStale) this.staleChains.set(n, t);
    };
    return this.#plan(true, setupOps, ops, rendering, commit, adds, tailOps);
  }

  #plan(
    full: boolean,
    setupOps: readonly NftOperation[],
    ops: readonly NftOperation[],
    rendering: Rendering,
    commit: () => void,
    deferredOps?: DeferredOps,
    tailOps?: readonly NftOperation[],
  ): Plan {
    return {
      full,
      setupOps,
      ops,
      ...(deferredOps ? { deferredOps } : {}),
      ...(tailOps ? { tailOps } : {}),
      noLocalInternal: this.#noLocalInternal,
      noLocalExternal: this.#noLocalExternal,
      newlySkipped: rendering.newlySkipped,
      commit,
    };
  }

  /** Releases and re-renders the ports of the `changed` Services; the ledger records the keys they touch. */
  #rerender(
    snapshot: ProxySnapshot,
    changed: ReadonlySet<string>,
    touched: Touched,
  ): { rendering: Rendering; released: Released } {
    const { oldKeys, newKeys } = changedPorts(
      changed,
      this.#portsByService,
      this.#trackedPorts,
      snapshot.serviceMap,
    );
    const rendering = new Rendering();
    const released: Released = { chains: new Set(), affinitySets: new Set() };
    const node = this.#policyNode(snapshot);
    for (const name of changed) {
      const previous = new Map<string, M>();
      for (const key of oldKeys.get(name) ?? []) {
        const old = this.#rendered.get(key);
        if (old) {
          previous.set(key, old.memo);
          this.#release(key, old, touched, released);
        }
        this.#skipped.delete(key);
      }
      this.#trackedPorts -= this.#portsByService.get(name)?.length ?? 0;
      this.#portsByService.delete(name);
      for (const key of newKeys.get(name) ?? []) {
        this.#track(name, key);
        const r = this.#renderPort(snapshot, node, key, previous.get(key), rendering);
        if (r) this.#claim(key, r, touched);
      }
    }
    return { rendering, released };
  }

  /** Only the Services in `changed`: their chains are rewritten, their elements diffed, their leftovers flushed. */
  planPartial(snapshot: ProxySnapshot, changed: ReadonlySet<string>, now: number): Plan {
    const touched = new Touched();
    const { rendering, released } = this.#rerender(snapshot, changed, touched);

    const ops: NftOperation[] = [];
    const needed = [...rendering.sharedChains].filter((c) => !this.#kernelShared.has(c));
    const madeShared = this.#sharedChainOps(needed, ops);
    for (const op of rendering.chainOps) ops.push(op);
    const adds: NftOperation[] = [];
    const deletes: NftOperation[] = [];
    const updates = new KernelUpdates();
    this.#ledger.diff(touched, adds, deletes, updates);
    // Not push(...adds): a spread of 100,000s of arguments overflows the stack.
    for (const op of adds) ops.push(op);
    for (const op of deletes) ops.push(op);

    // Shared chains nobody uses any more stay until the next full sync: they are a handful, and keeping them
    // saves re-making one when an endpoint count comes back.
    const becameStale: string[] = [];
    for (const c of released.chains) {
      if (rendering.chains.has(c) || !this.#kernelChains.has(c) || this.staleChains.has(c)) continue;
      ops.push({ verb: 'flush', object: { kind: 'chain', name: c } });
      becameStale.push(c);
    }
    const deletedSets: string[] = [];
    for (const s of released.affinitySets) {
      if (rendering.affinitySets.has(s) || !this.#kernelAffinitySets.has(s)) continue;
      ops.push({ verb: 'delete', object: { kind: 'set', name: s } });
      deletedSets.push(s);
    }

    const commit = (): void => {
      this.#ledger.apply(updates);
      for (const c of madeShared) {
        this.#kernelShared.add(c);
        this.staleChains.delete(c);
      }
      for (const c of rendering.chains) {
        this.#kernelChains.add(c);
        this.staleChains.delete(c);
      }
      for (const c of becameStale) this.staleChains.set(c, now);
      for (const s of rendering.affinitySets) this.#kernelAffinitySets.add(s);
      for (const s of deletedSets) this.#kernelAffinitySets.delete(s);
    };
    return this.#plan(false, [], ops, rendering, commit);
  }
}

const NONE: readonly string[] = [];
const NO_RUNS: readonly ElementRun[] = [];

function owned<M>(r: RenderedServicePort, claims: readonly string[], memo: M): OwnedPort<M> {
  // Most ports have no chains, sets or shared chains of their own: one shared empty list instead of one per port.
  return {
    claims,
    sharedChains: r.sharedChains.length > 0 ? r.sharedChains : NONE,
    chains: r.chains.length > 0 ? r.chains : NONE,
    affinitySets: r.affinitySets.length > 0 ? r.affinitySets : NONE,
    memo,
    noLocalInternal: r.noLocalInternal,
    noLocalExternal: r.noLocalExternal,
  };
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
