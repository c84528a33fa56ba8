// Each node proxy's counters over time. Once a second the server (not the page) reads every proxy's /metrics
// inside its node's namespace, turns the readings into one sample per node (gauges as read; for the histograms,
// the mean of the syncs and of the programming latencies since the last reading), and notes each sync by its own
// timestamp (kubeproxy_sync_proxy_rules_last_timestamp_seconds), which is also the moment the ruleset is read again.
import type { CommandRunner } from 'kube-proxy-ts/netfilter/command.js';
import { fetchProxyMetrics, metricValue, syncCountersFrom, type SyncCounters } from '../cluster/metrics.js';

/** What one reading of a proxy's /metrics holds, as the page charts it. */
export interface RawCounters extends SyncCounters {
  readonly programmingCount: number;
  readonly programmingSecondsSum: number;
  /** Unix seconds of the last sync's end; 0 before the first. */
  readonly lastSync: number;
  /** Which backend's metrics the proxy exposes (each mode registers its own). */
  readonly mode: 'nftables' | 'iptables' | 'unknown';
}

export interface NodeSample {
  /** Unix milliseconds of the reading. */
  readonly t: number;
  /** False when the proxy did not answer (starting, restarting); the numbers are then absent. */
  readonly up: boolean;
  readonly endpointPending?: number;
  readonly endpointTotal?: number;
  readonly servicePending?: number;
  readonly serviceTotal?: number;
  readonly syncs?: number;
  /** Mean duration of the syncs since the last reading, ms; absent when none ran. */
  readonly syncMs?: number;
  /** Mean network programming latency of the changes programmed since the last reading, ms. */
  readonly programmingMs?: number;
  readonly mode?: RawCounters['mode'];
}

/** A sync, as the chart marks it. */
export interface SyncMark {
  /** Unix milliseconds of the sync's end. */
  readonly t: number;
  readonly node: string;
}

export function countersFromMetrics(text: string): RawCounters {
  const v = (name: string): number => metricValue(text, name) ?? 0;
  const mode = text.includes('kubeproxy_sync_proxy_rules_iptables_total')
    ? 'iptables'
    : text.includes('kubeproxy_sync_proxy_rules_nftables_sync_failures_total')
      ? 'nftables'
      : 'unknown';
  return {
    ...syncCountersFrom(text),
    programmingCount: v('kubeproxy_network_programming_duration_seconds_count'),
    programmingSecondsSum: v('kubeproxy_network_programming_duration_seconds_sum'),
    lastSync: v('kubeproxy_sync_proxy_rules_last_timestamp_seconds'),
    mode,
  };
}

/** One sample from this reading and the one before (undefined when this is the first, or the proxy restarted). */
export function sampleFrom(
  t: number,
  now: RawCounters | undefined,
  prev: RawCounters | undefined,
): NodeSample {
  if (!now) return { t, up: false };
  // A new proxy process starts its counters from 0: compare only within one process.
  const same = prev !== undefined && now.syncs >= prev.syncs && now.programmingCount >= prev.programmingCount;
  const mean = (sum: number, count: number, psum: number, pcount: number): number | undefined => {
    const n = same ? count - pcount : count;
    return n > 0 ? ((sum - (same ? psum : 0)) / n) * 1000 : undefined;
  };
  const syncMs = mean(now.syncSecondsSum, now.syncs, prev?.syncSecondsSum ?? 0, prev?.syncs ?? 0);
  const programmingMs = mean(
    now.programmingSecondsSum,
    now.programmingCount,
    prev?.programmingSecondsSum ?? 0,
    prev?.programmingCount ?? 0,
  );
  return {
    t,
    up: true,
    endpointPending: now.endpointPending,
    endpointTotal: now.endpointTotal,
    servicePending: now.servicePending,
    serviceTotal: now.serviceTotal,
    syncs: now.syncs,
    ...(syncMs !== undefined ? { syncMs: round(syncMs) } : {}),
    ...(programmingMs !== undefined ? { programmingMs: round(programmingMs) } : {}),
    mode: now.mode,
  };
}

function round(x: number): number {
  return Math.round(x * 100) / 100;
}

export interface SamplerOptions {
  readonly runner: CommandRunner;
  readonly nodes: readonly { readonly name: string; readonly namespace: string }[];
  readonly intervalMs?: number;
  readonly now?: () => number;
  readonly onSample: (node: string, sample: NodeSample) => void;
  /** A sync ended at `t` (its own timestamp); the ruleset is read again. */
  readonly onSync: (mark: SyncMark) => void;
  /** Reads a proxy's metrics text (default: curl inside the node's namespace). */
  readonly fetch?: (namespace: string) => Promise<string | undefined>;
}

export class MetricsSampler {
  private readonly last = new Map<string, RawCounters>();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = false;

  constructor(private readonly o: SamplerOptions) {}

  start(): void {
    const tick = (): void => {
      if (this.stopped) return;
      const started = Date.now();
      this.running = this.round().finally(() => {
        if (this.stopped) return;
        const wait = (this.o.intervalMs ?? 1000) - (Date.now() - started);
        this.timer = setTimeout(tick, Math.max(50, wait));
      });
    };
    tick();
  }

  /** One reading of every node (the timer calls it; tests call it directly). */
  async round(): Promise<void> {
    const fetch = this.o.fetch ?? ((ns: string) => fetchProxyMetrics(this.o.runner, ns));
    await Promise.all(
      this.o.nodes.map(async (n) => {
        const text = await fetch(n.namespace).catch(() => undefined);
        const t = (this.o.now ?? Date.now)();
        const now = text === undefined ? undefined : countersFromMetrics(text);
        const prev = this.last.get(n.name);
        this.o.onSample(n.name, sampleFrom(t, now, prev));
        if (!now) return;
        this.last.set(n.name, now);
        if (now.lastSync > 0 && now.lastSync !== prev?.lastSync)
          this.o.onSync({ t: Math.round(now.lastSync * 1000), node: n.name });
      }),
    );
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.running;
  }
}
