// Ports of kubernetes/kubernetes test/e2e/network/service.go: the Service tests about traffic policies, terminating and unready endpoints, hairpin and rejects.
// Each asserts what upstream asserts, with upstream's names, counts and timeouts; tests not ported say why.
// Helpers beyond the shared ones (pod placement, execHostnameTest, execSourceIPTest, curl checks) are in
// service-traffic-pods.ts.
import {
  delay,
  expect,
  fail,
  KUBE_PROXY_ENDPOINT_LAG_TIMEOUT_MS,
  poll,
  POD_START_TIMEOUT_MS,
  POLL_MS,
} from './framework.js';
import { field, fieldString, type KubeObject } from './kube.js';
import { validateEndpointsPortsOrFail } from './endpoints.js';
import { serviceSpec, TestJig } from './jig.js';
import {
  AGNHOST_IMAGE,
  agnhostPod,
  createExecPodOrFail,
  createPodOrFail,
  deletePodOrFail,
  podIsReady,
  waitForPod,
} from './pods.js';
import { checkServiceReachability } from './reachability.js';
import {
  servicesTestName,
  type NotPortedTest,
  type PortedTest,
  type UpstreamContext,
} from './registry-types.js';
import {
  createExecPodOnNode,
  expectRefused,
  createPausePodDeployment,
  createPodReady,
  deletePodNoWait,
  execHostnameTest,
  execSourceIPTest,
  expectCurlFails,
  healthCheckCode,
  joinHostPort,
  onNode,
  waitForDeploymentComplete,
} from './service-traffic-pods.js';

const FILE = 'service.go';

function it(name: string, run: (ctx: UpstreamContext) => Promise<void>): PortedTest {
  return { name: servicesTestName(name, false), conformance: false, file: FILE, run };
}

function deferServiceDeletion(ctx: UpstreamContext, name: string): void {
  ctx.defer(() => ctx.kube.delete(ctx.namespace, 'service', name));
}

/** GetBoundedReadySchedulableNodes(cs, 2) and the Skipf below 2: the lab has two; fewer is a failure here. */
function twoNodes(ctx: UpstreamContext): readonly [string, string] {
  const [node0, node1] = ctx.nodes;
  if (!node0 || !node1) fail(`The test requires at least two ready nodes, but found ${ctx.nodes.length}`);
  return [node0.name, node1.name];
}

function internalIP(ctx: UpstreamContext, node: string): string {
  const ip = ctx.nodes.find((n) => n.name === node)?.internalIP ?? '';
  expect(ip !== '', `node ${node} has no InternalIP`);
  return ip;
}

function nodePortOf(svc: KubeObject): number {
  return Number(field(svc, 'spec', 'ports', 0, 'nodePort') ?? 0);
}

/** NewAgnhostPod(ns, name, nil, nil, nil, args…) with labels, on `node` (SetNodeSelection). */
function agnhostOn(
  name: string,
  labels: Readonly<Record<string, string>>,
  node: string,
  args: readonly string[],
): KubeObject {
  return onNode(agnhostPod({ name }, labels, [], args), node);
}

/** A pause pod (NewAgnhostPod with no args) on `node`, in the node's network namespace when `hostNetwork`. */
async function pausePodOn(
  ctx: UpstreamContext,
  name: string,
  node: string,
  hostNetwork = false,
): Promise<KubeObject> {
  const pod = agnhostOn(name, {}, node, []);
  if (hostNetwork) (pod.spec as KubeObject).hostNetwork = true;
  return createPodReady(ctx, pod);
}

// ---- should preserve source pod IP for traffic thru service cluster IP [LinuxOnly] ----

