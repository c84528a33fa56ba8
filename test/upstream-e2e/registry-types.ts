// What a ported test is to the runner: upstream's full ginkgo name, whether upstream marks it [Conformance], and
// a run function given a context like ginkgo's (its own namespace, a client, DeferCleanup). Tests not ported yet
// are listed beside them with the reason, so the report can say so by upstream's name.
import type { Kube } from './kube.js';

export interface NodeView {
  readonly name: string;
  /** The node's first InternalIP (the primary family's). */
  readonly internalIP: string;
  /** Every InternalIP, in the Node's order (a dual-stack node has one per family). */
  readonly internalIPs?: readonly string[];
  /** The topology.kubernetes.io/zone label, when the node has one. */
  readonly zone?: string;
  /** Labelled node-role.kubernetes.io/control-plane (topology-mode Auto leaves such nodes out of its shares). */
  readonly controlPlane?: boolean;
}

/**
 * What a test needs of the cluster beyond upstream's defaults, as upstream's skips check it: `dual-stack` (nodes
 * with InternalIPs of both families and Service ranges of both: [Feature:IPv6DualStack]); `zones` (nodes in at
 * least 2 zones: SkipUnlessMultizone); `worker-zones` (every schedulable node a worker, in at least 2 zones: the
 * nodes topology-mode Auto's zone shares are made of, so that a DaemonSet's endpoints can all be hinted to their own
 * zone); `localhost-nodeports` (the proxies serve NodePorts on 127.0.0.1: kube-system/kube-proxy's configuration
 * says iptables mode, localhostNodePorts not turned off: [Feature:LocalhostNodePorts]); `three-zones` (nodes in
 * at least 3 zones: SkipUnlessAtLeastNZones(3)); `three-zones-of-two-nodes` (3 zones with at least 2 nodes each:
 * traffic_distribution.go's multi-node cases).
 * The runner reports a test whose requirement the cluster does not meet as skipped, with the reason.
 */
export type Requirement =
  | 'dual-stack'
  | 'zones'
  | 'worker-zones'
  | 'three-zones'
  | 'three-zones-of-two-nodes'
  | 'localhost-nodeports';

/** What the cluster offers, found out before the run (runner.ts clusterOffer). */
export interface ClusterOffer {
  readonly dualStack: boolean;
  /** Ready schedulable nodes per zone label (nodes without one are not counted). */
  readonly nodesPerZone: ReadonlyMap<string, number>;
  /** The zones of the ready schedulable nodes that are not control-plane nodes. */
  readonly workerZones: number;
  /** Some ready schedulable node is a control-plane node (untainted, as the lab's). */
  readonly schedulableControlPlane: boolean;
  /** kube-system/kube-proxy's configuration: iptables mode (the Linux default) and localhostNodePorts not false. */
  readonly localhostNodePorts: boolean;
}

export interface UpstreamContext {
  readonly kube: Kube;
  /** The test's own namespace (framework.Namespace), created before and deleted after it. */
  readonly namespace: string;
  /** The cluster's ready, schedulable nodes (e2enode.GetReadySchedulableNodes), in name order. */
  readonly nodes: readonly NodeView[];
  /** Aborted on SIGINT or when the run's time is up: waits end early. */
  readonly signal: AbortSignal;
  /** framework.Logf: goes to the test's log, shown when it fails. */
  log(line: string): void;
  /** ginkgo.By: a step, logged. */
  step(what: string): void;
  /** ginkgo.DeferCleanup: run after the test, last registered first, whatever happened. */
  defer(cleanup: () => Promise<void>): void;
  /**
   * Restarts the cluster's API server and resolves once it serves again (upstream's restartApiserver); present
   * only when the runner brought the lab up itself.
   */
  readonly restartApiServer?: () => Promise<void>;
}

export interface PortedTest {
  /** upstream's full ginkgo text, e.g. "[sig-network] Services should … [Conformance]". */
  readonly name: string;
  readonly conformance: boolean;
  /** The upstream file, under kubernetes/kubernetes test/e2e/network/. */
  readonly file: string;
  /**
   * upstream's [Serial] or [Disruptive]: the test changes what other tests rely on (restarts a proxy, fills a
   * table), so the runner runs it alone, after the others.
   */
  readonly serial?: boolean;
  /** What the cluster must offer for the test to run at all (upstream's Skipf); absent: nothing beyond 2 nodes. */
  readonly requires?: readonly Requirement[];
  /**
   * The outcome depends on the API server and controllers only, not on any node's proxy (an object's lifecycle,
   * an allocation, a validation): reported apart, and not counted among the proxy-dependent tests.
   */
  readonly apiOnly?: boolean;
  run(ctx: UpstreamContext): Promise<void>;
}

export interface NotPortedTest {
  readonly name: string;
  readonly conformance: boolean;
  readonly file: string;
  /** Why not (yet): what the lab or this harness lacks. */
  readonly reason: string;
}

export const SIG_NETWORK_SERVICES = '[sig-network] Services';

/** The full ginkgo text of a Services test: `framework.ConformanceIt` appends " [Conformance]". */
export function servicesTestName(it: string, conformance: boolean): string {
  return `${SIG_NETWORK_SERVICES} ${it}${conformance ? ' [Conformance]' : ''}`;
}
