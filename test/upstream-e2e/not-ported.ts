// The tests of kubernetes/kubernetes test/e2e/network/service.go not ported (yet), by upstream's name, each with
// why: what the lab or this harness lacks, or that it belongs to a later tranche. docs/upstream-e2e.md has the table.
import { servicesTestName, type NotPortedTest } from './registry-types.js';

function later(it: string, reason: string, conformance = false): NotPortedTest {
  return { name: servicesTestName(it, conformance), conformance, file: 'service.go', reason };
}

const LATER = 'portable with the helpers here; a later tranche';
const NO_RC = 'needs ReplicationControllers with scaling (e2erc.ScaleRC), which the lab does not serve';
const HOST_NETWORK = 'needs hostNetwork exec pods; not tried on the lab yet (a later tranche)';

export const SERVICE_NOT_PORTED: readonly NotPortedTest[] = [
  later(
    'should test the lifecycle of an Endpoint',
    'API-only (create/update/patch/DeleteCollection of Endpoints, watched); not proxy-dependent, a later tranche',
    true,
  ),
  later(
    'should complete a service status lifecycle',
    'API-only (/status get, patch, update, watched); not proxy-dependent, a later tranche',
    true,
  ),
  later('should be updated after adding or deleting ports ', LATER),
  later(
    'should preserve source pod IP for traffic thru service cluster IP [LinuxOnly]',
    'needs a Deployment with required pod anti-affinity across nodes (the lab scheduler’s support not checked yet)',
  ),
  later('should allow pods to hairpin back to themselves through services', LATER),
  later('should be able to up and down services', HOST_NETWORK),
  later('should work after the service has been recreated', HOST_NETWORK),
  later('should work after restarting kube-proxy [Disruptive]', 'disruptive; ' + HOST_NETWORK),
  later(
    'should work after restarting apiserver [Disruptive]',
    'needs the API server as a kube-system pod it can delete (the lab’s is in-process: `lab apiserver-restart`)',
  ),
  later(
    'should be possible to connect to a service via ExternalIP when the external IP is not assigned to a node',
    'uses 203.0.113.250, outside 198.18.0.0/15, the only range lab traffic may use',
  ),
  later(
    'should be able to update service type to NodePort listening on same port number but different protocols',
    LATER,
  ),
  later(
    'should prevent NodePort collisions',
    'API server allocation only, not proxy-dependent; a later tranche',
  ),
  later(
    'should check NodePort out-of-range',
    'API server validation only, not proxy-dependent; a later tranche',
  ),
  later('should release NodePorts on delete', HOST_NETWORK + ' (and `ss` in it)'),
  later('should create endpoints for unready pods', NO_RC),
  later(
    'should be able to connect to terminating and unready endpoints if PublishNotReadyAddresses is true',
    LATER,
  ),
  later(
    'should not be able to connect to terminating and unready endpoints if PublishNotReadyAddresses is false',
    LATER,
  ),
  later(
    'should have session affinity timeout work for service with type clusterIP [LinuxOnly]',
    'portable; waits out a 125 s affinity timeout, too slow for this tranche’s CI budget',
  ),
  later(
    'should have session affinity timeout work for NodePort service [LinuxOnly]',
    'portable; waits out a 125 s affinity timeout, too slow for this tranche’s CI budget',
  ),
  later('should implement service.kubernetes.io/service-proxy-name', HOST_NETWORK),
  later('should implement service.kubernetes.io/headless', HOST_NETWORK),
  later(
    'should be rejected when no endpoints exist',
    'runs `/agnhost connect` inside the exec pod; lab exec pods run the host’s files, which have no /agnhost',
  ),
  later(
    'should be rejected for evicted pods (no endpoints exist)',
    'needs kubelet eviction on ephemeral-storage limits, which the lab lacks',
  ),
  later('should respect internalTrafficPolicy=Local Pod to Pod', LATER),
  later('should respect internalTrafficPolicy=Local Pod (hostNetwork: true) to Pod', HOST_NETWORK),
  later('should respect internalTrafficPolicy=Local Pod and Node, to Pod (hostNetwork: true)', HOST_NETWORK),
  later(
    'should fail health check node port if there are only terminating endpoints',
    LATER + ' (LoadBalancer type without a cloud: its health check node port only)',
  ),
  later(
    'should fallback to terminating endpoints when there are no ready endpoints with internalTrafficPolicy=Cluster',
    LATER,
  ),
  later(
    'should fallback to local terminating endpoints when there are no ready endpoints with internalTrafficPolicy=Local',
    LATER,
  ),
  later(
    'should fallback to terminating endpoints when there are no ready endpoints with externallTrafficPolicy=Cluster',
    LATER,
  ),
  later(
    'should fallback to local terminating endpoints when there are no ready endpoints with externalTrafficPolicy=Local',
    LATER,
  ),
  later(
    'should serve endpoints on same port and different protocol for internal traffic on Type LoadBalancer ',
    LATER + ' (a LoadBalancer Service checked on its ClusterIP only)',
  ),
  later(
    'should allow creating a basic SCTP service with pod and endpoints [LinuxOnly] [Serial]',
    'checks the sctp kernel module on nodes over hostNetwork pods; the lab’s nodes share the host’s kernel',
  ),
];
