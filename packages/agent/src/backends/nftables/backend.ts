// nftables mode: a ProxyBackend that keeps table `ip kube-proxy` (or `ip6 kube-proxy`) equal to what the
// snapshot asks for. The first sync (and any sync after a failure, and the proxier's periodic resync) is a full
// one; later syncs are partial. A full sync on a live table of our own layout lists the table's objects (not one
// element: the kernel's dump of a million-element map is quadratic) and, as upstream's proxier does, flushes every
// set, map and chain it owns and writes them anew in one atomic transaction, so the old rules serve until the
// kernel commits the new ones. The ruleset's layout (upstream's, or flat/) is a constructor argument; everything
// here is the same for both.
import type { CommandRunner } from '../../netfilter/command.js';
import { NftError, isNotFound } from '../../netfilter/nft/errors.js';
import type { NftExecutor, NftListing, NftRunStats } from '../../netfilter/nft/executor.js';
import { NftCommandExecutor } from '../../netfilter/nft/executor.js';
import type { NftExecutors } from '../../netfilter/nft/choose-executor.js';
import type { NftOperation } from '../../netfilter/nft/objects.js';
import { serializeTransaction } from '../../netfilter/nft/serialize.js';
import { NftTransaction } from '../../netfilter/nft/transaction.js';
import type { FeatureGates } from '../../model/feature-gates.js';
import type { IPFamily } from '../../model/ip.js';
import { isLoopbackIP } from '../../model/ip.js';
import { nodePortIPs } from '../../model/nodeport-addresses.js';
import type {
  BackendSyncResult,
  NodeNetworkConfig,
  ProxyBackend,
  ProxySnapshot,
  SyncRequest,
} from '../../sync/backend.js';
import { BackendSyncError } from '../../sync/backend.js';
import type { Clock } from '../../util/clock.js';
import type { Logger } from '../../util/logger.js';
import { SILENT_LOGGER } from '../../util/logger.js';
import type { ProxyMetrics } from '../../sync/metrics.js';
import { NO_PROXY_METRICS } from '../../sync/metrics.js';
import { TABLE_NAME } from './naming.js';
import type { LayoutPlanner, NftablesLayout } from './layout.js';
import { emptyKernel } from './layout.js';
import type { KernelView, Plan } from './planner.js';
import { adopted, planOperations, planSize, refill } from './planner.js';
import type { SavedNftablesState } from './state.js';
import { adoptionProblem, netnsIdentity, newSeed, saveState, takeState } from './state.js';
import { UPSTREAM_LAYOUT } from './upstream-layout.js';
import { errorMessage } from '../../util/error-message.js';

export interface NftablesBackendOptions {
  readonly node: NodeNetworkConfig;
  readonly commands: CommandRunner;
  readonly clock: Clock;
  readonly metrics?: ProxyMetrics;
  readonly logger?: Logger;
  readonly featureGates?: FeatureGates;
  /** Tests: an in-memory table (FakeNft) instead of `nft` through `commands`. */
  readonly executor?: NftExecutor;
  /**
   * How nft is reached, decided once per process (chooseNftExecutors: libnftables in this process, or the `nft`
   * command); this backend makes its own executor by it (the library's: its own context). Default: the command.
   */
  readonly nftExecutors?: NftExecutors;
  /** The ruleset's layout; default upstream's (UPSTREAM_LAYOUT), or FLAT_LAYOUT (flat/layout.ts). */
  readonly layout?: NftablesLayout;
  /**
   * Where this family's state is left at stop() and taken at the first full sync (state.ts, stateFile()), so that a
   * restart adopts the table instead of refilling it. Absent: neither.
   */
  readonly statePath?: string;
}

/** The table as a full sync found it: absent (a fresh node), written by the other layout, or ours. */
type KernelState = 'absent' | 'foreign' | 'present';

export function nftFamilyOf(family: IPFamily): 'ip' | 'ip6' {
  return family === 'IPv6' ? 'ip6' : 'ip';
}

/** Host addresses that accept NodePorts: inside --nodeport-addresses, never loopback (nft has no route_localnet). */
export function nftNodePortIPs(node: NodeNetworkConfig): string[] {
  if (node.nodePortAddresses.matchAll) return [];
  return nodePortIPs(node.nodePortAddresses, node.hostInterfaces).filter((ip) => !isLoopbackIP(ip));
}

