// iptables mode: ProxyBackend over iptables-restore (upstream pkg/proxy/iptables). Each sync rewrites the top-level
// chains; per-service chains only for services that changed (a partial sync) or for all (a full sync). Rendered
// rules are cached per service port, so an unchanged service costs neither rendering nor restore lines. Stale
// per-service chains are found with iptables-save and deleted in the same restore.
import type { Endpoint } from '../../model/endpoint.js';
import type { FeatureGates } from '../../model/feature-gates.js';
import type { IPFamily } from '../../model/ip.js';
import { policyNode, servicePortPolicy } from '../../model/port-policy.js';
import type { ServicePort } from '../../model/service-port.js';
import type { CommandRunner } from '../../netfilter/command.js';
import { IptablesClient, IptablesError } from '../../netfilter/iptables/client.js';
import { chainsInSave, readSave } from '../../netfilter/iptables/parse.js';
import type { SavedTable } from '../../netfilter/iptables/parse.js';
import { serializeRestore } from '../../netfilter/iptables/serialize.js';
import type { IptablesRule, IptablesTableName, RestoreTable } from '../../netfilter/iptables/types.js';
import { BUILTIN_CHAINS, IPTABLES_TABLES } from '../../netfilter/iptables/types.js';
import type { IptablesVariant } from '../../netfilter/iptables/variant.js';
import type {
  BackendSyncResult,
  NodeNetworkConfig,
  ProxyBackend,
  ProxySnapshot,
  SyncRequest,
} from '../../sync/backend.js';
import type { Clock } from '../../util/clock.js';
import type { Logger } from '../../util/logger.js';
import { SILENT_LOGGER } from '../../util/logger.js';
import type { ProxyMetrics } from '../../sync/metrics.js';
import { NO_PROXY_METRICS } from '../../sync/metrics.js';
import { JUMP_RULES, jumpArgs, KUBELET_JUMP_RULES } from './jumps.js';
import type { JumpRule } from './jumps.js';
import { isServiceChainName, KUBE_FORWARD, KUBE_PROXY_CANARY } from './naming.js';
import type { IptablesExtras, RenderContext } from './render.js';
import {
  LARGE_CLUSTER_ENDPOINTS_THRESHOLD,
  localhostNodePortsActive,
  renderServicePort,
  renderTopLevel,
  totalEndpoints,
} from './render.js';
import type { JoinedTopRules, ServicePortText, TopLevelText } from './restore-text.js';
import { assembleRestoreText, joinTopRules, servicePortText, topLevelText } from './restore-text.js';

export interface IptablesModeOptions extends IptablesExtras {
  /** Which binaries to run: the host's default names, or pinned legacy / nft. */
  readonly variant: IptablesVariant;
  /** Test-owned xtables lock file (XTABLES_LOCKFILE); default /run/xtables.lock. */
  readonly lockFile?: string;
  /** Seconds to wait for the xtables lock (upstream 5). */
  readonly lockWaitSeconds?: number;
  /** syncPeriod, ms: in large-cluster mode the stale-chain scan runs at most this often (default 30 s). */
  readonly syncPeriodMs?: number;
}

export interface IptablesBackendOptions {
  readonly node: NodeNetworkConfig;
  readonly commands: CommandRunner;
  readonly clock: Clock;
  readonly iptables: IptablesModeOptions;
  readonly metrics?: ProxyMetrics;
  readonly logger?: Logger;
  readonly featureGates?: FeatureGates;
}

/** Tables that hold the canary (upstream Monitor): mangle is the one polled first. */
export const CANARY_TABLES: readonly IptablesTableName[] = ['mangle', 'nat', 'filter'];

// One jump per table that an external flush (`iptables -t nat -F`) removes: upstream's empty canary chain
// survives a flush, so a flush alone would go unnoticed.
const SENTINEL_JUMPS: readonly JumpRule[] = JUMP_RULES.filter(
  (j) => (j.table === 'nat' && j.from === 'PREROUTING') || (j.table === 'filter' && j.to === KUBE_FORWARD),
);

