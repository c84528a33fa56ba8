// Ports of kubernetes/kubernetes test/e2e/network/networking.go: "[sig-network] Networking" and its Granular Checks: Services.
// Each asserts what upstream asserts, with upstream's names, counts and timeouts; tests not ported say why.
import type { NotPortedTest, PortedTest } from './registry-types.js';

export const NETWORKING_TESTS: readonly PortedTest[] = [];

export const NETWORKING_NOT_PORTED: readonly NotPortedTest[] = [];
