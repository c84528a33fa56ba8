// The lab's web view, in the browser: plain JavaScript (no framework, no build step), uPlot for the charts. The
// server pushes everything over one EventSource (/events): a snapshot first, then each change. This file keeps
// that state and draws it; it decides nothing about the cluster (explain and trace are the CLI's answers, drawn).
'use strict';
(() => {
  const token = document.querySelector('meta[name="lab-token"]').content;
  const state = {
    lab: undefined,
    objects: new Map(),
    samples: {},
    syncs: [],
    rulesets: new Map(),
    experiments: [],
    runs: new Map(),
    rulesetNode: undefined,
  };
  // For the tests and the benchmark: how long drawing takes in this browser.
  const stats = { renders: 0, lastRenderMs: 0, maxRenderMs: 0, events: 0, snapshots: 0, maxPartMs: {} };
  window.labWeb = { state, stats };

  const $ = (id) => document.getElementById(id);

  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs ?? {})) {
      if (v === undefined || v === false) continue;
      if (k === 'class') e.className = v;
      else if (k === 'text') e.textContent = v;
      else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v === true ? '' : String(v));
    }
    for (const c of children.flat()) {
      if (c === undefined || c === null || c === false) continue;
      e.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return e;
  }

  function esc(s) {
    return String(s).replace(
      /[&<>"']/g,
      (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c],
    );
  }

  const time = (ms) => new Date(ms).toLocaleTimeString([], { hour12: false });

  function ofKind(kind) {
    const out = [];
    for (const o of state.objects.values()) if (o.kind === kind) out.push(o);
    return out.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }

  /** IP → pod name and node, from the EndpointSlices (what the proxies read too). */
  function endpointOwners() {
    const m = new Map();
    for (const s of ofKind('EndpointSlice'))
      for (const e of s.endpoints) m.set(e.address, { pod: e.pod, node: e.node });
    return m;
  }

  // ---- scheduling: state changes mark parts dirty; one frame draws them ----
  const dirty = new Set();
  let scheduled = false;
  function mark(...parts) {
    for (const p of parts) dirty.add(p);
    if (scheduled) return;
    scheduled = true;
    // A timer, not requestAnimationFrame: a page in a background tab keeps its view current too.
    setTimeout(render, 50);
  }

  function render() {
    scheduled = false;
    const started = performance.now();
    const parts = new Set(dirty);
    dirty.clear();
    try {
      const timed = (name, fn) => {
        const t = performance.now();
        fn();
        stats.maxPartMs[name] = Math.max(stats.maxPartMs[name] ?? 0, Math.round(performance.now() - t));
      };
      if (parts.has('cluster'))
        timed('cluster', () => {
          renderNodes();
          renderPods();
          renderServices();
          renderPickers();
          renderConfig();
        });
      if (parts.has('charts')) timed('charts', renderCharts);
      if (parts.has('ruleset')) timed('ruleset', renderRuleset);
      if (parts.has('experiments')) timed('experiments', renderExperiments);
    } finally {
      const ms = performance.now() - started;
      stats.renders++;
      stats.lastRenderMs = ms;
      stats.maxRenderMs = Math.max(stats.maxRenderMs, ms);
      document.body.dataset.renders = String(stats.renders);
    }
  }

  // ---- the cluster ----
  function renderConfig() {
    const cm = state.objects.get('ConfigMap/kube-system/kube-proxy');
    $('config').textContent = cm
      ? `ConfigMap kube-system/kube-proxy: mode ${cm.mode}, minSyncPeriod ${cm.minSyncPeriod}`
      : '';
  }

  function renderNodes() {
    const rows = ofKind('Node').map((n) => {
      const s = latestSample(n.name);
      return `<tr data-node="${esc(n.name)}"><td>${esc(n.name)}</td><td>${esc(n.internalIP)}</td><td>${esc(n.podCIDR)}</td><td>${esc(n.zone ?? '')}</td><td class="${n.ready ? 'yes' : 'no'}">${n.ready ? 'Ready' : 'NotReady'}</td><td>${s && s.up ? esc(s.mode) : '<span class="no">not answering</span>'}</td></tr>`;
    });
    $('nodes').innerHTML =
      `<table><thead><tr><th>node</th><th>InternalIP</th><th>pod CIDR</th><th>zone</th><th>status</th><th>kube-proxy mode</th></tr></thead><tbody>${rows.join('')}</tbody></table>`;
  }

  function renderPods() {
    const filter = $('pod-filter').value.trim();
    const pods = ofKind('Pod').filter(
      (p) => filter === '' || `${p.namespace}/${p.name} ${p.node} ${p.ip}`.includes(filter),
    );
    // Serving and terminating are the endpoint's conditions, as the proxies read them from the slices.
    const conds = new Map();
    for (const s of ofKind('EndpointSlice'))
      for (const e of s.endpoints) if (e.pod) conds.set(`${s.namespace}/${e.pod}`, e);
    const rows = pods.map((p) => {
      const e = conds.get(`${p.namespace}/${p.name}`);
      const flags = [
        p.ready ? '<span class="yes">ready</span>' : '<span class="no">not ready</span>',
        e ? (e.serving ? 'serving' : 'not serving') : '',
        p.terminating || (e && e.terminating) ? '<b>terminating</b>' : '',
      ].filter((x) => x !== '');
      return `<tr data-pod="${esc(`${p.namespace}/${p.name}`)}"><td>${esc(p.namespace)}</td><td>${esc(p.name)}</td><td>${esc(p.node)}</td><td>${esc(p.ip)}</td><td>${esc(p.phase)}</td><td>${flags.join(', ')}</td></tr>`;
    });
    $('pod-count').textContent = `(${pods.length})`;
    $('pods').innerHTML =
      `<table><thead><tr><th>namespace</th><th>pod</th><th>node</th><th>IP</th><th>phase</th><th>conditions</th></tr></thead><tbody>${rows.join('')}</tbody></table>`;
  }

  function renderServices() {
    const filter = $('svc-filter').value.trim();
    const all = ofKind('Service');
    const services = all.filter(
      (s) => filter === '' || `${s.namespace}/${s.name} ${s.clusterIP}`.includes(filter),
    );
    const slices = new Map();
    for (const s of ofKind('EndpointSlice')) {
      const k = `${s.namespace}/${s.service}`;
      slices.set(k, [...(slices.get(k) ?? []), s]);
    }
    const rows = services.map((s) => {
      const eps = (slices.get(`${s.namespace}/${s.name}`) ?? []).flatMap((x) => x.endpoints);
      const epText = eps
        .map((e) => {
          const cls = e.terminating ? 'ep terminating' : e.ready ? 'ep' : 'ep not-ready';
          const title = `${e.pod ?? ''} on ${e.node ?? '?'}: ready=${e.ready} serving=${e.serving} terminating=${e.terminating}`;
          return `<span class="${cls}" title="${esc(title)}">${esc(e.address)}</span>`;
        })
        .join('');
      const ports = s.ports
        .map((p) => `${p.port}${p.nodePort ? `:${p.nodePort}` : ''}/${p.protocol}→${p.targetPort}`)
        .join(', ');
      const policy = [
        `internal ${s.internalTrafficPolicy}`,
        s.externalTrafficPolicy ? `external ${s.externalTrafficPolicy}` : '',
        s.trafficDistribution ? `distribution ${s.trafficDistribution}` : '',
      ]
        .filter((x) => x !== '')
        .join('; ');
      return `<tr data-service="${esc(`${s.namespace}/${s.name}`)}"><td>${esc(s.namespace)}/${esc(s.name)}</td><td>${esc(s.type)}</td><td>${esc(s.clusterIP)}</td><td>${esc(ports)}</td><td>${esc(policy)}</td><td>${epText || '<span class="no">none</span>'}</td></tr>`;
    });
    $('svc-count').textContent = `(${all.length})`;
    $('svc-count').dataset.count = String(all.length);
    $('services').innerHTML =
      `<table><thead><tr><th>Service</th><th>type</th><th>ClusterIP</th><th>ports</th><th>traffic policies</th><th>endpoints</th></tr></thead><tbody>${rows.join('')}</tbody></table>`;
  }

  /** Keeps a <select>'s choice when its options are redrawn. */
  function fillSelect(select, options) {
    const keep = select.value;
    const same =
      select.options.length === options.length &&
      options.every((o, i) => select.options[i].value === o.value);
    if (same) return;
    select.innerHTML = options
      .map((o) => `<option value="${esc(o.value)}">${esc(o.label)}</option>`)
      .join('');
    if (options.some((o) => o.value === keep)) select.value = keep;
  }

  function renderPickers() {
    const services = ofKind('Service');
    fillSelect(
      $('explain-service'),
      services.map((s) => ({ value: `${s.namespace}/${s.name}`, label: `${s.namespace}/${s.name}` })),
    );
    const from = [{ value: 'client', label: 'client (the host outside the cluster)' }];
    for (const p of ofKind('Pod'))
      if (p.phase === 'Running' && p.ip !== '' && p.namespace !== 'kube-system')
        from.push({
          value: `${p.namespace}/${p.name}`,
          label: `${p.namespace}/${p.name} (${p.ip}, ${p.node})`,
        });
    fillSelect($('trace-from'), from);
    const to = [];
    const nodes = ofKind('Node');
    for (const s of services)
      for (const p of s.ports) {
        if (s.clusterIP && s.clusterIP !== 'None')
          to.push({
            value: `${s.clusterIP}:${p.port}`,
            label: `${s.namespace}/${s.name}:${p.name || p.port} (ClusterIP ${s.clusterIP}:${p.port})`,
          });
        if (p.nodePort)
          for (const n of nodes)
            to.push({
              value: `${n.name}:${p.nodePort}`,
              label: `${s.namespace}/${s.name}:${p.name || p.port} (NodePort ${p.nodePort} on ${n.name})`,
            });
      }
    fillSelect($('trace-to'), to);
  }

  // ---- charts ----
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

  function latestSample(node) {
    const list = state.samples[node] ?? [];
    return list[list.length - 1];
  }

  function windowStart() {
    return Date.now() - (state.lab?.windowMs ?? 300000);
  }

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

  function renderCharts() {
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

  // ---- ruleset ----
  function renderRuleset() {
    const nodes = state.lab?.nodes.map((n) => n.name) ?? [];
    if (state.rulesetNode === undefined || !nodes.includes(state.rulesetNode)) state.rulesetNode = nodes[0];
    const tabs = nodes.map((n) =>
      el('button', {
        type: 'button',
        'aria-pressed': n === state.rulesetNode ? 'true' : 'false',
        text: n,
        onclick: () => {
          state.rulesetNode = n;
          mark('ruleset');
        },
      }),
    );
    $('ruleset-tabs').replaceChildren(...tabs);
    const c = state.rulesets.get(state.rulesetNode);
    const panel = $('ruleset');
    if (!c) {
      $('ruleset-head').textContent = 'no capture yet (the first comes after the proxy’s next sync)';
      $('ruleset-text').textContent = '';
      panel.dataset.holds = '';
      return;
    }
    const holds = [c.holds.nftables ? 'nftables' : '', c.holds.iptables ? 'iptables' : ''].filter((x) => x);
    panel.dataset.holds = holds.join(' ');
    panel.dataset.captured = String(c.t);
    panel.dataset.why = c.why;
    const d = c.diff;
    const what = {
      sync: 'the last sync',
      'after-sync': 'the last sync and what followed',
      poll: 'since the read before,',
    }[c.why];
    const summary = !d
      ? 'first read'
      : d.added.length + d.removed.length === 0
        ? `${what} changed nothing here`
        : `${what} changed +${d.added.length} −${d.removed.length} lines${d.exact ? '' : ' (most of it: compared as sets)'}`;
    const when = {
      sync: 'right after its sync',
      'after-sync': 'a few seconds after its sync (what the proxy did after it: leftovers, stale chains)',
      poll: 'without a sync (changed by hand, or by the proxy between syncs)',
    }[c.why];
    $('ruleset-head').replaceChildren(
      el('div', {
        text: `node ${c.node}, read ${time(c.t)} ${when}: holds ${holds.join(' and ') || 'no kube-proxy objects'}; ${summary}`,
      }),
      el('div', { class: 'cmd', text: c.commands.map((x) => `$ ${x}`).join('   ') }),
    );
    const added = new Set(d ? d.added : []);
    const removedBefore = new Map();
    for (const r of d ? d.removed : [])
      removedBefore.set(r.before, [...(removedBefore.get(r.before) ?? []), r.line]);
    const onlyChanges = $('ruleset-changes').checked;
    const changed = (i) => added.has(i) || removedBefore.has(i);
    const near = (i) => {
      for (let j = i - 3; j <= i + 3; j++) if (changed(j)) return true;
      return false;
    };
    // Consecutive lines of one kind go in one node: a ruleset of 1,000 Services is a few nodes, not 10,000.
    const runs = [];
    const push = (kind, line) => {
      const last = runs[runs.length - 1];
      if (last && last.kind === kind) last.lines.push(line);
      else runs.push({ kind, lines: [line] });
    };
    for (let i = 0; i <= c.lines.length; i++) {
      for (const line of removedBefore.get(i) ?? []) push('del', `- ${line}`);
      if (i === c.lines.length) break;
      const line = c.lines[i];
      if (added.has(i)) push('add', `+ ${line}`);
      else if (!onlyChanges || near(i)) push('plain', `  ${line}`);
      else if (runs[runs.length - 1]?.kind !== 'gap') push('gap', '  …');
    }
    const frag = document.createDocumentFragment();
    for (const r of runs) {
      const text = r.lines.join('\n');
      frag.append(
        r.kind === 'plain' ? document.createTextNode(`${text}\n`) : el('span', { class: r.kind, text }),
      );
    }
    $('ruleset-text').replaceChildren(frag);
    const first = $('ruleset-text').querySelector('.add') ?? $('ruleset-text').querySelector('.del');
    if (first) $('ruleset-text').scrollTop = Math.max(0, first.offsetTop - $('ruleset-text').offsetTop - 60);
  }
  $('ruleset-changes').addEventListener('change', () => mark('ruleset'));

  // ---- actions: experiments, explain, trace ----
  async function post(path, body) {
    const r = await fetch(path, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-lab-token': token },
      body: JSON.stringify(body ?? {}),
    });
    const value = await r.json().catch(() => ({ error: `HTTP ${r.status}` }));
    if (!r.ok) throw new Error(value.error ?? `HTTP ${r.status}`);
    return value;
  }

  function renderExperiments() {
    const running = [...state.runs.values()].some((r) => r.state === 'running');
    $('experiment-buttons').replaceChildren(
      ...state.experiments.map((x) =>
        el(
          'button',
          {
            type: 'button',
            'data-experiment': x.id,
            disabled: running,
            title: x.commands.join('\n'),
            onclick: () => {
              post(`/api/run/${x.id}`).catch((e) => showRunError(x, e));
            },
          },
          x.title,
        ),
      ),
    );
    const runs = [...state.runs.values()].sort((a, b) => b.id - a.id).slice(0, 8);
    $('runs').replaceChildren(
      ...runs.map((r) =>
        el(
          'div',
          { class: 'run', 'data-state': r.state, 'data-experiment': r.experiment, 'data-run': r.id },
          el('div', {}, el('b', { text: r.title }), ' ', el('span', { class: 'state', text: r.state })),
          ...r.steps.map((s) =>
            el(
              'div',
              {},
              el('div', { class: 'cmd', text: `$ ${s.command}` }),
              s.output !== undefined && s.output !== '' ? el('pre', { text: s.output }) : undefined,
              s.code !== undefined && s.code !== 0
                ? el('div', { class: 'error', text: `exit ${s.code}` })
                : undefined,
            ),
          ),
        ),
      ),
    );
  }

  function showRunError(x, e) {
    $('runs').prepend(el('div', { class: 'error', text: `${x.title}: ${e.message}` }));
  }

  function trafficView(title, t, owners) {
    if (!t) return undefined;
    const name = (ep) => {
      const o = owners.get(ep.replace(/:\d+$/, ''));
      return o ? ` (${o.pod ?? '?'} on ${o.node ?? '?'})` : '';
    };
    return el(
      'div',
      { class: 'traffic' },
      el('div', {}, el('b', { text: title }), `: policy ${t.policy}`),
      el(
        'div',
        {},
        'endpoints used: ',
        t.endpoints.length === 0
          ? el('span', { class: 'no', text: 'none' })
          : t.endpoints.map((ep) => el('span', { class: 'ep', 'data-used': ep, text: `${ep}${name(ep)}` })),
      ),
      t.excluded.length > 0
        ? el(
            'ul',
            {},
            t.excluded.map((x) =>
              el(
                'li',
                { 'data-excluded': x.endpoint },
                el('span', { class: 'ep not-ready', text: x.endpoint }),
                ` ${x.reason}`,
              ),
            ),
          )
        : undefined,
      t.notes.map((n) => el('div', { class: 'hint', text: `note: ${n}` })),
      t.noEndpoints
        ? el('div', { class: 'error', text: `no endpoint: ${t.noEndpoints.verdict}: ${t.noEndpoints.why}` })
        : undefined,
    );
  }

  $('explain-run').addEventListener('click', async () => {
    const out = $('explain-out');
    const [ns, name] = $('explain-service').value.split('/');
    out.replaceChildren(el('div', { class: 'hint', text: `explaining ${ns}/${name}…` }));
    out.dataset.state = 'running';
    try {
      const r = await post('/api/explain', { namespace: ns, name });
      const owners = endpointOwners();
      out.replaceChildren(
        el('div', { class: 'cmd', text: `$ ${r.command}` }),
        ...r.result.nodes.map((n) =>
          el(
            'div',
            { class: 'explained-node', 'data-node': n.node },
            el('h3', { text: `node ${n.node}${n.zone ? `, zone ${n.zone}` : ''} (${n.mode}, ${n.family})` }),
            n.ports.length === 0
              ? el('div', { class: 'hint', text: 'no port this proxy handles' })
              : undefined,
            ...n.ports.map((p) =>
              el(
                'div',
                { class: 'explained-port' },
                el(
                  'div',
                  {},
                  el('b', { text: p.servicePort }),
                  ` ${p.protocol}, ClusterIP ${p.frontends.clusterIP}`,
                ),
                trafficView('ClusterIP traffic', p.internal, owners),
                trafficView('external traffic', p.external, owners),
              ),
            ),
          ),
        ),
      );
      out.dataset.state = 'done';
    } catch (e) {
      out.replaceChildren(el('div', { class: 'error', text: e.message }));
      out.dataset.state = 'error';
    }
  });

  $('trace-run').addEventListener('click', async () => {
    const out = $('trace-out');
    const from = $('trace-from').value;
    const to = $('trace-to').value;
    out.replaceChildren(el('div', { class: 'hint', text: `tracing ${from} → ${to} (takes a few seconds)…` }));
    out.dataset.state = 'running';
    try {
      const r = await post('/api/trace', { from, to });
      out.replaceChildren(...drawTrace(r));
      out.dataset.state = 'done';
    } catch (e) {
      out.replaceChildren(el('div', { class: 'error', text: e.message }));
      out.dataset.state = 'error';
    }
  });

  function drawTrace(r) {
    const t = r.result;
    const owners = endpointOwners();
    const answeredBy = /pod=(\S+)/.exec(t.request.answer ?? '')?.[1];
    const fromPod = state.objects.get(`Pod/${t.from}`);
    const flows = [];
    const source = el(
      'div',
      { class: 'box' },
      el('b', { text: t.from }),
      el('small', {
        text: fromPod ? `${fromPod.ip} on ${fromPod.node}` : t.from === 'client' ? 'outside the cluster' : '',
      }),
      el('small', { text: `GET ${t.url}` }),
    );
    if (t.nodes.length === 0)
      flows.push(
        el(
          'div',
          { class: 'flow' },
          source,
          el('span', { class: 'arrow', text: '→' }),
          el('div', { class: 'box failed', text: 'no node saw the packet' }),
        ),
      );
    for (const n of t.nodes)
      for (const p of n.report.packets) {
        const owner = p.endpoint ? owners.get(p.endpoint.replace(/:\d+$/, '')) : undefined;
        const ok = p.outcome === 'sent-to-endpoint';
        flows.push(
          el(
            'div',
            {
              class: 'flow',
              'data-node': n.node,
              'data-outcome': p.outcome,
              'data-endpoint': p.endpoint ?? '',
            },
            source.cloneNode(true),
            el('span', { class: 'arrow', text: '→' }),
            el(
              'div',
              { class: 'box node' },
              el('b', { text: `node ${n.node}` }),
              el('small', { text: p.frontend ? `frontend ${p.frontend}` : '' }),
              el('small', { text: p.servicePort ? `Service port ${p.servicePort}` : '' }),
              el(
                'ol',
                { class: 'steps' },
                p.path.map((s) => el('li', { text: `${s.chain}${s.verdict ? ` → ${s.verdict}` : ''}` })),
              ),
            ),
            el('span', { class: 'arrow', text: '→' }),
            el(
              'div',
              { class: ok ? 'box endpoint' : 'box failed', 'data-answered-by': answeredBy ?? '' },
              el('b', { text: ok ? `endpoint ${p.endpoint}` : p.outcome }),
              el('small', { text: owner ? `pod ${owner.pod ?? '?'} on ${owner.node ?? '?'}` : '' }),
              el('small', {
                text: p.masqueraded
                  ? `masqueraded${p.masqueradedTo ? ` to ${p.masqueradedTo}` : ''}`
                  : 'source kept',
              }),
            ),
          ),
          el(
            'ul',
            { class: 'hint' },
            p.why.map((w) => el('li', { text: w })),
          ),
        );
      }
    return [
      el('div', { class: 'cmd', text: `$ ${r.command}` }),
      el('div', {
        class: t.request.ok ? 'answer' : 'error',
        text: t.request.ok ? `answered: ${t.request.answer}` : `no answer: ${t.request.answer}`,
      }),
      ...flows,
    ];
  }

  $('pod-filter').addEventListener('input', () => mark('cluster'));
  $('svc-filter').addEventListener('input', () => mark('cluster'));

  // ---- the feed ----
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
})();
