// Decides what one flat-layout sync sends. Like the upstream planner it remembers per service port what it owns
// (elements, affinity chains and sets) and what the kernel holds, so a partial sync re-renders only the changed
// Services and diffs only the keys they touched; it also remembers each port's slots (slots.ts), so an endpoint
// change rewrites only the slots that moved, and which dispatch chains exist. Kernel-side memory changes only in
// commit(), after nft succeeded.
import { changedPorts } from '../changed-ports.js';
import type { NftOperation } from '../../../netfilter/nft/objects.js';
import type { FeatureGates } from '../../../model/feature-gates.js';
import { policyNode, servicePortPolicy } from '../../../model/port-policy.js';
import type { NodeNetworkConfig, ProxySnapshot } from '../../../sync/backend.js';
import { ElementLedger, KernelUpdates, elementKey, elementValue } from '../element-ledger.js';
import type { ElementContainer, LayoutPlanner } from '../layout.js';
import {
  CLUSTER_DISPATCH_MAP,
  CLUSTER_IPS_SET,
  DISPATCH_KINDS,
  FLAT_PROTOCOLS,
  FIREWALL_ALLOW_SET,
  FIREWALL_FRONTENDS_SET,
  HAIRPIN_SET,
  LOCAL_DISPATCH_MAP,
  NODEPORT_CLUSTER_DISPATCH_MAP,
  NODEPORT_LOCAL_DISPATCH_MAP,
  NO_ENDPOINT_NODEPORTS_MAP,
  NO_ENDPOINT_SERVICES_MAP,
  SERVICE_IPS_MAP,
  SERVICE_NODEPORTS_MAP,
  endpointsMapName,
  isAffinitySet,
  isServiceChain,
  parseDispatchChainName,
} from '../naming.js';
import type { KernelView, Plan, SkippedServicePort } from '../planner.js';
import { renderSetup } from '../setup.js';
import type { FlatRenderedPort, PortSlots } from './render.js';
import { NO_SLOTS, renderFlatServicePort } from './render.js';
import { dispatchChainRule, flatSetupParts } from './setup.js';

/**
 * The flat layout's diffed containers, leaves first: when a cold start is cut into several transactions (nft's
 * memory), a frontend's verdict is only added after the endpoints and dispatch entries it leads to, and a
 * firewall's admitted sources before the frontend that makes it drop the rest.
 */
export const FLAT_ELEMENT_CONTAINERS: readonly ElementContainer[] = [
  ...DISPATCH_KINDS.flatMap((kind) =>
    FLAT_PROTOCOLS.map((p): ElementContainer => ({ kind: 'map', name: endpointsMapName(kind, p) })),
  ),
  { kind: 'map', name: CLUSTER_DISPATCH_MAP },
  { kind: 'map', name: LOCAL_DISPATCH_MAP },
  { kind: 'map', name: NODEPORT_CLUSTER_DISPATCH_MAP },
  { kind: 'map', name: NODEPORT_LOCAL_DISPATCH_MAP },
  { kind: 'set', name: FIREWALL_ALLOW_SET },
  { kind: 'set', name: FIREWALL_FRONTENDS_SET },
  { kind: 'set', name: HAIRPIN_SET },
  { kind: 'set', name: CLUSTER_IPS_SET },
  { kind: 'map', name: SERVICE_IPS_MAP },
  { kind: 'map', name: SERVICE_NODEPORTS_MAP },
  { kind: 'map', name: NO_ENDPOINT_SERVICES_MAP },
  { kind: 'map', name: NO_ENDPOINT_NODEPORTS_MAP },
];

/** Milliseconds a flushed chain waits before it is deleted (kernels < 6.2 notice late that it is unreferenced). */
const STALE_CHAIN_DELAY_MS = 1000;

/**
 * What the planner keeps of a rendered port between syncs: not the affinity rule text, and not its elements
 * (the ledger holds them as text; `claims` is the port's (set, key) pairs in it, for release).
 */
type OwnedFlatPort = Omit<FlatRenderedPort, 'chainOps' | 'elements'> & { readonly claims: readonly string[] };

export class FlatPlanner implements LayoutPlanner {
  readonly #node: NodeNetworkConfig;
  readonly #featureGates: FeatureGates | undefined;
  readonly #nodePortIPs: () => readonly string[];
  readonly #ledger = new ElementLedger();

  #rendered = new Map<string, OwnedFlatPort>();
  #portsByService = new Map<string, string[]>();
  #trackedPorts = 0;
  #skipped = new Map<string, string>();
  #noLocalInternal = 0;
  #noLocalExternal = 0;
  /** Dispatch chain → how many rendered ports point at it. */
  #dispatchUsers = new Map<string, number>();

  // What the kernel holds (changed only by commit()).
  /** Dispatch chains that exist with their rule. */
  #kernelDispatch = new Set<string>();
  #kernelChains = new Set<string>();
  #kernelAffinitySets = new Set<string>();
  readonly staleChains = new Map<string, number>();

