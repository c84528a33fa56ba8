// A guest as a lab node's network (README.md, "Guests as lab nodes"): the node's namespace is the guest's root
// namespace, given the node's name with `ip netns attach`, so the lab's wiring, which names every namespace
// (`ip -n NS …`), runs unchanged through a CommandRunner whose commands run in the guest. The uplink is the
// guest's eth0, already a port of the underlay bridge with its address and default route (startGuest's network);
// what is left is what makes a host a node (forwarding, the pod bridge) and the routes to the peers' pod CIDRs.
// Pods attached through the same runner are namespaces of the guest's kernel.
import type { CommandOptions, CommandResult, CommandRunner } from 'kube-proxy-ts/netfilter/command.js';
import { runChecked } from '@kube-proxy-ts/netns/exec.js';
import { addRoute, type RouteSpec } from '@kube-proxy-ts/netns/link.js';
import { checkNamespaceName } from '@kube-proxy-ts/netns/names.js';
import { buildPodBridge } from '@kube-proxy-ts/netns/wiring.js';
import { errorMessage } from 'kube-proxy-ts/util/error-message.js';
import type { Guest } from './guest.js';

/**
 * Runs each command in the guest (argv, so nothing is parsed by a shell), with the options' stdin, env and
 * timeout. A guest that went away answers as a command that could not start does on the host: code 127, the
 * reason in stderr.
 */
export function guestCommandRunner(guest: Pick<Guest, 'run'>): CommandRunner {
  return {
    async run(cmd: string, args: readonly string[], options: CommandOptions = {}): Promise<CommandResult> {
      try {
        return await guest.run([cmd, ...args], options);
      } catch (err) {
        return { code: 127, stdout: '', stderr: `${cmd}: in the guest: ${errorMessage(err)}` };
      }
    },
  };
}

export interface GuestNodeSpec {
  /** The node's namespace name, which the guest's root namespace takes (as a namespace node's namespace). */
  readonly namespace: string;
  /** Routes beside the default one the guest has: the peers' pod CIDRs via their underlay addresses. */
  readonly routes: readonly RouteSpec[];
  /** The pod bridge's addresses, with the pod CIDR's prefix (as wiring's NodeSpec). */
  readonly podBridgeAddresses: readonly string[];
}

/** Makes the guest a lab node: its root namespace named, its routes, forwarding and the pod bridge. */
export async function wireGuestNode(runner: CommandRunner, node: GuestNodeSpec): Promise<void> {
  checkNamespaceName(node.namespace);
  // pid 1 is the guest's init, in the guest's root namespace.
  await runChecked(runner, 'name the guest root namespace', 'ip', ['netns', 'attach', node.namespace, '1']);
  for (const route of node.routes) await addRoute(runner, node.namespace, route);
  await buildPodBridge(runner, node);
}
