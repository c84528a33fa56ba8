// Ports of kubernetes/kubernetes test/e2e/network/dual_stack.go ("[sig-network] [Feature:IPv6DualStack]"): the
// node, pod and Service checks of a dual-stack cluster (each `requires: ['dual-stack']`, as upstream's feature
// label keeps them to dual-stack jobs), and its "Granular Checks: Services Secondary IP Family": networking.go's
// Granular Checks on an EnableDualStack config, dialling SecondaryClusterIP and SecondaryNodeIP (networking.ts's
// checks, given the secondary family). Registered through topology.ts's lists.
import { expect, fail, poll } from './framework.js';
import { field, fieldArray, fieldString, type KubeObject } from './kube.js';
import { TestJig } from './jig.js';
import {
  granularCheck,
  hostNetworkEndpoints,
  largeRequests,
  sessionAffinity,
  updateEndpoints,
  type Source,
} from './networking.js';
import { agnhostPod } from './pods.js';
import type { NotPortedTest, PortedTest, Requirement, UpstreamContext } from './registry-types.js';
import { ServerTest } from './service-nodes-hosts.js';
import { createPodsSync, endpointSlicesFor, isIPv6 } from './topology-pods.js';

const FILE = 'dual_stack.go';
const DESCRIBE = '[sig-network] [Feature:IPv6DualStack]';
const GRANULAR = `${DESCRIBE} Granular Checks: Services Secondary IP Family [LinuxOnly]`;
const DUAL: readonly Requirement[] = ['dual-stack'];

function dual(it: string, run: (ctx: UpstreamContext) => Promise<void>): PortedTest {
  return { name: `${DESCRIBE} ${it}`, conformance: false, file: FILE, requires: DUAL, run };
}

/** A Granular Checks: Services Secondary IP Family test, dialling the secondary family. */
function secondary(it: string, run: (ctx: UpstreamContext) => Promise<void>): PortedTest {
  return { name: `${GRANULAR} ${it}`, conformance: false, file: FILE, requires: DUAL, run };
}

/** dual_stack.go's hostNetwork test: pod-Service over http only, then node-Service over http and udp. */
const SECONDARY_HOST_NETWORK_CHECKS: readonly (readonly [Source, 'http' | 'udp'])[] = [
  ['pod', 'http'],
  ['node', 'http'],
  ['node', 'udp'],
];

async function atLeastOneDualStackNode(ctx: UpstreamContext): Promise<void> {
  let found = false;
  for (const node of await ctx.kube.list('', 'nodes')) {
    const name = fieldString(node, 'metadata', 'name');
    if (!ctx.nodes.some((n) => n.name === name)) continue; // GetReadySchedulableNodes
    ctx.step(`examining ${name}`);
    const ips = fieldArray(node, 'status', 'addresses')
      .filter((a) => field(a, 'type') === 'InternalIP' || field(a, 'type') === 'ExternalIP')
      .map((a) => fieldString(a, 'address'));
    if (ips.some(isIPv6) && ips.some((ip) => !isIPv6(ip))) {
      found = true;
      break;
    }
  }
  if (!found) fail('Could not find any schedulable node with both an IPv4 IP and an IPv6 IP');
}

/** A pod of the agnhost image (`pause`: the lab's agnhost wants a subcommand), created and Ready; then deleted. */
async function dualStackPod(ctx: UpstreamContext, labelValue: string): Promise<KubeObject> {
  const podName = 'pod-dualstack-ips';
  const pod = agnhostPod({ name: podName }, { test: labelValue }, [], ['pause']);
  (field(pod, 'spec', 'containers', 0) as KubeObject).name = labelValue;
  ctx.step('submitting the pod to kubernetes');
  const [p] = await createPodsSync(ctx, [pod]);
  return p as KubeObject;
}

/** The two addresses of `ips` (a PodIP list) are of different families, the first equal to `primary`. */
function expectTwoFamilies(primary: string, ips: readonly string[], what: string): void {
  expect(primary !== '', `Expected\n    <string>: \nnot to be equivalent to\n    <string>: `);
  expect(ips.length === 2, `Expected\n    ${JSON.stringify(ips)}\nto have length 2`);
  expect(primary === ips[0], `Expected\n    <string>: ${primary}\nto equal\n    <string>: ${ips[0]}`);
  if (isIPv6(ips[0] ?? '') === isIPv6(ips[1] ?? ''))
    fail(`both internalIPs ${ips[0]} and ${ips[1]} belong to the same families (${what})`);
}

