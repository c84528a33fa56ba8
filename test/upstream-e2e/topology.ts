// Ports of kubernetes/kubernetes test/e2e/network/endpointslice.go, traffic_distribution.go, topology_hints.go,
// funny_ips.go, service_cidrs.go, (topology-localhost.ts) localhost_nodeports.go and (dual-stack.ts) dual_stack.go: the proxy-dependent
// tests of the EndpointSlice, traffic distribution, topology, CIDR and dual-stack suites. Each asserts what upstream
// asserts, with upstream's names, counts and timeouts; tests not ported say why. What a test needs of the cluster
// beyond two nodes (zones, dual-stack) is its `requires`: the runner skips it, with the reason, where it is unmet.
import {
  delay,
  expect,
  fail,
  KUBE_PROXY_LAG_TIMEOUT_MS,
  poll,
  POD_START_TIMEOUT_MS,
  POLL_MS,
  RESPONDING_TIMEOUT_MS,
  skipf,
} from './framework.js';
import { field, fieldArray, fieldString, KubectlError, type KubeObject } from './kube.js';
import { serviceSpec, TestJig } from './jig.js';
import { AGNHOST_IMAGE, agnhostPod, createExecPodOrFail, podIsReady } from './pods.js';
import { checkServiceReachability } from './reachability.js';
import type { NodeView, NotPortedTest, PortedTest, Requirement, UpstreamContext } from './registry-types.js';
import {
  createPodsSync,
  endpointSlicesFor,
  isIPv6,
  joinHostPort,
  podLogs,
  setNodeSelection,
  waitForEndpointCount,
} from './topology-pods.js';
import { DUAL_STACK_NOT_PORTED, DUAL_STACK_TESTS } from './dual-stack.js';
import { LOCALHOST_NOT_PORTED, LOCALHOST_TESTS } from './topology-localhost.js';

function ported(
  file: string,
  describe: string,
  it: string,
  run: (ctx: UpstreamContext) => Promise<void>,
  o: { conformance?: boolean; requires?: readonly Requirement[] } = {},
): PortedTest {
  const conformance = o.conformance === true;
  return {
    name: `[sig-network] ${describe} ${it}${conformance ? ' [Conformance]' : ''}`,
    conformance,
    file,
    ...(o.requires ? { requires: o.requires } : {}),
    run,
  };
}

function notPorted(
  file: string,
  describe: string,
  it: string,
  reason: string,
  conformance = false,
): NotPortedTest {
  return {
    name: `[sig-network] ${describe} ${it}${conformance ? ' [Conformance]' : ''}`,
    conformance,
    file,
    reason,
  };
}

function deferDelete(ctx: UpstreamContext, resource: string, name: string, namespace = ctx.namespace): void {
  ctx.defer(() => ctx.kube.delete(namespace, resource, name));
}

// ---------------------------------------------------------------------------------------------------------------
// endpointslice.go: "[sig-network] EndpointSlice"

const ENDPOINTSLICE = 'endpointslice.go';

/** e2epod.NewAgnhostContainer running `netexec --http-port PORT --udp-port -1`. */
function netexecContainer(name: string, port: number): KubeObject {
  return {
    name,
    image: AGNHOST_IMAGE,
    args: ['netexec', '--http-port', String(port), '--udp-port', '-1'],
    ports: [{ containerPort: port, protocol: 'TCP' }],
  };
}

/** e2epod.NewAgnhostPodFromContainers. */
function podFromContainers(name: string, containers: readonly KubeObject[]): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name },
    spec: { containers: [...containers], terminationGracePeriodSeconds: 0 },
  };
}

/** The selector-less Service both multi-slice tests create. */
async function customEndpointsService(ctx: UpstreamContext): Promise<KubeObject> {
  return ctx.kube.create(ctx.namespace, {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'example-custom-endpoints' },
    spec: {
      ports: [
        { name: 'port80', port: 80, protocol: 'TCP' },
        { name: 'port81', port: 81, protocol: 'TCP' },
      ],
    },
  });
}

/** A custom EndpointSlice of the Service: one ready endpoint per address, one named port. */
async function createCustomSlice(
  ctx: UpstreamContext,
  serviceName: string,
  address: string,
  port: { name: string; port: number },
): Promise<void> {
  await ctx.kube.create(ctx.namespace, {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: {
      generateName: 'e2e-custom-slice',
      labels: {
        'kubernetes.io/service-name': serviceName,
        'endpointslice.kubernetes.io/managed-by': `e2e-test${ctx.namespace}`,
      },
    },
    // ClusterIsIPv6: the pod's primary address's family.
    addressType: isIPv6(address) ? 'IPv6' : 'IPv4',
    endpoints: [{ addresses: [address], conditions: { ready: true } }],
    ports: [{ name: port.name, port: port.port, protocol: 'TCP' }],
  });
}

/**
 * execHostnameTest: `curl -q -s --max-time 30 ADDR/hostname` from the pod, every 2 s for up to 2 min until it
 * answers, and the answer's first label must be the target's.
 */
