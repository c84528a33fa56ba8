// Where a Pod may run: the lab's version of kube-scheduler's filter plugins (pkg/scheduler/framework/plugins), in
// the order upstream's default profile runs them (NodeUnschedulable, TaintToleration, NodeAffinity,
// InterPodAffinity), each node failing on its first filter with that plugin's wording, so a Pod that fits nowhere
// gets the message `kubectl describe` shows on a real cluster. The preferred (…DuringScheduling) terms only break
// ties between nodes that fit: their weights are summed as they are, not normalised per plugin as upstream scores
// are. Every place that picks a node (the pod controller, the Deployment and DaemonSet controllers) asks here.
import { arr, child, isObject, num, str, type JsonObject } from '../apiserver/json.js';
import { labelsMatchSelector } from '../apiserver/kinds.js';
import { resourceByKind } from '../apiserver/resources.js';
import type { ObjectStore } from '../apiserver/store.js';

const meta = (o: unknown): JsonObject => child(o, 'metadata');
const nameOf = (o: unknown): string => str(meta(o), 'name') ?? '';
const labelsOf = (o: unknown): JsonObject => child(meta(o), 'labels');
const affinityOf = (pod: unknown, kind: string): JsonObject =>
  child(child(child(pod, 'spec'), 'affinity'), kind);

/** The reasons, word for word as upstream's plugins give them (each plugin's ErrReason…). */
export const REASON = {
  unschedulable: 'node(s) were unschedulable',
  nodeAffinity: "node(s) didn't match Pod's node affinity/selector",
  podAffinity: "node(s) didn't match pod affinity rules",
  podAntiAffinity: "node(s) didn't match pod anti-affinity rules",
  existingAntiAffinity: "node(s) didn't satisfy existing pods anti-affinity rules",
} as const;

/** What the filters look at besides the Pod and the Node: the Pods already bound, and namespaces' labels. */
export interface SchedulingSnapshot {
  readonly nodes: readonly JsonObject[];
  /** Pods bound to a node that still hold their place there (not Succeeded or Failed; terminating ones do). */
  readonly boundPods: readonly JsonObject[];
  readonly namespaceLabels: (namespace: string) => JsonObject;
}

/**
 * The cluster as the scheduler sees it now. Read afresh for every decision: the store's writes are synchronous,
 * so a Pod bound a moment ago in the same reconcile is already here.
 */
export function snapshotOf(store: ObjectStore): SchedulingSnapshot {
  const boundPods = store.list(resourceByKind('Pod')).filter((p) => {
    const phase = str(child(p, 'status'), 'phase');
    return str(child(p, 'spec'), 'nodeName') && phase !== 'Succeeded' && phase !== 'Failed';
  });
  return {
    nodes: store.list(resourceByKind('Node')),
    boundPods,
    namespaceLabels: (ns) => labelsOf(store.get(resourceByKind('Namespace'), '', ns)),
  };
}

// ---- node selectors: spec.nodeSelector and nodeAffinity ----

/** One NodeSelectorRequirement against a map of values (a Node's labels, or its fields for matchFields). */
function requirementMatches(req: unknown, values: JsonObject): boolean {
  const key = str(req, 'key') ?? '';
  const wanted = arr(req, 'values');
  const has = Object.prototype.hasOwnProperty.call(values, key);
  const value = values[key];
  switch (str(req, 'operator')) {
    case 'In':
      return has && wanted.includes(value);
    case 'NotIn':
      return !has || !wanted.includes(value);
    case 'Exists':
      return has;
    case 'DoesNotExist':
      return !has;
    case 'Gt':
    case 'Lt': {
      // Both sides are integers (upstream parses them with ParseInt); anything else matches nothing.
      const integer = /^-?\d+$/;
      const bound = wanted[0];
      if (!has || typeof value !== 'string' || typeof bound !== 'string') return false;
      if (wanted.length !== 1 || !integer.test(value) || !integer.test(bound)) return false;
      return str(req, 'operator') === 'Gt' ? BigInt(value) > BigInt(bound) : BigInt(value) < BigInt(bound);
    }
    default:
      return false;
  }
}