async function preserveSourcePodIP(ctx: UpstreamContext): Promise<void> {
  const serviceName = 'sourceip-test';
  ctx.step(`creating a TCP service ${serviceName} with type=ClusterIP in namespace ${ctx.namespace}`);
  const jig = new TestJig(ctx, serviceName);
  const servicePort = 8080;
  const tcpService = await jig.createTCPServiceWithPort(undefined, servicePort);
  ctx.defer(async () => {
    ctx.log('Cleaning up the sourceip test service');
    await ctx.kube.delete(ctx.namespace, 'service', serviceName);
  });
  const serviceIP = fieldString(tcpService, 'spec', 'clusterIP');
  ctx.log(`sourceip-test cluster ip: ${serviceIP}`);

  ctx.step('Picking 2 Nodes to test whether source IP is preserved or not');
  twoNodes(ctx);
  const nodeCounts = Math.min(ctx.nodes.length, 2);

  ctx.step('Creating a webserver pod to be part of the TCP service which echoes back source ip');
  const serverPodName = 'echo-sourceip';
  await createPodReady(
    ctx,
    agnhostPod({ name: serverPodName }, jig.labels, [], ['netexec', '--http-port', String(servicePort)]),
  );
  ctx.defer(async () => {
    ctx.log('Cleaning up the echo server pod');
    await ctx.kube.delete(ctx.namespace, 'pod', serverPodName);
  });
  await validateEndpointsPortsOrFail(ctx, serviceName, { [serverPodName]: [servicePort] });

  ctx.step('Creating pause pod deployment');
  const deployment = await createPausePodDeployment(ctx, 'pause-pod', nodeCounts);
  ctx.defer(async () => {
    ctx.log('Deleting deployment');
    await ctx.kube.delete(ctx.namespace, 'deployment', deployment.name);
  });
  await waitForDeploymentComplete(ctx, deployment.name);

  const pausePods = await ctx.kube.list(ctx.namespace, 'pods', deployment.selector);
  expect(
    pausePods.length >= 2 &&
      fieldString(pausePods[0], 'spec', 'nodeName') !== fieldString(pausePods[1], 'spec', 'nodeName'),
    `pause pods share a node: ${pausePods.map((p) => fieldString(p, 'spec', 'nodeName')).join(', ')}`,
  );

  const serviceAddress = joinHostPort(serviceIP, servicePort);
  for (const pausePod of pausePods) {
    const [sourceIP, execPodIP] = await execSourceIPTest(ctx, pausePod, serviceAddress);
    ctx.step('Verifying the preserved source ip');
    expect(
      sourceIP === execPodIP,
      `Expected ${JSON.stringify(sourceIP)} to equal ${JSON.stringify(execPodIP)}`,
    );
  }
}

// ---- should allow pods to hairpin back to themselves through services ----

async function hairpin(ctx: UpstreamContext): Promise<void> {
  const serviceName = 'hairpin-test';
  ctx.step(`creating a TCP service ${serviceName} with type=ClusterIP in namespace ${ctx.namespace}`);
  const jig = new TestJig(ctx, serviceName);
  const servicePort = 8080;
  const svc = await jig.createTCPServiceWithPort(undefined, servicePort);
  ctx.log(`hairpin-test cluster ip: ${fieldString(svc, 'spec', 'clusterIP')}`);

  ctx.step('creating a client/server pod');
  const serverPodName = 'hairpin';
  await createPodReady(
    ctx,
    agnhostPod({ name: serverPodName }, jig.labels, [], ['netexec', '--http-port', String(servicePort)]),
  );

  ctx.step('waiting for the service to expose an endpoint');
  await validateEndpointsPortsOrFail(ctx, serviceName, { [serverPodName]: [servicePort] });

  ctx.step('Checking if the pod can reach itself');
  await checkServiceReachability(ctx, jig, svc, serverPodName);
}

// ---- terminating and unready endpoints with PublishNotReadyAddresses ----

/** The webserver of the PublishNotReadyAddresses tests: netexec draining 300 s, probed on /readyz and /healthz. */
function drainingWebserver(labels: Readonly<Record<string, string>>, node: string): KubeObject {
  const gracePeriod = 300;
  const probe = (path: string): KubeObject => ({ httpGet: { path, port: 80, scheme: 'HTTP' } });
  return onNode(
    {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'webserver-pod', labels: { ...labels } },
      spec: {
        containers: [
          {
            name: 'agnhost',
            image: AGNHOST_IMAGE,
            args: ['netexec', '--http-port=80', `--delay-shutdown=${gracePeriod}`],
            ports: [{ containerPort: 80 }],
            readinessProbe: probe('/readyz'),
            livenessProbe: probe('/healthz'),
          },
        ],
        terminationGracePeriodSeconds: gracePeriod,
      },
    },
    node,
  );
}

