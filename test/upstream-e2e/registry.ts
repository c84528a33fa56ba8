// Every upstream test this harness knows, ported or not, and the selection a run makes of them.
import type { NotPortedTest, PortedTest } from './registry-types.js';
import { SERVICE_TESTS } from './service.js';
import { SERVICE_NODES_NOT_PORTED, SERVICE_NODES_TESTS } from './service-nodes.js';
import { SERVICE_TRAFFIC_NOT_PORTED, SERVICE_TRAFFIC_TESTS } from './service-traffic.js';
import { SERVICE_EVICTED_TESTS } from './service-evicted.js';
import { NETWORKING_NOT_PORTED, NETWORKING_TESTS } from './networking.js';
import { CONNTRACK_NOT_PORTED, CONNTRACK_TESTS } from './conntrack.js';
import { TOPOLOGY_NOT_PORTED, TOPOLOGY_TESTS } from './topology.js';

/**
 * Ported tests whose outcome depends on the API server and its controllers only (an object's lifecycle, an
 * allocation, a validation, the families a Service or Pod is given), by the words their names end with: reported
 * apart, and not counted among the proxy-dependent tests.
 */
const API_ONLY_ENDINGS: readonly string[] = [
  'should provide secure master service [Conformance]',
  'should find a service from listing all namespaces [Conformance]',
  'should delete a collection of services [Conformance]',
  'should test the lifecycle of an Endpoint [Conformance]',
  'should complete a service status lifecycle [Conformance]',
  'should prevent NodePort collisions',
  'should check NodePort out-of-range',
  'should create and delete EndpointSlices for a Service with a selector that matches no pods [Conformance]',
  'should have at least one dual-stack node',
  'should create pod, add ipv6 and ipv4 ip to pod ips',
  'should create pod, add ipv6 and ipv4 ip to host ips',
  'should create a single stack service with cluster ip from primary service range',
  'should create service with ipv4 cluster ip',
  'should create service with ipv6 cluster ip',
  'should create service with ipv4,v6 cluster ip',
  'should create service with ipv6,v4 cluster ip',
];

function markApiOnly(t: PortedTest): PortedTest {
  return API_ONLY_ENDINGS.some((e) => t.name.endsWith(e)) ? { ...t, apiOnly: true } : t;
}

/** Every ported test, one module per upstream file (or group of tests of one file), in upstream's file order. */
export const PORTED_TESTS: readonly PortedTest[] = [
  ...SERVICE_TESTS,
  ...SERVICE_NODES_TESTS,
  ...SERVICE_TRAFFIC_TESTS,
  ...SERVICE_EVICTED_TESTS,
  ...NETWORKING_TESTS,
  ...CONNTRACK_TESTS,
  ...TOPOLOGY_TESTS,
].map(markApiOnly);

const portedNames = new Set(PORTED_TESTS.map((t) => t.name));

/** Upstream tests not ported, with why. A name that a module has since ported leaves this list by itself. */
export const NOT_PORTED_TESTS: readonly NotPortedTest[] = [
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
export const KNOWN_LAB_GAPS: Readonly<Record<string, string>> = {};

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
