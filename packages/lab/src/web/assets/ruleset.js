// The programmed ruleset of the chosen node, with what the last sync changed highlighted.
import { $, el, time } from './dom.js';
import { mark, state } from './state.js';

export function renderRuleset() {
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
    opened: 'since the read before,',
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
    opened: 'when a page opened (the tables are read only while a page is open)',
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