/** A NodeSelectorTerm: its expressions and fields ANDed; a term with neither matches nothing (upstream). */
export function nodeSelectorTermMatches(term: unknown, node: unknown): boolean {
  const expressions = arr(term, 'matchExpressions');
  const fields = arr(term, 'matchFields');
  if (expressions.length === 0 && fields.length === 0) return false;
  // metadata.name is the one field a term may name (validation allows no other).
  const nodeFields: JsonObject = { 'metadata.name': nameOf(node) };
  return (
    expressions.every((e) => requirementMatches(e, labelsOf(node))) &&
    fields.every((f) => requirementMatches(f, nodeFields))
  );
}

/** The NodeAffinity filter: every nodeSelector pair, and one of the required nodeSelectorTerms (ORed). */
export function matchesNodeSelectorAndAffinity(pod: unknown, node: unknown): boolean {
  const labels = labelsOf(node);
  for (const [k, v] of Object.entries(child(child(pod, 'spec'), 'nodeSelector')))
    if (labels[k] !== v) return false;
  const required = child(affinityOf(pod, 'nodeAffinity'), 'requiredDuringSchedulingIgnoredDuringExecution');
  if (Object.keys(required).length === 0) return true;
  return arr(required, 'nodeSelectorTerms').some((t) => nodeSelectorTermMatches(t, node));
}

// ---- taints and tolerations ----

/** Upstream's Toleration.ToleratesTaint. */
function tolerates(toleration: unknown, taint: unknown): boolean {
  const effect = str(toleration, 'effect') ?? '';
  if (effect !== '' && effect !== str(taint, 'effect')) return false;
  const key = str(toleration, 'key') ?? '';
  if (key !== '' && key !== str(taint, 'key')) return false;
  const operator = str(toleration, 'operator') ?? 'Equal';
  if (operator === 'Exists') return true;
  return operator === 'Equal' && (str(toleration, 'value') ?? '') === (str(taint, 'value') ?? '');
}

/** The node's first taint with one of `effects` that no toleration tolerates. */
function untoleratedTaint(
  node: unknown,
  tolerations: readonly unknown[],
  effects: readonly string[],
): JsonObject | undefined {
  return arr(child(node, 'spec'), 'taints').find(
    (t) => effects.includes(str(t, 'effect') ?? '') && !tolerations.some((tol) => tolerates(tol, t)),
  ) as JsonObject | undefined;
}

const taintReason = (t: JsonObject): string =>
  `node(s) had untolerated taint {${str(t, 'key') ?? ''}: ${str(t, 'value') ?? ''}}`;

// ---- inter-pod affinity ----

/** Whether `candidate` is one of the Pods a PodAffinityTerm of a Pod in namespace `ownerNs` selects. */
function termSelects(term: unknown, ownerNs: string, candidate: unknown, snap: SchedulingSnapshot): boolean {
  // A term without a labelSelector selects no Pods (an empty one selects all); so for namespaceSelector.
  const given = (field: string): boolean => isObject((term as JsonObject | undefined)?.[field]);
  if (!given('labelSelector')) return false;
  const ns = str(meta(candidate), 'namespace') ?? '';
  const listed = arr(term, 'namespaces');
  // Neither namespaces nor a namespaceSelector: the term's own Pod's namespace.
  const inNamespace =
    listed.length === 0 && !given('namespaceSelector')
      ? ns === ownerNs
      : listed.includes(ns) ||
        (given('namespaceSelector') &&
          labelsMatchSelector(child(term, 'namespaceSelector'), snap.namespaceLabels(ns)));
  return inNamespace && labelsMatchSelector(child(term, 'labelSelector'), labelsOf(candidate));
}

/** Two nodes in one topology domain: both carry the key, with one value. A node without it is in none. */
function sameDomain(a: unknown, b: unknown, topologyKey: string): boolean {
  const la = labelsOf(a);
  const lb = labelsOf(b);
  return typeof la[topologyKey] === 'string' && la[topologyKey] === lb[topologyKey];
}

const requiredTerms = (pod: unknown, kind: string): unknown[] =>
  arr(affinityOf(pod, kind), 'requiredDuringSchedulingIgnoredDuringExecution');

