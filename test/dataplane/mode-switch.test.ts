// Switching a node's proxy mode under continuous traffic: iptables → nftables → iptables, as the agent does it
// (src/sync/mode-switch.ts): the new mode's first full sync while the old mode's rules still answer, and only
// then the old mode's cleanup. Requests from a pod to a ClusterIP and from outside to a NodePort run throughout;
// every one must be answered.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { cleanupIptables } from '../../packages/agent/src/backends/iptables/cleanup.js';
import { cleanupNftables } from '../../packages/agent/src/backends/nftables/backend.js';
import type { CommandRunner } from '../../packages/agent/src/netfilter/command.js';
import { OtherModeCleanup } from '../../packages/agent/src/sync/mode-switch.js';
import { kernelOptions, runPrefix } from '../helpers/kernel.js';
import type { TestCluster } from './harness/cluster.js';
import { makeTestCluster, removeTestCluster } from './harness/cluster.js';
import { endpointSlice, httpPort, service } from './harness/objects.js';
import { errorKinds, podsThatAnswered } from './harness/outcomes.js';
import type { RequestOutcome } from './harness/traffic.js';
import { waitFor } from '../helpers/wait-for.js';

const options = kernelOptions(['ip', 'nft', 'iptables-restore', 'iptables-save', 'iptables']);

/** A command run in a node, and what its output shows while some of a mode's rules are there. */
interface Probe {
  readonly cmd: string;
  readonly args: readonly string[];
  readonly pattern: RegExp;
}

async function has(commands: CommandRunner, { cmd, args, pattern }: Probe): Promise<boolean> {
  const r = await commands.run(cmd, args);
  return r.code === 0 && pattern.test(r.stdout);
}

/** The two modes the test switches between. */
type SwitchedMode = 'iptables' | 'nftables';

/**
 * Per mode: the agent's cleanup of its rules, what shows that they are programmed (`present`), and what shows
 * that nothing of them is left (`gone`, named `what` in the message). nftables' two probes differ: after a
 * cleanup the whole table must be gone, not only its Services.
 */
const MODES: Record<
  SwitchedMode,
  { cleanup: (commands: CommandRunner) => Promise<unknown>; what: string; present: Probe; gone: Probe }
> = {
  iptables: {
    cleanup: (commands) => cleanupIptables(commands),
    what: 'iptables rules',
    present: { cmd: 'iptables-save', args: ['-t', 'nat'], pattern: /KUBE-SERVICES/ },
    gone: { cmd: 'iptables-save', args: ['-t', 'nat'], pattern: /KUBE-SERVICES/ },
  },
  nftables: {
    cleanup: (commands) => cleanupNftables(commands),
    what: 'nft table',
    present: { cmd: 'nft', args: ['list', 'table', 'ip', 'kube-proxy'], pattern: /service-ips/ },
    gone: { cmd: 'nft', args: ['list', 'tables'], pattern: /kube-proxy/ },
  },
};

/**
 * Switches every node to `mode` as the agent does: each node's cleanup of `from` waits for its first full sync in
 * the new mode. Then, on every node, `from`'s rules are gone and `mode`'s are there.
 */
async function switchTo(cluster: TestCluster, from: SwitchedMode, mode: SwitchedMode): Promise<void> {
  const cleanups = new Map<string, OtherModeCleanup>();
  await cluster.switchMode(mode, async (node, commands) => {
    const gate = new OtherModeCleanup(['IPv4'], async () => void (await MODES[from].cleanup(commands)));
    cleanups.set(node.name, gate);
    gate.onSync({ family: 'IPv4', ok: true, full: true });
    await gate.done;
  });
  assert.equal(cleanups.size, 2);
  for (const node of cluster.nodes) {
    const commands = cluster.nodeRunner(node.name);
    assert.equal(await has(commands, MODES[from].gone), false, `${node.name}: ${MODES[from].what} gone`);
    assert.equal(await has(commands, MODES[mode].present), true);
  }
}

/**
 * iptables → nftables → iptables while a pod sends to the ClusterIP and the client to node-0's NodePort, with
 * requests answered in each mode before the next step; resolves with each stream's outcomes.
 */
async function switchBackAndForth(cluster: TestCluster): Promise<RequestOutcome[][]> {
  const spec = { proto: 'http', port: 80, count: 4000, intervalMs: 10, timeoutMs: 5000 } as const;
  const fromPod = cluster.traffic(cluster.pod('pod-0-1').namespace, { ...spec, ip: '198.19.0.40' });
  const fromOutside = cluster.traffic(cluster.client.namespace, {
    ...spec,
    ip: cluster.node('node-0').ip,
    port: 30040,
  });
  const streams = [fromPod, fromOutside];
  const moreRequests = async (what: string): Promise<void> => {
    const before = streams.map((s) => s.outcomes().length);
    await waitFor(what, () =>
      streams.every((s, i) => s.outcomes().length >= (before[i] ?? 0) + 30) ? true : undefined,
    );
  };
  let outcomes: RequestOutcome[][];
  try {
    await moreRequests('traffic flowing in iptables mode');
    await switchTo(cluster, 'iptables', 'nftables');
    await moreRequests('traffic flowing in nftables mode');
    await switchTo(cluster, 'nftables', 'iptables');
    await moreRequests('traffic flowing in iptables mode again');
  } finally {
    // Stopped before the caller removes the Service, so that the removal fails no request.
    outcomes = await Promise.all(streams.map((s) => s.stop()));
  }
  return outcomes;
}

describe('mode switch under traffic', options, () => {
  const prefix = runPrefix();
  let c: TestCluster | undefined;

  before(async () => {
    c = await makeTestCluster({ mode: 'iptables', prefix, nodes: 2, podsPerNode: 2, families: ['IPv4'] });
  });
  after(() => removeTestCluster(c, prefix));

  test('iptables → nftables → iptables: every request answered, the old rules gone after each switch', async () => {
    assert.ok(c);
    const cluster = c;
    const svc = service({ name: 'switch', clusterIP: '198.19.0.40', ports: [httpPort({ nodePort: 30040 })] });
    const backends = ['pod-0-0', 'pod-1-0', 'pod-1-1'];
    const slice = endpointSlice(
      svc,
      backends.map((p) => cluster.endpoint(p, 'IPv4')),
    );
    const outcomes = await cluster.withObjects({ services: [svc], slices: [slice] }, () =>
      switchBackAndForth(cluster),
    );
    for (const [i, o] of outcomes.entries()) {
      assert.ok(o.length >= 90, `stream ${i}: ${o.length} requests`);
      assert.deepEqual(errorKinds(o), {}, `stream ${i}: no request failed across both switches`);
      assert.deepEqual(podsThatAnswered(o), [...backends].sort());
    }
  });
});
