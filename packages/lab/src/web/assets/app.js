// The lab's web view, in the browser: plain JavaScript modules (no framework, no build step), uPlot for the charts
// (window.uPlot, its own script). The server pushes everything over one EventSource (/events): a snapshot first,
// then each change. The page keeps that state and draws it; it decides nothing about the cluster (explain and
// trace are the CLI's answers, drawn).
import { $ } from './dom.js';
import { mark, onDraw, state, stats, windowStart } from './state.js';
import { renderCluster } from './cluster.js';
import { renderCharts } from './charts.js';
import { renderRuleset } from './ruleset.js';
import { renderExperiments } from './actions.js';

const PARTS = {
  cluster: renderCluster,
  charts: renderCharts,
  ruleset: renderRuleset,
  experiments: renderExperiments,
};

onDraw((parts) => {
  const started = performance.now();
  try {
    for (const [name, fn] of Object.entries(PARTS)) {
      if (!parts.has(name)) continue;
      const t = performance.now();
      fn();
      stats.maxPartMs[name] = Math.max(stats.maxPartMs[name] ?? 0, Math.round(performance.now() - t));
    }
  } finally {
    const ms = performance.now() - started;
    stats.renders++;
    stats.lastRenderMs = ms;
    stats.maxRenderMs = Math.max(stats.maxRenderMs, ms);
    document.body.dataset.renders = String(stats.renders);
  }
});

function connect() {
  const es = new EventSource('/events');
  es.onopen = () => {
    $('conn').dataset.state = 'open';
    $('conn').textContent = 'live';
  };
  es.onerror = () => {
    $('conn').dataset.state = 'closed';
    $('conn').textContent = 'reconnecting…';
  };
  const on = (name, fn) =>
    es.addEventListener(name, (ev) => {
      stats.events++;
      fn(JSON.parse(ev.data));
    });
  on('snapshot', (s) => {
    stats.snapshots++;
    state.lab = s.lab;
    state.objects = new Map(s.objects.map((o) => [o.key, o]));
    state.samples = s.samples;
    state.syncs = s.syncs;
    state.rulesets = new Map(s.rulesets.map((c) => [c.node, c]));
    state.experiments = s.experiments;
    state.runs = new Map(s.runs.map((r) => [r.id, r]));
    mark('cluster', 'charts', 'ruleset', 'experiments');
  });
  on('objects', (d) => {
    for (const key of d.remove) state.objects.delete(key);
    for (const o of d.upsert) state.objects.set(o.key, o);
    mark('cluster');
  });
  on('sample', (d) => {
    const list = state.samples[d.node] ?? (state.samples[d.node] = []);
    list.push(d.sample);
    const cut = windowStart();
    while (list.length > 0 && list[0].t < cut) list.shift();
    mark('charts');
  });
  on('sync', (m) => {
    state.syncs.push(m);
    // A page left open for hours keeps only what its charts can show.
    const cut = windowStart();
    if (state.syncs[0].t < cut) state.syncs = state.syncs.filter((x) => x.t >= cut);
    mark('charts');
  });
  on('ruleset', (c) => {
    state.rulesets.set(c.node, c);
    mark('ruleset');
  });
  on('run', (r) => {
    state.runs.set(r.id, r);
    mark('experiments');
  });
}
connect();