async function terminatingAndUnready(ctx: UpstreamContext, publishNotReady: boolean): Promise<void> {
  const [node0, node1] = twoNodes(ctx);
  const serviceName = publishNotReady ? 'svc-tolerate-unready' : 'svc-not-tolerate-unready';
  const servicePort = 80;
  ctx.step(`creating a NodePort TCP service ${serviceName} that PublishNotReadyAddresses on${ctx.namespace}`);
  const jig = new TestJig(ctx, serviceName);
  const svc = await jig.createTCPService((s) => {
    const spec = serviceSpec(s);
    spec.ports = [{ port: 80, name: 'http', protocol: 'TCP', targetPort: 80 }];
    spec.type = 'NodePort';
    spec.publishNotReadyAddresses = publishNotReady;
  });

  ctx.step('Creating 1 webserver pod to be part of the TCP service');
  const webserver = await createPodReady(ctx, drainingWebserver(jig.labels, node0));
  const webserverName = fieldString(webserver, 'metadata', 'name');
  await validateEndpointsPortsOrFail(ctx, serviceName, { [webserverName]: [servicePort] });

  ctx.step('Creating 1 pause pods that will try to connect to the webservers');
  const pausePod1 = await pausePodOn(ctx, 'pause-pod-1', node1);

  // The webserver keeps running for its grace period after the delete (netexec --delay-shutdown) but turns
  // unready (/readyz answers 503 once it got SIGTERM).
  await deletePodNoWait(ctx, webserverName);
  await waitForPod(ctx, webserverName, 'not ready', (p) => !podIsReady(p), POD_START_TIMEOUT_MS);

  const nodePort = nodePortOf(svc);
  const clusterIPAddress = joinHostPort(fieldString(svc, 'spec', 'clusterIP'), servicePort);
  const nodePortAddress0 = joinHostPort(internalIP(ctx, node0), nodePort);
  const nodePortAddress1 = joinHostPort(internalIP(ctx, node1), nodePort);
  const pause1 = fieldString(pausePod1, 'metadata', 'name');

  if (publishNotReady) {
    // connect every 5 seconds to the Service with the unready and terminating endpoint
    for (let i = 0; i < 5; i++) {
      await execHostnameTest(ctx, pausePod1, clusterIPAddress, webserverName);
      await execHostnameTest(ctx, pausePod1, nodePortAddress0, webserverName);
      await execHostnameTest(ctx, pausePod1, nodePortAddress1, webserverName);
      await delay(5_000, ctx.signal);
    }
    return;
  }

  // Wait until the change has been propagated to both nodes.
  for (const [address, node] of [
    [nodePortAddress0, 'node0'],
    [nodePortAddress1, 'node1'],
  ] as const) {
    const cmd = `curl -q -s --connect-timeout 5 ${address}/hostname`;
    const stopped = await poll(
      POLL_MS,
      KUBE_PROXY_ENDPOINT_LAG_TIMEOUT_MS,
      async () => (await ctx.kube.exec(ctx.namespace, pause1, cmd)).code !== 0,
      ctx.signal,
    );
    if (!stopped) fail(`pod on ${node} still serves traffic: timed out waiting for the condition`);
  }

  // connect every 5 seconds to the Service and expect a failure
  for (let i = 0; i < 5; i++) {
    await expectCurlFails(
      ctx,
      pause1,
      clusterIPAddress,
      5,
      'expected error when trying to connect to cluster IP',
    );
    await expectCurlFails(
      ctx,
      pause1,
      nodePortAddress0,
      5,
      'expected error when trying to connect to NodePort address',
    );
    await expectCurlFails(
      ctx,
      pause1,
      nodePortAddress1,
      5,
      'expected error when trying to connect to NodePort address',
    );
    await delay(5_000, ctx.signal);
  }
}

// ---- should be rejected when no endpoints exist ----