const NO_ENDPOINTS: readonly Endpoint[] = Object.freeze([]);

/** What the last sync did, for logs, tests and benchmarks. */
export interface IptablesSyncStats {
  readonly full: boolean;
  /** Service ports rendered afresh (the rest came from the cache). */
  readonly rendered: number;
  /** Service ports whose own chains were written. */
  readonly written: number;
  readonly staleChains: readonly string[];
  /** Whether iptables-save was read for stale chains. */
  readonly scanned: boolean;
  readonly lines: number;
}

/**
 * One service port's cached rendering. Mutated in place when the port is rendered again, so `order` (the ports in
 * sync order) keeps pointing at the live entries without being rebuilt.
 */
interface CacheEntry {
  readonly key: string;
  readonly name: string;
  servicePort: ServicePort;
  endpoints: readonly Endpoint[];
  largeClusterMode: boolean;
  text: ServicePortText;
}

function sameArgs(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

function compareEntries(a: CacheEntry, b: CacheEntry): number {
  if (a.name !== b.name) return a.name < b.name ? -1 : 1;
  return a.key < b.key ? -1 : a.key > b.key ? 1 : 0;
}

/** Inserts `e` into the sorted `order` at its place (binary search). */
function insertSorted(order: CacheEntry[], e: CacheEntry): void {
  let lo = 0;
  let hi = order.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (compareEntries(order[mid] as CacheEntry, e) < 0) lo = mid + 1;
    else hi = mid;
  }
  order.splice(lo, 0, e);
}

/** Time spent in each kernel tool during the last sync, ms (for benchmarks and logs). */
export interface IptablesKernelPhases {
  /** `flock` waits before the jump-rule commands and the restore (legacy only). */
  readonly lockMs: number;
  /** Creating missing base chains, jumps and canaries on a full sync (one restore; `-C` where the dump is unclear). */
  readonly jumpsMs: number;
  /** iptables-save: every table on a full sync, nat for stale chains otherwise (parsing it is our own work). */
  readonly saveMs: number;
  /** `iptables-restore` itself. */
  readonly restoreMs: number;
}

export class IptablesBackend implements ProxyBackend {
  readonly mode = 'iptables' as const;
  readonly family: IPFamily;
  readonly client: IptablesClient;
  private readonly node: NodeNetworkConfig;
  private readonly extras: IptablesExtras;
  private readonly clock: Clock;
  private readonly metrics: ProxyMetrics;
  private readonly logger: Logger;
  private readonly syncPeriodMs: number;
  private readonly featureGates: FeatureGates | undefined;
  private readonly cache = new Map<string, CacheEntry>();
  /** The cached entries in sync order. */
  private order: CacheEntry[] = [];
  /** Every port's top-level lines joined in `order`; undefined when one changed and it must be joined again. */
  private joined: JoinedTopRules | undefined;
  /** The node's fixed top-level rules (they depend only on the node and the options). */
  private topText: TopLevelText | undefined;
  private phases: IptablesKernelPhases | undefined;
  private cacheTopology = '';
  private needFullSync = true;
  private lastStaleScan = Number.NEGATIVE_INFINITY;
  private large = false;
  private stats: IptablesSyncStats | undefined;

  constructor(options: IptablesBackendOptions) {
    this.node = options.node;
    this.family = options.node.family;
    this.extras = options.iptables;
    this.clock = options.clock;
    this.metrics = options.metrics ?? NO_PROXY_METRICS;
    this.logger = (options.logger ?? SILENT_LOGGER).child({ ipFamily: this.family, proxyMode: 'iptables' });
    this.syncPeriodMs = options.iptables.syncPeriodMs ?? 30_000;
    this.featureGates = options.featureGates;
    this.client = new IptablesClient({
      family: this.family,
      commands: options.commands,
      clock: options.clock,
      variant: options.iptables.variant,
      lockFile: options.iptables.lockFile,
      lockWaitSeconds: options.iptables.lockWaitSeconds,
    });
  }

