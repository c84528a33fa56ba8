// The node as the agent reads it and as `render` and `explain` read it are one reading (model/node-facts.ts): a
// Node with only an ExternalIP has that address as its node IP in the agent's table and in both commands, and a
// Node whose pod range is only in the older spec.podCIDR is that range for --detect-local-mode NodeCIDR. Each
// command reads the Node object from the same objects the agent was shown, with no --node-ip.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { explainCommand } from '../../packages/agent/src/cli/explain.js';
import { kernelOptions } from '../helpers/kernel.js';
import { AgentLab } from './helpers/agent-lab.js';
import {
  manifestList,
  NODE_IP,
  NODE_NAME,
  nodeObject,
  PATHS,
  POD_CIDR,
  webService,
} from './helpers/agent-objects.js';
import type { FakeObject } from '../kube/helpers/fake-apiserver.js';

const KERNEL = kernelOptions(['ip', 'nft']);

/** `kube-proxy-ts explain service web -n default -o json` of the objects, in-process, with the node read from its object. */
async function explainJson(lab: AgentLab, objects: readonly FakeObject[]): Promise<string> {
  const file = lab.file('explain.json', manifestList(objects));
  let stdout = '';
  let stderr = '';
  const code = await explainCommand(
    [
      'service',
      'web',
      '-n',
      'default',
      '-f',
      file,
      '--node',
      NODE_NAME,
      '--proxy-mode',
      'nftables',
      '-o',
      'json',
    ],
    {
      stdout: (t) => (stdout += t),
      stderr: (t) => (stderr += t),
      readFile: (p) => readFileSync(p, 'utf8'),
      hostname: () => NODE_NAME,
      env: {},
    },
  );
  assert.equal(code, 0, stderr);
  assert.doesNotMatch(stderr, /127\.0\.0\.1/, 'explain found the node IP');
  return stdout;
}

describe('the node as the agent and the commands read it', () => {
  test('a Node with only an ExternalIP: the agent, render and explain use that address', KERNEL, async () => {
    await AgentLab.with(
      async (lab) => {
        lab.put(PATHS.nodes, {
          ...nodeObject(),
          status: { addresses: [{ type: 'ExternalIP', address: NODE_IP }] },
        });
        const web = webService('web', '198.19.0.10', ['198.18.10.2'], 30080);
        lab.putService(web);
        const proxy = lab.startProxy(lab.flags());
        // nftables' default nodePortAddresses is "primary": the node IP is the NodePort address in the table.
        await lab.expectRules(proxy, 30_000, { nodeIP: undefined });
        const table = await lab.table();
        assert.deepEqual(table?.containers['set nodeport-ips']?.elements, [JSON.stringify(NODE_IP)]);
        const explained = JSON.parse(await explainJson(lab, lab.state())) as {
          nodes: { ports: { frontends: { nodePort?: { addresses: unknown } } }[] }[];
        };
        const nodePort = explained.nodes[0]?.ports[0]?.frontends.nodePort;
        assert.ok(nodePort, JSON.stringify(explained));
        assert.match(JSON.stringify(nodePort.addresses), new RegExp(NODE_IP.replace(/\./g, '\\.')));
      },
      { withNode: false },
    );
  });

  test(
    '--detect-local-mode NodeCIDR with the pod range only in spec.podCIDR: the agent and render agree',
    KERNEL,
    async () => {
      await AgentLab.with(
        async (lab) => {
          lab.put(PATHS.nodes, { ...nodeObject(), spec: { podCIDR: POD_CIDR, podCIDRs: [] } });
          const web = webService('web', '198.19.0.10', ['198.18.10.2'], 30080);
          lab.putService(web);
          const proxy = lab.startProxy(lab.flags('--detect-local-mode=NodeCIDR'));
          await lab.expectRules(proxy, 30_000, { nodeIP: undefined, detectLocalMode: 'NodeCIDR' });
          // The pod range is in the rules that tell pod traffic from the rest.
          const table = await lab.table();
          const rules = Object.values(table?.chains ?? {}).flatMap((c) => c.rules);
          assert.ok(
            rules.some((r) => r.includes(POD_CIDR.split('/')[0] ?? '')),
            `no rule names ${POD_CIDR}:\n${rules.join('\n')}`,
          );
        },
        { withNode: false },
      );
    },
  );
});