async function execHostnameTest(
  ctx: UpstreamContext,
  sourcePod: string,
  targetAddr: string,
  targetHostname: string,
): Promise<void> {
  const timeoutMs = 2 * 60_000;
  ctx.log(`Waiting up to ${timeoutMs / 1000}s to get response from ${targetAddr}`);
  let stdout = '';
  let error: string | undefined;
  await poll(
    2_000,
    timeoutMs,
    async () => {
      const r = await ctx.kube.exec(
        ctx.namespace,
        sourcePod,
        `curl -q -s --max-time 30 ${targetAddr}/hostname`,
      );
      stdout = r.stdout;
      error = r.code === 0 ? undefined : `command terminated with exit code ${r.code}`;
      if (error !== undefined) ctx.log(`got err: ${error}, retry until timeout`);
      else if (stdout.trim() === '') ctx.log('got empty stdout, retry until timeout');
      return error === undefined && stdout.trim() !== '';
    },
    ctx.signal,
  );
  const target = targetHostname.split('.')[0] ?? '';
  const hostname = (stdout.split('.')[0] ?? '').trim();
  if (error !== undefined) fail(error);
  expect(hostname === target, `Expected\n    <string>: ${hostname}\nto equal\n    <string>: ${target}`);
}

async function createPausePod(ctx: UpstreamContext): Promise<string> {
  ctx.step('Creating a pause pods that will try to connect to the webserver');
  await createPodsSync(ctx, [agnhostPod({ name: 'pause-pod-0' }, {}, [], [])]);
  return 'pause-pod-0';
}

async function multiplePortsInMultipleSlices(ctx: UpstreamContext): Promise<void> {
  const svc = await customEndpointsService(ctx);
  const serverName = 'pod-handle-http-request';
  const [pod] = await createPodsSync(ctx, [
    podFromContainers(serverName, [
      netexecContainer('container-handle-8090-request', 8090),
      netexecContainer('container-handle-9090-request', 9090),
    ]),
  ]);
  const podIP = fieldString(pod, 'status', 'podIP');
  if (podIP === '') fail(`PodIP not assigned for pod ${serverName}`);
  ctx.step('creating');
  const svcName = fieldString(svc, 'metadata', 'name');
  await createCustomSlice(ctx, svcName, podIP, { name: 'port80', port: 8090 });
  await createCustomSlice(ctx, svcName, podIP, { name: 'port81', port: 9090 });
  const pausePod = await createPausePod(ctx);
  const clusterIP = fieldString(svc, 'spec', 'clusterIP');
  await execHostnameTest(ctx, pausePod, joinHostPort(clusterIP, 80), serverName);
  await execHostnameTest(ctx, pausePod, joinHostPort(clusterIP, 81), serverName);
}

async function multipleIPsInMultipleSlices(ctx: UpstreamContext): Promise<void> {
  const svc = await customEndpointsService(ctx);
  const names = ['pod1-handle-http-request', 'pod2-handle-http-request'] as const;
  const ips: string[] = [];
  for (const name of names) {
    const [pod] = await createPodsSync(ctx, [
      podFromContainers(name, [netexecContainer('container-handle-8090-request', 8090)]),
    ]);
    const ip = fieldString(pod, 'status', 'podIP');
    if (ip === '') fail(`PodIP not assigned for pod ${name}`);
    ips.push(ip);
  }
  ctx.step('creating');
  const svcName = fieldString(svc, 'metadata', 'name');
  await createCustomSlice(ctx, svcName, ips[0] ?? '', { name: 'port80', port: 8090 });
  await createCustomSlice(ctx, svcName, ips[1] ?? '', { name: 'port81', port: 8090 });
  const pausePod = await createPausePod(ctx);
  const clusterIP = fieldString(svc, 'spec', 'clusterIP');
  await execHostnameTest(ctx, pausePod, joinHostPort(clusterIP, 80), names[0]);
  await execHostnameTest(ctx, pausePod, joinHostPort(clusterIP, 81), names[1]);
}

/** The EndpointSlice controller creates an empty slice for a Service that selects nothing, and removes it after. */
async function emptySelectorSlices(ctx: UpstreamContext): Promise<void> {
  const svc = await ctx.kube.create(ctx.namespace, {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'example-empty-selector' },
    spec: {
      selector: { 'does-not-match-anything': 'endpoints-and-endpoint-slices-should-still-be-created' },
      ports: [{ name: 'example', port: 80, protocol: 'TCP' }],
    },
  });
  const name = fieldString(svc, 'metadata', 'name');
  let slice: KubeObject | undefined;
  const found = await poll(
    2_000,
    30_000, // wait.ForeverTestTimeout
    async () => {
      slice = (await endpointSlicesFor(ctx, name))[0];
      return slice !== undefined;
    },
    ctx.signal,
  );
  if (!found || !slice) fail(`No EndpointSlice found for Service ${ctx.namespace}/${name}: timed out`);
  const managedBy = field(slice, 'metadata', 'labels', 'endpointslice.kubernetes.io/managed-by');
  if (managedBy === undefined)
    fail(
      `Expected EndpointSlice to have endpointslice.kubernetes.io/managed-by label, got ${JSON.stringify(field(slice, 'metadata', 'labels'))}`,
    );
  expect(
    managedBy === 'endpointslice-controller.k8s.io',
    `Expected EndpointSlice to have endpointslice.kubernetes.io/managed-by label with endpointslice-controller.k8s.io value, got ${String(managedBy)}`,
  );
  const endpoints = fieldArray(slice, 'endpoints');
  expect(endpoints.length === 0, `Expected EndpointSlice to have 0 endpoints, got ${endpoints.length}`);
  await ctx.kube.delete(ctx.namespace, 'service', name);
  const gone = await poll(
    2_000,
    90_000,
    async () => (await endpointSlicesFor(ctx, name)).length === 0,
    ctx.signal,
  );
  if (!gone)
    fail(`EndpointSlice resource not deleted after Service ${ctx.namespace}/${name} was deleted: timed out`);
}