/**
 * Upstream runs `/agnhost connect --timeout=3s HOST:PORT` in the exec pod and waits for an error with REFUSED in
 * it. Lab exec pods run commands with the host's files, where there is no /agnhost; the same subcommand of the
 * lab's own agnhost (packages/netns/src/agnhost/connect.ts, which prints agnhost's REFUSED / TIMEOUT / DNS words)
 * runs instead, through the entry point the lab itself starts agnhost containers with (agnhostArgv). A timeout or
 * a DNS failure keeps the poll going, as upstream's; only a refusal ends it, and a connection that succeeds fails
 * the test at once.
 */
async function rejectedWithoutEndpoints(ctx: UpstreamContext): Promise<void> {
  const serviceName = 'no-pods';
  const jig = new TestJig(ctx, serviceName);
  const nodeName = ctx.nodes[0]?.name ?? fail('no ready schedulable node');
  const port = 80;

  ctx.step('creating a service with no endpoints');
  await jig.createTCPServiceWithPort(undefined, port);

  const podName = 'execpod-noendpoints';
  const execPod = await createExecPodOnNode(ctx, podName, nodeName);

  const serviceAddress = joinHostPort(serviceName, port);
  ctx.log(`waiting up to ${KUBE_PROXY_ENDPOINT_LAG_TIMEOUT_MS / 1000}s to connect to ${serviceAddress}`);
  ctx.step(`hitting service ${serviceAddress} from pod ${podName} on node ${nodeName}`);
  await expectRefused(ctx, execPod, serviceAddress);
}

// ---- internalTrafficPolicy=Local ----

/** 5 times: `ok` reaches the local webserver through the ClusterIP; `blocked` (on the other node) gets an error. */
async function assertLocalOnly(
  ctx: UpstreamContext,
  ok: KubeObject,
  blocked: KubeObject,
  serviceAddress: string,
  hostname: string,
): Promise<void> {
  for (let i = 0; i < 5; i++) {
    await execHostnameTest(ctx, ok, serviceAddress, hostname);
    await expectCurlFails(
      ctx,
      fieldString(blocked, 'metadata', 'name'),
      serviceAddress,
      5,
      'expected error when trying to connect to cluster IP',
    );
  }
}

async function createITPLocalService(
  ctx: UpstreamContext,
  port: number,
  targetPort: number,
): Promise<{
  jig: TestJig;
  svc: KubeObject;
}> {
  const serviceName = 'svc-itp';
  ctx.step(
    `creating a TCP service ${serviceName} with type=ClusterIP and internalTrafficPolicy=Local in namespace ${ctx.namespace}`,
  );
  const jig = new TestJig(ctx, serviceName);
  const svc = await jig.createTCPService((s) => {
    serviceSpec(s).ports = [{ port, name: 'http', protocol: 'TCP', targetPort }];
    serviceSpec(s).internalTrafficPolicy = 'Local';
  });
  return { jig, svc };
}

async function itpLocalPodToPod(ctx: UpstreamContext, clientsHostNetwork: boolean): Promise<void> {
  const [node0, node1] = twoNodes(ctx);
  const servicePort = clientsHostNetwork ? 8000 : 80;
  const { jig, svc } = await createITPLocalService(ctx, servicePort, servicePort);

  ctx.step('Creating 1 webserver pod to be part of the TCP service');
  const webserver = await createPodReady(
    ctx,
    agnhostOn('echo-hostname-0', jig.labels, node0, ['netexec', '--http-port', String(servicePort)]),
  );
  await validateEndpointsPortsOrFail(ctx, 'svc-itp', { 'echo-hostname-0': [servicePort] });

  ctx.step('Creating 2 pause pods that will try to connect to the webservers');
  const pausePod0 = await pausePodOn(ctx, 'pause-pod-0', node0, clientsHostNetwork);
  const pausePod1 = await pausePodOn(ctx, 'pause-pod-1', node1, clientsHostNetwork);

  const serviceAddress = joinHostPort(fieldString(svc, 'spec', 'clusterIP'), servicePort);
  await assertLocalOnly(
    ctx,
    pausePod0,
    pausePod1,
    serviceAddress,
    fieldString(webserver, 'metadata', 'name'),
  );
}

