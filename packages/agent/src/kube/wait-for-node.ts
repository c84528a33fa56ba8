// Startup waits for this node's Node object (upstream pkg/proxy/node.go NewNodeManager, which polls every second),
// for up to five minutes, until the Node exists and has node IPs (and PodCIDRs, when detect-local mode is NodeCIDR).
// It looks again each time the node reflector delivers the Node (`subscribe`), so the wait ends as the Node is
// listed rather than at the next poll; the poll stays for a lookup with no events.
// Its IPs and pod CIDRs are read as model/node-facts.ts reads them for every other use.
import type { Clock, TimerHandle } from '../util/clock.js';
import type { Node } from '../api/objects.js';
import { nodeIPs, nodePodCIDRs } from '../model/node-facts.js';

export interface WaitForNodeOptions {
  readonly timeoutMs?: number;
  readonly pollMs?: number;
  readonly clock: Clock;
  /** Looks the Node up, e.g. from the node reflector's store: `(name) => reflector.get(name)`. */
  readonly lookup: (nodeName: string) => Node | undefined;
  /** With detect-local mode NodeCIDR, the Node must also have spec.podCIDRs (or podCIDR). */
  readonly requirePodCIDRs?: boolean;
  readonly signal?: AbortSignal;
  /** Hands over a function that looks again at once (call it on each Node event); returns what stops that. */
  readonly subscribe?: (lookAgain: () => void) => () => void;
}

export type WaitForNodeResult =
  | { readonly ok: true; readonly node: Node; readonly nodeIPs: readonly string[] }
  | { readonly ok: false; readonly reason: string };

export function waitForNode(nodeName: string, options: WaitForNodeOptions): Promise<WaitForNodeResult> {
  const { clock, lookup } = options;
  const timeoutMs = options.timeoutMs ?? 5 * 60_000;
  const pollMs = options.pollMs ?? 1_000;
  const deadline = clock.now() + timeoutMs;
  return new Promise((resolve) => {
    let timer: TimerHandle | undefined;
    let why = 'not found';
    let done = false;
    let unsubscribe = (): void => {};
    const finish = (result: WaitForNodeResult): void => {
      done = true;
      if (timer) clock.clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
      unsubscribe();
      resolve(result);
    };
    const onAbort = (): void => finish({ ok: false, reason: `waiting for node ${nodeName} was cancelled` });
    const poll = (): void => {
      if (done) return;
      if (timer) clock.clearTimeout(timer);
      timer = undefined;
      const node = lookup(nodeName);
      if (node) {
        const ips = nodeIPs(node);
        if (ips.length === 0) why = 'has no InternalIP or ExternalIP address';
        else if (options.requirePodCIDRs && nodePodCIDRs(node).length === 0) why = 'has no podCIDRs';
        else return finish({ ok: true, node, nodeIPs: ips });
      }
      if (clock.now() >= deadline)
        return finish({
          ok: false,
          reason: `node ${nodeName} ${why} after ${Math.round(timeoutMs / 1000)} s`,
        });
      timer = clock.setTimeout(poll, Math.min(pollMs, Math.max(0, deadline - clock.now())));
    };
    if (options.signal?.aborted) return onAbort();
    options.signal?.addEventListener('abort', onAbort, { once: true });
    if (options.subscribe) unsubscribe = options.subscribe(poll);
    poll();
  });
}
