// The test topology itself, before any backend: pods reach each other across nodes with their own source
// address, and a hand-written nft DNAT in a node is un-NATed on the way back, also for a same-node (bridged)
// reply. If this fails, every backend scenario would fail for reasons that are not the backend's.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hostCommandRunner } from '../../packages/agent/src/netfilter/command.js';
import { inNamespace, runChecked } from '../../packages/netns/src/exec.js';
import { listNamespaces, sweepNamespaces } from '../../packages/netns/src/namespace.js';
import { getSysctl } from '../../packages/netns/src/sysctl.js';
import type { PodServerHandle } from '../../packages/netns/src/pod-process.js';
import { startPodServerIn } from '../../packages/netns/src/pod-process.js';
import {
  buildTopology,
  destroyTopology,
  planNamespaces,
  planTopology,
} from '../../packages/netns/src/topology.js';
import type { TopologyPlan } from '../../packages/netns/src/topology.js';
import { kernelOptions, runPrefix } from '../helpers/kernel.js';
import { sendRequests } from './harness/traffic.js';

const runner = hostCommandRunner;
const options = kernelOptions(['ip', 'nft']);

describe('dataplane topology (no backend)', options, () => {
  const prefix = runPrefix();
  let plan: TopologyPlan;
  let stateDir: string;
  const servers: PodServerHandle[] = [];

  before(async () => {
    await sweepNamespaces(runner, prefix + '-');
    stateDir = mkdtempSync(join(tmpdir(), `${prefix}-`));
    plan = planTopology({ prefix, nodes: 2, podsPerNode: 2 });
    await buildTopology(runner, plan);
    for (const node of plan.nodes) {
      for (const pod of node.pods) {
        servers.push(
          await startPodServerIn(runner, pod.namespace, {
            name: pod.name,
            tcpPorts: [8080],
            udpPorts: [5353],
            stateDir,
            maxLifetimeSeconds: 300,
          }),
        );
      }
    }
  });

  after(async () => {
    try {
      await Promise.all(servers.map((s) => s.stop()));
    } finally {
      if (plan) await destroyTopology(runner, plan);
      await sweepNamespaces(runner, prefix + '-');
      if (stateDir) rmSync(stateDir, { recursive: true, force: true });
    }
    const left = (await listNamespaces(runner)).filter((n) => n.startsWith(prefix));
    assert.deepEqual(left, [], 'every namespace of the run is gone');
  });

  test('every namespace exists and nodes forward with bridge netfilter on', async () => {
    const present = new Set(await listNamespaces(runner));
    for (const ns of planNamespaces(plan)) assert.ok(present.has(ns), `${ns} exists`);
    for (const node of plan.nodes) {
      assert.equal(await getSysctl(runner, node.namespace, 'net.ipv4.ip_forward'), '1');
      assert.equal(await getSysctl(runner, node.namespace, 'net.bridge.bridge-nf-call-iptables'), '1');
    }
  });

  test('a pod reaches a pod on another node and is seen with its own address, over IPv4 and IPv6', async () => {
    const from = plan.nodes[0]!.pods[0]!;
    const to = plan.nodes[1]!.pods[0]!;
    for (const [fromIP, toIP] of [
      [from.ip, to.ip],
      [from.ip6, to.ip6],
    ] as const) {
      const tcp = await sendRequests(runner, from.namespace, {
        proto: 'http',
        ip: toIP,
        port: 8080,
        count: 3,
      });
      const udp = await sendRequests(runner, from.namespace, {
        proto: 'udp',
        ip: toIP,
        port: 5353,
        count: 3,
      });
      for (const o of [...tcp, ...udp]) {
        assert.ok(o.ok, `request to ${toIP} answered: ${JSON.stringify(o)}`);
        assert.equal(o.pod, to.name);
        assert.equal(o.clientIP, fromIP);
      }
    }
  });

  test('the external client reaches a node address, and a node DNAT to a same-node pod is un-NATed', async () => {
    const node = plan.nodes[0]!;
    const client = node.pods[0]!;
    const backend = node.pods[1]!;
    const vip = '198.19.255.1';
    const ruleset = [
      'table ip kpts-topology-test {',
      '  chain pre { type nat hook prerouting priority -100; policy accept;',
      `    ip daddr ${vip} tcp dport 80 dnat to ${backend.ip}:8080`,
      `    ip daddr ${vip} udp dport 53 dnat to ${backend.ip}:5353`,
      `    ip daddr ${node.ip} tcp dport 30080 dnat to ${backend.ip}:8080`,
      '  }',
      '}',
    ].join('\n');
    await runChecked(inNamespace(runner, node.namespace), 'load test ruleset', 'nft', ['-f', '-'], {
      stdin: ruleset,
    });

    // Pod → VIP → pod on the same bridge: the reply is bridged, and only br_netfilter lets conntrack un-DNAT it.
    const tcp = await sendRequests(runner, client.namespace, { proto: 'http', ip: vip, port: 80, count: 3 });
    const udp = await sendRequests(runner, client.namespace, { proto: 'udp', ip: vip, port: 53, count: 3 });
    for (const o of [...tcp, ...udp]) {
      assert.ok(o.ok, `request answered: ${JSON.stringify(o)}`);
      assert.equal(o.pod, backend.name);
      assert.equal(o.clientIP, client.ip);
    }
    // The client namespace, outside every node, reaches a node's address; no SNAT, so the pod sees the client.
    const external = await sendRequests(runner, plan.client.namespace, {
      proto: 'http',
      ip: node.ip,
      port: 30080,
      count: 2,
    });
    for (const o of external) {
      assert.ok(o.ok, `request answered: ${JSON.stringify(o)}`);
      assert.equal(o.pod, backend.name);
      assert.equal(o.clientIP, plan.client.ip);
    }
  });
});