const EPS = 'EndpointSlice';
const API_ONLY = 'API-only, not proxy-dependent';

const ENDPOINTSLICE_TESTS: readonly PortedTest[] = [
  ported(
    ENDPOINTSLICE,
    EPS,
    'should create and delete EndpointSlices for a Service with a selector that matches no pods',
    emptySelectorSlices,
    { conformance: true },
  ),
  ported(
    ENDPOINTSLICE,
    EPS,
    'should support a Service with multiple ports specified in multiple EndpointSlices',
    multiplePortsInMultipleSlices,
    { conformance: true },
  ),
  ported(
    ENDPOINTSLICE,
    EPS,
    'should support a Service with multiple endpoint IPs specified in multiple EndpointSlices',
    multipleIPsInMultipleSlices,
    { conformance: true },
  ),
];

const ENDPOINTSLICE_NOT_PORTED: readonly NotPortedTest[] = [
  notPorted(
    ENDPOINTSLICE,
    EPS,
    'should create Endpoints and EndpointSlices for Pods matching a Service',
    `${API_ONLY} (the EndpointSlice controller's slices for nginx pods, never connected to)`,
    true,
  ),
  notPorted(
    ENDPOINTSLICE,
    EPS,
    'should support creating EndpointSlice API operations',
    `${API_ONLY} (discovery documents, create/get/list/watch/patch/update/delete/deletecollection)`,
    true,
  ),
];

// ---------------------------------------------------------------------------------------------------------------
// traffic_distribution.go: "[sig-network] Traffic Distribution" (BeforeEach: SkipUnlessAtLeastNZones(3))

const TRAFFIC = 'traffic_distribution.go';
const TRAFFIC_DESCRIBE = 'Traffic Distribution';

interface ServerPod {
  readonly node: NodeView;
  pod?: string;
}

interface ClientPod {
  readonly node: NodeView;
  endpoints: ServerPod[];
  pod?: string;
}

/** Ready schedulable nodes by zone label, in node-name order. */
function nodesByZone(ctx: UpstreamContext): Map<string, NodeView[]> {
  const byZone = new Map<string, NodeView[]>();
  for (const n of ctx.nodes) byZone.set(n.zone ?? '', [...(byZone.get(n.zone ?? '') ?? []), n]);
  return byZone;
}

/** getNodesForMultiNode: three zones with at least two nodes each. */
function nodesForMultiNode(ctx: UpstreamContext): [NodeView[], NodeView[], NodeView[]] {
  const zones = nodesByZone(ctx);
  const multi = [...zones.values()].filter((nodes) => nodes.length > 1).slice(0, 3);
  if (zones.size < 3 || multi.length < 3)
    skipf('need at least 3 zones, with at least 2 schedulable nodes each');
  return multi as [NodeView[], NodeView[], NodeView[]];
}

/** allocateClientsAndServers: a client in each of 3 zones, endpoints in the first two. */
function allocateClientsAndServers(ctx: UpstreamContext): { clients: ClientPod[]; servers: ServerPod[] } {
  ctx.step('finding 3 zones with schedulable nodes');
  const zones = [...nodesByZone(ctx).values()].slice(0, 3);
  if (zones.length < 3) skipf(`got ${zones.length} zones with schedulable nodes, need at least 3`);
  const clients: ClientPod[] = zones.map((nodes) => ({ node: nodes[0] as NodeView, endpoints: [] }));
  const [c0, c1, c2] = clients as [ClientPod, ClientPod, ClientPod];
  const servers: ServerPod[] = [{ node: c0.node }, { node: c1.node }];
  c0.endpoints = [servers[0] as ServerPod];
  c1.endpoints = [servers[1] as ServerPod];
  c2.endpoints = servers;
  return { clients, servers };
}