/** The InterPodAffinity filter for `pod` on `node`; the reason when it fails. */
function interPodAffinityReason(
  pod: JsonObject,
  node: JsonObject,
  snap: SchedulingSnapshot,
): string | undefined {
  const podNs = str(meta(pod), 'namespace') ?? '';
  const podUid = str(meta(pod), 'uid');
  const others = snap.boundPods.filter((p) => podUid === undefined || str(meta(p), 'uid') !== podUid);
  const nodeByName = new Map(snap.nodes.map((n) => [nameOf(n), n]));
  const nodeOf = (p: unknown): JsonObject | undefined =>
    nodeByName.get(str(child(p, 'spec'), 'nodeName') ?? '');
  const key = (t: unknown): string => str(t, 'topologyKey') ?? '';

  // Affinity: the terms are ANDed, and a Pod counts only when it matches all of them (upstream's counts).
  const affinity = requiredTerms(pod, 'podAffinity');
  if (affinity.length > 0) {
    if (!affinity.every((t) => typeof labelsOf(node)[key(t)] === 'string')) return REASON.podAffinity;
    const matching = others.filter((p) => affinity.every((t) => termSelects(t, podNs, p, snap)));
    const satisfied = affinity.every((t) => matching.some((p) => sameDomain(node, nodeOf(p), key(t))));
    // The first Pod of a group that wants to be with its own kind may go anywhere (upstream's special case).
    const first = matching.length === 0 && affinity.every((t) => termSelects(t, podNs, pod, snap));
    if (!satisfied && !first) return REASON.podAffinity;
  }
  for (const t of requiredTerms(pod, 'podAntiAffinity'))
    if (others.some((p) => termSelects(t, podNs, p, snap) && sameDomain(node, nodeOf(p), key(t))))
      return REASON.podAntiAffinity;
  // Symmetry: a bound Pod's own anti-affinity keeps this Pod out of its domain.
  for (const p of others) {
    const theirNs = str(meta(p), 'namespace') ?? '';
    for (const t of requiredTerms(p, 'podAntiAffinity'))
      if (termSelects(t, theirNs, pod, snap) && sameDomain(node, nodeOf(p), key(t)))
        return REASON.existingAntiAffinity;
  }
  return undefined;
}

// ---- the filters together ----

const UNSCHEDULABLE_TAINT = { key: 'node.kubernetes.io/unschedulable', effect: 'NoSchedule' };

/** Why `pod` cannot run on `node`, in the first failing plugin's words; undefined when it fits. */
export function filterReason(
  pod: JsonObject,
  node: JsonObject,
  snap: SchedulingSnapshot,
): string | undefined {
  const tolerations = arr(child(pod, 'spec'), 'tolerations');
  // NodeUnschedulable: a cordoned node, unless the Pod tolerates the taint cordoning stands for.
  if (
    child(node, 'spec').unschedulable === true &&
    !tolerations.some((t) => tolerates(t, UNSCHEDULABLE_TAINT))
  )
    return REASON.unschedulable;
  const taint = untoleratedTaint(node, tolerations, ['NoSchedule', 'NoExecute']);
  if (taint) return taintReason(taint);
  if (!matchesNodeSelectorAndAffinity(pod, node)) return REASON.nodeAffinity;
  return interPodAffinityReason(pod, node, snap);
}

/**
 * kube-scheduler's FitError text: "0/3 nodes are available: 1 node(s) …, 2 node(s) …." (reasons counted, sorted
 * as strings, as upstream sorts its histogram). The lab does no preemption, so upstream's "preemption: …" tail is
 * left out.
 */
export function unschedulableMessage(nodeCount: number, reasons: readonly string[]): string {
  if (nodeCount === 0) return 'no nodes available to schedule pods';
  const counts = new Map<string, number>();
  for (const r of reasons) counts.set(r, (counts.get(r) ?? 0) + 1);
  const parts = [...counts].map(([r, n]) => `${n} ${r}`).sort();
  return `0/${nodeCount} nodes are available: ${parts.join(', ')}.`;
}

/**
 * The preferred terms' weights for `node`: node affinity preferences that match, plus (pod affinity) or minus
 * (pod anti-affinity) a term's weight for each bound Pod it selects in the node's domain. Bound Pods' own
 * preferences (upstream scores those symmetrically too) are not counted.
 */