function newTransaction(plan: Plan, replaceTable = false): NftTransaction {
  const tx = new NftTransaction();
  // The other layout's table goes as a whole, in the same transaction that writes ours: no moment without rules,
  // and conntrack keeps established flows' NAT.
  if (replaceTable) tx.add('delete', { kind: 'table' });
  for (const op of plan.setupOps) tx.add(op.verb, op.object);
  // Rendered operations were validated when rendered (a bad one skips its service port instead).
  tx.addValidated(planOperations(plan));
  return tx;
}

/**
 * The plan cut into transactions of at most `chunk` operations; each is applied on its own, and each is made only
 * when the one before it was applied, so only one chunk's operations exist at a time. The table's own objects
 * (setup, then the plan's chains, rules and flushes) come first and the element adds after them, never in the same
 * transaction: an element-only transaction is one the executor may write straight to the kernel (netlink/).
 */
function* chunkedTransactions(plan: Plan, chunk: number, replaceTable: boolean): Generator<NftTransaction> {
  let tx = new NftTransaction();
  if (replaceTable) tx.add('delete', { kind: 'table' });
  for (const op of plan.setupOps) tx.add(op.verb, op.object);
  const pieces: Iterable<NftOperation>[] = [plan.ops];
  if (plan.deferredOps) pieces.push(plan.deferredOps.make());
  if (plan.tailOps) pieces.push(plan.tailOps);
  for (const piece of pieces) {
    let ops: NftOperation[] = [];
    for (const op of piece) {
      ops.push(op);
      if (ops.length + tx.size < chunk) continue;
      yield tx.addValidated(ops);
      tx = new NftTransaction();
      ops = [];
    }
    if (ops.length > 0) tx.addValidated(ops);
    if (tx.size > 0) yield tx;
    tx = new NftTransaction();
  }
}

/**
 * A full sync on a live table with its elements apart (NftablesLayout.refillApart), as three transactions, each
 * made once the one before it was applied: (1) the table's objects: setup, shared and service chains rewritten
 * (add, flush, rules), and the refill of the few containers the executor does not write itself (`direct` false:
 * interval sets); (2) every other container flushed and refilled, one element-only transaction, which the
 * executor writes as one kernel transaction; (3) the stale chains flushed and unused affinity sets deleted. No
 * state in between drops a Service's traffic: after (1) the old elements still point at chains that exist (a chain
 * the new state uses was rewritten in place, one it does not was left alone), (2) swaps those elements at once for
 * elements whose chains (1) made, and only (3) empties what nothing points at. (What (1) refills ahead is the flat
 * layout's firewall-allow, the admitted sources of load-balancer source ranges: only a Service whose ranges
 * changed while no agent ran sees its new ranges a moment before its new frontend entries.)
 */
function* refillTransactions(plan: Plan, direct: (set: string) => boolean): Generator<NftTransaction> {
  const objects = new NftTransaction();
  for (const op of plan.setupOps) objects.add(op.verb, op.object);
  objects.addValidated(plan.ops);
  // Each container's operations are made once, in the transaction that writes it.
  if (plan.deferredOps) objects.addValidated(plan.deferredOps.make((set) => !direct(set)));
  yield objects;
  // Made as the executor writes them (it writes these sets itself): over a million operations at 100,000 flat
  // Services, each of which then dies young instead of living until the kernel answered.
  const deferred = plan.deferredOps;
  if (deferred && deferred.countOf(direct) > 0)
    yield NftTransaction.streamed({ count: deferred.countOf(direct), make: () => deferred.make(direct) });
  if (plan.tailOps && plan.tailOps.length > 0) yield new NftTransaction().addValidated(plan.tailOps);
}

export class NftablesBackend implements ProxyBackend {
  readonly mode = 'nftables' as const;
  readonly family: IPFamily;
  readonly #executor: NftExecutor;
  readonly #clock: Clock;
  readonly #metrics: ProxyMetrics;
  readonly #logger: Logger;
  readonly #planner: LayoutPlanner;
  /** The service ranges the setup's unallocated-ClusterIP drop uses: the node config's (render's --service-cidrs), until ServiceCIDR objects say. */
  #serviceCIDRs: readonly string[];
  readonly #layout: NftablesLayout;
  #needFullSync = true;
  #flushedBaseChains = false;
  readonly #statePath: string | undefined;
  /** Whether the saved state (if any) was taken: only the first full sync may adopt the table. */
  #stateTaken = false;
  /** Operations of the stale-chain cleanup transaction of the last sync (tests, logs). */
  lastCleanupOperations = 0;

