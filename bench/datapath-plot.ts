// The datapath bench's plot: first-packet p50 against the number of Services, one line per mode, Services on a
// logarithmic axis and µs on a linear one from zero (so "within 1.2×" reads as height), and each mode's baseline
// (the same pod reached directly, before its rules were loaded) as a faint dashed line of its colour. A small SVG
// written by hand, as bench/plot.ts writes the layouts' plot.
import type { DatapathRow } from './datapath-plan.js';
import { writeSvg } from './plot.js';

const COLORS: Readonly<Record<string, string>> = {
  nftables: '#c0392b',
  'nftables-flat': '#2471a3',
  'iptables (legacy)': '#7d3c98',
  'iptables (nft)': '#27ae60',
};
const BOX = { width: 640, height: 380, left: 64, right: 150, top: 40, bottom: 48 } as const;

/** A round step for about five ticks up to `max`. */
function tickStep(max: number): number {
  const raw = max / 5;
  const p = 10 ** Math.floor(Math.log10(raw));
  return [1, 2, 5, 10].map((m) => m * p).find((s) => s >= raw) ?? raw;
}

function polyline(points: readonly (readonly [number, number])[], color: string, dash: string): string {
  const d = dash === '' ? '' : ` stroke-dasharray="${dash}" stroke-opacity="0.5"`;
  const pts = points.map(([x, y]) => `${x.toFixed(1)},${y.toFixed(1)}`).join(' ');
  return `<polyline fill="none" stroke="${color}" stroke-width="2"${d} points="${pts}"/>`;
}

/** The plot as SVG text, or undefined without rows. */
export function datapathPlotSvg(rows: readonly DatapathRow[]): string | undefined {
  if (rows.length === 0) return undefined;
  const w = BOX.width - BOX.left - BOX.right;
  const h = BOX.height - BOX.top - BOX.bottom;
  const sizes = rows.map((r) => r.services);
  const lo = Math.floor(Math.log10(Math.min(...sizes)));
  const hi = Math.max(Math.ceil(Math.log10(Math.max(...sizes))), lo + 1);
  const yMax = Math.max(...rows.map((r) => Math.max(r.service.p50Us, r.baseline.p50Us))) * 1.1;
  const step = tickStep(yMax);
  const px = (n: number): number => BOX.left + ((Math.log10(n) - lo) / (hi - lo)) * w;
  const py = (us: number): number => BOX.top + h - (us / yMax) * h;
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${BOX.width}" height="${BOX.height}" font-family="sans-serif">`,
    `<rect width="${BOX.width}" height="${BOX.height}" fill="white"/>`,
    `<text x="${BOX.left + w / 2}" y="22" text-anchor="middle" font-weight="bold">new TCP connection to a random ClusterIP, p50</text>`,
    `<rect x="${BOX.left}" y="${BOX.top}" width="${w}" height="${h}" fill="none" stroke="#888"/>`,
  ];
  for (let e = lo; e <= hi; e++) {
    const x = px(10 ** e);
    const label = 10 ** e >= 1000 ? `${10 ** e / 1000}k` : String(10 ** e);
    out.push(`<line x1="${x}" y1="${BOX.top}" x2="${x}" y2="${BOX.top + h}" stroke="#eee"/>`);
    out.push(`<text x="${x}" y="${BOX.top + h + 16}" text-anchor="middle" font-size="11">${label}</text>`);
  }
  for (let v = 0; v <= yMax; v += step) {
    const y = py(v);
    out.push(`<line x1="${BOX.left}" y1="${y}" x2="${BOX.left + w}" y2="${y}" stroke="#eee"/>`);
    out.push(`<text x="${BOX.left - 6}" y="${y + 4}" text-anchor="end" font-size="11">${v} µs</text>`);
  }
  out.push(
    `<text x="${BOX.left + w / 2}" y="${BOX.height - 10}" text-anchor="middle" font-size="12">Services (× 2 endpoints)</text>`,
  );
  const modes = [...new Set(rows.map((r) => r.mode))];
  modes.forEach((mode, i) => {
    const color = COLORS[mode] ?? '#555';
    const mine = rows.filter((r) => r.mode === mode).sort((a, b) => a.services - b.services);
    out.push(
      polyline(
        mine.map((r) => [px(r.services), py(r.baseline.p50Us)] as const),
        color,
        '4 3',
      ),
    );
    out.push(
      polyline(
        mine.map((r) => [px(r.services), py(r.service.p50Us)] as const),
        color,
        '',
      ),
    );
    for (const r of mine) {
      const [x, y] = [px(r.services), py(r.service.p50Us)];
      out.push(`<circle cx="${x.toFixed(1)}" cy="${y.toFixed(1)}" r="3.5" fill="${color}"/>`);
      out.push(
        `<text x="${(x + 5).toFixed(1)}" y="${(y - 6).toFixed(1)}" font-size="10" fill="${color}">${r.service.p50Us.toFixed(0)}</text>`,
      );
    }
    const ly = BOX.top + 14 + i * 18;
    out.push(
      `<line x1="${BOX.left + w + 12}" y1="${ly}" x2="${BOX.left + w + 28}" y2="${ly}" stroke="${color}" stroke-width="3"/>`,
    );
    out.push(`<text x="${BOX.left + w + 34}" y="${ly + 4}" font-size="12">${mode}</text>`);
  });
  const ly = BOX.top + 14 + modes.length * 18;
  out.push(
    `<line x1="${BOX.left + w + 12}" y1="${ly}" x2="${BOX.left + w + 28}" y2="${ly}" stroke="#555" stroke-width="2" stroke-dasharray="4 3"/>`,
    `<text x="${BOX.left + w + 34}" y="${ly + 4}" font-size="12">its baseline</text>`,
    '</svg>',
    '',
  );
  return out.join('\n');
}

/** Writes the datapath plot to `path`; returns the path, or undefined when there was nothing. */
export function writeDatapathPlot(rows: readonly DatapathRow[], path: string): string | undefined {
  return writeSvg(datapathPlotSvg(rows), path);
}
