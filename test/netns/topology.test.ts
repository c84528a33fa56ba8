import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type {
  CommandOptions,
  CommandResult,
  CommandRunner,
} from '../../packages/agent/src/netfilter/command.js';
import { cidrContains } from '../../packages/agent/src/model/ip.js';
import {
  CLUSTER_CIDR,
  SERVICE_CIDR,
  buildTopology,
  destroyTopology,
  planNamespaces,
  planTopology,
} from '../../packages/netns/src/topology.js';
import { MAX_INTERFACE_NAME } from '../../packages/netns/src/names.js';

/** Keeps every command; answers `ip -json netns list` from the namespaces it saw added, `sysctl -n` with "1". */
function recordingRunner(): CommandRunner & { commands: string[][] } {
  const commands: string[][] = [];
  const namespaces: string[] = [];
  return {
    commands,
    async run(cmd: string, args: readonly string[], _options?: CommandOptions): Promise<CommandResult> {
      const line = [cmd, ...args];
      commands.push(line);
      let stdout = '';
      if (cmd === 'ip' && args[0] === 'netns' && args[1] === 'add') namespaces.push(args[2]!);
      if (cmd === 'ip' && args[0] === 'netns' && args[1] === 'del')
        namespaces.splice(namespaces.indexOf(args[2]!), 1);
      if (cmd === 'ip' && args.join(' ') === '-json netns list')
        stdout = JSON.stringify(namespaces.map((name) => ({ name })));
      if (line.includes('sysctl') && line.includes('-n')) stdout = '1\n';
      return { code: 0, stdout, stderr: '' };
    },
  };
}

/** Does this command act inside a named namespace (or manage namespaces), never on the root namespace's state? */
function staysOutOfRoot(line: readonly string[], prefix: string): boolean {
  const [cmd, ...args] = line;
  if (cmd === 'kill') return true;
  if (cmd !== 'ip') return false;
  if (args[0] === '-json' && args[1] === 'netns' && args[2] === 'list') return true;
  if (args[0] === 'netns')
    return ['add', 'del', 'pids', 'exec'].includes(args[1]!) && args[2]!.startsWith(prefix);
  const n = args.indexOf('-n');
  return n >= 0 && args[n + 1]!.startsWith(prefix);
}

describe('planTopology', () => {
  const plan = planTopology({ prefix: 'kptsabcdef', nodes: 3, podsPerNode: [2, 0, 1] });

  test('addresses stay in 198.18.0.0/15; pod CIDRs inside the cluster CIDR; services outside it', () => {
    const ips = [
      plan.client.ip,
      ...plan.nodes.flatMap((n) => [n.ip, n.gatewayIP, ...n.pods.map((p) => p.ip)]),
    ];
    for (const ip of ips) assert.ok(cidrContains('198.18.0.0/15', ip), ip);
    for (const node of plan.nodes) {
      assert.ok(cidrContains(CLUSTER_CIDR, node.gatewayIP));
      for (const pod of node.pods) {
        assert.ok(cidrContains(node.podCIDR, pod.ip), `${pod.ip} in ${node.podCIDR}`);
        assert.ok(cidrContains(CLUSTER_CIDR, pod.ip));
      }
      assert.ok(
        !cidrContains(CLUSTER_CIDR, node.ip),
        'node IPs are not pod IPs (else the local detector misfires)',
      );
    }
    // The service CIDR lies in the test range, apart from every node, pod and client address.
    assert.equal(SERVICE_CIDR, '198.19.0.0/16');
    for (const ip of ips) assert.ok(!cidrContains(SERVICE_CIDR, ip), `${ip} outside the service CIDR`);
    assert.equal(new Set(ips).size, ips.length, 'no address used twice');
  });

  test('IPv6 mirrors IPv4 inside 2001:db8::/32', () => {
    const ips = [
      plan.client.ip6,
      ...plan.nodes.flatMap((n) => [n.ip6, n.gatewayIP6, ...n.pods.map((p) => p.ip6)]),
    ];
    for (const ip of ips) {
      assert.ok(cidrContains('2001:db8::/32', ip), ip);
      assert.ok(!cidrContains(plan.serviceCIDR6, ip), `${ip} outside the service CIDR`);
    }
    for (const node of plan.nodes) {
      assert.ok(!cidrContains(plan.clusterCIDR6, node.ip6));
      assert.ok(cidrContains(plan.clusterCIDR6, node.gatewayIP6));
      for (const pod of node.pods) {
        assert.ok(cidrContains(node.podCIDR6, pod.ip6), `${pod.ip6} in ${node.podCIDR6}`);
        assert.ok(cidrContains(plan.clusterCIDR6, pod.ip6));
      }
    }
    assert.equal(new Set(ips).size, ips.length, 'no address used twice');
    // Canonical text (what the kernel reports as a peer address), so tests can compare strings.
    assert.deepEqual(
      plan.nodes[2]!.pods.map((p) => p.ip6),
      ['2001:db8:12::10'],
    );
    assert.equal(plan.nodes[0]!.pods[1]!.ip6, '2001:db8:10::11');
    assert.equal(plan.nodes[2]!.podCIDR6, '2001:db8:12::/64');
  });

  test('names: unique, prefixed, interface names within IFNAMSIZ', () => {
    const names = planNamespaces(plan);
    assert.equal(new Set(names).size, names.length);
    for (const n of names) assert.ok(n.startsWith('kptsabcdef-'), n);
    assert.deepEqual(
      plan.nodes.map((n) => n.pods.map((p) => p.name)),
      [['pod-0-0', 'pod-0-1'], [], ['pod-2-0']],
    );
    for (const node of plan.nodes) {
      assert.ok(node.underlayLink.length <= MAX_INTERFACE_NAME);
      for (const pod of node.pods) assert.ok(pod.nodeSideLink.length <= MAX_INTERFACE_NAME);
    }
  });

  test('refuses node counts outside the address plan', () => {
    assert.throws(() => planTopology({ prefix: 'kptsabcdef', nodes: 0, podsPerNode: 1 }), /nodes/);
    assert.throws(() => planTopology({ prefix: 'kptsabcdef', nodes: 7, podsPerNode: 1 }), /nodes/);
    assert.throws(() => planTopology({ prefix: 'kptsabcdef', nodes: 1, podsPerNode: -1 }), /podsPerNode/);
  });
});