/** allocateMultiNodeClientsAndServers (`step`: the test's own words for the lookup). */
function allocateMultiNodeClientsAndServers(
  ctx: UpstreamContext,
  step = 'finding a set of zones and nodes for the test',
): { clients: ClientPod[]; servers: ServerPod[] } {
  ctx.step(step);
  const [zone1, zone2, zone3] = nodesForMultiNode(ctx);
  // First zone: a client and an endpoint on each node, both clients talk to both endpoints.
  const zone1Servers: ServerPod[] = [{ node: zone1[0] as NodeView }, { node: zone1[1] as NodeView }];
  // Second zone: a client on one node and a server on the other.
  const zone2Servers: ServerPod[] = [{ node: zone2[1] as NodeView }];
  const servers = [...zone1Servers, ...zone2Servers];
  const clients: ClientPod[] = [
    { node: zone1[0] as NodeView, endpoints: zone1Servers },
    { node: zone1[1] as NodeView, endpoints: zone1Servers },
    { node: zone2[0] as NodeView, endpoints: zone2Servers },
    // Third zone: just a client, which connects to the servers of the other two zones.
    { node: zone3[0] as NodeView, endpoints: servers },
  ];
  return { clients, servers };
}

const TRAFFIC_SERVICE = 'traffic-dist-test-service';

async function createTrafficService(ctx: UpstreamContext, trafficDist: string): Promise<KubeObject> {
  ctx.step(`creating a service "${TRAFFIC_SERVICE}" with trafficDistribution "${trafficDist}"`);
  return ctx.kube.create(ctx.namespace, {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: TRAFFIC_SERVICE },
    spec: {
      selector: { app: ctx.namespace }, // f.UniqueName
      trafficDistribution: trafficDist,
      ports: [{ port: 80, targetPort: 9376, protocol: 'TCP' }],
    },
  });
}

/** A serve-hostname pod with the Service's selector, pinned to `node`. */
function serverPodSpec(ctx: UpstreamContext, name: string, node: NodeView): KubeObject {
  const pod = agnhostPod({ name }, { app: ctx.namespace }, [], ['serve-hostname']);
  setNodeSelection(pod.spec as KubeObject, node.name);
  return pod;
}

/** The client's loop (as upstream's): one request a second to the Service by name, each answer on a line. */
function curlLoopPodSpec(
  name: string,
  node: NodeView,
  serviceName: string,
  args: readonly string[],
): KubeObject {
  const pod = agnhostPod({ name }, {}, [], args);
  setNodeSelection(pod.spec as KubeObject, node.name);
  const container = field(pod, 'spec', 'containers', 0) as KubeObject;
  container.command = [
    '/bin/sh',
    '-c',
    `date; for i in $(seq 1 3000); do sleep 1; echo "Date: $(date) Try: \${i}"; curl -q -s --connect-timeout 2 http://${serviceName}:80/ ; echo; done`,
  ];
  container.name = name;
  return pod;
}

/** createPods: the servers (waited for, and for their endpoints), then the clients. */
async function createTrafficPods(
  ctx: UpstreamContext,
  clients: readonly ClientPod[],
  servers: readonly ServerPod[],
): Promise<void> {
  const serverSpecs = servers.map((sp, i) => {
    const name = `server-${i}-${sp.node.name}`;
    ctx.step(`creating a server pod "${name}" on node "${sp.node.name}" in zone "${sp.node.zone ?? ''}"`);
    sp.pod = name;
    return serverPodSpec(ctx, name, sp.node);
  });
  await createPodsSync(ctx, serverSpecs);
  ctx.step('waiting for EndpointSlices to be created');
  await waitForEndpointCount(ctx, TRAFFIC_SERVICE, servers.length);
  ctx.log(`got slices:\n${JSON.stringify(await endpointSlicesFor(ctx, TRAFFIC_SERVICE))}`);
  const clientSpecs = clients.map((cp, i) => {
    const name = `client-${i}-${cp.node.name}`;
    ctx.step(`creating a client pod "${name}" on node "${cp.node.name}" in zone "${cp.node.zone ?? ''}"`);
    cp.pod = name;
    return curlLoopPodSpec(name, cp.node, TRAFFIC_SERVICE, []);
  });
  await createPodsSync(ctx, clientSpecs);
}

/**
 * checkTrafficDistribution: for each client, polled every 5 s for KubeProxyLagTimeout, its log (newest first)
 * must show at least 20 lines, answers only from its wanted endpoints, and 10 answers in a row that between them
 * reached every wanted endpoint.
 */
async function checkTrafficDistribution(ctx: UpstreamContext, clients: readonly ClientPod[]): Promise<void> {
  for (const cp of clients) {
    const pod = cp.pod ?? '';
    const wanted = new Set(cp.endpoints.map((sp) => sp.pod ?? ''));
    ctx.step(
      `ensuring that requests from ${pod} on ${cp.node.name} go to the endpoint(s) ${JSON.stringify([...wanted])}`,
    );
    let why = '';
    const ok = await poll(
      5_000,
      KUBE_PROXY_LAG_TIMEOUT_MS,
      async () => {
        const lines = (await podLogs(ctx, pod, pod)).split('\n').reverse();
        const shown = `\nreverseChronologicalLogLines=\n${lines.join('\n')}`;
        if (lines.length < 20) {
          why = `got ${lines.length} log lines, waiting for at least 20${shown}`;
          return false;
        }
        const unreached = new Set(wanted);
        let consecutive = 0;
        for (const line of lines) {
          if (line === '' || line.startsWith('Date:')) continue;
          if (!wanted.has(line)) {
            why = `request from ${pod} should not have reached ${line}${shown}`;
            return false;
          }
          consecutive++;
          unreached.delete(line);
          if (consecutive >= 10 && unreached.size === 0) return true;
        }
        why = `requests didn't meet the required criteria to reach all endpoints ${JSON.stringify([...wanted])}${shown}`;
        return false;
      },
      ctx.signal,
    );
    if (!ok) fail(`Timed out after ${KUBE_PROXY_LAG_TIMEOUT_MS / 1000}s.\n${why}`);
  }
}

