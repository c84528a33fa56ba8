// Lab nodes in guests (`lab up --vm-nodes N`; the design in packages/lab/src/vm/README.md, "Guests as lab nodes"):
// the last N nodes of the layout boot as QEMU guests on Debian's kernel instead of being namespaces of this one.
// A guest's eth0 is a port of the underlay bridge with the node's address; its root namespace takes the node's
// namespace name, so the lab's wiring, kubelet and supervisor run there unchanged through the guest's runner
// (vm/node.ts); the lab's state directory is shared at the same path, so pid files, logs, ready files and the
// node's kubeconfig mean the same on both sides. The proxy in a guest reaches the API server over the underlay:
// its node relay (127.0.0.1:6443 in the guest) connects to one more relay, in the underlay namespace on the
// gateway's address, which forwards to the lab's socket. A guest node carries VM_NODE_TAINT, so only what
// tolerates it (the kube-proxy DaemonSet, which tolerates everything, and what a user places there) starts under
// emulation.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { CommandRunner } from 'kube-proxy-ts/netfilter/command.js';
import type { Logger } from 'kube-proxy-ts/util/logger.js';
import { UNDERLAY_BRIDGE, withPrefixOf } from '@kube-proxy-ts/netns/wiring.js';
import { startGuest, type Guest } from '../vm/guest.js';
import { guestCommandRunner, wireGuestNode } from '../vm/node.js';
import type { LabLayout, LabNodeLayout, LabPaths } from './layout.js';
import { NODE_APISERVER_ADDRESS } from './layout.js';
import { labNodeRoutes, labPodBridgeAddresses } from './network.js';
import { labCliArgv } from './processes.js';
import { Supervised } from './supervisor.js';

/** Kept off guest nodes: what does not tolerate it (every Pod there starts under emulation, ×5–20 slower). */
export const VM_NODE_TAINT = {
  key: 'kube-proxy-ts.lab/vm-node',
  value: 'true',
  effect: 'NoSchedule',
} as const;

/**
 * How much slower a guest node runs things than this host, for the kubelet's probes and waits: Node.js runs 5–20
 * times slower under TCG (packages/lab/src/vm/README.md, "Numbers"); 5 keeps a probe every 5 s (deploy/'s period)
 * from crowding the guest's one CPU, which the lab's every-second probe did.
 */
export const GUEST_TIME_SCALE = 5;

/** The API server's port on the underlay gateway, where guest nodes' relays connect. */
export const UNDERLAY_API_PORT = 6443;

/** A guest's memory: its kernel, the agent (≈ 150 MiB at small sizes) and a few pod servers. */
const GUEST_MEMORY_MIB = 1024;

/** Boot to READY under TCG on a busy 2-core machine: 10–30 s seen, 180 s allowed. */
const GUEST_BOOT_TIMEOUT_MS = 180_000;

export interface GuestNode {
  readonly name: string;
  readonly guest: Guest;
  /** Runs each command in the guest. */
  readonly runner: CommandRunner;
}

/** Which nodes are guests: the last `count`, so the control-plane node (the first) stays a namespace. */
export function guestNodeNames(layout: LabLayout, count: number): Set<string> {
  if (!Number.isInteger(count) || count < 0 || count >= layout.nodes.length)
    throw new Error(
      `--vm-nodes ${count}: expected 0 to ${layout.nodes.length - 1} (the control-plane node stays a namespace)`,
    );
  if (count > 0 && (layout.families.length !== 1 || layout.families[0]?.family !== 4))
    throw new Error(`--vm-nodes: guest nodes are IPv4 only for now (this lab is ${layout.ipFamily})`);
  return new Set(layout.nodes.slice(layout.nodes.length - count).map((n) => n.name));
}

/** The tap of the i-th guest, in the underlay namespace. */
function tapName(layout: LabLayout, index: number): string {
  return `${layout.prefix}v${index}`;
}

async function startGuestNode(
  layout: LabLayout,
  paths: LabPaths,
  node: LabNodeLayout,
  index: number,
): Promise<GuestNode> {
  const plan = layout.families[0]!;
  const family = node.families[0]!;
  const guest = await startGuest({
    stateDir: join(paths.guestsDir, node.name),
    hostname: node.name,
    memoryMiB: GUEST_MEMORY_MIB,
    readyTimeoutMs: GUEST_BOOT_TIMEOUT_MS,
    // tsx's compiled files carry over (the relay is the lab's CLI from source when the lab runs from source).
    hostTmp: true,
    shares: [{ hostPath: paths.stateDir }],
    network: {
      namespace: layout.underlayNamespace,
      createNamespace: false,
      tap: tapName(layout, index),
      bridge: UNDERLAY_BRIDGE,
      guestAddress: withPrefixOf(family.ip, plan.underlayCIDR),
      gateway: plan.underlayGateway,
    },
  });
  const runner = guestCommandRunner(guest);
  try {
    await wireGuestNode(runner, {
      namespace: node.namespace,
      // The default route came with eth0's address (the kernel command line).
      routes: labNodeRoutes(layout, node).filter((r) => r.to !== 'default'),
      podBridgeAddresses: labPodBridgeAddresses(node),
    });
  } catch (e) {
    await guest.stop();
    throw e;
  }
  return { name: node.name, guest, runner };
}

/** Boots and wires every guest node at once; on a failure stops the ones that started, then rejects. */
export async function startGuestNodes(
  layout: LabLayout,
  paths: LabPaths,
  names: ReadonlySet<string>,
): Promise<Map<string, GuestNode>> {
  mkdirSync(paths.guestsDir, { recursive: true, mode: 0o700 });
  const nodes = layout.nodes.filter((n) => names.has(n.name));
  const started = await Promise.allSettled(nodes.map((n, i) => startGuestNode(layout, paths, n, i)));
  const up = started.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
  const failed = started.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) {
    await Promise.all(up.map((g) => g.guest.stop()));
    throw failed.reason;
  }
  return new Map(up.map((g) => [g.name, g]));
}

/** A guest node's relay to the API server: 127.0.0.1:6443 in the guest → the underlay relay. */
export function guestNodeRelay(
  node: GuestNode,
  layout: LabLayout,
  paths: LabPaths,
  namespace: string,
  logger: Logger,
): Supervised {
  const gateway = layout.families[0]!.underlayGateway;
  return new Supervised(
    node.runner,
    {
      name: `relay on ${node.name}`,
      namespace,
      argv: () =>
        labCliArgv([
          'relay',
          '--listen',
          NODE_APISERVER_ADDRESS,
          '--connect',
          `${gateway}:${UNDERLAY_API_PORT}`,
        ]),
      pidFile: paths.relayPidFile(node.name),
      log: paths.relayLog(node.name),
    },
    logger,
  );
}

/** The relay in the underlay namespace, on the gateway's address: guest nodes' relays → the lab's socket. */
export function underlayRelay(
  runner: CommandRunner,
  layout: LabLayout,
  paths: LabPaths,
  logger: Logger,
): Supervised {
  const gateway = layout.families[0]!.underlayGateway;
  return new Supervised(
    runner,
    {
      name: 'relay on the underlay',
      namespace: layout.underlayNamespace,
      argv: () =>
        labCliArgv([
          'relay',
          '--listen',
          `${gateway}:${UNDERLAY_API_PORT}`,
          '--socket',
          paths.apiserverSocket,
        ]),
      pidFile: join(paths.guestsDir, 'underlay-relay.pid'),
      log: join(paths.guestsDir, 'underlay-relay.log'),
    },
    logger,
  );
}
