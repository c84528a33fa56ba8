// `lab watch`: seed 000's `watch -n1 curl …/metrics | grep …`, for every node at once. Each round reads every
// proxy's /metrics (inside its node's namespace) and keeps the counters seed 000 looks at: endpoint and service
// changes pending and total, syncs, the last sync's duration (the change of the duration histogram's sum over its
// count since the round before), and a sparkline of endpoint changes pending over the last rounds.
import type { CommandRunner } from 'kube-proxy-ts/netfilter/command.js';
import { fetchProxyMetrics, syncCountersFrom, type SyncCounters } from './metrics.js';

const SPARK = '▁▂▃▄▅▆▇█';
export const SPARK_WIDTH = 40;

/** Pending counts as bars, scaled to the largest shown (all ▁ when nothing waits). */
export function sparkline(values: readonly number[], width = SPARK_WIDTH): string {
  const shown = values.slice(-width);
  const max = Math.max(0, ...shown);
  return shown
    .map((x) =>
      max === 0 ? SPARK[0] : SPARK[Math.min(SPARK.length - 1, Math.round((x / max) * (SPARK.length - 1)))],
    )
    .join('');
}

interface NodeHistory {
  last?: SyncCounters;
  lastSyncMs?: number;
  pending: number[];
  answered: boolean;
}

export class WatchView {
  private readonly history = new Map<string, NodeHistory>();

  constructor(private readonly nodes: readonly { readonly name: string; readonly namespace: string }[]) {
    for (const n of nodes) this.history.set(n.name, { pending: [], answered: false });
  }

  /** Records one round of readings (undefined: the proxy did not answer, e.g. restarting). */
  record(node: string, counters: SyncCounters | undefined): void {
    const h = this.history.get(node);
    if (!h) return;
    h.answered = counters !== undefined;
    if (!counters) return;
    const prev = h.last;
    if (prev && counters.syncs > prev.syncs)
      h.lastSyncMs = ((counters.syncSecondsSum - prev.syncSecondsSum) / (counters.syncs - prev.syncs)) * 1000;
    else if (!prev && counters.syncs > 0) h.lastSyncMs = (counters.syncSecondsSum / counters.syncs) * 1000;
    h.last = counters;
    h.pending.push(counters.endpointPending);
    if (h.pending.length > SPARK_WIDTH) h.pending.shift();
  }

  async poll(runner: CommandRunner): Promise<void> {
    await Promise.all(
      this.nodes.map(async (n) => {
        const text = await fetchProxyMetrics(runner, n.namespace);
        this.record(n.name, text === undefined ? undefined : syncCountersFrom(text));
      }),
    );
  }

  /** The screen: a header, one row per node, then each node's sparkline. */
  render(now = new Date()): string {
    const header = ['NODE', 'EP PENDING', 'EP TOTAL', 'SVC PENDING', 'SVC TOTAL', 'SYNCS', 'LAST SYNC'];
    const rows = [...this.history.entries()].map(([name, h]) => {
      const c = h.last;
      if (!c || !h.answered) return [name, '-', '-', '-', '-', '-', h.answered ? '-' : 'no answer'];
      return [
        name,
        String(c.endpointPending),
        String(c.endpointTotal),
        String(c.servicePending),
        String(c.serviceTotal),
        String(c.syncs),
        h.lastSyncMs === undefined ? '-' : `${h.lastSyncMs.toFixed(0)}ms`,
      ];
    });
    const widths = header.map((_, i) => Math.max(...[header, ...rows].map((r) => (r[i] ?? '').length)));
    const line = (r: readonly string[]): string =>
      r
        .map((cell, i) => cell.padEnd(widths[i] ?? 0))
        .join('   ')
        .trimEnd();
    const nameWidth = Math.max(...[...this.history.keys()].map((n) => n.length));
    const sparks = [...this.history.entries()].map(
      ([name, h]) => `${name.padEnd(nameWidth)}  ${sparkline(h.pending)}  (max ${Math.max(0, ...h.pending)})`,
    );
    return [
      `kube-proxy-ts lab watch — ${now.toISOString().slice(11, 19)} — every proxy's /metrics, each second (Ctrl-C ends)`,
      '',
      line(header),
      ...rows.map(line),
      '',
      'endpoint changes pending, last rounds:',
      ...sparks,
      '',
    ].join('\n');
  }
}
