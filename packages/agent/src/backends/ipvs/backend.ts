// ipvs mode: ProxyBackend over IPVS (generic netlink), ipset, iptables-restore and kube-ipvs0 (upstream
// pkg/proxy/ipvs). Every sync plans the whole desired state (plan.ts, as upstream does) and programs only the
// difference from what this backend last applied; a full sync (the first, after a failure, every syncPeriod)
// reads the kernel back first, so changes made behind its back are repaired.
import type { FeatureGates } from '../../model/feature-gates.js';
import { cidrContains, parseIPSloppy } from '../../model/ip.js';
import type { IPFamily } from '../../model/ip.js';
import type { CommandRunner } from '../../netfilter/command.js';
import { IPSetClient } from '../../netfilter/ipset/client.js';
import { syncOperations, diffSets, restoreText } from '../../netfilter/ipset/restore.js';
import { kubeIPSet, kubeIPSets, KUBE_IPSETS } from '../../netfilter/ipset/sets.js';
import { IptablesClient } from '../../netfilter/iptables/client.js';
import { serializeRestore } from '../../netfilter/iptables/serialize.js';
import type { IpvsHandle } from '../../netfilter/ipvs/types.js';
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
import { DummyDevice } from './dummy.js';
import { IPVS_JUMPS, ipvsRestoreInput, jumpArgs } from './iptables.js';
import { localNodeAddresses, planIpvs } from './plan.js';
import type { IpvsPlan } from './plan.js';
import { IpvsServers } from './servers.js';
import type { ProxyMetrics } from '../../sync/metrics.js';
import { NO_PROXY_METRICS } from '../../sync/metrics.js';

export interface IpvsModeOptions {
  /** '' → rr. */
  readonly scheduler: string;
  /** Virtual servers in these CIDRs are never removed (someone else's). */
  readonly excludeCIDRs: readonly string[];
  readonly randomFully: boolean;
}

export interface IpvsBackendOptions {
  readonly node: NodeNetworkConfig;
  readonly commands: CommandRunner;
  readonly clock: Clock;
  /** IPVS in this process's network namespace (the agent runs in its node's); FakeIpvs in unit tests. */
  readonly ipvs: IpvsHandle;
  readonly ipvsOptions: IpvsModeOptions;
  readonly logger?: Logger;
  readonly featureGates?: FeatureGates;
  /** Where each iptables-restore's xtables lock wait and duration go, as iptables mode reports them. */
  readonly metrics?: ProxyMetrics;
}

export class IpvsBackend implements ProxyBackend {
  readonly mode = 'ipvs' as const;
  readonly family: IPFamily;
  private readonly o: IpvsBackendOptions;
  private readonly logger: Logger;
  private readonly ipset: IPSetClient;
  private readonly iptables: IptablesClient;
  private readonly dummy: DummyDevice;
  private readonly servers: IpvsServers;
  private needFull = true;
  /** Entries of our sets as last applied, by set name; replaced by the kernel's on a full sync. */
  private sets = new Map<string, ReadonlySet<string>>();
  /** kube-ipvs0's addresses of this family as last applied. */
  private bound = new Set<string>();
  /** The iptables-restore input last applied: a partial sync that would write the same skips the restore. */
  private lastRestore: string | undefined;

  constructor(options: IpvsBackendOptions) {
    this.o = options;
    this.family = options.node.family;
    this.logger = options.logger ?? SILENT_LOGGER;
    this.ipset = new IPSetClient({ commands: options.commands });
    this.iptables = new IptablesClient({
      family: this.family,
      commands: options.commands,
      clock: options.clock,
    });
    this.dummy = new DummyDevice(options.commands, this.family);
    const excluded = (address: string): boolean =>
      options.ipvsOptions.excludeCIDRs.some((c) => cidrContains(c, address));
    this.servers = new IpvsServers(options.ipvs, {
      family: this.family,
      excluded,
      now: () => options.clock.now(),
      logger: this.logger,
    });
  }

  requestFullSync(): void {
    this.needFull = true;
  }

