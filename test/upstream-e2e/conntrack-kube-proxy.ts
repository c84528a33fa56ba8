// Port of kube_proxy.go's "[sig-network] KubeProxyNFAcct" test: NodePorts reached on localhost (iptables mode with
// route_localnet=1) count in kube-proxy's nfacct-backed metric. The metrics grabber's GrabFromKubeProxy reads the
// proxy's /metrics on the node; here the hostNetwork exec pod reads it at 127.0.0.1:10249, the proxy's
// metricsBindAddress in the lab, from inside the same node namespace (what the lab's own metrics reader does).
import { createHostExecPod, createSync } from './conntrack-udp.js';
import { fail, poll, skipf } from './framework.js';
import { field, fieldArray } from './kube.js';
import { agnhostPod } from './pods.js';
import type { PortedTest, UpstreamContext } from './registry-types.js';
import { waitForEndpointCount } from './topology-pods.js';

/** ports.ProxyStatusPort: kube-proxy's metrics (and /proxyMode) port. */
const PROXY_STATUS_PORT = 10249;
const METRIC = 'kubeproxy_iptables_localhost_nodeports_accepted_packets_total';

async function hostCmd(ctx: UpstreamContext, pod: string, cmd: string): Promise<string> {
  const r = await ctx.kube.exec(ctx.namespace, pod, cmd);
  if (r.code !== 0) throw new Error(`${cmd}: exit ${r.code}: ${r.stderr.trim()}`);
  return r.stdout;
}

/** metrics.GetCounterMetricValue: the sample of an unlabelled counter in the text format; fails when absent. */
export function counterValue(metricsText: string, name: string): number {
  for (const line of metricsText.split('\n')) {
    const [key, value] = line.trim().split(/\s+/);
    if (key === name && value !== undefined) return Number(value);
  }
  throw new Error(`metric ${name} not found`);
}

async function grabCounter(ctx: UpstreamContext, hostExecPod: string): Promise<number> {
  return counterValue(
    await hostCmd(ctx, hostExecPod, `curl --silent 127.0.0.1:${PROXY_STATUS_PORT}/metrics`),
    METRIC,
  );
}

async function localhostNodePorts(ctx: UpstreamContext): Promise<void> {
  const node = ctx.nodes[0];
  if (!node) skipf('Test requires >= 1 Ready nodes, but there are only 0 nodes');

  const hostExecPodName = 'host-exec-pod';
  await createHostExecPod(ctx, hostExecPodName, node.name);

  let proxyMode: string;
  try {
    proxyMode = (
      await hostCmd(ctx, hostExecPodName, `curl --silent 127.0.0.1:${PROXY_STATUS_PORT}/proxyMode`)
    ).trim();
  } catch (e) {
    fail(`failed to get proxy mode: ${e instanceof Error ? e.message : String(e)}`);
  }
  const routeLocalnet = (
    await hostCmd(ctx, hostExecPodName, 'cat /proc/sys/net/ipv4/conf/all/route_localnet')
  ).trim();
  if (!(proxyMode === 'iptables' && routeLocalnet === '1'))
    skipf('test requires iptables proxy mode with route_localnet set');

  const before = await grabCounter(ctx, hostExecPodName);

  ctx.step('creating test pod');
  const label = { app: 'agnhost-localhost-nodeports' };
  const pod = agnhostPod(
    { name: 'agnhost-localhost-nodeports' },
    label,
    [{ containerPort: 8080, protocol: 'TCP' }],
    ['netexec'],
  );
  await createSync(ctx, pod);

  ctx.step('creating test nodeport service');
  const svc = await ctx.kube.create(ctx.namespace, {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'agnhost-localhost-nodeports' },
    spec: { type: 'NodePort', selector: label, ports: [{ protocol: 'TCP', port: 9000, targetPort: 8080 }] },
  });
  const nodePort = Number(field(fieldArray(svc, 'spec', 'ports')[0], 'nodePort'));

  ctx.step('waiting for endpoints to be updated');
  await waitForEndpointCount(ctx, 'agnhost-localhost-nodeports', 1);

  ctx.step('accessing endpoint via localhost nodeports 10 times');
  for (let i = 0; i < 10; i++) {
    const reached = await poll(
      1_000,
      10_000,
      async () =>
        (
          await ctx.kube.exec(
            ctx.namespace,
            hostExecPodName,
            `curl --silent http://localhost:${nodePort}/hostname`,
          )
        ).code === 0,
      ctx.signal,
    );
    if (!reached) fail('failed to access nodeport service on localhost');
  }

  const updated = await poll(
    10_000,
    2 * 60_000,
    async () => (await grabCounter(ctx, hostExecPodName)) > before,
    ctx.signal,
  );
  if (!updated)
    fail(`expected ${METRIC} metric to be updated after accessing endpoints via localhost nodeports`);
}

export const KUBE_PROXY_TESTS: readonly PortedTest[] = [
  {
    name: '[sig-network] KubeProxyNFAcct [Feature:KubeProxyNFAcct] should update metric for tracking accepted packets destined for localhost nodeports',
    conformance: false,
    file: 'kube_proxy.go',
    run: localhostNodePorts,
  },
];
