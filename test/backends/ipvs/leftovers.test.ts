// Switching between the two iptables-based modes, and --cleanup, on the real tools in a test namespace: iptables
// mode and ipvs mode share chains (nat KUBE-SERVICES, KUBE-POSTROUTING, KUBE-MARK-MASQ; filter KUBE-FORWARD,
// KUBE-PROXY-FIREWALL) and some jumps, so removing the other mode's leftovers must keep those and remove the rest;
// --cleanup removes everything, the ipsets last. Each mode's state is laid down from `render`'s output as a node
// would have it (this kernel has no IPVS and no dummy links: kube-ipvs0 is stood in by a veth of that name).
import { afterEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { renderCommand } from '../../../packages/agent/src/cli/render.js';
import { removeAllModes, removeOtherModes } from '../../../packages/agent/src/cli/mode-leftovers.js';
import { netnsCommandRunner } from '../../../packages/agent/src/netfilter/command.js';
import { recordingFileIO } from '../../helpers/command-io.js';
import { kernelNamespaces } from '../../helpers/kernel.js';

const suite = kernelNamespaces(['node'], ['ip', 'ipset', 'iptables-restore', 'iptables-save']);
const [NS] = suite.names;
const EXAMPLE = readFileSync(new URL('../../../examples/cluster.yaml', import.meta.url), 'utf8');
const BASE = ['-f', 'cluster.yaml', '--cluster-cidr', '198.18.8.0/21', '--service-cidrs', '198.19.0.0/16'];

function render(args: string[]): string {
  const { io, printed } = recordingFileIO({ 'cluster.yaml': EXAMPLE }, 'worker');
  assert.equal(renderCommand([...BASE, ...args], io), 0, printed.stderr);
  return printed.stdout;
}

function inNode(cmd: string, args: readonly string[], input?: string): string {
  return execFileSync('ip', ['netns', 'exec', NS, cmd, ...args], { encoding: 'utf8', input });
}

/** iptables mode as a node has it: the restore input, then the jumps. */
function layIptablesMode(): void {
  inNode('iptables-restore', ['--noflush'], render(['--proxy-mode', 'iptables']));
  inNode('sh', ['-e'], render(['--proxy-mode', 'iptables', '--jumps-script']));
}

/** ipvs mode as a node has it, but for IPVS itself: kube-ipvs0, the sets, the rules, the jumps. */
function layIpvsMode(): void {
  const text = render(['--proxy-mode', 'ipvs']);
  inNode('ip', ['link', 'add', 'kube-ipvs0', 'type', 'veth', 'peer', 'name', 'kpts-ipvs-peer']);
  inNode('ipset', ['restore', '-exist'], text.slice(text.indexOf('# ipsets'), text.indexOf('# IPVS')));
  const rules = text.slice(text.indexOf('# iptables ('));
  inNode('iptables-restore', ['--noflush'], rules);
  // As the backend ensures them: inserted only when the same rule is not there already (-C, else -I).
  const jumps = rules
    .split('\n')
    .filter((l) => l.startsWith('# iptables -t '))
    .map((l) => l.slice(2))
    .map((l) => `${l.replace(' -I ', ' -C ')} 2>/dev/null || ${l}`);
  inNode('sh', ['-e'], jumps.join('\n') + '\n');
}

/** "table chain" of every KUBE- chain, and every jump line from a built-in chain into one. */
function xtablesState(): { chains: string[]; jumps: string[] } {
  const chains: string[] = [];
  const jumps: string[] = [];
  let table = '';
  for (const line of inNode('iptables-save', []).split('\n')) {
    if (line.startsWith('*')) table = line.slice(1);
    const chain = /^:(KUBE-\S+)/.exec(line)?.[1];
    if (chain !== undefined) chains.push(`${table} ${chain}`);
    if (/^-A (PREROUTING|INPUT|FORWARD|OUTPUT|POSTROUTING) .*-j KUBE-/.test(line))
      jumps.push(`${table} ${line}`);
  }
  return { chains: chains.sort(), jumps: jumps.sort() };
}

function ipsets(): string[] {
  return inNode('ipset', ['list', '-n'])
    .split('\n')
    .filter((l) => l !== '')
    .sort();
}

function reset(): void {
  for (const table of ['nat', 'filter']) {
    inNode('iptables', ['-t', table, '-F']);
    inNode('iptables', ['-t', table, '-X']);
  }
  inNode('ipset', ['destroy']);
  if (/kube-ipvs0/.test(inNode('ip', ['-o', 'link', 'show']))) inNode('ip', ['link', 'del', 'kube-ipvs0']);
}

describe('leftovers of the iptables-based modes', suite.options, () => {
  suite.hooks();
  afterEach(reset);
  const commands = () => netnsCommandRunner(NS);

  test('ipvs mode after iptables mode removes iptables mode’s own chains and jumps, keeps the shared ones', async () => {
    layIptablesMode();
    layIpvsMode();
    const before = xtablesState();
    assert.ok(
      before.chains.some((c) => /^nat KUBE-SVC-/.test(c)),
      'iptables mode’s service chains are there',
    );
    const reports = await removeOtherModes('ipvs', commands());
    for (const r of reports) assert.deepEqual(r.errors, [], `${r.mode}: ${r.errors.join('; ')}`);
    const after = xtablesState();
    assert.deepEqual(after.chains, [
      'filter KUBE-FORWARD',
      'filter KUBE-IPVS-FILTER',
      'filter KUBE-IPVS-OUT-FILTER',
      'filter KUBE-NODE-PORT',
      'filter KUBE-PROXY-FIREWALL',
      'filter KUBE-SOURCE-RANGES-FIREWALL',
      'nat KUBE-LOAD-BALANCER',
      'nat KUBE-MARK-MASQ',
      'nat KUBE-NODE-PORT',
      'nat KUBE-POSTROUTING',
      'nat KUBE-SERVICES',
    ]);
    // Every jump left is ipvs mode's own (no --ctstate NEW: iptables mode's filter jumps carry it).
    assert.equal(after.jumps.length, 9, after.jumps.join('\n'));
    assert.ok(
      after.jumps.every((j) => !j.includes('--ctstate NEW')),
      after.jumps.join('\n'),
    );
    assert.equal(ipsets().length, 17, 'ipvs mode’s sets stay');
  });

  test('iptables mode after ipvs mode removes ipvs mode’s link, sets and own chains, keeps the shared ones', async () => {
    layIpvsMode();
    layIptablesMode();
    const reports = await removeOtherModes('iptables', commands());
    for (const r of reports) assert.deepEqual(r.errors, [], `${r.mode}: ${r.errors.join('; ')}`);
    const after = xtablesState();
    assert.ok(
      !after.chains.some((c) => /IPVS|LOAD-BALANCER|SOURCE-RANGES|KUBE-NODE-PORT$/.test(c)),
      after.chains.join('\n'),
    );
    assert.ok(
      after.chains.includes('nat KUBE-SERVICES') && after.chains.includes('filter KUBE-PROXY-FIREWALL'),
    );
    assert.ok(
      after.chains.some((c) => /^nat KUBE-SVC-/.test(c)),
      'iptables mode’s own chains stay',
    );
    assert.deepEqual(ipsets(), []);
    assert.doesNotMatch(inNode('ip', ['-o', 'link', 'show']), /kube-ipvs0/);
  });

  test('without kube-ipvs0 another mode leaves IPVS-mode state alone (it is not ipvs mode’s)', async () => {
    layIpvsMode();
    inNode('ip', ['link', 'del', 'kube-ipvs0']);
    const reports = await removeOtherModes('iptables', commands());
    const ipvs = reports.find((r) => r.mode === 'ipvs');
    assert.deepEqual(ipvs, { mode: 'ipvs', removed: [], errors: [] });
    assert.equal(ipsets().length, 17);
  });

  test('nftables mode after iptables mode (no ipvs mode here) removes all of iptables mode, shared chains too', async () => {
    layIptablesMode();
    const reports = await removeOtherModes('nftables', commands());
    for (const r of reports) assert.deepEqual(r.errors, [], `${r.mode}: ${r.errors.join('; ')}`);
    assert.deepEqual(xtablesState(), { chains: [], jumps: [] });
  });

  test('nftables mode after ipvs mode removes ipvs mode whole', async () => {
    layIpvsMode();
    const reports = await removeOtherModes('nftables', commands());
    for (const r of reports) assert.deepEqual(r.errors, [], `${r.mode}: ${r.errors.join('; ')}`);
    assert.deepEqual(xtablesState(), { chains: [], jumps: [] });
    assert.deepEqual(ipsets(), []);
    assert.doesNotMatch(inNode('ip', ['-o', 'link', 'show']), /kube-ipvs0/);
  });

  test('--cleanup removes both modes whole: no KUBE- chain, no jump, no set, no kube-ipvs0', async () => {
    layIptablesMode();
    layIpvsMode();
    const reports = await removeAllModes(commands());
    for (const r of reports) assert.deepEqual(r.errors, [], `${r.mode}: ${r.errors.join('; ')}`);
    assert.deepEqual(xtablesState(), { chains: [], jumps: [] });
    assert.deepEqual(ipsets(), []);
    assert.doesNotMatch(inNode('ip', ['-o', 'link', 'show']), /kube-ipvs0/);
  });
});
