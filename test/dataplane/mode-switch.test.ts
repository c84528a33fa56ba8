// Switching a node's proxy mode under continuous traffic: iptables → nftables → iptables, as the agent does it
// (src/sync/mode-switch.ts): the new mode's first full sync while the old mode's rules still answer, and only
// then the old mode's cleanup. Requests from a pod to a ClusterIP and from outside to a NodePort run throughout;
// every one must be answered.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { cleanupIptables } from '../../packages/agent/src/backends/iptables/cleanup.js';
import { cleanupNftables } from '../../packages/agent/src/backends/nftables/backend.js';
import { hostCommandRunner } from '../../packages/agent/src/netfilter/command.js';
import type { CommandRunner } from '../../packages/agent/src/netfilter/command.js';
import { listNamespaces, sweepNamespaces } from '../../packages/netns/src/namespace.js';
import { OtherModeCleanup } from '../../packages/agent/src/sync/mode-switch.js';
import { kernelOptions, runPrefix } from '../helpers/kernel.js';
import type { DataplaneBackend } from './harness/backends.js';
import type { TestCluster } from './harness/cluster.js';
import { makeTestCluster } from './harness/cluster.js';
import { endpointSlice, httpPort, service } from './harness/objects.js';
import { errorKinds, podsThatAnswered } from './harness/outcomes.js';
import { waitFor } from '../helpers/wait-for.js';

const options = kernelOptions(['ip', 'nft', 'iptables-restore', 'iptables-save', 'iptables']);

async function has(commands: CommandRunner, cmd: string, args: string[], pattern: RegExp): Promise<boolean> {
  const r = await commands.run(cmd, args);
  return r.code === 0 && pattern.test(r.stdout);
}

describe('mode switch under traffic', options, () => {
  const prefix = runPrefix();
  let c: TestCluster | undefined;

  before(async () => {
    c = await makeTestCluster({ mode: 'iptables', prefix, nodes: 2, podsPerNode: 2, families: ['IPv4'] });
  });
  after(async () => {
    try {
      await c?.cleanup();
    } finally {
      await sweepNamespaces(hostCommandRunner, prefix + '-');
    }
    const left = (await listNamespaces(hostCommandRunner)).filter((n) => n.startsWith(prefix));
    assert.deepEqual(left, [], 'no namespace of the run is left');
  });

  test('iptables → nftables → iptables: every request answered, the old rules gone after each switch', async () => {
    assert.ok(c);
    const cluster = c;
    const svc = service({ name: 'switch', clusterIP: '198.19.0.40', ports: [httpPort({ nodePort: 30040 })] });
    const backends = ['pod-0-0', 'pod-1-0', 'pod-1-1'];
    const slice = endpointSlice(
      svc,
      backends.map((p) => cluster.endpoint(p, 'IPv4')),
    );
    await cluster.apply({ services: [svc], slices: [slice] });
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

    const switchTo = async (
      mode: DataplaneBackend,
      cleanup: (commands: CommandRunner) => Promise<unknown>,
    ): Promise<void> => {
      // The agent's order: each node's other-mode cleanup waits for its first full sync in the new mode.
      const cleanups = new Map<string, OtherModeCleanup>();
      await cluster.switchMode(mode, async (node, commands) => {
        const gate = new OtherModeCleanup(['IPv4'], async () => void (await cleanup(commands)));
        cleanups.set(node.name, gate);
        gate.onSync({ family: 'IPv4', ok: true, full: true });
        await gate.done;
      });
      assert.equal(cleanups.size, 2);
    };

    let outcomes: Awaited<ReturnType<typeof fromPod.stop>>[] = [];
    try {
      await moreRequests('traffic flowing in iptables mode');
      await switchTo('nftables', (commands) => cleanupIptables(commands));
      for (const node of cluster.nodes) {
        const commands = cluster.nodeRunner(node.name);
        assert.equal(
          await has(commands, 'iptables-save', ['-t', 'nat'], /KUBE-SERVICES/),
          false,
          `${node.name}: iptables rules gone`,
        );
        assert.equal(await has(commands, 'nft', ['list', 'table', 'ip', 'kube-proxy'], /service-ips/), true);
      }
      await moreRequests('traffic flowing in nftables mode');
      await switchTo('iptables', (commands) => cleanupNftables(commands));
      for (const node of cluster.nodes) {
        const commands = cluster.nodeRunner(node.name);
        assert.equal(
          await has(commands, 'nft', ['list', 'tables'], /kube-proxy/),
          false,
          `${node.name}: nft table gone`,
        );
        assert.equal(await has(commands, 'iptables-save', ['-t', 'nat'], /KUBE-SERVICES/), true);
      }
      await moreRequests('traffic flowing in iptables mode again');
    } finally {
      outcomes = await Promise.all(streams.map((s) => s.stop()));
      await cluster.remove({ services: [svc], slices: [slice] });
    }
    for (const [i, o] of outcomes.entries()) {
      assert.ok(o.length >= 90, `stream ${i}: ${o.length} requests`);
      assert.deepEqual(errorKinds(o), {}, `stream ${i}: no request failed across both switches`);
      assert.deepEqual(podsThatAnswered(o), [...backends].sort());
    }
  });
});