async function itpLocalPodAndNodeToHostNetworkPod(ctx: UpstreamContext): Promise<void> {
  const [node0, node1] = twoNodes(ctx);
  const servicePort = 80;
  // If the pod can't bind to this port, it will fail to start, and it will fail the test, because is using
  // hostNetwork. Using a not common port will reduce this possibility.
  const endpointPort = 10180;
  const { jig, svc } = await createITPLocalService(ctx, servicePort, endpointPort);

  ctx.step('Creating 1 webserver pod to be part of the TCP service');
  const webserverPod0 = agnhostOn('echo-hostname-0', jig.labels, node0, [
    'netexec',
    '--http-port',
    String(endpointPort),
    '--udp-port',
    String(endpointPort),
  ]);
  (webserverPod0.spec as KubeObject).hostNetwork = true;
  await createPodReady(ctx, webserverPod0);
  await validateEndpointsPortsOrFail(ctx, 'svc-itp', { 'echo-hostname-0': [endpointPort] });

  ctx.step('Creating 2 pause pods that will try to connect to the webserver');
  const pausePod0 = await pausePodOn(ctx, 'pause-pod-0', node0);
  const pausePod1 = await pausePodOn(ctx, 'pause-pod-1', node1);
  const serviceAddress = joinHostPort(fieldString(svc, 'spec', 'clusterIP'), servicePort);
  // the expected hostname is the node name because the backend pod is on host network
  await assertLocalOnly(ctx, pausePod0, pausePod1, serviceAddress, node0);

  ctx.step('Creating 2 pause hostNetwork pods that will try to connect to the webserver');
  const pausePod2 = await pausePodOn(ctx, 'pause-pod-2', node0, true);
  const pausePod3 = await pausePodOn(ctx, 'pause-pod-3', node1, true);
  await assertLocalOnly(ctx, pausePod2, pausePod3, serviceAddress, node0);
}

// ---- terminating endpoints: health check node port and fallback ----

/** The webserver of the terminating-endpoint tests: netexec draining 100 s, its grace period 100 s, on `node`. */
async function terminatingWebserver(
  ctx: UpstreamContext,
  labels: Readonly<Record<string, string>>,
  node: string,
  serviceName: string,
): Promise<string> {
  ctx.step('Creating 1 webserver pod to be part of the TCP service');
  const pod = agnhostOn('echo-hostname-0', labels, node, [
    'netexec',
    '--http-port',
    '80',
    '--delay-shutdown',
    '100',
  ]);
  (pod.spec as KubeObject).terminationGracePeriodSeconds = 100;
  await createPodReady(ctx, pod);
  await validateEndpointsPortsOrFail(ctx, serviceName, { 'echo-hostname-0': [80] });
  return 'echo-hostname-0';
}

async function createTerminatingService(
  ctx: UpstreamContext,
  tweak: (spec: KubeObject) => void,
): Promise<{ jig: TestJig; svc: KubeObject }> {
  const serviceName = 'svc-proxy-terminating';
  ctx.step(`creating a TCP service ${serviceName} where all pods are terminating${ctx.namespace}`);
  const jig = new TestJig(ctx, serviceName);
  const svc = await jig.createTCPService((s) => {
    serviceSpec(s).ports = [{ port: 80, name: 'http', protocol: 'TCP', targetPort: 80 }];
    tweak(serviceSpec(s));
  });
  return { jig, svc };
}