function sameZoneTest(trafficDist: string) {
  return async (ctx: UpstreamContext): Promise<void> => {
    const { clients, servers } = allocateClientsAndServers(ctx);
    await createTrafficService(ctx, trafficDist);
    await createTrafficPods(ctx, clients, servers);
    await checkTrafficDistribution(ctx, clients);
  };
}

function multiNodeTest(trafficDist: string) {
  return async (ctx: UpstreamContext): Promise<void> => {
    const { clients, servers } = allocateMultiNodeClientsAndServers(ctx);
    await createTrafficService(ctx, trafficDist);
    await createTrafficPods(ctx, clients, servers);
    await checkTrafficDistribution(ctx, clients);
  };
}

async function preferSameNodeFallbackToZone(ctx: UpstreamContext): Promise<void> {
  const { clients, servers } = allocateMultiNodeClientsAndServers(ctx, 'finding a set of nodes for the test');
  // As the multi-node layout, but each client of the first zone only talks to the server on its own node.
  const [c0, c1] = clients as [ClientPod, ClientPod];
  c0.endpoints = [servers[0] as ServerPod];
  c1.endpoints = [servers[1] as ServerPod];
  await createTrafficService(ctx, 'PreferSameNode');
  await createTrafficPods(ctx, clients, servers);
  await checkTrafficDistribution(ctx, clients);
}

async function preferSameNodeWithFallback(ctx: UpstreamContext): Promise<void> {
  ctx.step('finding a set of nodes for the test');
  if (ctx.nodes.length < 2) skipf(`have ${ctx.nodes.length} schedulable nodes, need at least 2`);
  const [n0, n1] = ctx.nodes as [NodeView, NodeView];
  const servers: ServerPod[] = [{ node: n0 }, { node: n1 }];
  const [s0, s1] = servers as [ServerPod, ServerPod];
  const clients: ClientPod[] = [
    { node: n0, endpoints: [s0] },
    { node: n1, endpoints: [s1] },
  ];
  const [c0] = clients as [ClientPod];
  await createTrafficService(ctx, 'PreferSameNode');
  await createTrafficPods(ctx, clients, servers);
  ctx.step('ensuring that each client talks to its same-node endpoint when both endpoints exist');
  await checkTrafficDistribution(ctx, clients);
  ctx.step('killing the server pod on the first node and waiting for the EndpointSlices to be updated');
  await ctx.kube.mustRun(['-n', ctx.namespace, 'delete', 'pod', s0.pod ?? '', '--wait=false']);
  await waitForEndpointCount(ctx, TRAFFIC_SERVICE, 1);
  ctx.step('ensuring that both clients talk to the remaining endpoint when only one endpoint exists');
  delete s0.pod;
  c0.endpoints = [s1];
  await checkTrafficDistribution(ctx, clients);
  ctx.step('recreating the missing server pod and waiting for the EndpointSlices to be updated');
  await createPodsSync(ctx, [serverPodSpec(ctx, 'server-0-new', s0.node)]);
  s0.pod = 'server-0-new';
  await waitForEndpointCount(ctx, TRAFFIC_SERVICE, 2);
  ctx.step('ensuring that each client talks only to its same-node endpoint again');
  c0.endpoints = [s0];
  await checkTrafficDistribution(ctx, clients);
}

const THREE_ZONES: readonly Requirement[] = ['three-zones'];
const THREE_ZONES_OF_TWO: readonly Requirement[] = ['three-zones', 'three-zones-of-two-nodes'];

const TRAFFIC_TESTS: readonly PortedTest[] = [
  ported(
    TRAFFIC,
    TRAFFIC_DESCRIBE,
    'should route traffic to an endpoint in the same zone when using PreferClose',
    sameZoneTest('PreferClose'),
    { requires: THREE_ZONES },
  ),
  ported(
    TRAFFIC,
    TRAFFIC_DESCRIBE,
    'should route traffic correctly between pods on multiple nodes when using PreferClose',
    multiNodeTest('PreferClose'),
    { requires: THREE_ZONES_OF_TWO },
  ),
  ported(
    TRAFFIC,
    TRAFFIC_DESCRIBE,
    'should route traffic to an endpoint in the same zone when using PreferSameZone',
    sameZoneTest('PreferSameZone'),
    { requires: THREE_ZONES },
  ),
  ported(
    TRAFFIC,
    TRAFFIC_DESCRIBE,
    'should route traffic correctly between pods on multiple nodes when using PreferSameZone',
    multiNodeTest('PreferSameZone'),
    { requires: THREE_ZONES_OF_TWO },
  ),
  ported(
    TRAFFIC,
    TRAFFIC_DESCRIBE,
    'should route traffic to an endpoint on the same node or fall back to same zone when using PreferSameNode',
    preferSameNodeFallbackToZone,
    { requires: THREE_ZONES_OF_TWO },
  ),
  ported(
    TRAFFIC,
    TRAFFIC_DESCRIBE,
    'should route traffic to an endpoint on the same node when using PreferSameNode and fall back when the endpoint becomes unavailable',
    preferSameNodeWithFallback,
    // Two nodes would do for the test itself; upstream's BeforeEach skips the whole Describe below 3 zones.
    { requires: THREE_ZONES },
  ),
];

