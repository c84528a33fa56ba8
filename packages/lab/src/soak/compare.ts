// Soak reports side by side: seed 003's remedies (scripts/soak-remedies.sh) as one table and one picture. Each row
// is one soak's report, labelled by what it tried; the numbers are the report's own, summed or taken at their
// worst over the nodes: seed 003's "connection drops" (failed requests to Services that always had a ready
// endpoint: the gracefully churned ones and the unchurned), the requests to Services whose pods flip readiness
// apart (a refusal there can be right: a Service with no ready pod rejects), the xtables lock waits, the network
// programming latency, the syncs and iptables-save.
import type { LatencyMs, SoakReport, Tally } from './report.js';

export interface LabelledReport {
  readonly label: string;
  readonly report: SoakReport;
}

/** The figures of one row, as numbers (undefined where the soak measured nothing). */
export interface RemedyRow {
  readonly label: string;
  readonly setting: string;
  readonly churnPerSecond: number;
  readonly sent: number;
  /** Failed requests of any kind to Services that always had a ready endpoint (graceful churn or none). */
  readonly dropped: number;
  /** Of those, the ones the soak's guarantee counts (not the machine's, not a restarting proxy's). */
  readonly failedToAlwaysReady: number;
  /** Requests to Services whose pods flip readiness, failed (refused, timed out, reset), and answered by a pod
   * that had left. */
  readonly flipsFailed: number;
  readonly wrongEndpoint: number;
  /** Requests straight to pods (no Service rule) that failed: the machine's own failures. */
  readonly controlFailed: number;
  readonly lockWaitSeconds: number;
  readonly programmingP50s?: number;
  readonly programmingP99s?: number;
  /** The slowest node's median sync. */
  readonly syncP50ms?: number;
  /** The slowest node's median iptables-save, and the most lines it printed. */
  readonly iptablesSaveP50ms?: number;
  readonly iptablesSaveLines?: number;
  readonly guaranteesHeld: boolean;
}

function setting(r: SoakReport): string {
  const s = r.settings;
  const mode = s.mode === 'nftables' && s.layout !== undefined ? `nftables (${s.layout})` : s.mode;
  const periods =
    s.minSyncPeriod !== undefined
      ? `, minSyncPeriod ${s.minSyncPeriod}, syncPeriod ${s.syncPeriod ?? '?'}`
      : '';
  return `${mode}${periods}`;
}

const seconds = (ms: number | undefined): number | undefined =>
  ms === undefined ? undefined : Math.round(ms / 10) / 100;

function slowest(values: readonly (number | undefined)[]): number | undefined {
  const known = values.filter((v): v is number => v !== undefined);
  return known.length === 0 ? undefined : Math.max(...known);
}

const failedOf = (t: Tally): number => Object.values(t.failed).reduce((a, n) => a + n, 0);

export function remedyRow({ label, report: r }: LabelledReport): RemedyRow {
  const { byChurn } = r.requests;
  const flips = byChurn.readiness.failed;
  const saves = Object.values(r.iptablesSave ?? {});
  const p = r.programmingLatencyMs;
  const programmingP50s = seconds(p.p50);
  const programmingP99s = seconds(p.p99);
  const syncP50ms = slowest(Object.values(r.syncs).map((l: LatencyMs) => l.p50));
  const iptablesSaveP50ms = slowest(saves.map((x) => x.p50Ms));
  const iptablesSaveLines = slowest(saves.map((x) => x.maxLines));
  return {
    label,
    setting: setting(r),
    churnPerSecond: r.churn.perSecond,
    sent: r.requests.sent,
    dropped: failedOf(byChurn.graceful) + failedOf(byChurn.none),
    failedToAlwaysReady: r.guarantees.failedToAlwaysReadyServices,
    flipsFailed: flips.refused + flips.timeout + flips.reset + flips.other,
    wrongEndpoint: flips.wrongEndpoint,
    controlFailed: failedOf(r.control),
    lockWaitSeconds: Math.round(Object.values(r.lockWaits).reduce((a, l) => a + l.totalMs, 0) / 100) / 10,
    ...(programmingP50s !== undefined ? { programmingP50s } : {}),
    ...(programmingP99s !== undefined ? { programmingP99s } : {}),
    ...(syncP50ms !== undefined ? { syncP50ms } : {}),
    ...(iptablesSaveP50ms !== undefined ? { iptablesSaveP50ms } : {}),
    ...(iptablesSaveLines !== undefined ? { iptablesSaveLines } : {}),
    guaranteesHeld: r.guarantees.ok,
  };
}

const or = (v: number | undefined, unit = ''): string => (v === undefined ? '–' : `${v}${unit}`);