async function healthCheckOnlyTerminating(ctx: UpstreamContext): Promise<void> {
  const [node0] = twoNodes(ctx);
  const { jig, svc } = await createTerminatingService(ctx, (spec) => {
    spec.type = 'LoadBalancer';
    spec.externalTrafficPolicy = 'Local';
  });
  const webserver = await terminatingWebserver(ctx, jig.labels, node0, 'svc-proxy-terminating');
  const pausePod0 = await pausePodOn(ctx, 'pause-pod-0', node0);
  const pause0 = fieldString(pausePod0, 'metadata', 'name');

  const nodeIP = internalIP(ctx, node0);
  const healthCheckNodePortAddr = joinHostPort(
    nodeIP,
    Number(field(svc, 'spec', 'healthCheckNodePort') ?? 0),
  );
  const waitFor = async (expectedOut: string): Promise<void> => {
    const ok = await poll(
      1_000,
      60_000,
      async () => {
        const r = await healthCheckCode(ctx, pause0, healthCheckNodePortAddr);
        if (r.code !== 0) {
          ctx.log(
            `unexpected error trying to connect to nodeport ${healthCheckNodePortAddr} : exit ${r.code}`,
          );
          return false;
        }
        if (r.stdout !== expectedOut) {
          ctx.log(`expected output: ${expectedOut} , got ${r.stdout}`);
          return false;
        }
        return true;
      },
      ctx.signal,
    );
    if (!ok) fail(`timed out waiting for ${healthCheckNodePortAddr}/healthz to answer ${expectedOut}`);
  };
  // the health check node port from kube-proxy returns 200 when there are ready endpoints
  await waitFor('200');

  ctx.step('Terminating the webserver pod');
  await deletePodNoWait(ctx, webserver);
  // and 503 when there are no ready endpoints
  await waitFor('503');

  // while the health check node port says 0 endpoints, the endpoint still serves traffic
  await execHostnameTest(ctx, pausePod0, joinHostPort(nodeIP, nodePortOf(svc)), webserver);
}

type Fallback = 'internal-cluster' | 'internal-local' | 'external-cluster' | 'external-local';

async function fallbackToTerminating(ctx: UpstreamContext, kind: Fallback): Promise<void> {
  const [node0, node1] = twoNodes(ctx);
  const { jig, svc } = await createTerminatingService(ctx, (spec) => {
    if (kind === 'internal-local') spec.internalTrafficPolicy = 'Local';
    if (kind === 'external-cluster' || kind === 'external-local') spec.type = 'NodePort';
    if (kind === 'external-local') spec.externalTrafficPolicy = 'Local';
  });
  const webserver = await terminatingWebserver(ctx, jig.labels, node0, 'svc-proxy-terminating');

  ctx.step('Creating 2 pause pods that will try to connect to the webservers');
  const pausePod0 = await pausePodOn(ctx, 'pause-pod-0', node0);
  const pausePod1 = await pausePodOn(ctx, 'pause-pod-1', node1);

  // the webserver keeps serving through the Service after the delete: a 100 s grace period, the only endpoint
  await deletePodNoWait(ctx, webserver);

  const serviceAddress = joinHostPort(fieldString(svc, 'spec', 'clusterIP'), 80);
  const nodePortAddress0 = joinHostPort(internalIP(ctx, node0), nodePortOf(svc));
  const nodePortAddress1 = joinHostPort(internalIP(ctx, node1), nodePortOf(svc));
  const pause0 = fieldString(pausePod0, 'metadata', 'name');
  const pause1 = fieldString(pausePod1, 'metadata', 'name');
  for (let i = 0; i < 5; i++) {
    switch (kind) {
      case 'internal-cluster':
        await execHostnameTest(ctx, pausePod0, serviceAddress, webserver);
        await execHostnameTest(ctx, pausePod1, serviceAddress, webserver);
        break;
      case 'internal-local':
        await execHostnameTest(ctx, pausePod0, serviceAddress, webserver);
        await expectCurlFails(
          ctx,
          pause1,
          serviceAddress,
          5,
          'expected error when trying to connect to cluster IP',
        );
        break;
      case 'external-cluster':
        await execHostnameTest(ctx, pausePod0, nodePortAddress0, webserver);
        await execHostnameTest(ctx, pausePod1, nodePortAddress0, webserver);
        break;
      case 'external-local':
        // pausePod0 -> node1's NodePort is external traffic to a node without local endpoints: it fails.
        // (pausePod1 -> node1 is not tested: upstream leaves pod-to-own-node NodePort traffic to each implementation.)
        await expectCurlFails(
          ctx,
          pause0,
          nodePortAddress1,
          5,
          'expected error when trying to connect to node port for pausePod0',
        );
        await execHostnameTest(ctx, pausePod0, nodePortAddress0, webserver);
        await execHostnameTest(ctx, pausePod1, nodePortAddress0, webserver);
        break;
    }
    await delay(5_000, ctx.signal);
  }
}

// ---- should serve endpoints on same port and different protocol for internal traffic on Type LoadBalancer ----

