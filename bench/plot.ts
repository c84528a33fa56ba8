// The benchmark's plot of the two nftables layouts: full-sync time and one-endpoint time against the number of
// Services, both axes logarithmic, one line per layout and way of running nft (dashed: in-process, libnftables
// and nf_tables netlink). A small SVG written by hand (no plotting dependency); the numbers are the table's
// totals (what a user waits for).
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { BenchRow, SyncKind } from './types.js';

const SERIES = [
  { mode: 'nftables', label: 'upstream layout', color: '#c0392b', dash: '' },
  { mode: 'nftables-library', label: 'upstream, in-process', color: '#c0392b', dash: '6 4' },
  { mode: 'nftables-flat', label: 'flat layout', color: '#2471a3', dash: '' },
  { mode: 'nftables-flat-library', label: 'flat, in-process', color: '#2471a3', dash: '6 4' },
] as const;

const PANEL = { width: 420, height: 300, left: 64, right: 56, top: 36, bottom: 46 } as const;

function decadesAround(values: readonly number[]): { lo: number; hi: number } {
  const lo = Math.floor(Math.log10(Math.min(...values)));
  const hi = Math.ceil(Math.log10(Math.max(...values)));
  return { lo, hi: hi === lo ? lo + 1 : hi };
}

function escapeXml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

function tickLabel(exp: number, unit: string): string {
  const v = 10 ** exp;
  if (unit === 'ms' && v >= 1000) return `${v / 1000} s`;
  if (unit === 'ms') return `${v < 1 ? v.toFixed(-exp) : v} ms`;
  return v >= 1000 ? `${v / 1000}k` : String(v);
}

/** One panel: `sync`'s total ms against Services for each layout, at horizontal offset `x0`. */
function panel(rows: readonly BenchRow[], sync: SyncKind, x0: number, title: string): string {
  const mine = rows.filter((r) => r.sync === sync && SERIES.some((s) => s.mode === r.mode));
  const xs = decadesAround(mine.map((r) => r.services));
  const ys = decadesAround(mine.map((r) => Math.max(r.totalMs, 0.01)));
  const w = PANEL.width - PANEL.left - PANEL.right;
  const h = PANEL.height - PANEL.top - PANEL.bottom;
  const px = (services: number): number =>
    x0 + PANEL.left + ((Math.log10(services) - xs.lo) / (xs.hi - xs.lo)) * w;
  const py = (ms: number): number =>
    PANEL.top + h - ((Math.log10(Math.max(ms, 0.01)) - ys.lo) / (ys.hi - ys.lo)) * h;
  const out: string[] = [];
  out.push(
    `<text x="${x0 + PANEL.left + w / 2}" y="20" text-anchor="middle" font-weight="bold">${escapeXml(title)}</text>`,
  );
  out.push(
    `<rect x="${x0 + PANEL.left}" y="${PANEL.top}" width="${w}" height="${h}" fill="none" stroke="#888"/>`,
  );
  for (let e = xs.lo; e <= xs.hi; e++) {
    const x = px(10 ** e);
    out.push(`<line x1="${x}" y1="${PANEL.top}" x2="${x}" y2="${PANEL.top + h}" stroke="#eee"/>`);
    out.push(
      `<text x="${x}" y="${PANEL.top + h + 16}" text-anchor="middle" font-size="11">${tickLabel(e, '')}</text>`,
    );
  }
  for (let e = ys.lo; e <= ys.hi; e++) {
    const y = py(10 ** e);
    out.push(`<line x1="${x0 + PANEL.left}" y1="${y}" x2="${x0 + PANEL.left + w}" y2="${y}" stroke="#eee"/>`);
    out.push(
      `<text x="${x0 + PANEL.left - 6}" y="${y + 4}" text-anchor="end" font-size="11">${tickLabel(e, 'ms')}</text>`,
    );
  }
  out.push(
    `<text x="${x0 + PANEL.left + w / 2}" y="${PANEL.height - 8}" text-anchor="middle" font-size="12">Services (× 10 endpoints)</text>`,
  );
  for (const s of SERIES) {
    const points = mine
      .filter((r) => r.mode === s.mode)
      .sort((a, b) => a.services - b.services)
      .map((r) => [px(r.services), py(r.totalMs), r.totalMs] as const);
    if (points.length === 0) continue;
    out.push(
      `<polyline fill="none" stroke="${s.color}" stroke-width="2"${s.dash ? ` stroke-dasharray="${s.dash}"` : ''} points="${points.map(([x, y]) => `${x.toFixed(1)},${y.toFixed(1)}`).join(' ')}"/>`,
    );
    for (const [x, y, ms] of points) {
      out.push(`<circle cx="${x.toFixed(1)}" cy="${y.toFixed(1)}" r="3.5" fill="${s.color}"/>`);
      const label = ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${ms.toFixed(ms < 10 ? 2 : 0)} ms`;
      out.push(
        `<text x="${(x + 6).toFixed(1)}" y="${(y - 6).toFixed(1)}" font-size="10" fill="${s.color}">${label}</text>`,
      );
    }
  }
  return out.join('\n');
}

/** The plot as SVG text, or undefined when the rows hold no nftables layout. */
export function layoutPlotSvg(rows: readonly BenchRow[]): string | undefined {
  const relevant = rows.filter((r) => SERIES.some((s) => s.mode === r.mode));
  if (relevant.length === 0) return undefined;
  const width = PANEL.width * 2;
  const height = PANEL.height + 28;
  const legend = SERIES.map(
    (s, i) =>
      `<line x1="${PANEL.left + i * 160}" y1="${PANEL.height + 10}" x2="${PANEL.left + i * 160 + 14}" y2="${PANEL.height + 10}" stroke="${s.color}" stroke-width="3"${s.dash ? ' stroke-dasharray="4 2"' : ''}/>` +
      `<text x="${PANEL.left + i * 160 + 20}" y="${PANEL.height + 14}" font-size="12">${escapeXml(s.label)}</text>`,
  ).join('\n');
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif">`,
    `<rect width="${width}" height="${height}" fill="white"/>`,
    panel(relevant, 'full', 0, 'full sync (cold start), total'),
    panel(relevant, 'one-endpoint', PANEL.width, 'one-endpoint change, total (median)'),
    legend,
    '</svg>',
    '',
  ].join('\n');
}

/** Writes `svg` to `path` (directories made as needed); returns the path, or undefined when there was nothing. */
export function writeSvg(svg: string | undefined, path: string): string | undefined {
  if (svg === undefined) return undefined;
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, svg);
  return path;
}

/** Writes the layouts' plot to `path`; returns the path, or undefined when there was nothing. */
export function writeLayoutPlot(rows: readonly BenchRow[], path: string): string | undefined {
  return writeSvg(layoutPlotSvg(rows), path);
}
