// What the page asks the server to do: the experiments (their runs are pushed back), explain and trace (drawn here
// from the CLI's JSON answer).
import { $, el } from './dom.js';
import { endpointOwners, state, token } from './state.js';

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

export function renderExperiments() {
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
          n.ports.length === 0 ? el('div', { class: 'hint', text: 'no port this proxy handles' }) : undefined,
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
