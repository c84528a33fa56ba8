// Port of kubernetes/kubernetes test/e2e/network/service.go's "should be rejected for evicted pods (no endpoints
// exist)" (a regression test for issues 109414 and 109718): a Pod evicted for its local storage leaves its Service
// (which publishes not-ready addresses) without endpoints, and the proxy rejects connections to it. The lab kubelet
// evicts as upstream's eviction manager does (packages/lab/src/cluster/local-storage.ts): the Pod's `dd` writes
// 10 MiB into its container's writable layer, over its 5Mi ephemeral-storage limit.
import {
  fail,
  KUBE_PROXY_ENDPOINT_LAG_TIMEOUT_MS,
  poll,
  POLL_MS,
  SERVICE_ENDPOINTS_TIMEOUT_MS,
} from './framework.js';
import { field, fieldArray, fieldString, type KubeObject } from './kube.js';
import { serviceSpec, TestJig } from './jig.js';
import { agnhostPod, waitForPod } from './pods.js';
import { servicesTestName, type PortedTest, type UpstreamContext } from './registry-types.js';
import { createExecPodOnNode, expectRefused, joinHostPort } from './service-traffic-pods.js';

/** e2eservice.MaxNodesForEndpointsTests: GetBoundedReadySchedulableNodes' bound here. */
const MAX_NODES_FOR_ENDPOINTS_TESTS = 3;

/**
 * e2epod.WaitForPodTerminatedInNamespace: the Pod failed with this reason (a Failed Pod with another reason fails
 * at once), within the pod start timeout (waitForPod's default, as upstream's podStartTimeout).
 */
async function waitForPodTerminated(ctx: UpstreamContext, name: string, reason: string): Promise<void> {
  await waitForPod(ctx, name, `terminated with reason ${reason}`, (pod) => {
    if (fieldString(pod, 'status', 'phase') !== 'Failed') return false;
    const got = fieldString(pod, 'status', 'reason');
    if (got !== reason)
      fail(
        `Expected pod "${name}" in namespace "${ctx.namespace}" to be terminated with reason "${reason}", got reason: "${got}"`,
      );
    return true;
  });
}

/** Polls until the Service has no Endpoints subsets and exactly one EndpointSlice, empty. */
async function waitForNoEndpoints(ctx: UpstreamContext, serviceName: string): Promise<void> {
  const ok = await poll(
    POLL_MS,
    SERVICE_ENDPOINTS_TIMEOUT_MS,
    async () => {
      const endpoints = await ctx.kube.get(ctx.namespace, 'endpoints', serviceName);
      const subsets = fieldArray(endpoints, 'subsets');
      if (subsets.length > 0) {
        ctx.log(
          `expected '${ctx.namespace}/${serviceName}' Endpoints to be empty, got: ${JSON.stringify(subsets)}`,
        );
        return false;
      }
      const slices = await ctx.kube.list(
        ctx.namespace,
        'endpointslices',
        `kubernetes.io/service-name=${serviceName}`,
      );
      if (slices.length !== 1) {
        ctx.log(`expected exactly 1 EndpointSlice, got: ${slices.length}`);
        return false;
      }
      const eps = fieldArray(slices[0], 'endpoints');
      if (eps.length > 0) {
        ctx.log(`expected EndpointSlice to be empty, got ${eps.length} endpoints`);
        return false;
      }
      return true;
    },
    ctx.signal,
  );
  if (!ok) fail('timed out waiting for the condition');
}

async function rejectedForEvictedPods(ctx: UpstreamContext): Promise<void> {
  const serviceName = 'evicted-pods';
  const jig = new TestJig(ctx, serviceName);
  const nodes = ctx.nodes.slice(0, MAX_NODES_FOR_ENDPOINTS_TESTS);
  const nodeName = nodes[0]?.name ?? fail('no ready schedulable node');
  const port = 80;

  ctx.step('creating a service with no endpoints');
  await jig.createTCPServiceWithPort((s) => {
    // set publish not ready addresses to cover edge cases too
    serviceSpec(s).publishNotReadyAddresses = true;
  }, port);

  // Create a pod in one node to get evicted
  ctx.step(`creating a client pod that is going to be evicted for the service ${serviceName}`);
  const evictedPod = agnhostPod({ name: 'evicted-pod' }, {}, [], []);
  const container = field(evictedPod, 'spec', 'containers', 0) as KubeObject;
  container.command = ['/bin/sh', '-c', 'sleep 10; dd if=/dev/zero of=file bs=1M count=10; sleep 10000'];
  container.name = 'evicted-pod';
  container.resources = { limits: { 'ephemeral-storage': '5Mi' } };
  await ctx.kube.create(ctx.namespace, evictedPod);
  await waitForPodTerminated(ctx, 'evicted-pod', 'Evicted').catch((e: unknown) =>
    fail(`error waiting for pod to be evicted: ${e instanceof Error ? e.message : String(e)}`),
  );

  const podName = 'execpod-evictedpods';
  const execPod = await createExecPodOnNode(ctx, podName, nodeName);

  await waitForNoEndpoints(ctx, serviceName);

  const serviceAddress = joinHostPort(serviceName, port);
  ctx.log(`waiting up to ${KUBE_PROXY_ENDPOINT_LAG_TIMEOUT_MS / 1000}s to connect to ${serviceAddress}`);
  ctx.step(
    `hitting service ${serviceAddress} from pod ${podName} on node ${nodeName} expected to be refused`,
  );
  await expectRefused(ctx, execPod, serviceAddress);
}

export const SERVICE_EVICTED_TESTS: readonly PortedTest[] = [
  {
    name: servicesTestName('should be rejected for evicted pods (no endpoints exist)', false),
    conformance: false,
    file: 'service.go',
    run: rejectedForEvictedPods,
  },
];