// ---------------------------------------------------------------------------------------------------------------
// topology_hints.go: "[sig-network] Topology Hints" (BeforeEach: SkipUnlessMultizone)

const HINTS = 'topology_hints.go';

async function distributeEndpointsEvenly(ctx: UpstreamContext): Promise<void> {
  const portNum = 9376;
  const labels = { app: 'iperf2-client' }; // labelKey: clientLabelValue
  // e2edaemonset.NewDaemonSet: one container "app" of the image with the ports and args.
  await ctx.kube.create(ctx.namespace, {
    apiVersion: 'apps/v1',
    kind: 'DaemonSet',
    metadata: { name: 'topology-serve-hostname', labels },
    spec: {
      selector: { matchLabels: labels },
      template: {
        metadata: { labels },
        spec: {
          containers: [
            {
              name: 'app',
              image: AGNHOST_IMAGE,
              args: ['serve-hostname'],
              ports: [{ containerPort: portNum }],
            },
          ],
        },
      },
    },
  });
  const svcName = 'topology-hints';
  await ctx.kube.create(ctx.namespace, {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: svcName, annotations: { 'service.kubernetes.io/topology-mode': 'Auto' } },
    spec: {
      selector: labels,
      publishNotReadyAddresses: true,
      ports: [{ name: 'example', port: 80, targetPort: portNum, protocol: 'TCP' }],
    },
  });
  // CheckRunningOnAllNodes: a ready pod of the DaemonSet on every node it can be scheduled to (here: every ready
  // schedulable node; those leave out a node with a NoSchedule taint, such as a tainted control-plane node, which
  // the DaemonSet's Pods do not tolerate).
  const schedulable = ctx.nodes;
  const selector = Object.entries(labels)
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
  let pods: KubeObject[] = [];
  await delay(5_000, ctx.signal); // PollUntilContextTimeout(immediate=false): the first check after one interval
  const running = await poll(
    5_000,
    POD_START_TIMEOUT_MS,
    async () => {
      pods = (await ctx.kube.list(ctx.namespace, 'pods', selector)).filter(podIsReady);
      const onNodes = new Set(pods.map((p) => fieldString(p, 'spec', 'nodeName')));
      return schedulable.every((n) => onNodes.has(n.name));
    },
    ctx.signal,
  );
  if (!running) fail('timed out waiting for DaemonSets to be ready');
  // All nodes should have the same allocatable CPU; if not, skip.
  const nodeObjects = await ctx.kube.list('', 'nodes');
  let lastCPU: string | undefined;
  for (const n of nodeObjects) {
    const name = fieldString(n, 'metadata', 'name');
    if (!schedulable.some((s) => s.name === name)) continue;
    const cpu = fieldString(n, 'status', 'allocatable', 'cpu');
    if (cpu === '') fail(`Error when getting allocatable CPU of Node '${name}'`);
    if (lastCPU !== undefined && cpu !== lastCPU)
      skipf(
        `Expected Nodes to have equivalent allocatable CPUs, but Node '${name}' is different from the previous one. ${cpu} not equals ${lastCPU}`,
      );
    lastCPU = cpu;
  }
  ctx.log(`Waiting for ${schedulable.length} endpoints to be tracked in EndpointSlices`);
  let finalSlices: KubeObject[] = [];
  await delay(5_000, ctx.signal); // immediate=false, as above
  const tracked = await poll(
    5_000,
    3 * 60_000,
    async () => {
      const slices = await endpointSlicesFor(ctx, svcName);
      const n = slices.reduce((sum, s) => sum + fieldArray(s, 'endpoints').length, 0);
      if (schedulable.length > n) {
        ctx.log(`Expected ${schedulable.length} endpoints, got ${n}`);
        return false;
      }
      finalSlices = slices;
      return true;
    },
    ctx.signal,
  );
  if (!tracked) fail('timed out waiting for EndpointSlices to be ready');
  ctx.step('having hints set for each endpoint');
  for (const slice of finalSlices) {
    const sliceName = fieldString(slice, 'metadata', 'name');
    for (const ep of fieldArray(slice, 'endpoints')) {
      const zone = field(ep, 'zone');
      const forZones = fieldArray(ep, 'hints', 'forZones');
      if (typeof zone !== 'string')
        fail(`Expected endpoint in ${sliceName} to have zone: ${JSON.stringify(ep)}`);
      if (forZones.length === 0)
        fail(`Expected endpoint in ${sliceName} to have hints: ${JSON.stringify(ep)}`);
      if (forZones.length > 1)
        fail(
          `Expected endpoint in ${sliceName} to have exactly 1 zone hint, got ${forZones.length}: ${JSON.stringify(ep)}`,
        );
      if (zone !== fieldString(forZones[0], 'name'))
        fail(`Expected endpoint in ${sliceName} to have same zone hint, got ${zone}: ${JSON.stringify(ep)}`);
    }
  }
  const zoneOfNode = new Map<string, string>();
  const nodeOfZone = new Map<string, string>();
  for (const n of schedulable)
    if (n.zone !== undefined) {
      zoneOfNode.set(n.name, n.zone);
      nodeOfZone.set(n.zone, n.name);
    }
  const zoneOfPod = new Map<string, string>();
  for (const p of await ctx.kube.list(ctx.namespace, 'pods')) {
    const zone = zoneOfNode.get(fieldString(p, 'spec', 'nodeName'));
    if (zone !== undefined) zoneOfPod.set(fieldString(p, 'metadata', 'name'), zone);
  }
  ctx.step('keeping requests in the same zone');
  for (const [fromZone, nodeName] of nodeOfZone) {
    ctx.step(`creating a client pod for probing the service from ${fromZone}`);
    const podName = `curl-from-${fromZone}`;
    const node = schedulable.find((n) => n.name === nodeName) as NodeView;
    await createPodsSync(ctx, [curlLoopPodSpec(podName, node, svcName, ['serve-hostname'])]);
    ctx.log(`Ensuring that requests from ${podName} pod on ${nodeName} node stay in ${fromZone} zone`);
    let logs = '';
    await delay(5_000, ctx.signal); // immediate=false, as above
    const stayed = await poll(
      5_000,
      KUBE_PROXY_LAG_TIMEOUT_MS,
      async () => {
        logs = await podLogs(ctx, podName, podName);
        ctx.log(`Pod client logs: ${logs}`);
        const lines = logs.split('\n');
        if (lines.length < 6) {
          ctx.log(`only ${lines.length} log lines, waiting for at least 6`);
          return false;
        }
        let consecutive = 0;
        for (let i = lines.length - 1; i > 0; i--) {
          const line = lines[i] ?? '';
          if (line === '' || line.startsWith('Date:')) continue;
          const destZone = zoneOfPod.get(line);
          if (destZone === undefined) {
            ctx.log(`could not determine dest zone from log line: ${line}`);
            return false;
          }
          if (destZone !== fromZone) {
            ctx.log(
              `expected request from ${podName} to stay in ${fromZone} zone, delivered to ${destZone} zone`,
            );
            return false;
          }
          if (++consecutive >= 5) return true;
        }
        return false;
      },
      ctx.signal,
    );
    if (!stayed)
      fail(
        `expected 5 consecutive requests from ${podName} to stay in zone ${fromZone} within ${KUBE_PROXY_LAG_TIMEOUT_MS / 1000}s, stdout: ${logs}`,
      );
  }
}

