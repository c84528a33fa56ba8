// Each node's proxy, read once a second from its /metrics during the soak: the pending changes (for the picture),
// the sync count and last sync time (to tell when a restarted proxy has programmed its rules again), the
// EndpointSlice changes received (to tell when a node hears the API server again after an outage), and the
// histograms the report summarises (network programming latency, sync duration, xtables lock waits) as what was
// observed during the run. A proxy restart resets its counters; each process lifetime is counted on its own and
// added up, so a restart neither loses nor doubles observations.
import type { CommandRunner } from 'kube-proxy-ts/netfilter/command.js';
import {
  histogram,
  parseMetrics,
  type HistogramSummary,
  type Sample,
} from 'kube-proxy-ts/inspect/prometheus.js';
import { fetchProxyMetrics } from '../cluster/metrics.js';
import { Periodic } from './periodic.js';

export const HISTOGRAMS = {
  programming: 'kubeproxy_network_programming_duration_seconds',
  sync: 'kubeproxy_sync_proxy_rules_duration_seconds',
  lockWait: 'kubeproxy_iptables_lock_wait_seconds',
} as const;

export interface NodePoint {
  readonly t: number;
  readonly pendingEndpoints: number;
  readonly pendingServices: number;
  /** Syncs so far (this process). */
  readonly syncs: number;
  /** kubeproxy_sync_proxy_rules_last_timestamp_seconds × 1000; 0 before the first. */
  readonly lastSyncMs: number;
  /** EndpointSlice changes received so far (this process): it stands still while the node is deaf. */
  readonly endpointChanges: number;
}

interface Counter {
  base: number;
  last: number;
  acc: number;
}

function seriesKey(s: Sample): string {
  const labels = Object.entries(s.labels)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
  return `${s.name}{${labels}}`;
}

function isCumulative(name: string): boolean {
  return Object.values(HISTOGRAMS).some(
    (h) => name === `${h}_bucket` || name === `${h}_count` || name === `${h}_sum`,
  );
}

/** One node's samples over the run, and its histograms' growth across proxy restarts. */
export class NodeSeries {
  readonly points: NodePoint[] = [];
  private readonly counters = new Map<string, { sample: Sample; c: Counter }>();
  /** Times the proxy did not answer /metrics (restarting, or down). */
  unanswered = 0;

  add(t: number, text: string | undefined): void {
    if (text === undefined) {
      this.unanswered++;
      return;
    }
    const m = parseMetrics(text);
    const one = (name: string): number =>
      m.samples.filter((s) => s.name === name).reduce((a, s) => a + s.value, 0);
    this.points.push({
      t,
      pendingEndpoints: one('kubeproxy_sync_proxy_rules_endpoint_changes_pending'),
      pendingServices: one('kubeproxy_sync_proxy_rules_service_changes_pending'),
      syncs: one(`${HISTOGRAMS.sync}_count`),
      endpointChanges: one('kubeproxy_sync_proxy_rules_endpoint_changes_total'),
      lastSyncMs: Math.max(
        0,
        ...m.samples
          .filter((s) => s.name === 'kubeproxy_sync_proxy_rules_last_timestamp_seconds')
          .map((s) => s.value * 1000),
      ),
    });
    const cumulative = m.samples.filter((x) => isCumulative(x.name));
    // A new process: some counter went down. Every series' old lifetime ends at its last reading, and all of
    // them count from zero again (one that stayed level in between is a new process too).
    const restarted = cumulative.some((x) => {
      const known = this.counters.get(seriesKey(x));
      return known !== undefined && x.value < known.c.last;
    });
    if (restarted)
      for (const { c } of this.counters.values()) {
        c.acc += c.last - c.base;
        c.base = 0;
        c.last = 0;
      }
    for (const s of cumulative) {
      const key = seriesKey(s);
      const known = this.counters.get(key);
      if (!known) {
        // First seen: a series present at the start counts from its value then; one that appears later (a new
        // family, a restarted process's first observations) counts from zero.
        const base = this.points.length === 1 ? s.value : 0;
        this.counters.set(key, { sample: s, c: { base, last: s.value, acc: 0 } });
        continue;
      }
      known.c.last = s.value;
    }
  }

  /** The run's growth of histogram `name`'s series (buckets, count, sum), as samples. */
  samples(name: string): Sample[] {
    const samples: Sample[] = [];
    for (const { sample, c } of this.counters.values())
      if (sample.name.startsWith(`${name}_`)) samples.push({ ...sample, value: c.acc + c.last - c.base });
    return samples;
  }

  /** What `name` observed during the run (count, sum, p50, p99, highest bucket). */
  histogram(name: string): HistogramSummary | undefined {
    return histogram({ samples: this.samples(name) }, name);
  }
}

/** Samples every node once a second until stop(). */
export class NodeSampler {
  readonly series = new Map<string, NodeSeries>();
  private readonly loop = new Periodic(1000, () => this.sampleOnce());

  constructor(
    private readonly runner: CommandRunner,
    private readonly nodes: readonly { readonly name: string; readonly namespace: string }[],
  ) {
    for (const n of nodes) this.series.set(n.name, new NodeSeries());
  }

  async sampleOnce(): Promise<void> {
    await Promise.all(
      this.nodes.map(async (n) => {
        const text = await fetchProxyMetrics(this.runner, n.namespace);
        this.series.get(n.name)?.add(Date.now(), text);
      }),
    );
  }

  start(): void {
    this.loop.start();
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }

  /** The newest sample of `node`. */
  latest(node: string): NodePoint | undefined {
    const p = this.series.get(node)?.points;
    return p?.[p.length - 1];
  }
}
