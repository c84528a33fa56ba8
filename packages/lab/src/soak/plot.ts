// The soak's picture: one SVG, two panels over the same seconds. Top: requests sent per second (line) and failed
// requests per second (bars). Bottom: each node's pending endpoint changes (kubeproxy_sync_proxy_rules_
// endpoint_changes_pending, sampled every second). Dashed verticals mark proxy restarts, API server outages and
// the Deployment-wide churn (scale, rollout restart). Written by hand: no plotting dependency.
import type { SoakReport } from './report.js';

const WIDTH = 960;
const PANEL_HEIGHT = 220;
const MARGIN = { left: 64, right: 200, top: 64, gap: 56, bottom: 40 } as const;
const NODE_COLORS = ['#2471a3', '#d68910', '#7d3c98', '#148f77', '#a04000', '#5d6d7e'];

function escapeXml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/** A round step for `max` over about five ticks. */
function step(max: number): number {
  const raw = Math.max(1, max) / 5;
  const p = 10 ** Math.floor(Math.log10(raw));
  return [1, 2, 5, 10].map((m) => m * p).find((s) => s >= raw) ?? 10 * p;
}

export function soakSvg(r: SoakReport): string {
  const seconds = Math.max(1, r.perSecond.length);
  const w = WIDTH - MARGIN.left - MARGIN.right;
  const x = (t: number): number => MARGIN.left + (t / seconds) * w;
  const out: string[] = [];
  const height = MARGIN.top + 2 * PANEL_HEIGHT + MARGIN.gap + MARGIN.bottom;
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    `<text x="${MARGIN.left}" y="22" font-size="14" font-weight="bold">${escapeXml(
      `kube-proxy-ts soak: ${r.settings.mode}${r.settings.layout ? ` (${r.settings.layout})` : ''}${r.settings.iptables ? ` iptables-${r.settings.iptables}` : ''}, ${r.settings.services} Services, churn ${r.settings.churnPerSecond}/s${r.settings.competingLockHolder ? ', lock holder' : ''}`,
    )}</text>`,
  );

  const panel = (top: number, title: string, max: number, unit: string): ((v: number) => number) => {
    const s = step(max);
    const hi = Math.max(s, Math.ceil(max / s) * s);
    const y = (v: number): number => top + PANEL_HEIGHT - (v / hi) * PANEL_HEIGHT;
    out.push(`<text x="${MARGIN.left}" y="${top - 8}" font-weight="bold">${escapeXml(title)}</text>`);
    for (let v = 0; v <= hi; v += s) {
      out.push(
        `<line x1="${MARGIN.left}" x2="${MARGIN.left + w}" y1="${y(v)}" y2="${y(v)}" stroke="#ddd"/>`,
        `<text x="${MARGIN.left - 6}" y="${y(v) + 4}" text-anchor="end">${v}</text>`,
      );
    }
    out.push(
      `<text transform="translate(16 ${top + PANEL_HEIGHT / 2}) rotate(-90)" text-anchor="middle">${escapeXml(unit)}</text>`,
      `<rect x="${MARGIN.left}" y="${top}" width="${w}" height="${PANEL_HEIGHT}" fill="none" stroke="#888"/>`,
    );
    return y;
  };

  const top1 = MARGIN.top;
  const maxRate = Math.max(1, ...r.perSecond.map((p) => p.sent));
  const y1 = panel(top1, 'requests per second: sent (line), failed (red bars)', maxRate, 'requests / s');
  const barW = Math.max(1, w / seconds - 1);
  for (const p of r.perSecond)
    if (p.failed > 0)
      out.push(
        `<rect class="failed" x="${x(p.t)}" y="${y1(p.failed)}" width="${barW}" height="${y1(0) - y1(p.failed)}" fill="#c0392b"/>`,
      );
  out.push(
    `<polyline class="sent" fill="none" stroke="#1e8449" stroke-width="1.5" points="${r.perSecond
      .map((p) => `${x(p.t + 0.5).toFixed(1)},${y1(p.sent).toFixed(1)}`)
      .join(' ')}"/>`,
  );

  const top2 = top1 + PANEL_HEIGHT + MARGIN.gap;
  const nodes = [...new Set(r.perSecond.flatMap((p) => Object.keys(p.pending)))].sort();
  const maxPending = Math.max(1, ...r.perSecond.flatMap((p) => Object.values(p.pending)));
  const y2 = panel(top2, 'pending endpoint changes per node', maxPending, 'changes pending');
  nodes.forEach((node, i) => {
    const color = NODE_COLORS[i % NODE_COLORS.length] ?? '#000';
    const pts = r.perSecond
      .filter((p) => p.pending[node] !== undefined)
      .map((p) => `${x(p.t + 0.5).toFixed(1)},${y2(p.pending[node] ?? 0).toFixed(1)}`);
    out.push(
      `<polyline class="pending" data-node="${escapeXml(node)}" fill="none" stroke="${color}" stroke-width="1.5" points="${pts.join(' ')}"/>`,
      `<line x1="${MARGIN.left + w + 12}" x2="${MARGIN.left + w + 30}" y1="${top2 + 14 + i * 18}" y2="${top2 + 14 + i * 18}" stroke="${color}" stroke-width="3"/>`,
      `<text x="${MARGIN.left + w + 36}" y="${top2 + 18 + i * 18}">${escapeXml(node)}</text>`,
    );
  });

  for (const m of r.marks) {
    const mx = x(m.t / 1000).toFixed(1);
    out.push(
      `<line class="mark" x1="${mx}" x2="${mx}" y1="${top1}" y2="${top2 + PANEL_HEIGHT}" stroke="#555" stroke-dasharray="3,3"><title>${escapeXml(m.what)}</title></line>`,
    );
  }
  const legend = [
    ['#1e8449', 'sent'],
    ['#c0392b', 'failed'],
    ['#555', 'restart, outage, pod churn'],
  ];
  legend.forEach(([color, label], i) =>
    out.push(
      `<line x1="${MARGIN.left + w + 12}" x2="${MARGIN.left + w + 30}" y1="${top1 + 14 + i * 18}" y2="${top1 + 14 + i * 18}" stroke="${color}" stroke-width="3"/>`,
      `<text x="${MARGIN.left + w + 36}" y="${top1 + 18 + i * 18}">${escapeXml(label ?? '')}</text>`,
    ),
  );
  const axisY = top2 + PANEL_HEIGHT;
  const ts = step(seconds);
  for (let t = 0; t <= seconds; t += ts)
    out.push(`<text x="${x(t)}" y="${axisY + 16}" text-anchor="middle">${t}</text>`);
  out.push(
    `<text x="${MARGIN.left + w / 2}" y="${axisY + 34}" text-anchor="middle">seconds</text>`,
    '</svg>',
  );
  return `${out.join('\n')}\n`;
}
