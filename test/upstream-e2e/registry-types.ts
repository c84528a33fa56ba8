// What a ported test is to the runner: upstream's full ginkgo name, whether upstream marks it [Conformance], and
// a run function given a context like ginkgo's (its own namespace, a client, DeferCleanup). Tests not ported yet
// are listed beside them with the reason, so the report can say so by upstream's name.
import type { Kube } from './kube.js';

export interface NodeView {
  readonly name: string;
  readonly internalIP: string;
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
