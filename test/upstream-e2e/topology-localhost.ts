// Ports of kubernetes/kubernetes test/e2e/network/localhost_nodeports.go ("[sig-network] LocalhostNodePorts",
// [Feature:LocalhostNodePorts]): a hostNetwork pod curls 127.0.0.1 at a NodePort and the proxy must carry the
// connections to the Service's endpoints, spread over them or, with ClientIP affinity, to one. Upstream runs them
// only where the proxy serves NodePorts on localhost (iptables mode with iptables.localhostNodePorts, its default;
// nftables mode has none): `requires: ['localhost-nodeports']`. Registered through topology.ts's lists.
import { checkAffinity } from './affinity.js';
import { fail } from './framework.js';
import { field, type KubeObject } from './kube.js';
import { agnhostPod } from './pods.js';
import type { NotPortedTest, PortedTest, Requirement, UpstreamContext } from './registry-types.js';
import { createPodsSync, isIPv6, setNodeSelection, waitForEndpointCount } from './topology-pods.js';

const FILE = 'localhost_nodeports.go';
const DESCRIBE = '[sig-network] LocalhostNodePorts';
const FEATURE = '[Feature:LocalhostNodePorts]';
const REQUIRES: readonly Requirement[] = ['localhost-nodeports'];

/** e2epod.NewExecPodSpec(ns, name, hostNetwork=true) on `node`, CreateSync. */
async function hostExecPod(ctx: UpstreamContext, node: string): Promise<string> {
  const pod = agnhostPod({ name: 'host-exec-pod' }, {}, [], []);
  (pod.spec as KubeObject).hostNetwork = true;
  setNodeSelection(pod.spec as KubeObject, node);
  await createPodsSync(ctx, [pod]);
  return 'host-exec-pod';
}

/** serve-hostname backends named `names`, labelled `labels`, each on its node; CreateSync one by one. */
async function backends(
  ctx: UpstreamContext,
  labels: Readonly<Record<string, string>>,
  placed: readonly { name: string; node: string }[],
): Promise<void> {
  for (const bp of placed) {
    const pod = agnhostPod(
      { name: bp.name },
      labels,
      [{ containerPort: 9376, protocol: 'TCP' }],
      ['serve-hostname'],
    );
    setNodeSelection(pod.spec as KubeObject, bp.node);
    await createPodsSync(ctx, [pod]);
  }
}

/** The NodePort Service 9000 → 9376 over `labels` (with `affinity`), created; its node port. */
async function nodePortService(
  ctx: UpstreamContext,
  name: string,
  labels: Readonly<Record<string, string>>,
  affinity: boolean,
): Promise<number> {
  const svc = await ctx.kube.create(ctx.namespace, {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name },
    spec: {
      type: 'NodePort',
      selector: { ...labels },
      ...(affinity
        ? { sessionAffinity: 'ClientIP', sessionAffinityConfig: { clientIP: { timeoutSeconds: 10800 } } }
        : {}),
      ports: [{ protocol: 'TCP', port: 9000, targetPort: 9376 }],
    },
  });
  return Number(field(svc, 'spec', 'ports', 0, 'nodePort'));
}

function loopback(ctx: UpstreamContext): string {
  return isIPv6(ctx.nodes[0]?.internalIP ?? '') ? '::1' : '127.0.0.1';
}

async function acrossNodes(ctx: UpstreamContext): Promise<void> {
  const [client, remote] = ctx.nodes;
  if (!client || !remote)
    fail(`Test requires >= 2 Ready nodes, but there are only ${ctx.nodes.length} nodes`);
  const execPod = await hostExecPod(ctx, client.name);
  ctx.step('creating one backend pod on the client node and one on a different node');
  const labels = { app: 'agnhost-localhost-nodeport' };
  await backends(ctx, labels, [
    { name: 'agnhost-localhost-nodeport-local', node: client.name },
    { name: 'agnhost-localhost-nodeport-remote', node: remote.name },
  ]);
  ctx.step('creating NodePort service');
  const nodePort = await nodePortService(ctx, 'agnhost-localhost-nodeport', labels, false);
  ctx.step('waiting for endpoints');
  await waitForEndpointCount(ctx, 'agnhost-localhost-nodeport', 2);
  ctx.step('curling the localhost NodePort and confirming traffic spreads across both backends');
  // shouldHold=false: without session affinity the requests spread over the local and the remote backend.
  await checkAffinity(ctx, execPod, loopback(ctx), nodePort, false);
}

async function affinityOnLocalhost(ctx: UpstreamContext): Promise<void> {
  const [node] = ctx.nodes;
  if (!node) fail('Test requires >= 1 Ready nodes, but there are only 0 nodes');
  const execPod = await hostExecPod(ctx, node.name);
  ctx.step('creating 3 backend pods pinned to the same node');
  const labels = { app: 'agnhost-sticky-localhost' };
  await backends(
    ctx,
    labels,
    [0, 1, 2].map((i) => ({ name: `agnhost-sticky-localhost-${i}`, node: node.name })),
  );
  ctx.step('creating NodePort service with sessionAffinity=ClientIP');
  const nodePort = await nodePortService(ctx, 'agnhost-sticky-localhost', labels, true);
  ctx.step('waiting for all 3 endpoints to be ready');
  await waitForEndpointCount(ctx, 'agnhost-sticky-localhost', 3);
  ctx.step('curling the localhost NodePort and confirming all requests hit the same pod');
  // shouldHold=true: every request from 127.0.0.1 (::1) goes to one backend.
  await checkAffinity(ctx, execPod, loopback(ctx), nodePort, true);
}

export const LOCALHOST_TESTS: readonly PortedTest[] = [
  {
    name: `${DESCRIBE} should proxy localhost NodePort traffic to backends across nodes ${FEATURE}`,
    conformance: false,
    file: FILE,
    requires: REQUIRES,
    run: acrossNodes,
  },
  {
    name: `${DESCRIBE} should honor sessionAffinity=ClientIP for localhost NodePort ${FEATURE}`,
    conformance: false,
    file: FILE,
    requires: REQUIRES,
    run: affinityOnLocalhost,
  },
];

export const LOCALHOST_NOT_PORTED: readonly NotPortedTest[] = [
  {
    name: `${DESCRIBE} should let a node pull an image from a registry exposed via localhost NodePort ${FEATURE}`,
    conformance: false,
    file: FILE,
    reason:
      "the kubelet pulls an image through the NodePort from agnhost fake-registry-server; the lab's nodes pull no images and its agnhost has no fake-registry-server",
  },
];