  /** More than 1,000 endpoints at the last sync: no per-endpoint comments, throttled stale-chain scans. */
  get largeClusterMode(): boolean {
    return this.large;
  }

  /** What the last sync attempt did (set before the restore runs, so also after a failed one). */
  get lastSyncStats(): IptablesSyncStats | undefined {
    return this.stats;
  }

  /** Time spent in each kernel tool by the last sync attempt, ms. */
  get lastKernelPhases(): IptablesKernelPhases | undefined {
    return this.phases;
  }

  /** The jump rules this node needs (kubelet's KUBE-FIREWALL ones only with IPv4 localhost NodePorts). */
  jumpRules(): readonly JumpRule[] {
    return localhostNodePortsActive(this.node, this.extras)
      ? [...JUMP_RULES, ...KUBELET_JUMP_RULES]
      : JUMP_RULES;
  }

  async sync(snapshot: ProxySnapshot, request: SyncRequest): Promise<BackendSyncResult> {
    const full = request.full || this.needFullSync;
    // Stays true unless this sync succeeds: any failure makes the next one full (upstream's deferred reset).
    this.needFullSync = true;
    const started = performance.now();
    const phases = { lockMs: 0, jumpsMs: 0, saveMs: 0, restoreMs: 0 };
    this.phases = phases;

    // Lock waits before the base-chain restore (full syncs) and before the main restore add up to this sync's wait.
    let lockWaitMs = 0;
    // A full sync reads every table once: what it says settles which base chains and jumps are missing, and its
    // nat part doubles as the stale-chain scan.
    let natChains: ReadonlySet<string> | undefined;
    if (full) {
      const t = performance.now();
      let saved: Map<IptablesTableName, SavedTable> | undefined;
      try {
        const dump = await this.client.save();
        phases.saveMs = performance.now() - t;
        saved = readSave(dump, (table, chain) => BUILTIN_CHAINS[table].includes(chain));
        natChains = saved.get('nat')?.chains ?? new Set();
      } catch (error) {
        phases.saveMs = performance.now() - t;
        this.logger.error('iptables-save failed; ensuring base chains one command at a time', {
          error: String(error),
        });
      }
      const tj = performance.now();
      try {
        if (saved === undefined) {
          // The -N/-C/-I commands would each block on a held lock; take it once first so the wait is measured.
          lockWaitMs += await this.client.waitForLock();
          await this.ensureBaseChainsOneByOne();
        } else {
          lockWaitMs += await this.ensureBaseChains(saved);
        }
      } catch (error) {
        throw this.failed(error, full, lockWaitMs, undefined);
      } finally {
        phases.jumpsMs = performance.now() - tj;
      }
    }

    const { written, rendered, noLocalInternal, noLocalExternal, natChainRuleTotal } = this.refreshCache(
      snapshot,
      request,
      full,
    );

    // Stale chains: every sync, or at most once per syncPeriod in large clusters (iptables-save is slow there).
    let staleChains: string[] = [];
    const now = this.clock.now();
    const scan = natChains !== undefined || !this.large || now - this.lastStaleScan >= this.syncPeriodMs;
    if (natChains !== undefined) {
      staleChains = this.staleChainsIn(natChains);
    } else if (scan) {
      const t = performance.now();
      let saved: string | undefined;
      try {
        saved = await this.client.save('nat');
      } catch (error) {
        this.logger.error('iptables-save failed; stale chains are kept until a later sync', {
          error: String(error),
        });
      }
      phases.saveMs = performance.now() - t;
      if (saved !== undefined) staleChains = this.staleChainsIn(chainsInSave(saved, 'nat'));
    }

    this.topText ??= topLevelText(renderTopLevel(this.node, this.extras));
    if (this.joined === undefined) this.joined = joinTopRules(this.orderedTexts());
    const restore = assembleRestoreText({
      top: this.topText,
      joined: this.joined,
      written: full ? this.orderedTexts() : written,
      staleChains,
    });
    const text = restore.text;
    this.stats = {
      full,
      rendered,
      written: full ? this.order.length : written.length,
      staleChains,
      scanned: scan,
      lines: restore.lines,
    };

    const restoreStart = performance.now();
    try {
      const outcome = await this.client.restore(text);
      lockWaitMs += outcome.lockWaitMs;
      phases.restoreMs = outcome.restoreMs;
      this.metrics.iptablesLockWait(this.family, lockWaitMs / 1000);
      this.metrics.iptablesRestoreDuration(this.family, outcome.restoreMs / 1000);
    } catch (error) {
      phases.restoreMs = performance.now() - restoreStart;
      throw this.failed(error, full, lockWaitMs, text);
    } finally {
      // The restore call's time beyond iptables-restore itself is the flock measurement (legacy).
      phases.lockMs = Math.max(0, performance.now() - restoreStart - phases.restoreMs);
    }
    if (scan) this.lastStaleScan = now;
    this.needFullSync = false;

    const filterTotal = this.joined.filterRuleCount + this.topText.filterRuleCount;
    const natTotal = this.joined.natTopRuleCount + this.topText.natRuleCount + natChainRuleTotal;
    this.metrics.iptablesRules(this.family, 'filter', filterTotal, restore.filterRules);
    this.metrics.iptablesRules(this.family, 'nat', natTotal, restore.natRules);
    this.logger.v(2, () => ({
      msg: 'iptables sync done',
      fields: {
        full,
        servicePorts: this.order.length,
        written: this.stats?.written,
        staleChains: staleChains.length,
        lines: restore.lines,
      },
    }));
    const totalMs = performance.now() - started;
    const kernelMs = phases.jumpsMs + phases.saveMs + phases.restoreMs + phases.lockMs;
    return {
      noLocalEndpointsInternal: noLocalInternal,
      noLocalEndpointsExternal: noLocalExternal,
      timings: { ownMs: Math.max(0, totalMs - kernelMs), kernelMs },
      operations: restore.lines,
    };
  }

