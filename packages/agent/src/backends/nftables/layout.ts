// What a ruleset layout gives NftablesBackend: which shared containers it fills, how to tell a table written
// by the other layout, and a planner of its own objects. The backend (syncs, failures, reading the kernel,
// stale-chain cleanup) is the same for every layout; choosing one is this constructor argument.
import type { NftablesLayoutName } from '../../config/nftables-layout.js';
import type { NftListing } from '../../netfilter/nft/executor.js';
import type { NftMap, NftSet } from '../../netfilter/nft/objects.js';
import type { FeatureGates } from '../../model/feature-gates.js';
import type { NodeNetworkConfig, ProxySnapshot } from '../../sync/backend.js';
import type { KernelView, Plan } from './planner.js';

export interface ElementContainer {
  readonly kind: 'set' | 'map';
  readonly name: string;
}

export interface LayoutPlanner {
  /** Flushed chains → when they became stale (ms); deleted ≥ STALE_CHAIN_DELAY_MS later. */
  readonly staleChains: ReadonlyMap<string, number>;
  chainsToDelete(now: number): string[];
  chainsDeleted(names: readonly string[]): void;
  renderFull(snapshot: ProxySnapshot): { plan(kernel: KernelView, now: number, firstSync: boolean): Plan };
  planFull(snapshot: ProxySnapshot, kernel: KernelView, now: number, firstSync: boolean): Plan;
  planPartial(snapshot: ProxySnapshot, changed: ReadonlySet<string>, now: number): Plan;
  /** What a restart needs to render what this planner rendered (SyncPlanner.carriedMemos). */
  carriedMemos(): [key: string, memo: unknown][];
  seedMemos(entries: readonly (readonly [string, unknown])[]): number;
  desiredDigest(seed: number): string;
  kernelDigest(seed: number): string | undefined;
}

export interface NftablesLayout {
  readonly name: NftablesLayoutName;
  /** The sets and maps whose elements the planner keeps; a full sync on a live table flushes and refills them. */
  readonly elementContainers: readonly ElementContainer[];
  /** Whether a table read back holds the other layout's objects (it is then replaced, in the same transaction). */
  isForeign(listing: NftListing): boolean;
  /** The sets and maps the layout's setup declares for this node, with their types (setup.ts containerDeclarations). */
  declarations(node: NodeNetworkConfig): readonly (NftSet | NftMap)[];
  /** At most this many operations per transaction when filling a table that did not exist; undefined: one. */
  readonly coldStartChunk?: number;
  /**
   * A full sync on a live table flushes and refills every container. When the executor writes element-only
   * transactions straight to the kernel (NftExecutor.writesElements), a layout whose table is nearly all elements
   * (flat: a million at 100,000 Services, each costing nft far more than netlink) says true here: the table's
   * objects are then rewritten in one transaction and the flush and refill of every container applied as the next
   * (one kernel transaction, however many elements), then the stale chains are flushed. Each is atomic, and each
   * state in between serves every Service (backend.ts says why). Otherwise (upstream's layout, or nft's executor)
   * it is all one transaction, as upstream's proxier does it.
   */
  readonly refillApart?: boolean;
  createPlanner(
    node: NodeNetworkConfig,
    nodePortIPs: () => readonly string[],
    featureGates: FeatureGates | undefined,
  ): LayoutPlanner;
}

/** The kernel view of a table that does not exist yet (a fresh node), or that a sync replaces whole. */
export function emptyKernel(): KernelView {
  return {
    listing: { table: { kind: 'table' }, chains: [], sets: [], maps: [], rules: [] },
    holdsElements: false,
  };
}
