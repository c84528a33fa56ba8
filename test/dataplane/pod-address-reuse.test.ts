// A pod that gets a departed pod's address must be reachable at once. Every pod on the node's bridge that talked
// to the old pod keeps a neighbour entry for the address (the node's own entry goes with the bridge port, the
// pods' do not); with a random MAC per veth that entry points at the old pod's MAC and packets are lost until it
// times out (seconds: the soak saw timeouts to freshly ready pods, from a client pod on the same node). The lab gives
// a pod's interface a MAC made from its address, as the CNI bridge plugin does, so the entry stays right.
// Reachability is read with curl to a closed port: "refused" (exit 7) means the packets arrived, a timeout
// (exit 28) that they did not.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { hostCommandRunner as runner } from '../../packages/agent/src/netfilter/command.js';
import { deleteNamespace, sweepNamespaces } from '../../packages/netns/src/index.js';
import { macForAddress } from '../../packages/netns/src/link.js';
import {
  buildTopology,
  destroyTopology,
  planTopology,
  type TopologyPlan,
} from '../../packages/netns/src/topology.js';
import { attachPod, withPrefixOf } from '../../packages/netns/src/wiring.js';
import { kernelOptions, runPrefix } from '../helpers/kernel.js';

const options = kernelOptions(['ip', 'curl']);

async function reach(fromNs: string, ip: string): Promise<number> {
  const r = await runner.run('ip', [
    'netns',
    'exec',
    fromNs,
    'curl',
    '-s',
    '--max-time',
    '2',
    `http://${ip}:9/`,
  ]);
  return r.code;
}

describe('a reused pod address', options, () => {
  const prefix = runPrefix();
  let plan: TopologyPlan;

  before(async () => {
    plan = planTopology({ prefix, nodes: 2, podsPerNode: [2, 1] });
    await buildTopology(runner, plan);
  });
  after(async () => {
    if (plan) await destroyTopology(runner, plan);
    await sweepNamespaces(runner, `${prefix}-`);
  });

  test('a MAC follows the address', () => {
    assert.equal(macForAddress('198.18.10.5'), '0a:58:c6:12:0a:05');
    assert.equal(macForAddress('2001:db8:10::a:5'), '0a:58:00:0a:00:05');
    assert.equal(macForAddress('2001:db8::1'), '0a:58:00:00:00:01');
  });

  test('is answered at once by the new pod: from a pod beside it, from its node, from another node', async () => {
    const [node0, node1] = plan.nodes;
    const target = node0?.pods[0];
    const beside = node0?.pods[1];
    const far = node1?.pods[0];
    assert.ok(node0 && target && beside && far);
    for (const from of [beside.namespace, node0.namespace, far.namespace])
      assert.equal(
        await reach(from, target.ip),
        7,
        `the first pod is reachable from ${from} (refused on port 9)`,
      );
    // The pod goes (its namespace and veth with it); a new one comes with the same address, on a new port.
    await deleteNamespace(runner, target.namespace);
    await attachPod(runner, {
      namespace: `${prefix}-again`,
      nodeNamespace: node0.namespace,
      nodeSideLink: 'pagain',
      addresses: [withPrefixOf(target.ip, node0.podCIDR)],
      gateways: [node0.gatewayIP],
    });
    for (const from of [beside.namespace, node0.namespace, far.namespace])
      assert.equal(await reach(from, target.ip), 7, `the new pod is reachable at once from ${from}`);
  });
});
