// What service.go's hostNetwork-client tests share: launchHostExecPod (an agnhost pause pod in the node's own
// network namespace), verifyServeHostnameServiceUp/Down (a loop of wgets, or one curl, from such a pod and from an
// ordinary exec pod, comparing the hostnames that answered), and the ServerTest of service.go's NodePort tests
// (a Service named after the test, selecting a unique testid label, deleted at the end).
import { randomUUID } from 'node:crypto';
import { fail, KUBE_PROXY_LAG_TIMEOUT_MS, poll } from './framework.js';
import { fieldString, KubectlError, type KubeObject } from './kube.js';
import { agnhostPod, createExecPodOrFail, deletePodOrFail, podIsReady, waitForPod } from './pods.js';
import type { UpstreamContext } from './registry-types.js';

/** launchHostExecPod: e2epod.NewExecPodSpec(ns, name, hostNetwork=true), created and Ready. */
export async function launchHostExecPod(ctx: UpstreamContext, name: string): Promise<string> {
  ctx.log('Creating new host exec pod');
  const pod = agnhostPod({ name }, {}, [], []);
  (pod.spec as KubeObject).hostNetwork = true;
  await ctx.kube.create(ctx.namespace, pod);
  await waitForPod(ctx, name, 'ready', podIsReady);
  return name;
}

/** The IP:port of a URL, bracketed for IPv6 (net.JoinHostPort). */
function joinHostPort(ip: string, port: number): string {
  if (!/^[0-9A-Fa-f.:]+$/.test(ip)) throw new Error(`not an IP address: ${ip}`);
  return ip.includes(':') ? `[${ip}]:${port}` : `${ip}:${port}`;
}

/**
 * verifyServeHostnameServiceUp: from a hostNetwork exec pod and from an exec pod, `wget` the Service
 * 50 × len(expectedPods) times per pass, every 5 s for KubeProxyLagTimeout, until the hostnames that answered
 * include every expected pod (extra output, such as a wget timeout's message, is ignored, as upstream does).
 */
export async function verifyServeHostnameServiceUp(
  ctx: UpstreamContext,
  expectedPods: readonly string[],
  serviceIP: string,
  servicePort: number,
): Promise<void> {
  const hostExecPod = await launchHostExecPod(ctx, 'verify-service-up-host-exec-pod');
  const execPod = await createExecPodOrFail(ctx, 'verify-service-up-exec-pod-');
  try {
    const cmd = `for i in $(seq 1 ${50 * expectedPods.length}); do wget -q -O - -T 1 http://${joinHostPort(serviceIP, servicePort)} 2>&1 || true; echo; done`;
    const expected = new Set(expectedPods);
    ctx.step(`verifying service has ${expectedPods.length} reachable backends`);
    for (const podName of [hostExecPod, execPod]) {
      const got = new Set<string>();
      ctx.log(`Executing cmd "${cmd}" in pod ${ctx.namespace}/${podName}`);
      const passed = await poll(
        5_000,
        KUBE_PROXY_LAG_TIMEOUT_MS,
        async () => {
          const r = await ctx.kube.exec(ctx.namespace, podName, cmd);
          if (r.code !== 0)
            ctx.log(`error while kubectl execing in pod ${ctx.namespace}/${podName}: exit ${r.code}`);
          for (const line of r.stdout.split('\n')) if (line.trim() !== '') got.add(line.trim());
          const missing = [...expected].filter((p) => !got.has(p));
          if (missing.length === 0) {
            const extra = [...got].filter((h) => !expected.has(h));
            if (extra.length > 0)
              ctx.log(
                `Ignoring unexpected output wgetting endpoints of service ${serviceIP}: ${extra.join(', ')}`,
              );
            return true;
          }
          ctx.log(`Unable to reach the following endpoints of service ${serviceIP}: ${missing.join(', ')}`);
          return false;
        },
        ctx.signal,
      );
      if (!passed)
        fail(
          `service verification failed for: ${serviceIP}\nexpected ${JSON.stringify([...expected].sort())}\nreceived ${JSON.stringify([...got].sort())}`,
        );
    }
  } finally {
    await deletePodOrFail(ctx, hostExecPod);
    await deletePodOrFail(ctx, execPod);
  }
}

/** verifyServeHostnameServiceDown: from a hostNetwork exec pod, until one curl to the Service gets no answer. */
export async function verifyServeHostnameServiceDown(
  ctx: UpstreamContext,
  serviceIP: string,
  servicePort: number,
): Promise<void> {
  const hostExecPod = await launchHostExecPod(ctx, 'verify-service-down-host-exec-pod');
  try {
    const command = `curl -g -s --connect-timeout 2 http://${joinHostPort(serviceIP, servicePort)} && echo service-down-failed`;
    const down = await poll(
      5_000,
      KUBE_PROXY_LAG_TIMEOUT_MS,
      async () => {
        const r = await ctx.kube.exec(ctx.namespace, hostExecPod, command);
        if (!r.stdout.includes('service-down-failed')) return true;
        ctx.log('service still alive - still waiting');
        return false;
      },
      ctx.signal,
    );
    if (!down) fail('waiting for service to be down timed out');
  } finally {
    await deletePodOrFail(ctx, hostExecPod);
  }
}

/**
 * NewServerTest's Service side (service.go's NodePort tests): BuildServiceSpec (port 80 → 80, selecting a unique
 * testid label), CreateService and DeleteService keeping the list Cleanup deletes at the end.
 */
export class ServerTest {
  readonly labels: Readonly<Record<string, string>>;
  private readonly services = new Set<string>();

  constructor(
    private readonly ctx: UpstreamContext,
    readonly serviceName: string,
  ) {
    this.labels = { testid: `${serviceName}-${randomUUID()}` };
    ctx.defer(() => this.cleanup());
  }

  buildServiceSpec(): KubeObject {
    return {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: this.serviceName, namespace: this.ctx.namespace },
      spec: { selector: { ...this.labels }, ports: [{ port: 80, targetPort: 80 }] },
    };
  }

  /** CreateService: the created Service, or the API server's refusal as a KubectlError. */
  async createService(svc: KubeObject): Promise<KubeObject> {
    const created = await this.ctx.kube.create(this.ctx.namespace, svc);
    this.services.add(fieldString(created, 'metadata', 'name'));
    return created;
  }

  async deleteService(name: string): Promise<void> {
    await this.ctx.kube.delete(this.ctx.namespace, 'service', name);
    this.services.delete(name);
  }

  private async cleanup(): Promise<void> {
    const errors: string[] = [];
    for (const name of this.services)
      await this.deleteService(name).catch((e: unknown) =>
        errors.push(e instanceof KubectlError ? e.message : String(e)),
      );
    if (errors.length > 0) fail(`errors in cleanup: ${errors.join('; ')}`);
  }
}