export function preferenceScore(pod: JsonObject, node: JsonObject, snap: SchedulingSnapshot): number {
  const preferred = (kind: string): unknown[] =>
    arr(affinityOf(pod, kind), 'preferredDuringSchedulingIgnoredDuringExecution');
  let score = 0;
  for (const p of preferred('nodeAffinity'))
    if (nodeSelectorTermMatches(child(p, 'preference'), node)) score += num(p, 'weight') ?? 0;
  const podNs = str(meta(pod), 'namespace') ?? '';
  const nodeByName = new Map(snap.nodes.map((n) => [nameOf(n), n]));
  for (const [kind, sign] of [
    ['podAffinity', 1],
    ['podAntiAffinity', -1],
  ] as const) {
    for (const p of preferred(kind)) {
      const term = child(p, 'podAffinityTerm');
      const weight = num(p, 'weight') ?? 0;
      for (const other of snap.boundPods) {
        const otherNode = nodeByName.get(str(child(other, 'spec'), 'nodeName') ?? '');
        if (
          termSelects(term, podNs, other, snap) &&
          sameDomain(node, otherNode, str(term, 'topologyKey') ?? '')
        )
          score += sign * weight;
      }
    }
  }
  return score;
}

export type Placement =
  | { readonly node: string; readonly message?: undefined }
  | { readonly node?: undefined; readonly message: string };

/**
 * The nodes `pod` may go to, best first by preference score; or kube-scheduler's message when there are none.
 * `rotate` turns ties (equal scores, which is every node when nothing is preferred) round robin.
 */
export function placePod(pod: JsonObject, snap: SchedulingSnapshot, rotate: number): Placement {
  const reasons: string[] = [];
  const feasible: JsonObject[] = [];
  for (const node of snap.nodes) {
    const reason = filterReason(pod, node, snap);
    if (reason === undefined) feasible.push(node);
    else reasons.push(reason);
  }
  if (feasible.length === 0) return { message: unschedulableMessage(snap.nodes.length, reasons) };
  const scored = feasible.map((n) => ({ n, score: preferenceScore(pod, n, snap) }));
  const best = Math.max(...scored.map((s) => s.score));
  const ties = scored.filter((s) => s.score === best).map((s) => s.n);
  return { node: nameOf(ties[rotate % ties.length]) };
}

/**
 * Which nodes a DaemonSet's Pod belongs on, as upstream's daemon controller decides (NodeShouldRunDaemonPod): its
 * node affinity and selector, and the node's NoSchedule/NoExecute taints against the template's tolerations plus
 * those upstream adds to every daemon Pod. A node whose only obstacle is a NoSchedule taint gets no new Pod but
 * keeps the one it has. Cordoning is no obstacle (daemon Pods tolerate it); inter-pod affinity is not checked
 * (upstream leaves that to the scheduler, which the lab's DaemonSets bypass).
 */
export function daemonPodPlacement(
  template: JsonObject,
  node: JsonObject,
): { readonly shouldRun: boolean; readonly shouldContinueRunning: boolean } {
  const spec = child(template, 'spec');
  const named = str(spec, 'nodeName');
  if ((named && named !== nameOf(node)) || !matchesNodeSelectorAndAffinity(template, node))
    return { shouldRun: false, shouldContinueRunning: false };
  const tolerations = [...arr(spec, 'tolerations'), ...daemonTolerations(spec.hostNetwork === true)];
  if (!untoleratedTaint(node, tolerations, ['NoSchedule', 'NoExecute']))
    return { shouldRun: true, shouldContinueRunning: true };
  return { shouldRun: false, shouldContinueRunning: !untoleratedTaint(node, tolerations, ['NoExecute']) };
}

/** Upstream's AddOrUpdateDaemonPodTolerations: what every daemon Pod tolerates (pkg/controller/daemon/util). */
function daemonTolerations(hostNetwork: boolean): JsonObject[] {
  const exists = (key: string, effect: string): JsonObject => ({ key, operator: 'Exists', effect });
  return [
    exists('node.kubernetes.io/not-ready', 'NoExecute'),
    exists('node.kubernetes.io/unreachable', 'NoExecute'),
    exists('node.kubernetes.io/disk-pressure', 'NoSchedule'),
    exists('node.kubernetes.io/memory-pressure', 'NoSchedule'),
    exists('node.kubernetes.io/pid-pressure', 'NoSchedule'),
    exists('node.kubernetes.io/unschedulable', 'NoSchedule'),
    ...(hostNetwork ? [exists('node.kubernetes.io/network-unavailable', 'NoSchedule')] : []),
  ];
}
