// The agent-process bench's rows (one per layout and size, from one run of bench/agent-run.ts) and how they are
// printed: a text table for the terminal and the markdown of docs/performance.md. Also the one /metrics reading
// it needs (a histogram's sum and count). Pure, so test/bench/agent.test.ts can check it.
import { parseMetrics, sum } from 'kube-proxy-ts/inspect/prometheus.js';

export interface AgentRow {
  readonly layout: string;
  /** Flags beyond a node's (KPTS_BENCH_AGENT_FLAGS), shown beside the layout. */
  readonly extraFlags: string;
  readonly services: number;
  readonly endpointsPerService: number;
  /** The nftables executor the agent chose (its log line), and its child processes seen during the first syncs
   * of both agents (sampled every 5 ms): name → largest peak RSS (VmHWM) seen, MiB. */
  readonly executor: string;
  readonly children: Readonly<Record<string, number>>;
  /** Spawn → the agent's first log record (Node.js started, the CLI loaded, flags read), ms. */
  readonly upMs: number;
  /** Spawn → its first LIST of Services or EndpointSlices reached the API server (after waiting for its Node), and
   * spawn → the last page of both lists sent (the API server's clock), ms. */
  readonly listAskedMs: number;
  readonly listServedMs: number;
  /** Spawn → the later of the Service and EndpointSlice lists done (the agent's 'listed' records), ms. */
  readonly listMs: number;
  /** Spawn → the first sync done, kernel programmed (the agent's 'synced proxy rules' record), ms. */
  readonly firstSyncMs: number;
  /** That sync's own duration, as the agent measures it (its record's ms). */
  readonly firstSyncOwnMs: number;
  /** Peak RSS (VmHWM) of the agent process at its first sync done, and its RSS once settled, MiB. */
  readonly peakRssMiB: number;
  readonly settledRssMiB: number;
  /** VmHWM after the one-endpoint changes, MiB. */
  readonly peakRssAfterChangesMiB: number;
  /** API server's write of the watch event → nft monitor's line of the kernel's change, per change, ms. */
  readonly changeMs: readonly number[];
  /** The changes back, timed the same way. */
  readonly revertMs: readonly number[];
  /**
   * API server's write → the agent's record that the kernel accepted the change's transaction ('synced proxy rules',
   * logged when the netlink commit is acknowledged), per write, both ways, ms: the host's clock in both processes,
   * the agent's to the millisecond. No observer's own delay is in it (nft monitor's grows with the table it caches).
   */
  readonly ackMs: readonly number[];
  /** API server's write → the agent's 'sync done' record (its post-sync work done), per write, both ways, ms. */
  readonly doneMs: readonly number[];
  /** API server's write → the first /metrics answer counting the change's sync (post-sync work done), per write. */
  readonly countedMs: readonly number[];
  /** Idle /metrics round trips from the bench's process, one after each write's pause, ms. */
  readonly scrapeMs: readonly number[];
  /** The agent's own sync time for each change (its record's ms). */
  readonly changeSyncMs: readonly number[];
  /** Partial syncs in /metrics across all changes and reverts: Δsum / Δcount of the partial-sync histogram, ms. */
  readonly metricsPartialMeanMs: number;
  /** The observer's floor: an element this process adds through libnftables → its monitor line, per run, ms. */
  readonly observerMs: readonly number[];
  /** SIGTERM → exit, ms, and whether the table was still there after. */
  readonly stopMs: number;
  readonly exitCode: number | null;
  readonly tableKept: boolean;
  /** The new agent: spawn → lists done, spawn → first sync done, that sync's own time and operations, peak RSS. */
  readonly restartUpMs: number;
  readonly restartListAskedMs: number;
  readonly restartListMs: number;
  readonly restartSyncMs: number;
  readonly restartOwnMs: number;
  readonly restartOperations: number;
  readonly restartPeakRssMiB: number;
  /** 1-minute load average when the run started and ended. */
  readonly loadBefore: number;
  readonly loadAfter: number;
}

