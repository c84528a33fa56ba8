// The pod-side helpers of service-traffic.ts, written anew from upstream's: e2epod.SetNodeSelection (required node
// affinity on metadata.name), WaitTimeoutForPodReadyInNamespace, execHostnameTest and execSourceIPTest
// (test/e2e/network/util.go: curl /hostname or /clientip from a pod, retried for 2 minutes), the `curl …
// --connect-timeout 5` that must fail, service.go's createPausePodDeployment and e2edeployment.WaitForDeploymentComplete,
// and the lab's stand-in for `/agnhost connect`.
import { agnhostArgv } from '../../packages/lab/src/cluster/processes.js';
import { expect, fail, KUBE_PROXY_ENDPOINT_LAG_TIMEOUT_MS, poll, POLL_MS } from './framework.js';
import { field, fieldString, type CommandResult, type KubeObject } from './kube.js';
import { AGNHOST_IMAGE, agnhostPod, podIsReady, podIsRunning, waitForPod } from './pods.js';
import type { UpstreamContext } from './registry-types.js';

/** net.JoinHostPort. */
export function joinHostPort(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

/** e2epod.SetNodeSelection(&spec, NodeSelection{Name: node}): a required node affinity on the Node's name. */
export function onNode(pod: KubeObject, node: string): KubeObject {
  const spec = (pod.spec ??= {}) as KubeObject;
  spec.affinity = {
    nodeAffinity: {
      requiredDuringSchedulingIgnoredDuringExecution: {
        nodeSelectorTerms: [{ matchFields: [{ key: 'metadata.name', operator: 'In', values: [node] }] }],
      },
    },
  };
  return pod;
}

/** Create, then e2epod.WaitTimeoutForPodReadyInNamespace(PodStartTimeout); the Pod as it is once Ready. */
export async function createPodReady(ctx: UpstreamContext, pod: KubeObject): Promise<KubeObject> {
  const created = await ctx.kube.create(ctx.namespace, pod);
  return waitForPod(ctx, fieldString(created, 'metadata', 'name'), 'ready', podIsReady);
}

/** Pods().Delete with the Pod's own grace period: the request, not the wait for it to go. */
export async function deletePodNoWait(ctx: UpstreamContext, name: string): Promise<void> {
  await ctx.kube.mustRun(['-n', ctx.namespace, 'delete', 'pod', name, '--wait=false']);
}

/** The 2-minute retry of execHostnameTest / execSourceIPTest: until `cmd` exits 0 with some stdout. */
async function curlFromPod(ctx: UpstreamContext, sourcePod: KubeObject, targetAddr: string, cmd: string) {
  ctx.log(`Waiting up to 2m0s to get response from ${targetAddr}`);
  let last: CommandResult | undefined;
  await poll(
    POLL_MS,
    2 * 60_000,
    async () => {
      last = await ctx.kube.exec(ctx.namespace, fieldString(sourcePod, 'metadata', 'name'), cmd);
      if (last.code !== 0) {
        ctx.log(`got err: exit ${last.code} ${last.stderr.trim()}, retry until timeout`);
        return false;
      }
      // Need to check output because it might omit in case of error.
      if (last.stdout.trim() === '') {
        ctx.log('got empty stdout, retry until timeout');
        return false;
      }
      return true;
    },
    ctx.signal,
  );
  if (!last || last.code !== 0)
    fail(`command ${JSON.stringify(cmd)} failed: exit ${last?.code ?? '?'} ${last?.stderr.trim() ?? ''}`);
  return last.stdout;
}

/** execHostnameTest: `curl /hostname` from `sourcePod` answers `targetHostname` (hostnames, not FQDNs, compared). */
export async function execHostnameTest(
  ctx: UpstreamContext,
  sourcePod: KubeObject,
  targetAddr: string,
  targetHostname: string,
): Promise<void> {
  const stdout = await curlFromPod(
    ctx,
    sourcePod,
    targetAddr,
    `curl -q -s --max-time 30 ${targetAddr}/hostname`,
  );
  const want = targetHostname.split('.')[0] ?? '';
  const hostname = (stdout.split('.')[0] ?? '').trim();
  expect(hostname === want, `Expected ${JSON.stringify(hostname)} to equal ${JSON.stringify(want)}`);
}

/** execSourceIPTest: [the source pod's IP, the client IP netexec's /clientip saw]. */
export async function execSourceIPTest(
  ctx: UpstreamContext,
  sourcePod: KubeObject,
  targetAddr: string,
): Promise<[string, string]> {
  const stdout = await curlFromPod(
    ctx,
    sourcePod,
    targetAddr,
    `curl -q -s --connect-timeout 30 ${targetAddr}/clientip`,
  );
  // x.x.x.x:port or [xx:xx::x]:port
  const m = /^\[?([^\]]*?)\]?:(\d+)$/.exec(stdout.trim());
  if (!m) fail(`exec pod returned unexpected stdout: [${stdout}]`);
  return [fieldString(sourcePod, 'status', 'podIP'), m[1] ?? ''];
}

