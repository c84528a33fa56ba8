// What a kubelet does with iptables on its node (upstream pkg/kubelet/kubelet_network_linux.go, initNetworkUtil
// and syncIPTablesRules, with pkg/util/iptables' Monitor), for the lab's in-process kubelet: at the node's start,
// for IPv4 and IPv6, the hint chain KUBE-IPTABLES-HINT in mangle (whose presence tells other components which
// iptables back end the node uses) and the canary chain KUBE-KUBELET-CANARY in mangle, nat and filter; then, every
// minute (upstream's Monitor interval for the kubelet, well inside the 5 minutes e2e's "should recreate its
// iptables rules if they are deleted" waits), whether mangle's canary is still there. When it is gone (someone
// flushed or deleted the chains), it waits up to 5 s, 100 ms apart, for the nat and filter canaries to go too (a
// flush in progress), then makes the hint chain and the canaries again.
//
// Each node's chains go in its own network namespace (the runner given is the node's), with the iptables back end
// the node's proxies use (`lab up --iptables`, else the host's plain names) and the node's xtables lock. Upstream's
// syncIPTablesRules also keeps an IPv4 KUBE-FIREWALL chain (martian localhost packets); the lab does not make it:
// what is asked of it here is the chains the e2e test and doctor look for.
import type { IPFamily } from 'kube-proxy-ts/model/ip.js';
import type { CommandRunner } from 'kube-proxy-ts/netfilter/command.js';
import { IptablesClient } from 'kube-proxy-ts/netfilter/iptables/client.js';
import type { IptablesTableName } from 'kube-proxy-ts/netfilter/iptables/types.js';
import type { IptablesVariant } from 'kube-proxy-ts/netfilter/iptables/variant.js';
import { systemClock } from 'kube-proxy-ts/util/clock.js';
import type { Logger } from 'kube-proxy-ts/util/logger.js';

export const KUBE_IPTABLES_HINT = 'KUBE-IPTABLES-HINT';
export const KUBE_KUBELET_CANARY = 'KUBE-KUBELET-CANARY';
/** Monitor's tables, mangle first: the one polled each interval. */
export const KUBELET_CANARY_TABLES: readonly IptablesTableName[] = ['mangle', 'nat', 'filter'];
/** initNetworkUtil's Monitor interval. */
export const KUBELET_IPTABLES_MONITOR_INTERVAL_MS = 60_000;
/** iptablesFlushTimeout and iptablesFlushPollTime (pkg/util/iptables). */
const FLUSH_TIMEOUT_MS = 5_000;
const FLUSH_POLL_MS = 100;

/** What a round did for one family. */
export type KubeletIptablesRound = 'present' | 'recreated';

/** The subset of IptablesClient the monitor uses (a fake in unit tests). */
export type KubeletIptablesClient = Pick<IptablesClient, 'family' | 'ensureChain' | 'chainExists'>;

/** syncIPTablesRules (the hint chain) and Monitor's canaries: every chain made where missing. */
export async function ensureKubeletChains(client: KubeletIptablesClient): Promise<void> {
  await client.ensureChain('mangle', KUBE_IPTABLES_HINT);
  for (const table of KUBELET_CANARY_TABLES) await client.ensureChain(table, KUBE_KUBELET_CANARY);
}

/**
 * One Monitor round: 'present' while mangle's canary is there; else, once the other canaries are gone too (or 5 s
 * passed: upstream reloads anyway, "inconsistent iptables state"), the chains are made again: 'recreated'.
 */
export async function kubeletIptablesRound(
  client: KubeletIptablesClient,
  delay: (ms: number) => Promise<void>,
): Promise<KubeletIptablesRound> {
  const [first, ...rest] = KUBELET_CANARY_TABLES;
  if (first === undefined || (await client.chainExists(first, KUBE_KUBELET_CANARY))) return 'present';
  for (let waited = 0; waited < FLUSH_TIMEOUT_MS; waited += FLUSH_POLL_MS) {
    let anyLeft = false;
    for (const table of rest) if (await client.chainExists(table, KUBE_KUBELET_CANARY)) anyLeft = true;
    if (!anyLeft) break;
    await delay(FLUSH_POLL_MS); // upstream's poll while a flush completes
  }
  await ensureKubeletChains(client);
  return 'recreated';
}

export interface KubeletIptablesOptions {
  readonly node: string;
  /** Runs commands in the node's network namespace. */
  readonly commands: CommandRunner;
  /** The node's iptables back end: 'auto' runs the plain names (the host's alternatives). */
  readonly variant: IptablesVariant;
  /** The node's xtables lock file. */
  readonly lockFile?: string;
  readonly logger: Logger;
  readonly intervalMs?: number;
  readonly families?: readonly IPFamily[];
  /** For tests: one client per family instead of IptablesClient. */
  readonly client?: (family: IPFamily) => KubeletIptablesClient;
  readonly delay?: (ms: number) => Promise<void>;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

/**
 * A node's kubelet chains: made at start(), then checked every interval in the background until stop(). Never
 * blocks the lab (nothing is awaited by start) and never throws: a failure is logged once per family, until that
 * family succeeds again.
 */
export class KubeletIptables {
  private readonly clients: readonly KubeletIptablesClient[];
  private readonly delay: (ms: number) => Promise<void>;
  private readonly failing = new Set<IPFamily>();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = false;

  constructor(private readonly o: KubeletIptablesOptions) {
    const make =
      o.client ??
      ((family: IPFamily) =>
        new IptablesClient({
          family,
          commands: o.commands,
          clock: systemClock,
          variant: o.variant,
          ...(o.lockFile !== undefined ? { lockFile: o.lockFile } : {}),
        }));
    this.clients = (o.families ?? ['IPv4', 'IPv6']).map(make);
    this.delay = o.delay ?? sleep;
  }

  start(): void {
    this.running = this.first().finally(() => this.schedule());
  }

  /** Ends the checks; resolves once a round in progress is over. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    await this.running;
  }

  /** The first round: every chain made (initNetworkUtil). */
  private async first(): Promise<void> {
    for (const c of this.clients)
      await this.guard(c, async () => {
        await ensureKubeletChains(c);
        this.o.logger.v(2, () => ({ msg: 'kubelet iptables chains made', fields: { family: c.family } }));
      });
  }

  /** One Monitor round for every family. */
  async round(): Promise<void> {
    for (const c of this.clients)
      await this.guard(c, async () => {
        if ((await kubeletIptablesRound(c, this.delay)) === 'recreated')
          this.o.logger.info('kubelet iptables canary was deleted: chains made again', {
            node: this.o.node,
            family: c.family,
          });
      });
  }

  private async guard(c: KubeletIptablesClient, fn: () => Promise<void>): Promise<void> {
    try {
      await fn();
      this.failing.delete(c.family);
    } catch (e) {
      if (this.failing.has(c.family)) return;
      this.failing.add(c.family);
      this.o.logger.warn('kubelet iptables chains: failed (logged once until it works again)', {
        node: this.o.node,
        family: c.family,
        error: e instanceof Error ? e.message : String(e),
      });
    }
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.running = this.round().finally(() => this.schedule());
    }, this.o.intervalMs ?? KUBELET_IPTABLES_MONITOR_INTERVAL_MS);
    this.timer.unref();
  }
}