  /**
   * Brings the cache up to date with the snapshot: renders (and serializes) only the service ports that changed,
   * drops removed ones, and keeps the sync order and the joined top-level lines valid. Allocates per changed port,
   * not per port: an unchanged port costs two map lookups.
   */
  private refreshCache(
    snapshot: ProxySnapshot,
    request: SyncRequest,
    full: boolean,
  ): {
    written: ServicePortText[];
    rendered: number;
    noLocalInternal: number;
    noLocalExternal: number;
    natChainRuleTotal: number;
  } {
    // Rendering depends on the node's topology; a change there (upstream forces a full sync) voids the cache.
    const topologyKey = JSON.stringify([snapshot.topology.nodeName, snapshot.topology.zone ?? null]);
    if (topologyKey !== this.cacheTopology) {
      this.cache.clear();
      this.order = [];
      this.joined = undefined;
      this.cacheTopology = topologyKey;
    }
    this.large = totalEndpoints(snapshot) > LARGE_CLUSTER_ENDPOINTS_THRESHOLD;
    const ctx: RenderContext = { node: this.node, extras: this.extras, largeClusterMode: this.large };
    const forNode = policyNode(snapshot.topology, this.node.nodeIPs[0], this.featureGates);

    const renderedEntries: CacheEntry[] = [];
    const addedEntries: CacheEntry[] = [];
    let noLocalInternal = 0;
    let noLocalExternal = 0;
    let natChainRuleTotal = 0;
    for (const sp of snapshot.serviceMap.values()) {
      const endpoints = snapshot.endpointsMap.get(sp.key) ?? NO_ENDPOINTS;
      let entry = this.cache.get(sp.key);
      if (
        entry === undefined ||
        request.changedServices.has(sp.serviceName) ||
        entry.servicePort !== sp ||
        entry.endpoints !== endpoints ||
        (full && entry.largeClusterMode !== this.large)
      ) {
        const text = servicePortText(renderServicePort(servicePortPolicy(sp, endpoints, forNode), ctx));
        if (entry === undefined || entry.name !== sp.nameString) {
          if (entry !== undefined) this.order = this.order.filter((e) => e !== entry);
          entry = {
            key: sp.key,
            name: sp.nameString,
            servicePort: sp,
            endpoints,
            largeClusterMode: this.large,
            text,
          };
          this.cache.set(sp.key, entry);
          addedEntries.push(entry);
        } else {
          if (entry.text.filterRules !== text.filterRules || entry.text.natTopRules !== text.natTopRules) {
            this.joined = undefined;
          }
          entry.servicePort = sp;
          entry.endpoints = endpoints;
          entry.largeClusterMode = this.large;
          entry.text = text;
        }
        renderedEntries.push(entry);
      }
      if (entry.text.noLocalEndpointsInternal) noLocalInternal++;
      if (entry.text.noLocalEndpointsExternal) noLocalExternal++;
      natChainRuleTotal += entry.text.chainRuleCount;
    }

    // Every port of the snapshot is cached now, so a larger cache holds ports that are gone.
    if (this.cache.size > snapshot.serviceMap.size) {
      for (const key of this.cache.keys()) if (!snapshot.serviceMap.has(key)) this.cache.delete(key);
      this.order = this.order.filter((e) => this.cache.get(e.key) === e);
      this.joined = undefined;
    }
    if (addedEntries.length > 0) {
      // A few new ports are inserted in place; many (a first sync) are cheaper to sort once.
      if (addedEntries.length > 64) {
        this.order.push(...addedEntries);
        this.order.sort(compareEntries);
      } else {
        for (const e of addedEntries) insertSorted(this.order, e);
      }
      this.joined = undefined;
    }

    // Written in sync order, as a full sync would write them.
    renderedEntries.sort(compareEntries);
    return {
      written: renderedEntries.map((e) => e.text),
      rendered: renderedEntries.length,
      noLocalInternal,
      noLocalExternal,
      natChainRuleTotal,
    };
  }

