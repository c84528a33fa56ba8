// `render --proxy-mode iptables`, applied by hand as its output says (iptables-restore --noflush, then the jump
// commands of its comment block), gives a node that moves real packets: the harness's two-node topology with no
// proxy of its own, every node's rules coming from the CLI (run as a child process) and nothing else.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { after, before, describe, test } from 'node:test';
import { hostCommandRunner } from '../../packages/agent/src/netfilter/command.js';
import { sweepNamespaces } from '../../packages/netns/src/namespace.js';
import type { NodePlan } from '../../packages/netns/src/topology.js';
import type { ProxyBackend } from '../../packages/agent/src/sync/backend.js';
import { kernelOptions, runPrefix } from '../helpers/kernel.js';
import type { ModeSupport } from './harness/backends.js';
import { NOTHING_DONE } from './harness/backends.js';
import type { TestCluster } from './harness/cluster.js';
import { makeTestCluster, nodeAddresses, removeTestCluster } from './harness/cluster.js';
import { endpointSlice, httpPort, service } from './harness/objects.js';
import { answered, errorKinds, podsThatAnswered, sourcesSeen } from './harness/outcomes.js';
import { AGENT_MAIN, SOURCE_FLAGS } from '../helpers/cli.js';

const run = promisify(execFile);
const REPO = fileURLToPath(new URL('../../', import.meta.url));

/** No proxy on the nodes: the harness builds the topology and pods; the rules come from `render` alone. */
const RENDER_ONLY: ModeSupport = {
  create: ({ node }): ProxyBackend => ({
    mode: 'iptables',
    family: node.family,
    requestFullSync: () => undefined,
    sync: async () => NOTHING_DONE,
  }),
  dump: [['iptables-save']],
  nodePortAddresses: [],
};

/** In a node's namespace: `cmd args`, with `input` on stdin. */
async function inNode(node: NodePlan, cmd: string, args: readonly string[], input?: string): Promise<string> {
  const child = run('ip', ['netns', 'exec', node.namespace, cmd, ...args], { cwd: REPO });
  if (input !== undefined) {
    child.child.stdin?.end(input);
  }
  return (await child).stdout;
}

/** The jump commands of render's comment block (the `#   ` lines after the last COMMIT). */
function jumpCommands(output: string): string[] {
  const tail = output.slice(output.lastIndexOf('COMMIT\n'));
  return tail
    .split('\n')
    .filter((l) => /^# {3}ip6?tables /.test(l))
    .map((l) => l.slice(4));
}

describe(
  'render --proxy-mode iptables applied by hand moves real packets',
  kernelOptions(['ip', 'iptables', 'iptables-restore', 'iptables-save']),
  () => {
    const prefix = runPrefix();
    let cluster: TestCluster | undefined;
    let dir = '';

    before(async () => {
      dir = mkdtempSync(join(tmpdir(), `${prefix}-render-`));
      await sweepNamespaces(hostCommandRunner, prefix + '-');
      cluster = await makeTestCluster({
        mode: 'iptables',
        prefix,
        nodes: 2,
        podsPerNode: 2,
        families: ['IPv4'],
        support: RENDER_ONLY,
      });
    });

    after(async () => {
      try {
        await removeTestCluster(cluster, prefix);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });

    test('a ClusterIP answered by its pods from a pod, and a NodePort from outside', async () => {
      assert.ok(cluster, 'cluster was set up');
      const c = cluster;
      const vip = '198.19.0.10';
      const svc = service({ name: 'web', clusterIP: vip, ports: [httpPort({ nodePort: 30080 })] });
      const backends = ['pod-0-0', 'pod-1-0', 'pod-1-1'];
      const slice = endpointSlice(
        svc,
        backends.map((p) => c.endpoint(p, 'IPv4')),
      );
      const manifest = join(dir, 'cluster.json');
      writeFileSync(manifest, JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [svc, slice] }));

      try {
        const jumpsByNode = new Map<string, string[]>();
        for (const node of c.nodes) {
          const { stdout } = await run(
            process.execPath,
            [
              ...[...SOURCE_FLAGS, AGENT_MAIN, 'render', '--proxy-mode', 'iptables', '-f', manifest],
              ...['--hostname-override', node.name, '--node-ip', node.ip],
              ...['--cluster-cidr', c.plan.clusterCIDR, '--service-cidrs', c.plan.serviceCIDR],
            ],
            { cwd: REPO, maxBuffer: 16 * 1024 * 1024 },
          );
          // The whole output, comment block included, is restore input.
          await inNode(node, 'iptables-restore', ['--noflush'], stdout);
          const jumps = jumpCommands(stdout);
          assert.ok(jumps.length > 0, `${node.name}: render printed jump commands`);
          jumpsByNode.set(node.name, jumps);
        }

        // The restore input alone moves no packets: nothing jumps into KUBE-SERVICES yet.
        const client = c.pod('pod-0-1');
        const before = await c.http(client.namespace, vip, 80, { count: 1, timeoutMs: 1500 });
        assert.equal(answered(before).length, 0, 'no answer before the jumps exist');

        for (const node of c.nodes) {
          const script = ['set -e', ...(jumpsByNode.get(node.name) ?? [])].join('\n');
          // Twice: the commands check before they insert, so running them again adds nothing.
          await inNode(node, 'sh', ['-c', script]);
          await inNode(node, 'sh', ['-c', script]);
          const saved = await inNode(node, 'iptables-save', []);
          const natPrerouting = saved.split('\n').filter((l) => /^-A PREROUTING .*-j KUBE-SERVICES$/.test(l));
          assert.equal(natPrerouting.length, 1, `${node.name}: one PREROUTING jump\n${saved}`);
        }

        const fromPod = await c.http(client.namespace, vip, 80, { count: 30 });
        assert.deepEqual(errorKinds(fromPod), {}, 'every request to the ClusterIP answered');
        assert.deepEqual(podsThatAnswered(fromPod), [...backends].sort());
        // Pod-to-ClusterIP traffic from inside the cluster CIDR keeps its source.
        assert.deepEqual(sourcesSeen(fromPod), [client.ip]);

        const node1 = c.node('node-1');
        const fromOutside = await c.http(c.client.namespace, node1.ip, 30080, { count: 30 });
        assert.deepEqual(errorKinds(fromOutside), {}, 'every request to the NodePort answered');
        assert.deepEqual(podsThatAnswered(fromOutside), [...backends].sort());
        // externalTrafficPolicy Cluster: masqueraded to the node the client reached.
        const node1Addresses = nodeAddresses(node1, 'IPv4');
        for (const source of sourcesSeen(fromOutside)) {
          assert.ok(node1Addresses.includes(source), `source ${source} is one of node-1's addresses`);
        }
      } catch (e) {
        const rules = await c.dumpRules().catch((d: unknown) => `(could not dump rules: ${String(d)})`);
        if (e instanceof Error) e.message += `\n\nRules at failure:\n${rules}`;
        throw e;
      }
    });
  },
);