async function podIPs(ctx: UpstreamContext): Promise<void> {
  const p = await dualStackPod(ctx, 'dualstack-pod-ips');
  const ips = fieldArray(p, 'status', 'podIPs').map((x) => fieldString(x, 'ip'));
  expectTwoFamilies(fieldString(p, 'status', 'podIP'), ips, 'podIPs');
  ctx.step('deleting the pod');
  await ctx.kube.mustRun(['-n', ctx.namespace, 'delete', 'pod', 'pod-dualstack-ips', '--grace-period=30']);
}

async function hostIPs(ctx: UpstreamContext): Promise<void> {
  const p = await dualStackPod(ctx, 'dualstack-host-ips');
  const ips = fieldArray(p, 'status', 'hostIPs').map((x) => fieldString(x, 'ip'));
  expectTwoFamilies(fieldString(p, 'status', 'hostIP'), ips, 'hostIPs');
  ctx.step('deleting the pod');
  await ctx.kube.mustRun(['-n', ctx.namespace, 'delete', 'pod', 'pod-dualstack-ips', '--grace-period=30']);
}

/** createService (dual_stack.go): a NodePort Service, ports 53/TCP and 53/UDP, with the policy and families. */
function dualStackService(
  t: ServerTest,
  namespace: string,
  policy: string | undefined,
  families: readonly string[] | undefined,
): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: t.serviceName, namespace },
    spec: {
      selector: { ...t.labels },
      type: 'NodePort',
      ...(policy !== undefined ? { ipFamilyPolicy: policy } : {}),
      ...(families !== undefined ? { ipFamilies: [...families] } : {}),
      ports: [
        { name: 'tcp-port', port: 53, protocol: 'TCP' },
        { name: 'udp-port', port: 53, protocol: 'UDP' },
      ],
    },
  };
}

/** validateServiceAndClusterIPFamily. */
function validateServiceAndClusterIPFamily(
  svc: KubeObject,
  families: readonly string[],
  policy: string,
): void {
  const id = `${fieldString(svc, 'metadata', 'namespace')}/${fieldString(svc, 'metadata', 'name')}`;
  const got = fieldArray(svc, 'spec', 'ipFamilies').map(String);
  if (got.length !== families.length) fail(`service ip family nil for service ${id}`);
  families.forEach((f, i) => {
    if (got[i] !== f) fail(`service ${id} expected family ${f} at index[${i}] got ${got[i]}`);
  });
  const clusterIPs = fieldArray(svc, 'spec', 'clusterIPs').map(String);
  if (clusterIPs.length !== got.length)
    fail(`service ${id} assigned ips [${clusterIPs.join(' ')}] does not match families [${got.join(' ')}]`);
  got.forEach((f, i) => {
    if ((f === 'IPv6') !== isIPv6(clusterIPs[i] ?? ''))
      fail(`service ${id} assigned ips at [${i}]:${clusterIPs[i]} does not match family:${f}`);
  });
  const gotPolicy = field(svc, 'spec', 'ipFamilyPolicy');
  if (gotPolicy === undefined) fail(`service ${id} expected value ${policy} for IPFamilyPolicy`);
  if (gotPolicy !== policy) fail(`service ${id} expected value ${policy} for IPFamilyPolicy`);
}

/** validateEndpointSlices: within 10 s (0.5 s polls) a slice per family, and only of the expected families. */
async function validateEndpointSlices(
  ctx: UpstreamContext,
  svc: KubeObject,
  families: readonly string[],
): Promise<void> {
  const name = fieldString(svc, 'metadata', 'name');
  let slices: KubeObject[] = [];
  const ok = await poll(
    500,
    10_000,
    async () => {
      const found = await endpointSlicesFor(ctx, name);
      if (found.length < families.length) return false;
      slices = found;
      return true;
    },
    ctx.signal,
  );
  if (!ok)
    fail(
      `could not validate EndpointSlices for service ${ctx.namespace}/${name}: timed out waiting for the condition`,
    );
  let wantIPv4 = families.includes('IPv4');
  let wantIPv6 = families.includes('IPv6');
  for (const slice of slices) {
    const ip = String(field(slice, 'endpoints', 0, 'addresses', 0) ?? '(none)');
    const sliceName = fieldString(slice, 'metadata', 'name');
    const type = fieldString(slice, 'addressType');
    if (type === 'IPv4') {
      if (!wantIPv4) fail(`did not want IPv4 slice but got slice ${sliceName} with IP ${ip}`);
      wantIPv4 = false;
    } else if (type === 'IPv6') {
      if (!wantIPv6) fail(`did not want IPv6 slice but got slice ${sliceName} with IP ${ip}`);
      wantIPv6 = false;
    }
  }
  if (wantIPv4) fail('wanted an IPv4 slice but did not get one');
  if (wantIPv6) fail('wanted an IPv6 slice but did not get one');
}

