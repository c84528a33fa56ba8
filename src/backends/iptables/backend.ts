// iptables mode: ProxyBackend over iptables-restore (upstream pkg/proxy/iptables). Each sync rewrites the top-level
// chains; per-service chains only for services that changed (a partial sync) or for all (a full sync). Rendered
// rules are cached per service port, so an unchanged service costs neither rendering nor restore lines. Stale
// per-service chains are found with iptables-save and deleted in the same restore.
import type { Endpoint } from '../../model/endpoint.js';
import type { IPFamily } from '../../model/ip.js';
import type { ServicePort } from '../../model/service-port.js';
import type { CommandRunner } from '../../netfilter/command.js';
import { IptablesClient, IptablesError } from '../../netfilter/iptables/client.js';
import { chainsInSave } from '../../netfilter/iptables/parse.js';
import { serializeRestore } from '../../netfilter/iptables/serialize.js';
import type { IptablesTableName } from '../../netfilter/iptables/types.js';
import type { IptablesVariant } from '../../netfilter/iptables/variant.js';
import type {
  BackendSyncResult,
  NodeNetworkConfig,
  ProxyBackend,
  ProxySnapshot,
  SyncRequest,
} from '../../sync/backend.js';
import type { Clock } from '../../sync/clock.js';
import type { Logger } from '../../sync/logger.js';
import { SILENT_LOGGER } from '../../sync/logger.js';
import type { ProxyMetrics } from '../../sync/metrics.js';
import { NO_PROXY_METRICS } from '../../sync/metrics.js';
import { JUMP_RULES, jumpArgs, KUBELET_JUMP_RULES } from './jumps.js';
import type { JumpRule } from './jumps.js';
import { isServiceChainName, KUBE_FORWARD, KUBE_PROXY_CANARY } from './naming.js';
import type { IptablesExtras, RenderContext, ServicePortRules } from './render.js';
import {
  assembleRestore,
  LARGE_CLUSTER_ENDPOINTS_THRESHOLD,
  localhostNodePortsActive,
  orderedServicePorts,
  renderServicePort,
  renderTopLevel,
  totalEndpoints,
} from './render.js';

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

interface CacheEntry {
  readonly servicePort: ServicePort;
  readonly endpoints: readonly Endpoint[];
  readonly largeClusterMode: boolean;
  readonly rules: ServicePortRules;
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
  private readonly cache = new Map<string, CacheEntry>();
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
    let kernelMs = 0;
    const started = performance.now();

    // Lock waits before the jump-rule commands (full syncs) and before the restore add up to this sync's wait.
    let lockWaitMs = 0;
    if (full) {
      const t = performance.now();
      try {
        // The -N/-C/-I commands would each block on a held lock; take it once first so the wait is measured.
        lockWaitMs += await this.client.waitForLock();
        await this.ensureBaseChains();
      } catch (error) {
        throw this.failed(error, full, lockWaitMs, undefined);
      } finally {
        kernelMs += performance.now() - t;
      }
    }

    // Rendering depends on the node's topology; a change there (upstream forces a full sync) voids the cache.
    const topologyKey = JSON.stringify([snapshot.topology.nodeName, snapshot.topology.zone ?? null]);
    if (topologyKey !== this.cacheTopology) {
      this.cache.clear();
      this.cacheTopology = topologyKey;
    }
    this.large = totalEndpoints(snapshot) > LARGE_CLUSTER_ENDPOINTS_THRESHOLD;
    const ctx: RenderContext = {
      node: this.node,
      extras: this.extras,
      topology: snapshot.topology,
      largeClusterMode: this.large,
    };

    const all: ServicePortRules[] = [];
    const written: ServicePortRules[] = [];
    const active = new Set<string>();
    let noLocalInternal = 0;
    let noLocalExternal = 0;
    let rendered = 0;
    for (const sp of orderedServicePorts(snapshot)) {
      const endpoints = snapshot.endpointsMap.get(sp.key) ?? NO_ENDPOINTS;
      let entry = this.cache.get(sp.key);
      const changed = request.changedServices.has(sp.serviceName);
      const stale =
        entry === undefined ||
        changed ||
        entry.servicePort !== sp ||
        entry.endpoints !== endpoints ||
        (full && entry.largeClusterMode !== this.large);
      if (stale) {
        entry = {
          servicePort: sp,
          endpoints,
          largeClusterMode: this.large,
          rules: renderServicePort(sp, endpoints, ctx),
        };
        this.cache.set(sp.key, entry);
        rendered++;
      }
      const rules = (entry as CacheEntry).rules;
      all.push(rules);
      if (full || stale) written.push(rules);
      for (const c of rules.chains) active.add(c);
      if (rules.noLocalEndpointsInternal) noLocalInternal++;
      if (rules.noLocalEndpointsExternal) noLocalExternal++;
    }
    for (const key of this.cache.keys()) if (!snapshot.serviceMap.has(key)) this.cache.delete(key);

    // Stale chains: every sync, or at most once per syncPeriod in large clusters (iptables-save is slow there).
    let staleChains: string[] = [];
    const now = this.clock.now();
    const scan = !this.large || now - this.lastStaleScan >= this.syncPeriodMs;
    if (scan) {
      const t = performance.now();
      try {
        const existing = chainsInSave(await this.client.save('nat'), 'nat');
        staleChains = [...existing].filter((c) => isServiceChainName(c) && !active.has(c)).sort();
      } catch (error) {
        this.logger.error('iptables-save failed; stale chains are kept until a later sync', {
          error: String(error),
        });
      }
      kernelMs += performance.now() - t;
    }

    const top = renderTopLevel(this.node, this.extras);
    const input = assembleRestore({ top, all, written, staleChains });
    const text = serializeRestore(input);
    let lines = 0;
    for (const t of input.tables) lines += 2 + t.chains.length + t.rules.length + t.deleteChains.length;
    this.stats = { full, rendered, written: written.length, staleChains, scanned: scan, lines };

    const restoreStart = performance.now();
    try {
      const outcome = await this.client.restore(text);
      lockWaitMs += outcome.lockWaitMs;
      this.metrics.iptablesLockWait(this.family, lockWaitMs / 1000);
      this.metrics.iptablesRestoreDuration(this.family, outcome.restoreMs / 1000);
    } catch (error) {
      kernelMs += performance.now() - restoreStart;
      throw this.failed(error, full, lockWaitMs, text);
    }
    kernelMs += performance.now() - restoreStart;
    if (scan) this.lastStaleScan = now;
    this.needFullSync = false;

    const filter = input.tables[0];
    const nat = input.tables[1];
    const filterCount = filter?.rules.length ?? 0;
    let natTotal = (nat?.rules.length ?? 0) - written.reduce((n, s) => n + s.chainRules.length, 0);
    for (const s of all) natTotal += s.chainRules.length;
    this.metrics.iptablesRules(this.family, 'filter', filterCount, filterCount);
    this.metrics.iptablesRules(this.family, 'nat', natTotal, nat?.rules.length ?? 0);
    this.logger.v(2, () => ({
      msg: 'iptables sync done',
      fields: {
        full,
        servicePorts: all.length,
        written: written.length,
        staleChains: staleChains.length,
        lines,
      },
    }));
    const totalMs = performance.now() - started;
    return {
      noLocalEndpointsInternal: noLocalInternal,
      noLocalEndpointsExternal: noLocalExternal,
      timings: { ownMs: Math.max(0, totalMs - kernelMs), kernelMs },
      operations: lines,
    };
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

  /** Our chains, the jumps into them and the canaries (full syncs only, as upstream). */
  private async ensureBaseChains(): Promise<void> {
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