  /** The plan this backend would apply now (explain, tests). */
  plan(snapshot: ProxySnapshot): IpvsPlan {
    const o = this.o;
    return planIpvs(snapshot, o.node, {
      scheduler: o.ipvsOptions.scheduler || 'rr',
      nodeAddresses: localNodeAddresses(o.node),
      ...(o.featureGates !== undefined ? { featureGates: o.featureGates } : {}),
    });
  }

  async sync(snapshot: ProxySnapshot, request: SyncRequest): Promise<BackendSyncResult> {
    const full = this.needFull || request.full === true;
    const clock = this.o.clock;
    const started = clock.now();
    let kernelMs = 0;
    const timed = async <T>(f: () => Promise<T>): Promise<T> => {
      const t = clock.now();
      try {
        return await f();
      } finally {
        kernelMs += clock.now() - t;
      }
    };
    try {
      const plan = this.plan(snapshot);
      if (full) await timed(() => this.readKernel());
      let operations = await timed(() => this.applySets(plan, full));
      operations += this.servers.apply(plan, full);
      const add = plan.boundAddresses.filter((a) => !this.bound.has(a));
      await timed(() => this.dummy.change(add, []));
      for (const a of add) this.bound.add(a);
      await timed(() => this.applyIptables(plan, full));
      const stale = [...this.bound].filter((a) => !plan.boundAddresses.includes(a));
      await timed(() => this.dummy.change([], stale));
      for (const a of stale) this.bound.delete(a);
      operations += add.length + stale.length + this.servers.removeStale(plan);
      this.needFull = false;
      const total = clock.now() - started;
      return {
        full,
        noLocalEndpointsInternal: plan.noLocalEndpointsInternal,
        noLocalEndpointsExternal: plan.noLocalEndpointsExternal,
        timings: { ownMs: Math.max(0, total - kernelMs), kernelMs },
        operations,
      };
    } catch (cause) {
      this.needFull = true;
      const message = cause instanceof Error ? cause.message : String(cause);
      throw new BackendSyncError(`ipvs sync failed: ${message}`, { full, cause });
    }
  }

  /** A full sync starts from the kernel's state: the link, our sets, this family's virtual servers. */
  private async readKernel(): Promise<void> {
    await this.dummy.ensure();
    this.bound = await this.dummy.addresses();
    await this.ipset.restore(restoreText(kubeIPSets(this.family).map((set) => ({ verb: 'create', set }))));
    const names = kubeIPSets(this.family).map((s) => s.name);
    const saved = await this.ipset.save(names);
    this.sets = new Map(names.map((n) => [n, saved.get(n)?.entries ?? new Set<string>()]));
    this.servers.readKernel();
  }

  private async applySets(plan: IpvsPlan, full: boolean): Promise<number> {
    const desired = new Map<string, ReadonlySet<string>>();
    for (const s of KUBE_IPSETS)
      desired.set(kubeIPSet(s.id, this.family).name, plan.sets.get(s.id) ?? new Set());
    const ops = full
      ? syncOperations(kubeIPSets(this.family), desired, this.sets)
      : diffSets(desired, this.sets);
    const changes = ops.filter((op) => op.verb !== 'create').length;
    if (changes > 0 || full) await this.ipset.restore(restoreText(ops));
    this.sets = desired;
    return changes;
  }

  /** Our chains in one restore; on full syncs the jumps into them are ensured too (upstream: every sync). */
  private async applyIptables(plan: IpvsPlan, full: boolean): Promise<void> {
    const input = ipvsRestoreInput(plan, this.o.node, { randomFully: this.o.ipvsOptions.randomFully });
    const text = serializeRestore(input);
    if (!full && text === this.lastRestore) return;
    this.lastRestore = undefined;
    const { lockWaitMs, restoreMs } = await this.iptables.restore(text);
    const metrics = this.o.metrics ?? NO_PROXY_METRICS;
    metrics.iptablesLockWait(this.family, lockWaitMs / 1000);
    metrics.iptablesRestoreDuration(this.family, restoreMs / 1000);
    this.lastRestore = text;
    if (!full) return;
    for (const j of IPVS_JUMPS) await this.iptables.ensureRule('prepend', j.table, j.from, jumpArgs(j));
  }
}

/** The canonical form of an address, for comparisons with what the kernel lists. */
export function canonicalAddress(a: string): string {
  return parseIPSloppy(a)?.text ?? a;
}