export function median(xs: readonly number[]): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? (s[mid] ?? NaN) : ((s[mid - 1] ?? 0) + (s[mid] ?? 0)) / 2;
}

/** `sum` and `count` of a histogram in Prometheus text (summed over every label set), read by the agent's parser. */
export function histogramTotals(text: string, name: string): { sum: number; count: number } {
  const m = parseMetrics(text);
  return { sum: sum(m, `${name}_sum`) ?? 0, count: sum(m, `${name}_count`) ?? 0 };
}

const f = (n: number, digits = 1): string => (Number.isFinite(n) ? n.toFixed(digits) : '-');
const s = (ms: number): string => f(ms / 1000, 2);
const range = (xs: readonly number[]): string =>
  `${f(median(xs), 2)} (${f(Math.min(...xs), 2)}–${f(Math.max(...xs), 2)})`;

export const AGENT_COLUMNS = [
  'layout',
  'services',
  'up s',
  'lists asked s',
  'lists served s',
  'listed s',
  'first sync s (own)',
  'peak RSS MiB',
  'settled RSS',
  'peak after changes',
  'write→kernel ms med (min–max)',
  'back ms med',
  'write→ack ms med (max)',
  'write→done ms med (max)',
  'write→counted ms med (max)',
  '/metrics ms med (max)',
  'agent sync ms med (metrics mean)',
  'observer floor ms',
  'stop ms',
  'restart: up s',
  'restart: lists asked s',
  'restart: listed s',
  'restart: first sync s (own, ops)',
  'restart peak RSS',
  'load',
] as const;

export function agentCells(r: AgentRow): string[] {
  return [
    r.extraFlags === '' ? r.layout : `${r.layout} ${r.extraFlags}`,
    String(r.services),
    s(r.upMs),
    s(r.listAskedMs),
    s(r.listServedMs),
    s(r.listMs),
    `${s(r.firstSyncMs)} (${s(r.firstSyncOwnMs)})`,
    f(r.peakRssMiB, 0),
    f(r.settledRssMiB, 0),
    f(r.peakRssAfterChangesMiB, 0),
    range(r.changeMs),
    f(median(r.revertMs), 2),
    `${f(median(r.ackMs), 1)} (${f(Math.max(...r.ackMs), 1)})`,
    `${f(median(r.doneMs), 1)} (${f(Math.max(...r.doneMs), 1)})`,
    `${f(median(r.countedMs), 2)} (${f(Math.max(...r.countedMs), 2)})`,
    `${f(median(r.scrapeMs), 2)} (${f(Math.max(...r.scrapeMs), 2)})`,
    `${f(median(r.changeSyncMs), 1)} (${f(r.metricsPartialMeanMs, 1)})`,
    f(median(r.observerMs), 2),
    `${f(r.stopMs, 0)}${r.tableKept ? '' : ' TABLE GONE'}`,
    s(r.restartUpMs),
    s(r.restartListAskedMs),
    s(r.restartListMs),
    `${s(r.restartSyncMs)} (${s(r.restartOwnMs)}, ${r.restartOperations})`,
    f(r.restartPeakRssMiB, 0),
    `${f(r.loadBefore, 2)}→${f(r.loadAfter, 2)}`,
  ];
}

export function agentTable(rows: readonly AgentRow[]): string {
  const lines = [[...AGENT_COLUMNS], ...rows.map(agentCells)];
  const widths = AGENT_COLUMNS.map((_, i) => Math.max(...lines.map((l) => (l[i] ?? '').length)));
  return lines.map((l) => l.map((c, i) => c.padStart(widths[i] ?? 0)).join('  ')).join('\n');
}

export function agentMarkdown(rows: readonly AgentRow[]): string {
  const head = `| ${AGENT_COLUMNS.join(' | ')} |`;
  const rule = `|${AGENT_COLUMNS.map(() => '---').join('|')}|`;
  return [head, rule, ...rows.map((r) => `| ${agentCells(r).join(' | ')} |`)].join('\n');
}
