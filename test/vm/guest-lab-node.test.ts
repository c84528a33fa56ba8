// A guest wired as a lab node (packages/lab/src/vm/node.ts) beside a namespace node, on one underlay: the guest's
// root namespace takes the node's name, the lab's wiring builds its pod bridge through the guest runner, a pod
// attached through that runner is a namespace of the guest's kernel, and pods on the two nodes reach each other
// over TCP, routed through the nodes as a host-gw CNI routes them (each sees the other's pod address: no NAT).
// Everything is removed afterwards, also when a step fails.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { hostCommandRunner } from '../../packages/agent/src/netfilter/command.js';
import { listNamespaces } from '../../packages/netns/src/namespace.js';
import { attachPod, buildNode, buildUnderlay } from '../../packages/netns/src/wiring.js';
import { sweepGuests } from '../../packages/lab/src/vm/cleanup.js';
import type { Guest } from '../../packages/lab/src/vm/guest.js';
import { guestCommandRunner, wireGuestNode } from '../../packages/lab/src/vm/node.js';
import { GUEST_TOOLS } from './guest-tools.js';
import { clientScript, serverScript, startHostServer, startUnderlayGuest, WAIT_MS } from './tcp-peers.js';
import { kernelOptions, runPrefix, sweepNamespaces } from '../helpers/kernel.js';

const options = kernelOptions([...GUEST_TOOLS, 'ip', '/bin/busybox']);

const GATEWAY = '198.18.0.1';
const NODE = { ip: '198.18.0.10', podCIDR: '198.19.1.0/24', bridge: '198.19.1.1', pod: '198.19.1.5' };
const GUEST = { ip: '198.18.0.20', podCIDR: '198.19.2.0/24', bridge: '198.19.2.1', pod: '198.19.2.5' };

describe(
  'a guest as a lab node: its pods are namespaces of its kernel, routed to a namespace node',
  options,
  () => {
    const prefix = runPrefix();
    const underlay = `${prefix}-ul`;
    const node = `${prefix}-n1`;
    const nodePod = `${prefix}-p1`;
    const guestNode = `${prefix}-vm1`;
    const guestPod = `${prefix}-gp1`;
    const stateRoot = mkdtempSync('/tmp/kpts-vm-');
    let guest: Guest | undefined;

    before(async () => {
      await buildUnderlay(hostCommandRunner, { namespace: underlay, gatewayAddresses: [`${GATEWAY}/24`] });
      await buildNode(hostCommandRunner, {
        namespace: node,
        underlayNamespace: underlay,
        underlayLink: 'n1',
        addresses: [`${NODE.ip}/24`],
        routes: [{ to: GUEST.podCIDR, via: GUEST.ip }],
        podBridgeAddresses: [`${NODE.bridge}/24`],
      });
      await attachPod(hostCommandRunner, {
        namespace: nodePod,
        nodeNamespace: node,
        nodeSideLink: 'vp1',
        addresses: [`${NODE.pod}/24`],
        gateways: [NODE.bridge],
      });
      guest = await startUnderlayGuest(stateRoot, underlay, GUEST.ip, GATEWAY);
      const runner = guestCommandRunner(guest);
      await wireGuestNode(runner, {
        namespace: guestNode,
        routes: [{ to: NODE.podCIDR, via: NODE.ip }],
        podBridgeAddresses: [`${GUEST.bridge}/24`],
      });
      await attachPod(runner, {
        namespace: guestPod,
        nodeNamespace: guestNode,
        nodeSideLink: 'vgp1',
        addresses: [`${GUEST.pod}/24`],
        gateways: [GUEST.bridge],
      });
    });

    after(async () => {
      await guest?.stop();
      await sweepGuests(stateRoot, { all: true });
      sweepNamespaces(prefix);
      rmSync(stateRoot, { recursive: true, force: true });
      const left = (await listNamespaces(hostCommandRunner)).filter((n) => n.startsWith(prefix));
      assert.deepEqual(left, [], 'no namespace left');
    });

    test("the node's namespace is the guest's root; the pod's namespace is the guest's, not the host's", async () => {
      const runner = guestCommandRunner(guest!);
      const inGuest = await runner.run('ip', ['netns', 'list']);
      assert.match(inGuest.stdout, new RegExp(`^${guestNode}\\b`, 'm'));
      assert.match(inGuest.stdout, new RegExp(`^${guestPod}\\b`, 'm'));
      const onHost = await listNamespaces(hostCommandRunner);
      assert.ok(!onHost.includes(guestPod) && !onHost.includes(guestNode), 'no such namespace on the host');

      // The named node namespace and the guest's own (pid 1's) are one: eth0 with the underlay address is in it.
      const eth0 = await runner.run('ip', ['-n', guestNode, '-4', '-o', 'addr', 'show', 'dev', 'eth0']);
      assert.match(eth0.stdout, new RegExp(`inet ${GUEST.ip.replace(/\./g, '\\.')}/24 `));
      const bridge = await runner.run('ip', ['-n', guestNode, '-o', 'link', 'show', 'master', 'cbr0']);
      assert.match(bridge.stdout, /\bvgp1\b/, "the pod's veth is a port of the guest node's pod bridge");
      const forwarding = await runner.run('ip', [
        'netns',
        'exec',
        guestNode,
        'sysctl',
        '-n',
        'net.ipv4.ip_forward',
      ]);
      assert.equal(forwarding.stdout.trim(), '1');
    });

    test('pods on the two nodes reach each other over TCP, with their own addresses', async () => {
      const g = guest!;
      // namespace node's pod → the guest's pod
      const guestServer = g.spawn([
        'ip',
        'netns',
        'exec',
        guestPod,
        process.execPath,
        '-e',
        serverScript('gp1', GUEST.pod),
      ]);
      try {
        await guestServer.waitForOutput(/listening/, { stream: 'stdout', timeoutMs: WAIT_MS });
        const fromNodePod = await hostCommandRunner.run('ip', [
          'netns',
          'exec',
          nodePod,
          process.execPath,
          '-e',
          clientScript(GUEST.pod),
        ]);
        assert.equal(fromNodePod.stdout, `hello from gp1 to ${NODE.pod}\n`, fromNodePod.stderr);
      } finally {
        guestServer.kill('KILL');
      }

      // the guest's pod → namespace node's pod
      const nodeServer = await startHostServer(nodePod, 'p1', NODE.pod);
      try {
        const fromGuestPod = await guestCommandRunner(g).run(
          'ip',
          ['netns', 'exec', guestPod, process.execPath, '-e', clientScript(NODE.pod)],
          { timeoutMs: WAIT_MS },
        );
        assert.equal(fromGuestPod.stdout, `hello from p1 to ${GUEST.pod}\n`, fromGuestPod.stderr);
      } finally {
        nodeServer.kill('SIGKILL');
      }
    });
  },
);