async function loadBalancerSamePortDifferentProtocol(ctx: UpstreamContext): Promise<void> {
  const serviceName = 'multiprotocol-lb-test';
  const jig = new TestJig(ctx, serviceName);
  deferServiceDeletion(ctx, serviceName);
  ctx.step(`creating service ${serviceName} in namespace ${ctx.namespace}`);
  // CreateLoadBalancerServiceWaitForClusterIPOnly: type LoadBalancer, no session affinity, no wait for a cloud.
  ctx.step(`creating a service ${ctx.namespace}/${serviceName} with type=LoadBalancer`);
  const svc = await jig.createTCPService((s) => {
    const spec = serviceSpec(s);
    spec.type = 'LoadBalancer';
    spec.sessionAffinity = 'None';
    spec.ports = [
      { name: 'portname1', port: 80, targetPort: 'svc1', protocol: 'TCP' },
      { name: 'portname2', port: 80, targetPort: 'svc2', protocol: 'UDP' },
    ];
  });
  const containerPort = 100;
  const containerPorts = [
    { name: 'svc1', containerPort, protocol: 'TCP' },
    { name: 'svc2', containerPort, protocol: 'UDP' },
  ] as const;
  await createPodOrFail(
    ctx,
    'pod1',
    jig.labels,
    containerPorts,
    'netexec',
    '--http-port',
    String(containerPort),
    '--udp-port',
    String(containerPort),
  );
  await validateEndpointsPortsOrFail(ctx, serviceName, {
    pod1: containerPorts.map((p) => ({ port: p.containerPort, protocol: p.protocol })),
  });
  ctx.step('Checking if the Service forwards traffic to pods');
  const execPod = await createExecPodOrFail(ctx, 'execpod');
  await checkServiceReachability(ctx, jig, svc, execPod);
  await deletePodOrFail(ctx, 'pod1');
}

export const SERVICE_TRAFFIC_TESTS: readonly PortedTest[] = [
  it('should preserve source pod IP for traffic thru service cluster IP [LinuxOnly]', preserveSourcePodIP),
  it('should allow pods to hairpin back to themselves through services', hairpin),
  it('should be able to connect to terminating and unready endpoints if PublishNotReadyAddresses is true', (ctx) =>
    terminatingAndUnready(ctx, true)),
  it('should not be able to connect to terminating and unready endpoints if PublishNotReadyAddresses is false', (ctx) =>
    terminatingAndUnready(ctx, false)),
  it('should be rejected when no endpoints exist', rejectedWithoutEndpoints),
  it('should respect internalTrafficPolicy=Local Pod to Pod', (ctx) => itpLocalPodToPod(ctx, false)),
  it('should respect internalTrafficPolicy=Local Pod (hostNetwork: true) to Pod', (ctx) =>
    itpLocalPodToPod(ctx, true)),
  it(
    'should respect internalTrafficPolicy=Local Pod and Node, to Pod (hostNetwork: true)',
    itpLocalPodAndNodeToHostNetworkPod,
  ),
  it(
    'should fail health check node port if there are only terminating endpoints',
    healthCheckOnlyTerminating,
  ),
  it('should fallback to terminating endpoints when there are no ready endpoints with internalTrafficPolicy=Cluster', (ctx) =>
    fallbackToTerminating(ctx, 'internal-cluster')),
  it('should fallback to local terminating endpoints when there are no ready endpoints with internalTrafficPolicy=Local', (ctx) =>
    fallbackToTerminating(ctx, 'internal-local')),
  it('should fallback to terminating endpoints when there are no ready endpoints with externallTrafficPolicy=Cluster', (ctx) =>
    fallbackToTerminating(ctx, 'external-cluster')),
  it('should fallback to local terminating endpoints when there are no ready endpoints with externalTrafficPolicy=Local', (ctx) =>
    fallbackToTerminating(ctx, 'external-local')),
  it(
    // upstream's It text ends with a space
    'should serve endpoints on same port and different protocol for internal traffic on Type LoadBalancer ',
    loadBalancerSamePortDifferentProtocol,
  ),
];

/** This group's tests not ported: none (the evicted-pods test is service-evicted.ts's). */
export const SERVICE_TRAFFIC_NOT_PORTED: readonly NotPortedTest[] = [];