  /** The cached texts in sync order (service-port name, then key). */
  private *orderedTexts(): Iterable<ServicePortText> {
    for (const e of this.order) yield e.text;
  }

  /** Per-service chains in `existing` that no cached service port uses. */
  private staleChainsIn(existing: ReadonlySet<string>): string[] {
    const active = new Set<string>();
    for (const e of this.order) for (const c of e.text.chains) active.add(c);
    return [...existing].filter((c) => isServiceChainName(c) && !active.has(c)).sort();
  }

  /**
   * Records a failed sync: iptablesRestoreFailure (also when the lock could not be had for the jump-rule commands:
   * the restore could not run), the partial variant for partial syncs, and a lock timeout's full wait.
   */
  private failed(error: unknown, full: boolean, lockWaitMs: number, text: string | undefined): Error {
    this.metrics.iptablesRestoreFailure(this.family);
    if (!full) this.metrics.iptablesPartialRestoreFailure(this.family);
    if (error instanceof IptablesError && error.kind === 'lock-timeout') {
      this.metrics.iptablesLockWait(this.family, lockWaitMs / 1000 + this.client.lockWaitSeconds);
    }
    const failedLine = error instanceof IptablesError ? error.failedLine : undefined;
    this.logger.error('iptables sync failed; the next sync will be a full one', {
      full,
      error: String(error),
      ...(failedLine === undefined || text === undefined ? {} : { context: linesAround(text, failedLine) }),
    });
    return new Error(`iptables ${this.family} ${full ? 'full' : 'partial'} sync: ${String(error)}`, {
      cause: error,
    });
  }

