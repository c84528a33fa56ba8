// Ports of kubernetes/kubernetes test/e2e/network/service.go: the Service tests about ports, NodePorts, API lifecycles and hostNetwork clients.
// Each asserts what upstream asserts, with upstream's names, counts and timeouts; tests not ported say why.
import type { NotPortedTest, PortedTest } from './registry-types.js';

export const SERVICE_NODES_TESTS: readonly PortedTest[] = [];

export const SERVICE_NODES_NOT_PORTED: readonly NotPortedTest[] = [];