const HINTS_TESTS: readonly PortedTest[] = [
  ported(HINTS, 'Topology Hints', 'should distribute endpoints evenly', distributeEndpointsEvenly, {
    // SkipUnlessMultizone; and hints need zones among the nodes that are not control-plane ones (upstream's
    // topology cache leaves those out) with no Pod on the control-plane node: a lab with `--control-plane-taint
    // --nodes 3 --zones zone-a,zone-b`.
    requires: ['zones', 'worker-zones'],
  }),
];

// ---------------------------------------------------------------------------------------------------------------
// funny_ips.go: "[sig-network] CVE-2021-29923"

const FUNNY = 'funny_ips.go';

const FUNNY_NOT_PORTED: readonly NotPortedTest[] = [
  notPorted(
    FUNNY,
    'CVE-2021-29923',
    'IPv4 Service Type ClusterIP with leading zeros should work interpreted as decimal',
    'the lab API server refuses a ClusterIP with leading zeros ("198.19.0.011": must be empty, \'None\', or a ' +
      "valid IP address), as upstream's does with StrictIPCIDRValidation (KEP-4858, beta and on by default); the " +
      'test needs the create to succeed, so it cannot reach the proxy',
  ),
];

// ---------------------------------------------------------------------------------------------------------------
// service_cidrs.go: "[sig-network] Service CIDRs", "[sig-network] ServiceCIDR and IPAddress API"

const CIDRS = 'service_cidrs.go';

