// Session affinity as service.go checks it: serve-hostname Services (StartServeHostnameService), an exec pod that
// curls the Service 16 times per batch (affinityCheckFromPod), and the tracker that calls affinity held when the
// last AffinityConfirmCount answers came from one host (checkAffinity), polled every 2 × AffinityConfirmCount s
// for AffinityTimeout.
import { AFFINITY_CONFIRM_COUNT, AFFINITY_TIMEOUT_MS, expect, fail, poll } from './framework.js';
import { field, fieldString, type KubeObject } from './kube.js';
import { runServeHostnameReplicas, stopServeHostnameService, TestJig, serviceSpec } from './jig.js';
import { createExecPodOrFail } from './pods.js';
import { checkServiceReachability } from './reachability.js';
import type { UpstreamContext } from './registry-types.js';

/** defaultServeHostnameServicePort and the serve-hostname container's port. */
export const SERVE_HOSTNAME_SERVICE_PORT = 80;
const SERVE_HOSTNAME_PORT = 9376;

/** getServeHostnameService: port 80 → 9376/TCP, selecting name=<name>. */
export function serveHostnameService(name: string): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name },
    spec: {
      ports: [{ port: SERVE_HOSTNAME_SERVICE_PORT, targetPort: SERVE_HOSTNAME_PORT, protocol: 'TCP' }],
      selector: { name },
    },
  };
}

/** StartServeHostnameService: the Service, then `replicas` serve-hostname pods; their names and the ClusterIP. */
export async function startServeHostnameService(
  ctx: UpstreamContext,
  svc: KubeObject,
  replicas: number,
): Promise<{ podNames: string[]; serviceIP: string }> {
  const name = fieldString(svc, 'metadata', 'name');
  ctx.step(`creating service ${name} in namespace ${ctx.namespace}`);
  await ctx.kube.create(ctx.namespace, svc);
  const podNames = await runServeHostnameReplicas(ctx, name, {}, replicas, ['/agnhost', 'serve-hostname']);
  const created = await ctx.kube.get(ctx.namespace, 'service', name);
  const serviceIP = fieldString(created, 'spec', 'clusterIP');
  expect(serviceIP !== '', `service IP is blank for ${name}`);
  return { podNames, serviceIP };
}

/** affinityTracker.checkHostTrace: enough answers, and were the last `count` all from one host? */
export function checkHostTrace(
  trace: readonly string[],
  count: number,
): { fulfilled: boolean; holds: boolean } {
  const fulfilled = trace.length >= count;
  if (trace.length === 0) return { fulfilled, holds: true };
  const last = trace.slice(Math.max(0, trace.length - count));
  const host = trace[trace.length - 1];
  return { fulfilled, holds: last.every((h) => h === host) };
}

/** affinityCheckFromPod's batch: 16 fresh connections from the exec pod; the hosts that answered. */
async function hostsFromPod(
  ctx: UpstreamContext,
  execPod: string,
  ip: string,
  port: number,
): Promise<string[]> {
  const curl = `curl -q -s --connect-timeout 2 http://${ip}:${port}/`;
  const cmd = `for i in $(seq 0 ${AFFINITY_CONFIRM_COUNT}); do echo; ${curl} ; done`;
  const r = await ctx.kube.exec(ctx.namespace, execPod, cmd);
  if (r.code !== 0) {
    ctx.log(`Failed to get response from ${ip}:${port}. Retry until timeout`);
    return [];
  }
  return r.stdout.split('\n');
}

/** checkAffinity (from an exec pod): fails the test when affinity does not end up as `shouldHold` says. */
export async function checkAffinity(
  ctx: UpstreamContext,
  execPod: string,
  ip: string,
  port: number,
  shouldHold: boolean,
): Promise<void> {
  const trace: string[] = [];
  const met = await poll(
    2 * AFFINITY_CONFIRM_COUNT * 1_000,
    AFFINITY_TIMEOUT_MS,
    async () => {
      for (const host of await hostsFromPod(ctx, execPod, ip, port))
        if (host.length > 0) trace.push(host.trim());
      const { fulfilled, holds } = checkHostTrace(trace, AFFINITY_CONFIRM_COUNT);
      return fulfilled && holds === shouldHold;
    },
    ctx.signal,
  );
  if (met) return;
  ctx.log(`hosts that answered: ${JSON.stringify(trace)}`);
  if (!checkHostTrace(trace, AFFINITY_CONFIRM_COUNT).fulfilled)
    fail('Connection timed out or not enough responses.');
  fail(shouldHold ? "Affinity should hold but didn't." : "Affinity shouldn't hold but did.");
}

/**
 * execAffinityTestForNonLBServiceWithOptionalTransition: ClientIP affinity on a 3-pod serve-hostname Service,
 * reached on its ClusterIP (or the first node's InternalIP at the NodePort); with `transition`, switched to None
 * and back, converging each time.
 */
export async function execAffinityTestForNonLBService(
  ctx: UpstreamContext,
  svc: KubeObject,
  transition: boolean,
): Promise<void> {
  const serviceName = fieldString(svc, 'metadata', 'name');
  const type = fieldString(svc, 'spec', 'type');
  ctx.step(`creating service in namespace ${ctx.namespace}`);
  serviceSpec(svc).sessionAffinity = 'ClientIP';
  await startServeHostnameService(ctx, svc, 3);
  ctx.defer(() => stopServeHostnameService(ctx, serviceName));
  const jig = new TestJig(ctx, serviceName);
  const created = await ctx.kube.get(ctx.namespace, 'service', serviceName);
  let ip = fieldString(created, 'spec', 'clusterIP');
  let port = 80;
  if (type === 'NodePort') {
    ip = ctx.nodes[0]?.internalIP ?? '';
    expect(ip !== '', 'failed to get Node internal IP for family: IPv4');
    port = Number(field(created, 'spec', 'ports', 0, 'nodePort'));
  }
  const execPod = await createExecPodOrFail(ctx, 'execpod-affinity');
  ctx.defer(() => ctx.kube.delete(ctx.namespace, 'pod', execPod));
  await checkServiceReachability(ctx, jig, created, execPod);
  if (!transition) return checkAffinity(ctx, execPod, ip, port, true);
  await jig.updateService((s) => void (serviceSpec(s).sessionAffinity = 'None'));
  await checkAffinity(ctx, execPod, ip, port, false);
  await jig.updateService((s) => void (serviceSpec(s).sessionAffinity = 'ClientIP'));
  await checkAffinity(ctx, execPod, ip, port, true);
}
