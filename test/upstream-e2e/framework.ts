// What upstream's e2e framework gives every test, written anew: its timeouts (same names, same values, so a port
// waits exactly as long as upstream does), a poll with a deadline, and the failure a test reports.

/** framework.Poll: the pace of most of upstream's polls. */
export const POLL_MS = 2_000;
/** framework.PodStartTimeout. */
export const POD_START_TIMEOUT_MS = 5 * 60_000;
/** framework.PodReadyBeforeTimeout (RunRC's wait for its replicas). */
export const POD_READY_BEFORE_TIMEOUT_MS = 5 * 60_000;
/** framework.ServiceStartTimeout (validateEndpointsPortsOrFail). */
export const SERVICE_START_TIMEOUT_MS = 3 * 60_000;
/** e2eservice.ServiceEndpointsTimeout (the jig's wait for an available endpoint). */
export const SERVICE_ENDPOINTS_TIMEOUT_MS = 2 * 60_000;
/** e2eservice.ServiceReachabilityShortPollTimeout. */
export const SERVICE_REACHABILITY_SHORT_POLL_TIMEOUT_MS = 2 * 60_000;
/** e2eservice.KubeProxyLagTimeout. */
export const KUBE_PROXY_LAG_TIMEOUT_MS = 5 * 60_000;
/** service.go's AffinityTimeout: how long checkAffinity may take. */
export const AFFINITY_TIMEOUT_MS = 2 * 60_000;
/** service.go's AffinityConfirmCount: requests in a row to the same host that confirm affinity. */
export const AFFINITY_CONFIRM_COUNT = 15;

/** upstream's NodePortRange (e2eservice.NodePortRange), the API server's default. */
export const NODE_PORT_RANGE = { base: 30000, size: 2768 } as const;

/** A test's own failure (framework.Failf): the message is what the report shows. */
export class UpstreamFailure extends Error {
  override readonly name = 'UpstreamFailure';
}

export function fail(message: string): never {
  throw new UpstreamFailure(message);
}

export function expect(condition: boolean, message: string): asserts condition {
  if (!condition) fail(message);
}

export function delay(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason as Error);
    const timer = setTimeout(done, ms);
    function done(): void {
      signal?.removeEventListener('abort', abort);
      resolve();
    }
    function abort(): void {
      clearTimeout(timer);
      reject(signal?.reason as Error);
    }
    signal?.addEventListener('abort', abort, { once: true });
  });
}

/**
 * wait.PollUntilContextTimeout(immediate=true): calls `check` at once and then every `intervalMs` until it returns
 * true or `timeoutMs` has passed; a thrown error ends the poll (as a condition's error does upstream). Returns
 * whether the condition was met; the caller words the failure, as each upstream call site does.
 */
export async function poll(
  intervalMs: number,
  timeoutMs: number,
  check: () => Promise<boolean>,
  signal?: AbortSignal,
): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return true;
    if (Date.now() + intervalMs > deadline) return false;
    await delay(intervalMs, signal); // the poll's pace, as upstream's; the deadline bounds it
  }
}

/** wait.ForeverTestTimeout: the 30 s upstream gives short waits (WaitForServiceEndpointsNum, WaitForPodToDisappear). */
export const FOREVER_TEST_TIMEOUT_MS = 30_000;
/** f.Timeouts.PodDelete: how long a deleted pod may take to be gone. */
export const POD_DELETE_TIMEOUT_MS = 5 * 60_000;
/** framework.RestartNodeReadyAgainTimeout. */
export const RESTART_NODE_READY_AGAIN_TIMEOUT_MS = 5 * 60_000;
/** e2eservice.RespondingTimeout: how long a Service may take to respond (or to go). */
export const RESPONDING_TIMEOUT_MS = 2 * 60_000;

/** e2eskipper.Skipf: the test finds the cluster lacks what it needs; the report says skipped, with the reason. */
export class UpstreamSkip extends Error {
  override readonly name = 'UpstreamSkip';
}

export function skipf(message: string): never {
  throw new UpstreamSkip(message);
}

/** e2eendpointslice.ControllerUpdateTimeout: how long an EndpointSlice change may take (WaitForEndpointCount). */
export const CONTROLLER_UPDATE_TIMEOUT_MS = 2 * 60_000;
/** e2eservice.KubeProxyEndpointLagTimeout: how long a node's proxy may take to notice an endpoint change. */
export const KUBE_PROXY_ENDPOINT_LAG_TIMEOUT_MS = 30_000;