/** The rows as a Markdown table. */
export function remediesTable(rows: readonly RemedyRow[]): string {
  const head = [
    'remedy',
    'mode and sync periods',
    'churn reached',
    'requests',
    'drops: failed, always-ready Services',
    'of them the proxy’s',
    'flipping Services: failed / wrong endpoint',
    'control failed',
    'xtables lock waits, all nodes',
    'programming latency p50 / p99',
    'sync p50 (slowest node)',
    'iptables-save p50 (lines)',
    'guarantees',
  ];
  const lines = [`| ${head.join(' | ')} |`, `|${head.map(() => '---').join('|')}|`];
  for (const x of rows)
    lines.push(
      `| ${[
        x.label,
        x.setting,
        `${x.churnPerSecond}/s`,
        x.sent.toLocaleString('en-US'),
        x.dropped,
        x.failedToAlwaysReady,
        `${x.flipsFailed} / ${x.wrongEndpoint}`,
        x.controlFailed,
        `${x.lockWaitSeconds} s`,
        `${or(x.programmingP50s)} / ${or(x.programmingP99s)} s`,
        or(x.syncP50ms, ' ms'),
        x.iptablesSaveP50ms === undefined ? '–' : `${x.iptablesSaveP50ms} ms (${x.iptablesSaveLines ?? '?'})`,
        x.guaranteesHeld ? 'held' : 'NOT held',
      ].join(' | ')} |`,
    );
  return `${lines.join('\n')}\n`;
}

function escapeXml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

const COLORS = ['#c0392b', '#d68910', '#2471a3', '#1e8449', '#7d3c98', '#5d6d7e'];

interface Panel {
  readonly title: string;
  readonly unit: string;
  readonly value: (r: RemedyRow) => number | undefined;
}

const PANELS: readonly Panel[] = [
  { title: 'drops (always-ready Services)', unit: 'failed requests', value: (r) => r.dropped },
  { title: 'xtables lock waits', unit: 's, all nodes', value: (r) => r.lockWaitSeconds },
  { title: 'programming latency p99', unit: 's', value: (r) => r.programmingP99s },
  { title: 'iptables-save p50', unit: 'ms', value: (r) => r.iptablesSaveP50ms },
];

/** One bar chart per measure, a bar per remedy in the same colour throughout, the legend underneath. */
export function remediesSvg(rows: readonly RemedyRow[], title: string): string {
  const panelW = 220;
  const panelH = 200;
  const gap = 30;
  const left = 20;
  const top = 70;
  const width = left + PANELS.length * (panelW + gap);
  const legendTop = top + panelH + 40;
  const height = legendTop + rows.length * 20 + 16;
  const out = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    `<text x="${left}" y="24" font-size="14" font-weight="bold">${escapeXml(title)}</text>`,
  ];
  PANELS.forEach((panel, i) => {
    const x0 = left + i * (panelW + gap);
    const values = rows.map(panel.value);
    const max = Math.max(0, ...values.filter((v): v is number => v !== undefined));
    const hi = max > 0 ? max * 1.15 : 1;
    out.push(
      `<text x="${x0}" y="${top - 22}" font-weight="bold">${escapeXml(panel.title)}</text>`,
      `<text x="${x0}" y="${top - 8}" fill="#555">${escapeXml(panel.unit)}</text>`,
      `<line x1="${x0}" x2="${x0 + panelW}" y1="${top + panelH}" y2="${top + panelH}" stroke="#888"/>`,
    );
    const barW = panelW / Math.max(1, rows.length) - 8;
    values.forEach((v, j) => {
      const bx = x0 + 4 + j * (barW + 8);
      if (v === undefined) {
        out.push(
          `<text x="${bx + barW / 2}" y="${top + panelH - 6}" text-anchor="middle" fill="#888">–</text>`,
        );
        return;
      }
      const h = (v / hi) * panelH;
      out.push(
        `<rect class="bar" data-panel="${i}" data-row="${j}" x="${bx.toFixed(1)}" y="${(top + panelH - h).toFixed(1)}" width="${barW.toFixed(1)}" height="${h.toFixed(1)}" fill="${COLORS[j % COLORS.length] ?? '#000'}"><title>${escapeXml(`${rows[j]?.label ?? ''}: ${v} ${panel.unit}`)}</title></rect>`,
        `<text x="${(bx + barW / 2).toFixed(1)}" y="${(top + panelH - h - 4).toFixed(1)}" text-anchor="middle">${v}</text>`,
      );
    });
  });
  rows.forEach((r, j) =>
    out.push(
      `<rect x="${left}" y="${legendTop + j * 20 - 10}" width="12" height="12" fill="${COLORS[j % COLORS.length] ?? '#000'}"/>`,
      `<text x="${left + 18}" y="${legendTop + j * 20}">${escapeXml(`${r.label}: ${r.setting}`)}</text>`,
    ),
  );
  out.push('</svg>');
  return `${out.join('\n')}\n`;
}
