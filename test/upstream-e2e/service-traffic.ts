// Ports of kubernetes/kubernetes test/e2e/network/service.go: the Service tests about traffic policies, terminating and unready endpoints, hairpin and rejects.
// Each asserts what upstream asserts, with upstream's names, counts and timeouts; tests not ported say why.
import type { NotPortedTest, PortedTest } from './registry-types.js';

export const SERVICE_TRAFFIC_TESTS: readonly PortedTest[] = [];

export const SERVICE_TRAFFIC_NOT_PORTED: readonly NotPortedTest[] = [];