  constructor(options: NftablesBackendOptions) {
    this.family = options.node.family;
    const ref = { family: nftFamilyOf(options.node.family), table: TABLE_NAME };
    this.#logger = (options.logger ?? SILENT_LOGGER).child({ ipFamily: options.node.family });
    this.#executor =
      options.executor ??
      options.nftExecutors?.create(ref, this.#logger) ??
      new NftCommandExecutor(ref, options.commands);
    this.#clock = options.clock;
    this.#metrics = options.metrics ?? NO_PROXY_METRICS;
    this.#layout = options.layout ?? UPSTREAM_LAYOUT;
    this.#serviceCIDRs = options.node.serviceCIDRs;
    this.#statePath = options.statePath;
    // The planners render the fixed setup from the node config on every full sync; the service ranges in it follow
    // the cluster's ServiceCIDR objects, so the config they get reads them live.
    const current = (): readonly string[] => this.#serviceCIDRs;
    const node: NodeNetworkConfig = Object.freeze({
      ...options.node,
      get serviceCIDRs(): readonly string[] {
        return current();
      },
    });
    this.#planner = this.#layout.createPlanner(node, () => nftNodePortIPs(node), options.featureGates);
    this.#executor.useDeclarations?.(this.#layout.declarations(node));
  }

  requestFullSync(): void {
    this.#needFullSync = true;
  }

  /** Names of chains that were flushed and wait for deletion (tests compare with upstream's staleChains). */
  get staleChains(): string[] {
    return [...this.#planner.staleChains.keys()].sort();
  }

  async sync(snapshot: ProxySnapshot, request: SyncRequest): Promise<BackendSyncResult> {
    const started = performance.now();
    let kernelMs = 0;
    const now = this.#clock.now();
    let full = request.full === true || this.#needFullSync;
    const cidrs = snapshot.serviceCIDRs;
    if (cidrs !== undefined && cidrs.join(',') !== this.#serviceCIDRs.join(',')) {
      // The drop of unallocated ClusterIPs is part of the fixed setup, which only a full sync rewrites.
      this.#logger.info('service CIDRs changed', { from: this.#serviceCIDRs, to: cidrs });
      this.#serviceCIDRs = cidrs;
      full = true;
    }

    // Chains flushed at least a second ago go first, in their own transaction.
    const expired = this.#planner.chainsToDelete(now);
    this.lastCleanupOperations = 0;
    if (expired.length > 0) {
      const cleanup = new NftTransaction();
      for (const name of expired) cleanup.add('delete', { kind: 'chain', name });
      try {
        const stats = await this.#executor.run(cleanup);
        kernelMs += stats.applyMs;
        this.#planner.chainsDeleted(expired);
        this.lastCleanupOperations = cleanup.size;
      } catch (e) {
        this.#metrics.nftablesCleanupFailure(this.family);
        this.#logger.error('deleting stale chains failed; doing a full sync', {
          error: String(e),
          chains: expired.length,
        });
        full = true;
      }
    }

    let plan: Plan;
    let kernelState: KernelState = 'present';
    let adoptedTable = false;
    if (full) {
      const f = await this.#planFull(snapshot, now);
      ({ plan, kernelState, adoptedTable } = f);
      kernelMs += f.kernelMs;
    } else {
      plan = this.#planner.planPartial(snapshot, request.changedServices, now);
    }
    for (const s of plan.newlySkipped) {
      this.#logger.warn('skipping service port that cannot be programmed', {
        service: s.serviceName,
        reason: s.reason,
      });
    }
    const replaceTable = kernelState === 'foreign';
    const size = planSize(plan);
    const txs = this.#transactions(plan, full, kernelState, size, adoptedTable);
    // Setup operations are validated as they are added, and an invalid one is dropped (the sticky error).
    const operations = size + plan.setupOps.length + (replaceTable ? 1 : 0);
    let transactions = 0;

    try {
      // A chunked cold start makes each transaction while the one before it is applied (nft works in its own
      // process, or on a libnftables worker thread, while this thread writes the next chunk); a transaction is
      // started only once the one before it succeeded. nft's share is its run less the time this thread spent
      // writing meanwhile: what the sync waited for, as for the listing above.
      let applying: Promise<NftRunStats> | undefined;
      let startedAt = 0;
      const settle = async (p: Promise<NftRunStats>): Promise<void> => {
        const writing = performance.now() - startedAt;
        kernelMs += Math.max(0, (await p).applyMs - writing);
      };
      for (const t of txs) {
        if (applying) await settle(applying);
        transactions++;
        applying = this.#executor.run(t);
        startedAt = performance.now();
        // Awaited by settle; a rejection while the next chunk is written is not an unhandled one.
        applying.catch(() => {});
      }
      if (applying) await settle(applying);
    } catch (e) {
      this.#needFullSync = true;
      this.#metrics.nftablesSyncFailure(this.family);
      const error =
        e instanceof NftError
          ? e
          : new NftError(`nft transaction failed: ${errorMessage(e)}`, {
              code: 'Failed',
            });
      this.#logger.error('nftables sync failed', { error: error.message, full, operations });
      throw new BackendSyncError(
        `nftables ${this.family} ${full ? 'full' : 'partial'} sync: ${error.message}`,
        {
          full,
          cause: error,
        },
      );
    }
    plan.commit();
    this.#needFullSync = false;
    if (full) this.#flushedBaseChains = true;
    this.#logger.v(4, () => ({
      msg: 'nftables sync done',
      fields: { full, operations, transactions },
    }));
    return {
      full,
      noLocalEndpointsInternal: plan.noLocalInternal,
      noLocalEndpointsExternal: plan.noLocalExternal,
      timings: { ownMs: performance.now() - started - kernelMs, kernelMs },
      operations,
    };
  }

  /**
   * A full sync's plan: the table's objects are listed while we render (rendering needs nothing from the kernel,
   * only the plan's stale chains do), and with a saved state (the first full sync only) the table is adopted if it
   * may be. `kernelMs` is the wait for the kernel after rendering, what counts as nft's.
   */
  async #planFull(
    snapshot: ProxySnapshot,
    now: number,
  ): Promise<{ plan: Plan; kernelState: KernelState; adoptedTable: boolean; kernelMs: number }> {
    const saved = await this.#takeSavedState();
    if (saved) this.#planner.seedMemos(saved.memos);
    const generation = saved ? this.#generation() : undefined;
    const reading = this.#readKernel();
    const rendered = this.#planner.renderFull(snapshot);
    const t0 = performance.now();
    const read = await reading;
    const generationNow = await generation;
    const kernelMs = performance.now() - t0;
    if (read.state === 'foreign')
      this.#logger.info('the nftables table was written by the other layout; replacing it', {
        layout: this.#layout.name,
      });
    let view = read.view;
    let adoptedTable = false;
    if (saved && read.state === 'present' && view.listing) {
      const adopted = this.#adopt(saved, generationNow, view.listing);
      adoptedTable = adopted !== undefined;
      view = adopted ?? view;
    }
    const plan = rendered.plan(view, now, !this.#flushedBaseChains);
    return { plan, kernelState: read.state, adoptedTable, kernelMs };
  }

  /** The transactions that apply `plan` (their number and kind by the table's state, the layout and executor). */
  #transactions(
    plan: Plan,
    full: boolean,
    kernelState: KernelState,
    size: number,
    adoptedTable: boolean,
  ): Iterable<NftTransaction> {
    const replaceTable = kernelState === 'foreign';
    const layoutChunk = this.#layout.coldStartChunk;
    const chunk =
      layoutChunk === undefined
        ? undefined
        : Math.min(layoutChunk, this.#executor.coldStartChunk ?? layoutChunk);
    // Only a table that did not exist is filled in pieces: nothing depends on it yet. Replacing the other
    // layout's table stays one transaction, so no new connection meets a half-written table; refilling our own is
    // one, or (refillTransactions) three that each keep every Service served.
    if (kernelState === 'absent' && chunk !== undefined && size > chunk)
      return chunkedTransactions(plan, chunk, replaceTable);
    if (!full || kernelState !== 'present') return [newTransaction(plan, replaceTable)];
    const direct = this.#executor.writesElementsOf?.bind(this.#executor);
    const apart = this.#layout.refillApart === true && direct !== undefined;
    this.#logger.info(
      adoptedTable
        ? 'full sync on the adopted nftables table: rewriting its chains, writing no element'
        : 'full sync on the live nftables table: flushing and refilling its sets, maps and chains',
      {
        layout: this.#layout.name,
        operations: size + plan.setupOps.length,
        elementsApart: apart,
      },
    );
    return apart && direct ? refillTransactions(plan, direct) : [newTransaction(plan)];
  }

  /** The saved state, on the first full sync only (deleted as it is read); undefined when there is none. */
  async #takeSavedState(): Promise<SavedNftablesState | undefined> {
    if (this.#stateTaken || this.#statePath === undefined) return undefined;
    this.#stateTaken = true;
    const taken = await takeState(this.#statePath);
    if (taken.kind === 'state') return taken.state;
    if (taken.kind === 'unreadable')
      this.#logger.warn('ignoring the saved nftables state; the table is refilled', {
        path: this.#statePath,
        reason: taken.reason,
      });
    return undefined;
  }

  /** The ruleset generation, or undefined where it cannot be read (the reason is logged). */
  async #generation(): Promise<number | undefined> {
    if (!this.#executor.generation) return undefined;
    try {
      return await this.#executor.generation();
    } catch (e) {
      this.#logger.warn('could not read the nftables ruleset generation', { error: errorMessage(e) });
      return undefined;
    }
  }

  /** The table as the saved state says it is, if every check of state.ts holds; else undefined (said why). */
  #adopt(
    saved: SavedNftablesState,
    generation: number | undefined,
    listing: NftListing,
  ): KernelView | undefined {
    const problem = adoptionProblem(
      saved,
      { family: nftFamilyOf(this.family), layout: this.#layout.name, netns: netnsIdentity(), generation },
      () => this.#planner.desiredDigest(saved.seed),
    );
    if (problem !== undefined) {
      this.#logger.info('not adopting the nftables table the last agent left; refilling it', {
        reason: problem,
      });
      return undefined;
    }
    this.#logger.info('adopting the nftables table the last agent left, unchanged since it stopped', {
      generation,
      elements: saved.digest.split(':')[0],
    });
    return adopted(listing);
  }

  /**
   * Leaves this family's state for the next agent (state.ts) when the kernel is known to hold what the last sync
   * wrote; otherwise leaves nothing (the next start refills). Never throws: a failure is logged.
   */
  async stop(): Promise<void> {
    const path = this.#statePath;
    if (path === undefined || this.#needFullSync || !this.#executor.generation) return;
    const seed = newSeed();
    const digest = this.#planner.kernelDigest(seed);
    if (digest === undefined) return;
    try {
      const generation = await this.#executor.generation();
      await saveState(path, {
        family: nftFamilyOf(this.family),
        layout: this.#layout.name,
        generation,
        seed,
        digest,
        memos: this.#planner.carriedMemos(),
      });
      this.#logger.info('left the nftables state for the next start', { path, generation });
    } catch (e) {
      this.#logger.warn('could not leave the nftables state; the next start refills the table', {
        path,
        error: errorMessage(e),
      });
    }
  }

  /**
   * The table's own objects (chains, to find the stale ones; sets; maps, to tell the other layout's table), and
   * not one element: a full sync on a live table flushes and refills every container (refill()).
   */
  async #readKernel(): Promise<{ view: KernelView; state: KernelState }> {
    let listing: NftListing;
    try {
      listing = await (this.#executor.listObjects?.() ?? this.#executor.list());
    } catch (e) {
      // A fresh node: nothing to converge from.
      if (isNotFound(e)) return { view: emptyKernel(), state: 'absent' };
      this.#logger.warn('could not list the nftables table; refilling it without knowing its stale chains', {
        error: String(e),
      });
      return { view: refill(undefined), state: 'present' };
    }
    if (this.#layout.isForeign(listing)) return { view: emptyKernel(), state: 'foreign' };
    return { view: refill(listing), state: 'present' };
  }
}