describe('buildTopology and destroyTopology commands', () => {
  test("every command acts inside the run's own namespaces, never on the root namespace", async () => {
    const plan = planTopology({ prefix: 'kptsabcdef', nodes: 2, podsPerNode: 2 });
    const runner = recordingRunner();
    await buildTopology(runner, plan);
    await destroyTopology(runner, plan);
    // Build: the underlay 10 (netns, lo, bridge add and up, 2 addresses, 4 sysctls); the client 12 (netns, lo, veth,
    // 2 ups, master, 2 addresses, 4 routes); per node 22 (netns, lo, veth, 2 ups, master, 2 addresses, 2 routes to
    // the client, 2 default routes, 2 forwarding sysctls, bridge add and up, 2 bridge addresses, 2 bridge-nf sysctls
    // each set and read back) plus 2 routes per other node's pods; per pod 11 (netns, lo, veth, 2 ups, master,
    // hairpin, 2 addresses, 2 default routes). Destroy: one listing, then per namespace a listing, pids, delete.
    const nodes = 2;
    const pods = nodes * 2;
    const namespaces = 2 + nodes + pods;
    assert.equal(
      runner.commands.length,
      10 + 12 + nodes * (22 + 2 * (nodes - 1)) + pods * 11 + 1 + 3 * namespaces,
    );
    for (const line of runner.commands) {
      assert.ok(
        staysOutOfRoot(line, 'kptsabcdef-'),
        `command touches more than our namespaces: ${line.join(' ')}`,
      );
    }
    const added = runner.commands.filter((l) => l[1] === 'netns' && l[2] === 'add').map((l) => l[3]);
    const deleted = runner.commands.filter((l) => l[1] === 'netns' && l[2] === 'del').map((l) => l[3]);
    assert.deepEqual([...deleted].sort(), [...added].sort(), 'everything made is deleted');
    assert.deepEqual([...added].sort(), planNamespaces(plan).sort());
  });

  test('a too-short sweep prefix is refused before anything runs', async () => {
    const runner = recordingRunner();
    const plan = planTopology({ prefix: 'kp', nodes: 1, podsPerNode: 0 });
    await assert.rejects(destroyTopology(runner, plan), /too short/);
    assert.deepEqual(runner.commands, []);
  });
});