  constructor(node: NodeNetworkConfig, nodePortIPs: () => readonly string[], featureGates?: FeatureGates) {
    this.#node = node;
    this.#nodePortIPs = nodePortIPs;
    this.#featureGates = featureGates;
  }

  chainsToDelete(now: number): string[] {
    const out: string[] = [];
    for (const [name, since] of this.staleChains) if (now - since >= STALE_CHAIN_DELAY_MS) out.push(name);
    return out;
  }

  chainsDeleted(names: readonly string[]): void {
    for (const n of names) {
      this.staleChains.delete(n);
      this.#kernelChains.delete(n);
      this.#kernelDispatch.delete(n);
    }
  }

  /** The slots a port has now (tests; the planner's memory between syncs). */
  slotsOf(key: string): PortSlots | undefined {
    return this.#rendered.get(key)?.slots;
  }

  #render(
    snapshot: ProxySnapshot,
    key: string,
    previous: PortSlots,
    newlySkipped: SkippedServicePort[],
  ): FlatRenderedPort | undefined {
    const sp = snapshot.serviceMap.get(key);
    if (!sp) return undefined;
    const node = policyNode(snapshot.topology, this.#node.nodeIPs[0], this.#featureGates);
    const policy = servicePortPolicy(sp, snapshot.endpointsMap.get(key) ?? [], node);
    const r = renderFlatServicePort(policy, this.#node, previous);
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

  /** Claims a freshly rendered port's elements and chains; returns what the planner keeps of it. */
  #claim(r: FlatRenderedPort, touched: Map<string, Set<string>> | undefined): OwnedFlatPort {
    const claims = this.#ledger.claim(r.elements, touched);
    for (const c of r.dispatchChains) this.#dispatchUsers.set(c, (this.#dispatchUsers.get(c) ?? 0) + 1);
    if (r.noLocalInternal) this.#noLocalInternal++;
    if (r.noLocalExternal) this.#noLocalExternal++;
    return owned(r, claims);
  }

  #release(r: OwnedFlatPort, touched: Map<string, Set<string>>): void {
    this.#ledger.release(r.claims, touched);
    for (const c of r.dispatchChains) {
      const n = (this.#dispatchUsers.get(c) ?? 0) - 1;
      if (n > 0) this.#dispatchUsers.set(c, n);
      else this.#dispatchUsers.delete(c);
    }
    if (r.noLocalInternal) this.#noLocalInternal--;
    if (r.noLocalExternal) this.#noLocalExternal--;
  }

  /** add + flush + rule for each dispatch chain; nft resolves the chain before any element points at it. */
  #dispatchChainOps(names: Iterable<string>, ops: NftOperation[]): string[] {
    const made: string[] = [];
    for (const name of names) {
      const parsed = parseDispatchChainName(name);
      if (!parsed) continue;
      ops.push({ verb: 'add', object: { kind: 'chain', name } });
      ops.push({ verb: 'flush', object: { kind: 'chain', name } });
      ops.push({
        verb: 'add',
        object: dispatchChainRule(parsed.kind, parsed.protocol, parsed.count, this.#node),
      });
      made.push(name);
    }
    return made;
  }

  planFull(snapshot: ProxySnapshot, kernel: KernelView, now: number, firstSync: boolean): Plan {
    return this.renderFull(snapshot).plan(kernel, now, firstSync);
  }

  renderFull(snapshot: ProxySnapshot): {
    plan(kernel: KernelView, now: number, firstSync: boolean): Plan;
  } {
    const newlySkipped: SkippedServicePort[] = [];
    const previous = this.#rendered;
    this.#rendered = new Map();
    this.#portsByService = new Map();
    this.#trackedPorts = 0;
    this.#ledger.resetDesired();
    this.#dispatchUsers = new Map();
    this.#noLocalInternal = 0;
    this.#noLocalExternal = 0;
    const chainOps: NftOperation[] = [];
    const activeChains = new Set<string>();
    const activeAffinitySets = new Set<string>();
    const seenSkipped = new Map<string, string>();
    for (const [key, sp] of snapshot.serviceMap) {
      this.#track(sp.serviceName, key);
      const r = this.#render(snapshot, key, previous.get(key)?.slots ?? NO_SLOTS, newlySkipped);
      if (!r) {
        seenSkipped.set(key, this.#skipped.get(key) ?? '');
        continue;
      }
      this.#rendered.set(key, this.#claim(r, undefined));
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
    activeAffinitySets: ReadonlySet<string>,
  ): Plan {
    const setupOps = renderSetup(
      this.#node,
      { firstSync, nodePortIPs: this.#nodePortIPs() },
      flatSetupParts(this.#node),
    );
    const ops: NftOperation[] = [];
    const kernelElements = new Map<string, Map<string, string>>();
    for (const c of FLAT_ELEMENT_CONTAINERS) {
      const listed = kernel.elements.get(c.name);
      if (listed === undefined) ops.push({ verb: 'flush', object: { kind: c.kind, name: c.name } });
      const held = new Map<string, string>();
      for (const e of listed ?? []) held.set(elementKey(e), elementValue(e));
      kernelElements.set(c.name, held);
    }
    this.#ledger.setKernel(kernelElements);
    const listedChains = (kernel.listing?.chains ?? []).map((c) => c.name);
    const kernelChains = new Set(listedChains.filter(isServiceChain));
    const kernelDispatch = listedChains.filter((n) => parseDispatchChainName(n) !== undefined);
    const kernelAffinitySets = new Set((kernel.listing?.sets ?? []).map((s) => s.name).filter(isAffinitySet));

    const dispatch = this.#dispatchChainOps(this.#dispatchUsers.keys(), ops);
    for (const op of chainOps) ops.push(op);

    // The element adds (at a cold start, over a million) are made as they are written; the rest follows them.
    const tailOps: NftOperation[] = [];
    const adds = this.#ledger.fullDiff(
      FLAT_ELEMENT_CONTAINERS.map((c) => c.name),
      tailOps,
    );

    const newStale = new Map<string, number>();
    for (const name of [...kernelChains, ...kernelDispatch]) {
      if (activeChains.has(name) || this.#dispatchUsers.has(name)) continue;
      tailOps.push({ verb: 'flush', object: { kind: 'chain', name } });
      newStale.set(name, this.staleChains.get(name) ?? now);
    }
    for (const name of kernelAffinitySets) {
      if (!activeAffinitySets.has(name)) tailOps.push({ verb: 'delete', object: { kind: 'set', name } });
    }

    return {
      full: true,
      setupOps,
      ops,
      deferredOps: adds,
      tailOps,
      noLocalInternal: this.#noLocalInternal,
      noLocalExternal: this.#noLocalExternal,
      newlySkipped,
      commit: () => {
        // Every wanted or held key of every container was diffed: the kernel now holds what is wanted.
        this.#ledger.kernelIsDesired();
        this.#kernelChains = new Set([...kernelChains, ...activeChains]);
        this.#kernelDispatch = new Set(dispatch);
        this.#kernelAffinitySets = new Set(activeAffinitySets);
        this.staleChains.clear();
        for (const [n, t] of newStale) this.staleChains.set(n, t);
      },
    };
  }

  planPartial(snapshot: ProxySnapshot, changed: ReadonlySet<string>, now: number): Plan {
    const newlySkipped: SkippedServicePort[] = [];
    const serviceMap = snapshot.serviceMap;

    const { oldKeys, newKeys } = changedPorts(changed, this.#portsByService, this.#trackedPorts, serviceMap);

    const touched = new Map<string, Set<string>>();
    const chainOps: NftOperation[] = [];
    const oldChains = new Set<string>();
    const newChains = new Set<string>();
    const oldSets = new Set<string>();
    const newSets = new Set<string>();
    const neededDispatch = new Set<string>();
    for (const name of changed) {
      const previousSlots = new Map<string, PortSlots>();
      for (const key of oldKeys.get(name) ?? []) {
        const old = this.#rendered.get(key);
        if (old) {
          previousSlots.set(key, old.slots);
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
        const r = this.#render(snapshot, key, previousSlots.get(key) ?? NO_SLOTS, newlySkipped);
        if (!r) continue;
        this.#rendered.set(key, this.#claim(r, touched));
        for (const op of r.chainOps) chainOps.push(op);
        for (const c of r.chains) newChains.add(c);
        for (const s of r.affinitySets) newSets.add(s);
        for (const c of r.dispatchChains) if (!this.#kernelDispatch.has(c)) neededDispatch.add(c);
      }
    }

    const ops: NftOperation[] = [];
    const madeDispatch = this.#dispatchChainOps(neededDispatch, ops);
    for (const op of chainOps) ops.push(op);
    const adds: NftOperation[] = [];
    const deletes: NftOperation[] = [];
    const updates = new KernelUpdates();
    this.#ledger.diff(touched, adds, deletes, updates);
    for (const op of adds) ops.push(op);
    for (const op of deletes) ops.push(op);

    // Dispatch chains nobody uses any more stay until the next full sync: they are a handful, and keeping them
    // saves re-making one when an endpoint count comes back.
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
        this.#ledger.apply(updates);
        for (const c of madeDispatch) {
          this.#kernelDispatch.add(c);
          this.staleChains.delete(c);
        }
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

const NONE: readonly string[] = [];

function owned(r: FlatRenderedPort, claims: readonly string[]): OwnedFlatPort {
  // Most ports have no chains or sets of their own: one shared empty list instead of two per port.
  return {
    key: r.key,
    serviceName: r.serviceName,
    claims,
    dispatchChains: r.dispatchChains,
    chains: r.chains.length > 0 ? r.chains : NONE,
    affinitySets: r.affinitySets.length > 0 ? r.affinitySets : NONE,
    slots: r.slots,
    noLocalInternal: r.noLocalInternal,
    noLocalExternal: r.noLocalExternal,
  };
}
