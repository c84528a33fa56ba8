// The cluster's tables (nodes, pods, Services with their endpoints), the pickers of the explain and trace panels,
// and the kube-proxy ConfigMap's line in the header.
import { $, esc } from './dom.js';
import { latestSample, mark, ofKind, state } from './state.js';

function renderConfig() {
  const cm = state.objects.get('ConfigMap/kube-system/kube-proxy');
  $('config').textContent = cm
    ? `ConfigMap kube-system/kube-proxy: mode ${cm.mode}, minSyncPeriod ${cm.minSyncPeriod}`
    : '';
}

function renderNodes() {
  const rows = ofKind('Node').map((n) => {
    const s = latestSample(n.name);
    return `<tr data-node="${esc(n.name)}"><td>${esc(n.name)}</td><td>${esc(n.nodeIPs)}</td><td>${esc(n.podCIDRs)}</td><td>${esc(n.zone ?? '')}</td><td class="${n.ready ? 'yes' : 'no'}">${n.ready ? 'Ready' : 'NotReady'}</td><td>${s && s.up ? esc(s.mode) : '<span class="no">not answering</span>'}</td></tr>`;
  });
  $('nodes').innerHTML =
    `<table><thead><tr><th>node</th><th>node IPs</th><th>pod CIDRs</th><th>zone</th><th>status</th><th>kube-proxy mode</th></tr></thead><tbody>${rows.join('')}</tbody></table>`;
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
    select.options.length === options.length && options.every((o, i) => select.options[i].value === o.value);
  if (same) return;
  select.innerHTML = options.map((o) => `<option value="${esc(o.value)}">${esc(o.label)}</option>`).join('');
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

export function renderCluster() {
  renderNodes();
  renderPods();
  renderServices();
  renderPickers();
  renderConfig();
}

$('pod-filter').addEventListener('input', () => mark('cluster'));
$('svc-filter').addEventListener('input', () => mark('cluster'));
