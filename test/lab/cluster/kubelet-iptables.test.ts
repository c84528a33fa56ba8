// The lab kubelet's iptables chains (packages/lab/src/cluster/kubelet-iptables.ts): the Monitor round's decision
// on a fake client (present: nothing done; mangle's canary gone: wait for the others, then every chain again; a
// partial deletion: upstream's 5 s, then made anyway), failures logged once, and in a namespace of its own with
// the real iptables: made at start, the canary deleted, back after a round.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { netnsCommandRunner, hostCommandRunner } from '../../../packages/agent/src/netfilter/command.js';
import type { IPFamily } from '../../../packages/agent/src/model/ip.js';
import { recordingLogger } from '../../../packages/agent/src/util/logger.js';
import {
  KUBE_IPTABLES_HINT,
  KUBE_KUBELET_CANARY,
  KubeletIptables,
  kubeletIptablesRound,
  type KubeletIptablesClient,
} from '../../../packages/lab/src/cluster/kubelet-iptables.js';
import { kernelNamespaces } from '../../helpers/kernel.js';

/** A client over a set of "table CHAIN" strings, recording the chains it made. */
function fakeClient(
  chains: Set<string>,
  family: IPFamily = 'IPv4',
): KubeletIptablesClient & { made: string[] } {
  const made: string[] = [];
  return {
    family,
    made,
    ensureChain: (table, chain) => {
      const key = `${table} ${chain}`;
      const had = chains.has(key);
      if (!had) made.push(key);
      chains.add(key);
      return Promise.resolve(had);
    },
    chainExists: (table, chain) => Promise.resolve(chains.has(`${table} ${chain}`)),
  };
}

const ALL = [
  `mangle ${KUBE_IPTABLES_HINT}`,
  `mangle ${KUBE_KUBELET_CANARY}`,
  `nat ${KUBE_KUBELET_CANARY}`,
  `filter ${KUBE_KUBELET_CANARY}`,
];
const noDelay = (): Promise<void> => Promise.resolve();

test('a round: nothing done while mangle’s canary is there', async () => {
  const c = fakeClient(new Set(ALL));
  assert.equal(await kubeletIptablesRound(c, noDelay), 'present');
  assert.deepEqual(c.made, []);
});

test('a round: every KUBE- chain deleted: the hint and the three canaries are made again', async () => {
  const c = fakeClient(new Set());
  assert.equal(await kubeletIptablesRound(c, noDelay), 'recreated');
  assert.deepEqual(c.made.sort(), [...ALL].sort());
});

test('a round waits, 100 ms apart, for a flush in progress to reach nat and filter before making the chains', async () => {
  const chains = new Set([`nat ${KUBE_KUBELET_CANARY}`, `filter ${KUBE_KUBELET_CANARY}`]);
  const waits: number[] = [];
  const c = fakeClient(chains);
  // The flush removes nat's canary during the first wait, filter's during the second.
  const delay = (ms: number): Promise<void> => {
    waits.push(ms);
    chains.delete(waits.length === 1 ? `nat ${KUBE_KUBELET_CANARY}` : `filter ${KUBE_KUBELET_CANARY}`);
    return Promise.resolve();
  };
  assert.equal(await kubeletIptablesRound(c, delay), 'recreated');
  assert.deepEqual(waits, [100, 100]);
  assert.deepEqual(c.made.sort(), [...ALL].sort());
});

test('a round: only mangle’s canary deleted: upstream’s 5 s (50 polls), then the chains anyway', async () => {
  const c = fakeClient(new Set([`nat ${KUBE_KUBELET_CANARY}`, `filter ${KUBE_KUBELET_CANARY}`]));
  let waits = 0;
  const delay = (): Promise<void> => {
    waits++;
    return Promise.resolve();
  };
  assert.equal(await kubeletIptablesRound(c, delay), 'recreated');
  assert.equal(waits, 50);
  assert.deepEqual(c.made.sort(), [`mangle ${KUBE_IPTABLES_HINT}`, `mangle ${KUBE_KUBELET_CANARY}`]);
});

test('failures are logged once per family until it works again; start never throws', async () => {
  const logger = recordingLogger();
  let broken = true;
  const chains = new Set<string>();
  const c = fakeClient(chains);
  const client: KubeletIptablesClient = {
    family: 'IPv6',
    ensureChain: (t, ch) => (broken ? Promise.reject(new Error('ip6tables: boom')) : c.ensureChain(t, ch)),
    chainExists: (t, ch) => (broken ? Promise.reject(new Error('ip6tables: boom')) : c.chainExists(t, ch)),
  };
  const k = new KubeletIptables({
    node: 'worker',
    commands: hostCommandRunner,
    variant: 'auto',
    logger,
    families: ['IPv6'],
    client: () => client,
    delay: noDelay,
    intervalMs: 3_600_000,
  });
  k.start();
  await k.round();
  await k.round();
  const warnings = () => logger.records.filter((r) => r.level === 'warn');
  assert.equal(warnings().length, 1, JSON.stringify(logger.records));
  assert.match(String(warnings()[0]?.fields.error), /boom/);
  broken = false;
  await k.round();
  assert.deepEqual([...chains].sort(), [...ALL].sort());
  broken = true;
  await k.round();
  assert.equal(warnings().length, 2, 'a new failure after a success is logged again');
  await k.stop();
});

const suite = kernelNamespaces(['node'], ['ip', 'iptables', 'ip6tables', 'iptables-save']);

describe('in a namespace of its own, with the host’s iptables', suite.options, () => {
  suite.hooks();
  const [ns] = suite.names;
  const run = netnsCommandRunner(ns);
  const save = async (cmd: string): Promise<string> => (await run.run(cmd, ['-t', 'mangle'])).stdout;

  test('the chains are made at start for both families; the canary deleted comes back after a round', async () => {
    const k = new KubeletIptables({
      node: 'node',
      commands: run,
      variant: 'auto',
      logger: recordingLogger(),
      intervalMs: 3_600_000,
    });
    k.start();
    // stop() awaits the first round, which made the chains.
    await k.stop();
    for (const cmd of ['iptables-save', 'ip6tables-save']) {
      const text = await save(cmd);
      assert.match(text, new RegExp(`^:${KUBE_IPTABLES_HINT} `, 'm'), `${cmd}: ${text}`);
      assert.match(text, new RegExp(`^:${KUBE_KUBELET_CANARY} `, 'm'), `${cmd}: ${text}`);
    }
    // What the e2e test does: every KUBE- chain goes.
    for (const table of ['mangle', 'nat', 'filter'])
      for (const chain of [KUBE_KUBELET_CANARY, ...(table === 'mangle' ? [KUBE_IPTABLES_HINT] : [])])
        assert.equal((await run.run('iptables', ['-t', table, '-X', chain])).code, 0);
    assert.doesNotMatch(await save('iptables-save'), /KUBE-/);
    await k.round();
    const text = await save('iptables-save');
    assert.match(text, new RegExp(`^:${KUBE_IPTABLES_HINT} `, 'm'), text);
    assert.match(text, new RegExp(`^:${KUBE_KUBELET_CANARY} `, 'm'), text);
    assert.match(
      (await run.run('iptables-save', ['-t', 'filter'])).stdout,
      new RegExp(`^:${KUBE_KUBELET_CANARY} `, 'm'),
    );
  });
});