/**
 * The text a fresh node would apply for `snapshot` (`kube-proxy-ts render`): a first full sync on an empty table,
 * written as the executor writes it for nft (a set's elements in few statements: serializeTransaction).
 */
export function renderFullSyncTransaction(
  snapshot: ProxySnapshot,
  node: NodeNetworkConfig,
  featureGates?: FeatureGates,
  layout: NftablesLayout = UPSTREAM_LAYOUT,
): string {
  const planner = layout.createPlanner(node, () => nftNodePortIPs(node), featureGates);
  const plan = planner.planFull(snapshot, emptyKernel(), 0, true);
  const tx = newTransaction(plan);
  if (tx.error) throw tx.error;
  return serializeTransaction({ family: nftFamilyOf(node.family), table: TABLE_NAME }, tx.operations).text;
}

/** Removes both kube-proxy tables (ip and ip6); a missing table is not an error. Returns the failures. */
export async function cleanupNftables(commands: CommandRunner): Promise<NftError[]> {
  const errors: NftError[] = [];
  for (const family of ['ip', 'ip6'] as const) {
    const executor = new NftCommandExecutor({ family, table: TABLE_NAME }, commands);
    try {
      await executor.run(new NftTransaction().add('delete', { kind: 'table' }));
    } catch (e) {
      if (isNotFound(e)) continue;
      errors.push(e instanceof NftError ? e : new NftError(String(e), { code: 'Failed' }));
    }
  }
  return errors;
}
