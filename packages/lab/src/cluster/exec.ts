// `lab exec TARGET -- CMD…`: which namespace a target names. A node name (control-plane, worker, …), "client"
// (the outside client), "underlay", a pod name, or NAMESPACE/POD when a pod name is not unique.
import type { CommandRunner } from 'kube-proxy-ts/netfilter/command.js';
import { listNamespaces } from '@kube-proxy-ts/netns/index.js';
import { podNamespaceName } from './layout.js';
import { layoutOf, type LabState } from './state.js';

export type TargetLookup =
  { readonly ok: true; readonly namespace: string } | { readonly ok: false; readonly reason: string };

export async function resolveTarget(
  runner: CommandRunner,
  state: LabState,
  target: string,
): Promise<TargetLookup> {
  const layout = layoutOf(state);
  const node = layout.nodes.find((n) => n.name === target);
  if (node) return { ok: true, namespace: node.namespace };
  if (target === 'client') return { ok: true, namespace: layout.clientNamespace };
  if (target === 'underlay') return { ok: true, namespace: layout.underlayNamespace };
  const existing = (await listNamespaces(runner)).filter((n) => n.startsWith(`${state.prefix}-`));
  const slash = target.indexOf('/');
  if (slash > 0) {
    const ns = podNamespaceName(state.prefix, target.slice(0, slash), target.slice(slash + 1));
    return existing.includes(ns)
      ? { ok: true, namespace: ns }
      : { ok: false, reason: `no running pod ${target}` };
  }
  const matches = existing.filter(
    (n) => n.endsWith(`-${target}`) && !layout.nodes.some((x) => x.namespace === n),
  );
  if (matches.length === 1 && matches[0] !== undefined) return { ok: true, namespace: matches[0] };
  if (matches.length > 1)
    return { ok: false, reason: `${target} matches several pods (${matches.join(', ')}); say NAMESPACE/POD` };
  return {
    ok: false,
    reason: `${target} is neither a node (${layout.nodes.map((n) => n.name).join(', ')}), "client", nor a running pod`,
  };
}