/**
 * The five Service tests: serve-hostname pods of the test's labels, then the Service with the policy and families
 * asked for (or none), checked for two ports, its families and ClusterIPs (as asked; unasked: SingleStack of the
 * cluster's primary family), and its EndpointSlices.
 */
function serviceFamiliesTest(serviceName: string, policy?: string, families?: readonly string[]) {
  return async (ctx: UpstreamContext): Promise<void> => {
    const t = new ServerTest(ctx, serviceName);
    const jig = new TestJig(ctx, serviceName);
    ctx.step(`creating service ${ctx.namespace}/${serviceName}`);
    const service = dualStackService(t, ctx.namespace, policy, families);
    // jig.Labels = t.Labels: the pods carry the ServerTest's labels.
    Object.assign(jig, { labels: t.labels });
    await jig.createServicePods(2);
    const svc = await t.createService(service);
    const ports = fieldArray(svc, 'spec', 'ports');
    if (ports.length !== 2) fail(`got unexpected len(Spec.Ports) for service: ${JSON.stringify(svc)}`);
    // ClusterIsIPv6: the primary family, the nodes' first InternalIP's.
    const primary = isIPv6(ctx.nodes[0]?.internalIP ?? '') ? 'IPv6' : 'IPv4';
    const expected = families ?? [primary];
    validateServiceAndClusterIPFamily(svc, expected, policy ?? 'SingleStack');
    await validateEndpointSlices(ctx, svc, expected);
  };
}

export const DUAL_STACK_TESTS: readonly PortedTest[] = [
  dual('should have at least one dual-stack node', atLeastOneDualStackNode),
  dual('should create pod, add ipv6 and ipv4 ip to pod ips', podIPs),
  dual('should create pod, add ipv6 and ipv4 ip to host ips', hostIPs),
  dual(
    'should create a single stack service with cluster ip from primary service range',
    serviceFamiliesTest('defaultclusterip'),
  ),
  dual(
    'should create service with ipv4 cluster ip',
    serviceFamiliesTest('ipv4clusterip', undefined, ['IPv4']),
  ),
  dual(
    'should create service with ipv6 cluster ip',
    serviceFamiliesTest('ipv6clusterip', undefined, ['IPv6']),
  ),
  dual(
    'should create service with ipv4,v6 cluster ip',
    serviceFamiliesTest('ipv4ipv6clusterip', 'RequireDualStack', ['IPv4', 'IPv6']),
  ),
  dual(
    'should create service with ipv6,v4 cluster ip',
    serviceFamiliesTest('ipv6ipv4clusterip', 'RequireDualStack', ['IPv6', 'IPv4']),
  ),
  ...(['pod', 'node', 'endpoint'] as const).flatMap((source) =>
    (['http', 'udp'] as const).map((protocol) =>
      secondary(`should function for ${source}-Service: ${protocol}`, (ctx) =>
        granularCheck(ctx, source, protocol, 'secondary'),
      ),
    ),
  ),
  secondary('should update endpoints: http', (ctx) => updateEndpoints(ctx, 'http', 'secondary')),
  secondary('should update endpoints: udp', (ctx) => updateEndpoints(ctx, 'udp', 'secondary')),
  secondary('should function for client IP based session affinity: http [LinuxOnly]', (ctx) =>
    sessionAffinity(ctx, 'http', 'secondary'),
  ),
  secondary('should function for client IP based session affinity: udp [LinuxOnly]', (ctx) =>
    sessionAffinity(ctx, 'udp', 'secondary'),
  ),
  secondary('should be able to handle large requests: http', (ctx) =>
    largeRequests(ctx, 'http', 'secondary'),
  ),
  secondary('should be able to handle large requests: udp', (ctx) => largeRequests(ctx, 'udp', 'secondary')),
  {
    ...secondary('should function for service endpoints using hostNetwork', (ctx) =>
      hostNetworkEndpoints(ctx, 'secondary', SECONDARY_HOST_NETWORK_CHECKS),
    ),
    serial: true, // fixed ports in the nodes' namespace, as networking.go's twin (run alone)
  },
];

export const DUAL_STACK_NOT_PORTED: readonly NotPortedTest[] = [
  {
    name: `${DESCRIBE} should be able to reach pod on ipv4 and ipv6 ip`,
    conformance: false,
    file: FILE,
    reason:
      "pod to pod over both families (no Service, not proxy-dependent); its servers run agnhost test-webserver, which the lab's agnhost lacks",
  },
  {
    name: `${GRANULAR} should function for pod-Service: sctp [Feature:SCTPConnectivity]`,
    conformance: false,
    file: FILE,
    reason:
      "SCTP: the lab's agnhost netexec serves no SCTP, and the nodes share the host's kernel (sctp module)",
  },
];