  /**
   * Our chains, the jumps into them and the canaries (full syncs only, as upstream), given a dump of every table:
   * whatever is missing is created in one `--noflush` restore (`:CHAIN` lines for missing chains only, so nothing
   * existing is flushed; `-I` lines in upstream's order, so the jumps end up where upstream's `-C`/`-I` sequence
   * puts them). A jump the dump does not show although its chain exists is checked with `-C` first, in case
   * iptables-save printed it differently. Resolves the lock wait of that restore, ms.
   */
  private async ensureBaseChains(saved: ReadonlyMap<IptablesTableName, SavedTable>): Promise<number> {
    const chains = new Map<IptablesTableName, string[]>();
    const inserts = new Map<IptablesTableName, IptablesRule[]>();
    const addChain = (table: IptablesTableName, chain: string): void => {
      const list = chains.get(table) ?? [];
      if (!list.includes(chain)) list.push(chain);
      chains.set(table, list);
    };
    for (const j of this.jumpRules()) {
      const t = saved.get(j.table);
      const args = jumpArgs(j);
      const chainExists = t?.chains.has(j.to) ?? false;
      if (!chainExists) addChain(j.table, j.to);
      const listed = (t?.rules.get(j.from) ?? []).some((r) => sameArgs(r, args));
      if (listed || (chainExists && (await this.client.ruleExists(j.table, j.from, args)))) continue;
      const list = inserts.get(j.table) ?? [];
      list.push({ chain: j.from, args });
      inserts.set(j.table, list);
    }
    for (const table of CANARY_TABLES) {
      if (!(saved.get(table)?.chains.has(KUBE_PROXY_CANARY) ?? false)) addChain(table, KUBE_PROXY_CANARY);
    }
    const tables: RestoreTable[] = [];
    for (const table of IPTABLES_TABLES) {
      const c = chains.get(table) ?? [];
      const i = inserts.get(table) ?? [];
      if (c.length > 0 || i.length > 0)
        tables.push({ table, chains: c, inserts: i, rules: [], deleteChains: [] });
    }
    if (tables.length === 0) return 0;
    return (await this.client.restore(serializeRestore({ tables }))).lockWaitMs;
  }

  /** The same, one command at a time (`-N`; `-C` then `-I`), when the tables could not be read. */
  private async ensureBaseChainsOneByOne(): Promise<void> {
    for (const j of this.jumpRules()) {
      await this.client.ensureChain(j.table, j.to);
      await this.client.ensureRule('prepend', j.table, j.from, jumpArgs(j));
    }
    for (const table of CANARY_TABLES) await this.client.ensureChain(table, KUBE_PROXY_CANARY);
  }

  /**
   * Called every syncPeriod: false when someone flushed or replaced our tables (a canary chain is gone, or a
   * sentinel jump into KUBE-SERVICES / KUBE-FORWARD is). The next sync is then a full one, which restores
   * everything, the canaries included.
   */
  async checkCanary(): Promise<boolean> {
    let missing: string | undefined;
    for (const table of CANARY_TABLES) {
      if (!(await this.client.chainExists(table, KUBE_PROXY_CANARY))) {
        missing = `${table} ${KUBE_PROXY_CANARY}`;
        break;
      }
    }
    if (missing === undefined) {
      for (const j of SENTINEL_JUMPS) {
        // A jump whose target chain is gone makes -C fail with a usage error rather than "no such rule".
        const present = await this.client.ruleExists(j.table, j.from, jumpArgs(j)).catch((error: unknown) => {
          if (error instanceof IptablesError) return false;
          throw error;
        });
        if (!present) {
          missing = `${j.table} ${j.from} -j ${j.to}`;
          break;
        }
      }
    }
    if (missing === undefined) return true;
    this.needFullSync = true;
    this.logger.info('iptables canary gone: rules were flushed or replaced; forcing a full sync', {
      missing,
    });
    return false;
  }
}

/** The restore input around a failing line, numbered, for the error log (upstream logs the same context). */
function linesAround(text: string, line: number, radius = 3): string {
  const all = text.split('\n');
  const from = Math.max(1, line - radius);
  const to = Math.min(all.length, line + radius);
  const out: string[] = [];
  for (let i = from; i <= to; i++) out.push(`${i}${i === line ? ' >' : '  '} ${all[i - 1] ?? ''}`);
  return out.join('\n');
}
