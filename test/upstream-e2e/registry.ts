// Every upstream test this harness knows, ported or not, and the selection a run makes of them.
import { servicesTestName, type NotPortedTest, type PortedTest } from './registry-types.js';
import { SERVICE_TESTS } from './service.js';
import { SERVICE_NOT_PORTED } from './not-ported.js';
import { SERVICE_NODES_NOT_PORTED, SERVICE_NODES_TESTS } from './service-nodes.js';
import { SERVICE_TRAFFIC_NOT_PORTED, SERVICE_TRAFFIC_TESTS } from './service-traffic.js';
import { NETWORKING_NOT_PORTED, NETWORKING_TESTS } from './networking.js';
import { CONNTRACK_NOT_PORTED, CONNTRACK_TESTS } from './conntrack.js';
import { TOPOLOGY_NOT_PORTED, TOPOLOGY_TESTS } from './topology.js';

/** Every ported test, one module per upstream file (or group of tests of one file), in upstream's file order. */
export const PORTED_TESTS: readonly PortedTest[] = [
  ...SERVICE_TESTS,
  ...SERVICE_NODES_TESTS,
  ...SERVICE_TRAFFIC_TESTS,
  ...NETWORKING_TESTS,
  ...CONNTRACK_TESTS,
  ...TOPOLOGY_TESTS,
];

const portedNames = new Set(PORTED_TESTS.map((t) => t.name));

/** Upstream tests not ported, with why. A name that a module has since ported leaves this list by itself. */
export const NOT_PORTED_TESTS: readonly NotPortedTest[] = [
  ...SERVICE_NOT_PORTED,
  ...SERVICE_NODES_NOT_PORTED,
  ...SERVICE_TRAFFIC_NOT_PORTED,
  ...NETWORKING_NOT_PORTED,
  ...CONNTRACK_NOT_PORTED,
  ...TOPOLOGY_NOT_PORTED,
].filter((t) => !portedNames.has(t.name));

/**
 * Ported tests that fail on the lab for a reason outside the proxy and outside this harness, by upstream's name:
 * the run still runs and reports them (FAIL, with this note); the node:test suite marks them `todo`.
 */
export const KNOWN_LAB_GAPS: Readonly<Record<string, string>> = {
  [servicesTestName('should provide secure master service', true)]:
    'the lab API server serves no Service default/kubernetes (nor its EndpointSlice)',
  [servicesTestName('should find a service from listing all namespaces', true)]:
    'the lab API server serves no Service default/kubernetes (nor its EndpointSlice)',
};

export interface Selection {
  /** --conformance: only upstream's [Conformance] tests. */
  readonly conformanceOnly: boolean;
  /** --only REGEX: only tests whose full name matches. */
  readonly only?: RegExp;
}

export interface Selected {
  readonly ported: readonly PortedTest[];
  readonly notPorted: readonly NotPortedTest[];
}

export function selectTests(sel: Selection): Selected {
  const keep = (t: { name: string; conformance: boolean }): boolean =>
    (!sel.conformanceOnly || t.conformance) && (sel.only === undefined || sel.only.test(t.name));
  return { ported: PORTED_TESTS.filter(keep), notPorted: NOT_PORTED_TESTS.filter(keep) };
}
