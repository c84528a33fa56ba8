// Every upstream test this harness knows, ported or not, and the selection a run makes of them.
import { servicesTestName, type NotPortedTest, type PortedTest } from './registry-types.js';
import { SERVICE_TESTS } from './service.js';
import { SERVICE_NOT_PORTED } from './not-ported.js';

export const PORTED_TESTS: readonly PortedTest[] = [...SERVICE_TESTS];
export const NOT_PORTED_TESTS: readonly NotPortedTest[] = [...SERVICE_NOT_PORTED];

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