/** The next address (netip.Addr.Next), IPv4 or IPv6 written in full hex groups. */
function nextIP(ip: string): string {
  if (!isIPv6(ip)) {
    const n = ip.split('.').reduce((acc, o) => acc * 256 + Number(o), 0) + 1;
    return [24, 16, 8, 0].map((s) => Math.floor(n / 2 ** s) % 256).join('.');
  }
  const [head = '', tail = ''] = ip.split('::');
  const h = head.split(':').filter(Boolean);
  const t = tail.split(':').filter(Boolean);
  const all = [...h, ...Array(8 - h.length - t.length).fill('0'), ...t].map((g) => BigInt(`0x${g}`));
  const value = all.reduce((acc, g) => (acc << 16n) + g, 0n) + 1n;
  return Array.from({ length: 8 }, (_, i) => ((value >> BigInt(16 * (7 - i))) & 0xffffn).toString(16)).join(
    ':',
  );
}

async function serveOnDifferentServiceCIDRs(ctx: UpstreamContext): Promise<void> {
  if (ctx.nodes.length < 2)
    skipf(`Test requires >= 2 Ready nodes, but there are only ${ctx.nodes.length} nodes`);
  // Upstream uses 203.0.113.0/24 (TEST-NET-3); lab traffic stays in 198.18.0.0/15, so an unused /24 of it stands
  // in (no node, pod, client or external address of the lab's plan lies in 198.18.203.0/24). The IPv6 range is
  // upstream's own, inside 2001:db8::/32.
  const ipv6 = isIPv6(ctx.nodes[0]?.internalIP ?? '');
  const serviceCIDR = ipv6 ? '2001:db8:cb00::/64' : '198.18.203.0/24';
  let serviceIP = ipv6 ? '2001:db8:cb00::a' : '198.18.203.10';
  const cidrName = 'test-svc-cidr';
  await ctx.kube.create('', {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'ServiceCIDR',
    metadata: { name: cidrName },
    spec: { cidrs: [serviceCIDR] },
  });
  ctx.defer(async () => void (await ctx.kube.mustRun(['delete', 'servicecidr', cidrName, '--wait=false'])));
  await delay(POLL_MS, ctx.signal); // PollUntilContextTimeout(immediate=false)
  const ready = await poll(
    POLL_MS,
    RESPONDING_TIMEOUT_MS,
    async () => {
      const cidr = await ctx.kube.json(['get', 'servicecidr', cidrName]).catch(() => undefined);
      const cond = fieldArray(cidr, 'status', 'conditions').find((c) => field(c, 'type') === 'Ready');
      return field(cond, 'status') === 'True';
    },
    ctx.signal,
  );
  if (!ready) fail('Failed to wait for serviceCIDR to be ready: context deadline exceeded');
  const serviceName = 'cidr1-test';
  const jig = new TestJig(ctx, serviceName);
  ctx.step(`creating service ${serviceName} with type=NodePort in namespace ${ctx.namespace}`);
  // The ClusterIP is set so that it lies in the new range; retried on the next address when taken.
  let svc: KubeObject | undefined;
  let lastError: unknown;
  for (let i = 0; i < 5 && svc === undefined; i++) {
    const ip = serviceIP;
    try {
      svc = await jig.createTCPService((s) => {
        const spec = serviceSpec(s);
        spec.clusterIP = ip;
        spec.type = 'NodePort';
        spec.ports = [{ port: 80, name: 'http', protocol: 'TCP', targetPort: 9376 }];
      });
    } catch (e) {
      if (!(e instanceof KubectlError)) throw e;
      lastError = e;
      serviceIP = nextIP(serviceIP);
    }
  }
  if (!svc)
    fail(
      `unable to allocate Service on new ServiceCIDR: ${lastError instanceof Error ? lastError.message : ''}`,
    );
  deferDelete(ctx, 'service', serviceName);
  await jig.createServicePods(2);
  const execPod = await createExecPodOrFail(ctx, 'execpod');
  await checkServiceReachability(ctx, jig, svc, execPod);
}

const CIDRS_TESTS: readonly PortedTest[] = [
  ported(
    CIDRS,
    'Service CIDRs',
    'should create Services and serve on different Service CIDRs',
    serveOnDifferentServiceCIDRs,
  ),
];

const CIDRS_NOT_PORTED: readonly NotPortedTest[] = [
  notPorted(
    CIDRS,
    'ServiceCIDR and IPAddress API',
    'should support ServiceCIDR API operations',
    `${API_ONLY} (get, get /status, list, watch of the default ServiceCIDR)`,
    true,
  ),
  notPorted(
    CIDRS,
    'ServiceCIDR and IPAddress API',
    'should support IPAddress API operations',
    `${API_ONLY} (IPAddress create, patch, update, list, watch, delete, deletecollection)`,
    true,
  ),
];

export const TOPOLOGY_TESTS: readonly PortedTest[] = [
  ...ENDPOINTSLICE_TESTS,
  ...TRAFFIC_TESTS,
  ...HINTS_TESTS,
  ...CIDRS_TESTS,
  ...LOCALHOST_TESTS,
  ...DUAL_STACK_TESTS,
];

export const TOPOLOGY_NOT_PORTED: readonly NotPortedTest[] = [
  ...ENDPOINTSLICE_NOT_PORTED,
  ...FUNNY_NOT_PORTED,
  ...CIDRS_NOT_PORTED,
  ...LOCALHOST_NOT_PORTED,
  ...DUAL_STACK_NOT_PORTED,
];
