// What the topology, EndpointSlice and dual-stack ports share: pods pinned to a node (e2epod.SetNodeSelection),
// created together and waited for (PodClient.CreateBatch / CreateSync), EndpointSlices by Service
// (e2eendpointslice.WaitForEndpointCount), a pod's logs (e2epod.GetPodLogs) and net.JoinHostPort.
import { CONTROLLER_UPDATE_TIMEOUT_MS, fail, poll } from './framework.js';
import { field, fieldArray, fieldString, type KubeObject } from './kube.js';
import { podIsReady, waitForPod } from './pods.js';
import type { UpstreamContext } from './registry-types.js';
import { setNodeSelection } from './conntrack-udp.js';

export { setNodeSelection };

/** net.JoinHostPort: IPv6 addresses in brackets. */
export function joinHostPort(host: string, port: number | string): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

export function isIPv6(address: string): boolean {
  return address.includes(':');
}

/** PodClient.CreateBatch: create every pod, then wait for each to be Ready; the pods as the API shows them. */
export async function createPodsSync(
  ctx: UpstreamContext,
  pods: readonly KubeObject[],
): Promise<KubeObject[]> {
  for (const pod of pods) await ctx.kube.create(ctx.namespace, pod);
  const ready: KubeObject[] = [];
  for (const pod of pods)
    ready.push(await waitForPod(ctx, fieldString(pod, 'metadata', 'name'), 'ready', podIsReady));
  return ready;
}

/** The EndpointSlices of a Service (label kubernetes.io/service-name). */
export function endpointSlicesFor(ctx: UpstreamContext, serviceName: string): Promise<KubeObject[]> {
  return ctx.kube.list(ctx.namespace, 'endpointslices', `kubernetes.io/service-name=${serviceName}`);
}

/**
 * e2eendpointslice.WaitForEndpointSlices: polls the Service's EndpointSlices every `intervalMs` (at once first)
 * until `condition` holds; false on timeout.
 */
export function waitForEndpointSlices(
  ctx: UpstreamContext,
  serviceName: string,
  intervalMs: number,
  timeoutMs: number,
  condition: (slices: KubeObject[]) => boolean,
): Promise<boolean> {
  return poll(
    intervalMs,
    timeoutMs,
    async () => condition(await endpointSlicesFor(ctx, serviceName)),
    ctx.signal,
  );
}

/**
 * e2eendpointslice.WaitForEndpointCount: at least one slice, and `expectNum` distinct endpoint addresses (the
 * first of each endpoint) across them, within ControllerUpdateTimeout, polled each second.
 */
export async function waitForEndpointCount(
  ctx: UpstreamContext,
  serviceName: string,
  expectNum: number,
): Promise<void> {
  ctx.log(`Waiting for amount of service ${ctx.namespace}/${serviceName} endpoints to be ${expectNum}`);
  let got = 0;
  const ok = await waitForEndpointSlices(ctx, serviceName, 1_000, CONTROLLER_UPDATE_TIMEOUT_MS, (slices) => {
    if (slices.length === 0) return false;
    const addresses = new Set(
      slices.flatMap((s) => fieldArray(s, 'endpoints').map((e) => String(field(e, 'addresses', 0) ?? ''))),
    );
    addresses.delete('');
    got = addresses.size;
    return got === expectNum;
  });
  if (!ok)
    fail(
      `failed to e2eendpointslice.WaitForEndpointCount: service ${ctx.namespace}/${serviceName} has ${got} endpoints, expected ${expectNum}`,
    );
}

/** e2epod.GetPodLogs: the container's log, as `kubectl logs` prints it. */
export function podLogs(ctx: UpstreamContext, pod: string, container: string): Promise<string> {
  return ctx.kube.mustRun(['-n', ctx.namespace, 'logs', pod, '-c', container]);
}
