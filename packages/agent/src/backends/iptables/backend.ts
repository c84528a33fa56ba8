// iptables mode: ProxyBackend over iptables-restore (upstream pkg/proxy/iptables). Each sync rewrites the top-level
// chains; per-service chains only for services that changed (a partial sync) or for all (a full sync). This file
// runs one sync: full or partial (its own flag), the base chains on full syncs (base-chains.ts), the render cache
// (render-cache.ts), the stale-chain scan, the restore, and what it reports.
import type { FeatureGates } from '../../model/feature-gates.js';
import type { IPFamily } from '../../model/ip.js';
import type { CommandRunner } from '../../netfilter/command.js';
import { IptablesClient, IptablesError } from '../../netfilter/iptables/client.js';
import { chainsInSave, readSave } from '../../netfilter/iptables/parse.js';
import type { SavedTable } from '../../netfilter/iptables/parse.js';
import type { IptablesTableName } from '../../netfilter/iptables/types.js';
import { BUILTIN_CHAINS } from '../../netfilter/iptables/types.js';
import type { IptablesVariant } from '../../netfilter/iptables/variant.js';
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
import { IptablesBaseChains } from './base-chains.js';
import type { JumpRule } from './jumps.js';
import type { IptablesExtras } from './render.js';
import { IptablesRenderCache } from './render-cache.js';

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
  private readonly cache: IptablesRenderCache;
  private readonly baseChains: IptablesBaseChains;
  private phases: IptablesKernelPhases | undefined;
  /** The one "next sync is full" flag: set at start, after any failure, on request and when the canary is gone. */
  private needFullSync = true;
  private lastStaleScan = Number.NEGATIVE_INFINITY;
  private stats: IptablesSyncStats | undefined;

  constructor(options: IptablesBackendOptions) {
    this.node = options.node;
    this.family = options.node.family;
    this.extras = options.iptables;
    this.clock = options.clock;
    this.metrics = options.metrics ?? NO_PROXY_METRICS;
    this.logger = (options.logger ?? SILENT_LOGGER).child({ ipFamily: this.family, proxyMode: 'iptables' });
    this.syncPeriodMs = options.iptables.syncPeriodMs ?? 30_000;
    this.client = new IptablesClient({
      family: this.family,
      commands: options.commands,
      clock: options.clock,
      variant: options.iptables.variant,
      lockFile: options.iptables.lockFile,
      lockWaitSeconds: options.iptables.lockWaitSeconds,
    });
    this.cache = new IptablesRenderCache(options.node, options.iptables, options.featureGates);
    this.baseChains = new IptablesBaseChains(this.client, options.node, options.iptables, this.logger);
  }

  /** More than 1,000 endpoints at the last sync: no per-endpoint comments, throttled stale-chain scans. */
  get largeClusterMode(): boolean {
    return this.cache.largeClusterMode;
  }

  /** What the last sync attempt did (set before the restore runs, so also after a failed one). */
  get lastSyncStats(): IptablesSyncStats | undefined {
    return this.stats;
  }

  /** Time spent in each kernel tool by the last sync attempt, ms. */
  get lastKernelPhases(): IptablesKernelPhases | undefined {
    return this.phases;
  }

  requestFullSync(): void {
    this.needFullSync = true;
  }

  /** The jump rules this node needs (kubelet's KUBE-FIREWALL ones only with IPv4 localhost NodePorts). */
  jumpRules(): readonly JumpRule[] {
    return this.baseChains.jumpRules();
  }

  /**
   * Called every syncPeriod: false when someone flushed or replaced our tables. The next sync is then a full one,
   * which restores everything, the canaries included.
   */
  async checkCanary(): Promise<boolean> {
    const present = await this.baseChains.present();
    if (!present) this.needFullSync = true;
    return present;
  }

  async sync(snapshot: ProxySnapshot, request: SyncRequest): Promise<BackendSyncResult> {
    const full = request.full === true || this.needFullSync;
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
          await this.baseChains.ensureOneByOne();
        } else {
          lockWaitMs += await this.baseChains.ensure(saved);
        }
      } catch (error) {
        throw this.failed(error, full, lockWaitMs, undefined);
      } finally {
        phases.jumpsMs = performance.now() - tj;
      }
    }

    const { written, noLocalInternal, noLocalExternal, natChainRuleTotal } = this.cache.refresh(
      snapshot,
      request.changedServices,
      full,
    );
    const large = this.cache.largeClusterMode;

    // Stale chains: every sync, or at most once per syncPeriod in large clusters (iptables-save is slow there).
    let staleChains: string[] = [];
    const now = this.clock.now();
    const scan = natChains !== undefined || !large || now - this.lastStaleScan >= this.syncPeriodMs;
    if (natChains !== undefined) {
      staleChains = this.cache.staleChainsIn(natChains);
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
      if (saved !== undefined) staleChains = this.cache.staleChainsIn(chainsInSave(saved, 'nat'));
    }

    const restore = this.cache.restore(full ? this.cache.orderedTexts() : written, staleChains);
    const text = restore.text;
    this.stats = {
      full,
      rendered: written.length,
      written: full ? this.cache.size : written.length,
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

    const { joined, top } = this.cache;
    const filterTotal = joined.filterRuleCount + top.filterRuleCount;
    const natTotal = joined.natTopRuleCount + top.natRuleCount + natChainRuleTotal;
    this.metrics.iptablesRules(this.family, 'filter', filterTotal, restore.filterRules);
    this.metrics.iptablesRules(this.family, 'nat', natTotal, restore.natRules);
    this.logger.v(2, () => ({
      msg: 'iptables sync done',
      fields: {
        full,
        servicePorts: this.cache.size,
        written: this.stats?.written,
        staleChains: staleChains.length,
        lines: restore.lines,
      },
    }));
    const totalMs = performance.now() - started;
    const kernelMs = phases.jumpsMs + phases.saveMs + phases.restoreMs + phases.lockMs;
    return {
      full,
      noLocalEndpointsInternal: noLocalInternal,
      noLocalEndpointsExternal: noLocalExternal,
      timings: { ownMs: Math.max(0, totalMs - kernelMs), kernelMs },
      operations: restore.lines,
    };
  }

  /**
   * Records a failed sync: iptablesRestoreFailure (also when the lock could not be had for the jump-rule commands:
   * the restore could not run), the partial variant for partial syncs, and a lock timeout's full wait.
   */
  private failed(
    error: unknown,
    full: boolean,
    lockWaitMs: number,
    text: string | undefined,
  ): BackendSyncError {
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
    return new BackendSyncError(
      `iptables ${this.family} ${full ? 'full' : 'partial'} sync: ${String(error)}`,
      {
        full,
        cause: error,
      },
    );
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
