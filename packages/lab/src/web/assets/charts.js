// Each node's charts (uPlot): changes pending, totals and syncs, sync duration and programming latency, with every
// sync marked; what they show is also kept as data- attributes (the tests read those).
import { $, el } from './dom.js';
import { state, windowStart } from './state.js';

const charts = new Map();
const CHARTS = [
  {
    id: 'pending',
    title: 'changes pending',
    series: [
      ['endpointPending', 'endpoint changes pending', '#2458c6'],
      ['servicePending', 'service changes pending', '#c67f24'],
    ],
  },
  {
    id: 'totals',
    half: true,
    title: 'changes total, syncs',
    series: [
      ['endpointTotal', 'endpoint changes total', '#2458c6'],
      ['serviceTotal', 'service changes total', '#c67f24'],
      ['syncs', 'syncs', '#3a9a4a'],
    ],
  },
  {
    id: 'latency',
    half: true,
    title: 'sync, programming latency (ms)',
    series: [
      ['syncMs', 'sync duration (ms)', '#7b3fc6'],
      ['programmingMs', 'network programming latency (ms)', '#c63f6b'],
    ],
  },
];

function syncMarksPlugin(node) {
  return {
    hooks: {
      draw: [
        (u) => {
          const ctx = u.ctx;
          const [min, max] = [u.scales.x.min, u.scales.x.max];
          ctx.save();
          ctx.strokeStyle = 'rgba(214, 40, 40, 0.75)';
          ctx.lineWidth = 1.5 * devicePixelRatio;
          for (const m of state.syncs) {
            if (m.node !== node) continue;
            const x = m.t / 1000;
            if (x < min || x > max) continue;
            const px = u.valToPos(x, 'x', true);
            ctx.beginPath();
            ctx.moveTo(px, u.bbox.top);
            ctx.lineTo(px, u.bbox.top + u.bbox.height);
            ctx.stroke();
          }
          ctx.restore();
        },
      ],
    },
  };
}

function chartData(node, spec) {
  const list = state.samples[node] ?? [];
  const xs = list.map((s) => s.t / 1000);
  return [
    xs,
    ...spec.series.map(([field]) => list.map((s) => (s.up && s[field] !== undefined ? s[field] : null))),
  ];
}

function chartWidth(spec) {
  const full = Math.max(300, $('charts').clientWidth - 10);
  return spec.half ? Math.floor(full / 2) - 6 : full;
}

function ensureCharts(node) {
  let c = charts.get(node);
  if (c) return c;
  const box = el('div', { class: 'node-charts', 'data-node': node }, el('h3', { text: `node ${node}` }));
  const row = el('div', { class: 'chart-row' });
  $('charts').append(box);
  const plots = CHARTS.map((spec) => {
    const holder = el('div', { class: 'chart', 'data-chart': spec.id });
    (spec.half ? row : box).append(holder);
    if (spec.half && row.parentNode === null) box.append(row);
    return new window.uPlot(
      {
        width: chartWidth(spec),
        height: spec.half ? 120 : 150,
        title: spec.title,
        plugins: [syncMarksPlugin(node)],
        legend: { live: false },
        scales: {
          x: { time: true, range: () => [windowStart() / 1000, Date.now() / 1000] },
          y: { range: (u, min, max) => [0, Math.max(1, max ?? 1) * 1.1] },
        },
        // Durations exist only where a sync ran: each is a point, not a line through gaps.
        series: [
          {},
          ...spec.series.map(([, label, stroke]) => ({
            label,
            stroke,
            width: 2,
            spanGaps: false,
            points: { show: spec.id === 'latency', size: 7, fill: stroke },
          })),
        ],
        axes: [
          {},
          {
            size: 60,
            // Latencies reach the minSyncPeriod (seconds); counts stay plain.
            values: (u, vals) =>
              vals.map((v) => (spec.id === 'latency' && v >= 1000 ? `${v / 1000} s` : String(v))),
          },
        ],
      },
      chartData(node, spec),
      holder,
    );
  });
  c = { box, plots };
  charts.set(node, c);
  return c;
}

export function renderCharts() {
  if (!window.uPlot || !state.lab) return;
  const start = windowStart();
  for (const n of state.lab.nodes) {
    const c = ensureCharts(n.name);
    CHARTS.forEach((spec, i) => c.plots[i].setData(chartData(n.name, spec)));
    // What the charts show, as attributes: the tests read them, a reader can too (devtools).
    const list = (state.samples[n.name] ?? []).filter((s) => s.t >= start && s.up);
    const marks = state.syncs.filter((m) => m.node === n.name && m.t >= start);
    const last = list[list.length - 1];
    c.box.dataset.pending = String(last ? last.endpointPending : '');
    c.box.dataset.pendingMax = String(Math.max(0, ...list.map((s) => s.endpointPending)));
    c.box.dataset.pendingMaxAt = String(
      list.reduce((best, s) => (s.endpointPending > (best?.endpointPending ?? -1) ? s : best), undefined)
        ?.t ?? 0,
    );
    c.box.dataset.syncMarks = String(marks.length);
    c.box.dataset.lastMark = String(marks.length > 0 ? marks[marks.length - 1].t : 0);
  }
}

window.addEventListener('resize', () => {
  for (const c of charts.values())
    c.plots.forEach((p, i) =>
      p.setSize({ width: chartWidth(CHARTS[i]), height: CHARTS[i].half ? 120 : 150 }),
    );
});