/** `curl -q -s --connect-timeout N ADDR/hostname` from the pod must fail (RunHostCmd's error). */
export async function expectCurlFails(
  ctx: UpstreamContext,
  pod: string,
  address: string,
  connectTimeoutSeconds: number,
  message: string,
): Promise<void> {
  const cmd = `curl -q -s --connect-timeout ${connectTimeoutSeconds} ${address}/hostname`;
  const r = await ctx.kube.exec(ctx.namespace, pod, cmd);
  expect(r.code !== 0, `${message}: ${cmd} succeeded with ${JSON.stringify(r.stdout)}`);
}

/** The health check node port's status code for /healthz, as upstream's curl prints it. */
export function healthCheckCode(ctx: UpstreamContext, pod: string, address: string): Promise<CommandResult> {
  return ctx.kube.exec(
    ctx.namespace,
    pod,
    `curl -s -o /dev/null -w "%{http_code}" --max-time 5 http://${address}/healthz`,
  );
}

/**
 * createPausePodDeployment: `replicas` agnhost pause pods labelled deployment=agnhost-pause, a required pod
 * anti-affinity on kubernetes.io/hostname keeping them on different nodes (e2edeployment.NewDeployment's template,
 * grace period 0, RollingUpdate).
 */
export async function createPausePodDeployment(
  ctx: UpstreamContext,
  name: string,
  replicas: number,
): Promise<{ name: string; selector: string }> {
  const labels = { deployment: 'agnhost-pause' };
  await ctx.kube.create(ctx.namespace, {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, labels },
    spec: {
      replicas,
      selector: { matchLabels: labels },
      strategy: { type: 'RollingUpdate' },
      template: {
        metadata: { labels },
        spec: {
          terminationGracePeriodSeconds: 0,
          containers: [{ name: 'agnhost-pause', image: AGNHOST_IMAGE, args: ['pause'] }],
          affinity: {
            podAntiAffinity: {
              requiredDuringSchedulingIgnoredDuringExecution: [
                {
                  labelSelector: { matchLabels: labels },
                  topologyKey: 'kubernetes.io/hostname',
                  namespaces: [ctx.namespace],
                },
              ],
            },
          },
        },
      },
    },
  });
  return { name, selector: 'deployment=agnhost-pause' };
}

/** e2edeployment.WaitForDeploymentComplete: every replica updated and available, the generation observed. */
export async function waitForDeploymentComplete(ctx: UpstreamContext, name: string): Promise<void> {
  let last: KubeObject | undefined;
  const ok = await poll(
    POLL_MS,
    5 * 60_000,
    async () => {
      last = await ctx.kube.get(ctx.namespace, 'deployment', name);
      const want = Number(field(last, 'spec', 'replicas') ?? 1);
      const count = (k: string): number => Number(field(last, 'status', k) ?? 0);
      return (
        count('updatedReplicas') === want &&
        count('replicas') === want &&
        count('availableReplicas') === want &&
        count('observedGeneration') >= Number(field(last, 'metadata', 'generation') ?? 0)
      );
    },
    ctx.signal,
  );
  if (!ok)
    fail(`Failed to complete pause pod deployment: status ${JSON.stringify(field(last, 'status') ?? {})}`);
}

/** A shell word: single-quoted. */
function shellQuote(word: string): string {
  return `'${word.replace(/'/g, `'\\''`)}'`;
}

/**
 * `/agnhost connect ARGS…` as a lab exec pod can run it: the lab's own agnhost, started the way the lab starts
 * agnhost containers (agnhostArgv: this checkout's node and agnhost entry point, which the pod sees since lab pods
 * run commands with the host's files).
 */
export function agnhostConnectCommand(args: readonly string[]): string {
  return agnhostArgv(['connect', ...args])
    .map(shellQuote)
    .join(' ');
}

/**
 * Polls `/agnhost connect` from the exec pod until it fails with REFUSED (the proxy's reject for a Service without
 * endpoints); a connect that succeeds fails the test at once.
 */
export async function expectRefused(
  ctx: UpstreamContext,
  execPod: string,
  serviceAddress: string,
): Promise<void> {
  const cmd = agnhostConnectCommand(['--timeout=3s', serviceAddress]);
  const expectedErr = 'REFUSED';
  const refused = await poll(
    POLL_MS,
    KUBE_PROXY_ENDPOINT_LAG_TIMEOUT_MS,
    async () => {
      const r = await ctx.kube.exec(ctx.namespace, execPod, cmd);
      if (r.code === 0) fail('expected connect call to fail');
      const err = `exit ${r.code}: ${r.stderr.trim()}`;
      if (err.includes(expectedErr)) {
        ctx.log(`error contained '${expectedErr}', as expected: ${err}`);
        return true;
      }
      ctx.log(`error didn't contain '${expectedErr}', keep trying: ${err}`);
      return false;
    },
    ctx.signal,
  );
  if (!refused) fail('timed out waiting for the condition');
}

/** An agnhost exec pod (generateName `podName`) pinned to `nodeName`, running; its name. */
export async function createExecPodOnNode(
  ctx: UpstreamContext,
  podName: string,
  nodeName: string,
): Promise<string> {
  ctx.step(`creating ${podName} on node ${nodeName}`);
  const created = await ctx.kube.create(
    ctx.namespace,
    onNode(agnhostPod({ generateName: podName }, {}, [], []), nodeName),
  );
  const execPod = fieldString(created, 'metadata', 'name');
  await waitForPod(ctx, execPod, 'running', podIsRunning);
  return execPod;
}
