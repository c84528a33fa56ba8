// Ports of kubernetes/kubernetes test/e2e/network/service.go ("[sig-network] Services"): the [Conformance] tests,
// each asserting what upstream asserts, with upstream's names, counts and timeouts. Helpers are this folder's own
// (jig.ts, reachability.ts, endpoints.ts, affinity.ts, pods.ts). Tests not ported yet are in not-ported.ts.
import { expect, fail, poll, POLL_MS } from './framework.js';
import { fieldString, type KubeObject } from './kube.js';
import {
  execAffinityTestForNonLBService,
  serveHostnameService,
  startServeHostnameService,
} from './affinity.js';
import { validateEndpointsPortsOrFail, type EndpointPort } from './endpoints.js';
import { serviceSpec, stopServeHostnameService, TestJig } from './jig.js';
import { createExecPodOrFail, createPodOrFail, deletePodOrFail } from './pods.js';
import { checkServiceReachability, endpointReachable, type Protocol } from './reachability.js';
import { servicesTestName, type PortedTest, type UpstreamContext } from './registry-types.js';

const FILE = 'service.go';

function conformance(it: string, run: (ctx: UpstreamContext) => Promise<void>): PortedTest {
  return { name: servicesTestName(it, true), conformance: true, file: FILE, run };
}

/** DeferCleanup of the pods a test still has: it deletes each as it goes, the rest go at the end. */
function podTracker(ctx: UpstreamContext): Set<string> {
  const names = new Set<string>();
  ctx.defer(async () => {
    for (const name of names) await ctx.kube.delete(ctx.namespace, 'pod', name);
  });
  return names;
}

function deferServiceDeletion(ctx: UpstreamContext, name: string): void {
  ctx.defer(() => ctx.kube.delete(ctx.namespace, 'service', name));
}

async function basicEndpoint(ctx: UpstreamContext): Promise<void> {
  const serviceName = 'endpoint-test2';
  const jig = new TestJig(ctx, serviceName);
  ctx.step(`creating service ${serviceName} in namespace ${ctx.namespace}`);
  deferServiceDeletion(ctx, serviceName);
  const svc = await jig.createTCPServiceWithPort(undefined, 80);
  await validateEndpointsPortsOrFail(ctx, serviceName, {});
  const names = podTracker(ctx);
  const netexec80 = ['netexec', '--http-port', '80'];
  await createPodOrFail(ctx, 'pod1', jig.labels, [{ containerPort: 80 }], ...netexec80);
  names.add('pod1');
  await validateEndpointsPortsOrFail(ctx, serviceName, { pod1: [80] });
  ctx.step('Checking if the Service forwards traffic to pod1');
  const execPod = await createExecPodOrFail(ctx, 'execpod');
  await checkServiceReachability(ctx, jig, svc, execPod);
  await createPodOrFail(ctx, 'pod2', jig.labels, [{ containerPort: 80 }], ...netexec80);
  names.add('pod2');
  await validateEndpointsPortsOrFail(ctx, serviceName, { pod1: [80], pod2: [80] });
  ctx.step('Checking if the Service forwards traffic to pod1 and pod2');
  await checkServiceReachability(ctx, jig, svc, execPod);
  await deletePodOrFail(ctx, 'pod1');
  names.delete('pod1');
  await validateEndpointsPortsOrFail(ctx, serviceName, { pod2: [80] });
  ctx.step('Checking if the Service forwards traffic to pod2');
  await checkServiceReachability(ctx, jig, svc, execPod);
  await deletePodOrFail(ctx, 'pod2');
  names.delete('pod2');
  await validateEndpointsPortsOrFail(ctx, serviceName, {});
}

async function multiportEndpoints(ctx: UpstreamContext): Promise<void> {
  const serviceName = 'multi-endpoint-test';
  const jig = new TestJig(ctx, serviceName);
  deferServiceDeletion(ctx, serviceName);
  ctx.step(`creating service ${serviceName} in namespace ${ctx.namespace}`);
  const svc = await jig.createTCPService((s) => {
    serviceSpec(s).ports = [
      { name: 'portname1', port: 80, targetPort: 'svc1' },
      { name: 'portname2', port: 81, targetPort: 'svc2' },
    ];
  });
  const [port1, port2] = [100, 101];
  await validateEndpointsPortsOrFail(ctx, serviceName, {});
  const names = podTracker(ctx);
  await createPodOrFail(
    ctx,
    'pod1',
    jig.labels,
    [{ name: 'svc1', containerPort: port1 }],
    'netexec',
    '--http-port',
    String(port1),
  );
  names.add('pod1');
  await validateEndpointsPortsOrFail(ctx, serviceName, { pod1: [port1] });
  await createPodOrFail(
    ctx,
    'pod2',
    jig.labels,
    [{ name: 'svc2', containerPort: port2 }],
    'netexec',
    '--http-port',
    String(port2),
  );
  names.add('pod2');
  await validateEndpointsPortsOrFail(ctx, serviceName, { pod1: [port1], pod2: [port2] });
  ctx.step('Checking if the Service forwards traffic to pods');
  const execPod = await createExecPodOrFail(ctx, 'execpod');
  await checkServiceReachability(ctx, jig, svc, execPod);
  await deletePodOrFail(ctx, 'pod1');
  names.delete('pod1');
  await validateEndpointsPortsOrFail(ctx, serviceName, { pod2: [port2] });
  await deletePodOrFail(ctx, 'pod2');
  names.delete('pod2');
  await validateEndpointsPortsOrFail(ctx, serviceName, {});
}

const HTTP_9376 = { port: 80, name: 'http', protocol: 'TCP', targetPort: 9376 } as const;

async function functioningNodePort(ctx: UpstreamContext): Promise<void> {
  const serviceName = 'nodeport-test';
  const jig = new TestJig(ctx, serviceName);
  ctx.step(`creating service ${serviceName} with type=NodePort in namespace ${ctx.namespace}`);
  const svc = await jig.createTCPService((s) => {
    serviceSpec(s).type = 'NodePort';
    serviceSpec(s).ports = [{ ...HTTP_9376 }];
  });
  await jig.createServicePods(2);
  const execPod = await createExecPodOrFail(ctx, 'execpod');
  await checkServiceReachability(ctx, jig, svc, execPod);
}

/** ExternalName → `type`: the ExternalName cleared, one port 80 → 9376; two serve-hostname pods; reachable. */
async function fromExternalName(ctx: UpstreamContext, type: 'ClusterIP' | 'NodePort'): Promise<void> {
  const serviceName = 'externalname-service';
  const jig = new TestJig(ctx, serviceName);
  ctx.step(`creating a service ${serviceName} with the type=ExternalName in namespace ${ctx.namespace}`);
  await jig.createExternalNameService();
  deferServiceDeletion(ctx, serviceName);
  ctx.step(`changing the ExternalName service to type=${type}`);
  const svc = await jig.updateService((s) => {
    const spec = serviceSpec(s);
    spec.type = type;
    delete spec.externalName; // Go's "" with omitempty: absent on the wire
    spec.ports = [{ ...HTTP_9376 }];
  });
  await jig.createServicePods(2);
  const execPod = await createExecPodOrFail(ctx, 'execpod');
  await checkServiceReachability(ctx, jig, svc, execPod);
}

/** `type` → ExternalName pointing at another Service's FQDN: ClusterIP cleared, and the name resolves. */
async function toExternalName(ctx: UpstreamContext, type: 'ClusterIP' | 'NodePort'): Promise<void> {
  const serviceName = type === 'ClusterIP' ? 'clusterip-service' : 'nodeport-service';
  const jig = new TestJig(ctx, serviceName);
  ctx.step(`creating a service ${serviceName} with the type=${type} in namespace ${ctx.namespace}`);
  await jig.createTCPService(
    type === 'NodePort' ? (s) => void (serviceSpec(s).type = 'NodePort') : undefined,
  );
  deferServiceDeletion(ctx, serviceName);
  ctx.step(
    'Creating active service to test reachability when its FQDN is referred as externalName for another service',
  );
  const externalServiceName = 'externalsvc';
  await startServeHostnameService(ctx, serveHostnameService(externalServiceName), 2);
  const externalServiceFQDN = `${externalServiceName}.${ctx.namespace}.svc.cluster.local`;
  ctx.defer(() => stopServeHostnameService(ctx, externalServiceName));
  ctx.step(`changing the ${type} service to type=ExternalName`);
  const externalNameService = await jig.updateService((s) => {
    serviceSpec(s).type = 'ExternalName';
    serviceSpec(s).externalName = externalServiceFQDN;
  });
  if (fieldString(externalNameService, 'spec', 'clusterIP') !== '') fail('Spec.ClusterIP was not cleared');
  const execPod = await createExecPodOrFail(ctx, 'execpod');
  await checkServiceReachability(ctx, jig, externalNameService, execPod);
}

function affinityService(name: string, type: 'ClusterIP' | 'NodePort'): KubeObject {
  const svc = serveHostnameService(name);
  serviceSpec(svc).type = type;
  return svc;
}

/** service.go's testEndpointReachability(…, timeout) as the multiprotocol test calls it: a failure fails the test. */
async function mustReachWithin(
  ctx: UpstreamContext,
  execPod: string,
  ip: string,
  protocol: Protocol,
  timeoutMs: number,
): Promise<void> {
  if (!(await endpointReachable(ctx, execPod, ip, 80, protocol, timeoutMs, POLL_MS)))
    fail(
      `Failed to connect to Service ${protocol} port: service is not reachable within ${timeoutMs / 1000}s timeout on endpoint ${ip} 80 over ${protocol} protocol`,
    );
}

/** gomega.Eventually(testEndpointReachability(…, 6 s)).WithTimeout(30 s).WithPolling(5 s).ShouldNot(BeNil()). */
async function mustStopReaching(
  ctx: UpstreamContext,
  execPod: string,
  ip: string,
  protocol: Protocol,
): Promise<void> {
  const stopped = await poll(
    5_000,
    30_000,
    async () => !(await endpointReachable(ctx, execPod, ip, 80, protocol, 6_000, POLL_MS)),
    ctx.signal,
  );
  if (!stopped) fail(`Service ${ip} still forwards ${protocol} port 80 after 30s`);
}

async function samePortDifferentProtocols(ctx: UpstreamContext): Promise<void> {
  const serviceName = 'multiprotocol-test';
  const testLabels = { app: 'multiport' };
  const containerPort = 80;
  const tcpPort = { name: 'tcp-port', port: 80, targetPort: containerPort, protocol: 'TCP' };
  const udpPort = { name: 'udp-port', port: 80, targetPort: containerPort, protocol: 'UDP' };
  ctx.step(`creating service ${serviceName} in namespace ${ctx.namespace}`);
  const service = await ctx.kube.create(ctx.namespace, {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: serviceName, labels: testLabels },
    spec: { type: 'ClusterIP', selector: testLabels, ports: [tcpPort, udpPort] },
  });
  const containerPorts = [
    { name: 'tcp-port', containerPort, protocol: 'TCP' },
    { name: 'udp-port', containerPort, protocol: 'UDP' },
  ] as const;
  ctx.step(`creating pod pod1 in namespace ${ctx.namespace}`);
  await createPodOrFail(
    ctx,
    'pod1',
    testLabels,
    containerPorts,
    'netexec',
    '--http-port',
    '80',
    '--udp-port',
    '80',
  );
  const expected: EndpointPort[] = containerPorts.map((p) => ({
    port: p.containerPort,
    protocol: p.protocol,
  }));
  await validateEndpointsPortsOrFail(ctx, serviceName, { pod1: expected });
  const clusterIP = fieldString(service, 'spec', 'clusterIP');
  ctx.step('Checking if the Service forwards traffic to the TCP and UDP port');
  const execPod = await createExecPodOrFail(ctx, 'execpod');
  await mustReachWithin(ctx, execPod, clusterIP, 'TCP', 30_000);
  await mustReachWithin(ctx, execPod, clusterIP, 'UDP', 30_000);
  for (const [keep, drop] of [
    [tcpPort, 'UDP'],
    [udpPort, 'TCP'],
  ] as const) {
    ctx.step(`Checking if the Service forwards traffic to ${keep.protocol} only`);
    const current = await ctx.kube.get(ctx.namespace, 'service', serviceName);
    serviceSpec(current).ports = [keep];
    await ctx.kube.update(ctx.namespace, current);
    await mustReachWithin(ctx, execPod, clusterIP, keep.protocol === 'TCP' ? 'TCP' : 'UDP', 30_000);
    await mustStopReaching(ctx, execPod, clusterIP, drop);
  }
}

async function secureMasterService(ctx: UpstreamContext): Promise<void> {
  const r = await ctx.kube.run(['-n', 'default', 'get', 'service', 'kubernetes', '-o', 'json']);
  expect(
    r.code === 0,
    `failed to fetch the service object for the service named kubernetes: ${r.stderr.trim()}`,
  );
}

async function serviceFromAllNamespaces(ctx: UpstreamContext): Promise<void> {
  ctx.step('fetching services');
  const svcs = await ctx.kube.list('', 'services');
  const found = svcs.some(
    (s) =>
      fieldString(s, 'metadata', 'name') === 'kubernetes' &&
      fieldString(s, 'metadata', 'namespace') === 'default',
  );
  expect(found, "could not find service 'kubernetes' in service list in all namespaces");
}

async function deleteServiceCollection(ctx: UpstreamContext): Promise<void> {
  ctx.step('creating a collection of services');
  const suffix = (): string => Math.random().toString(36).slice(2, 7);
  const services = [
    { name: `e2e-svc-a-${suffix()}`, label: 'delete', port: 8001 },
    { name: `e2e-svc-b-${suffix()}`, label: 'delete', port: 8002 },
    { name: `e2e-svc-c-${suffix()}`, label: 'keep', port: 8003 },
  ];
  for (const s of services) {
    ctx.log(`Creating ${s.name}`);
    await ctx.kube.create(ctx.namespace, {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: s.name, labels: { 'e2e-test-service': s.label } },
      spec: {
        type: 'ClusterIP',
        ports: [{ name: 'http', protocol: 'TCP', port: s.port, targetPort: s.port }],
      },
    });
  }
  const before = await ctx.kube.list(ctx.namespace, 'services');
  expect(before.length === 3, `Required count of services out of sync: ${before.length}, expected 3`);
  ctx.step('deleting service collection');
  // DeleteCollection: one DELETE on the collection with the selector, as the dynamic client sends it.
  const selector = encodeURIComponent('e2e-test-service=delete');
  await ctx.kube.mustRun([
    'delete',
    '--raw',
    `/api/v1/namespaces/${ctx.namespace}/services?labelSelector=${selector}`,
  ]);
  const after = await ctx.kube.list(ctx.namespace, 'services');
  expect(after.length === 1, `Required count of services out of sync: ${after.length}, expected 1`);
  ctx.log('Collection of services has been deleted');
}

export const SERVICE_TESTS: readonly PortedTest[] = [
  conformance('should provide secure master service', secureMasterService),
  conformance('should serve a basic endpoint from pods', basicEndpoint),
  conformance('should serve multiport endpoints from pods', multiportEndpoints),
  conformance('should be able to create a functioning NodePort service', functioningNodePort),
  conformance('should be able to change the type from ExternalName to ClusterIP', (ctx) =>
    fromExternalName(ctx, 'ClusterIP'),
  ),
  conformance('should be able to change the type from ExternalName to NodePort', (ctx) =>
    fromExternalName(ctx, 'NodePort'),
  ),
  conformance('should be able to change the type from ClusterIP to ExternalName', (ctx) =>
    toExternalName(ctx, 'ClusterIP'),
  ),
  conformance('should be able to change the type from NodePort to ExternalName', (ctx) =>
    toExternalName(ctx, 'NodePort'),
  ),
  conformance('should have session affinity work for service with type clusterIP [LinuxOnly]', (ctx) =>
    execAffinityTestForNonLBService(ctx, affinityService('affinity-clusterip', 'ClusterIP'), false),
  ),
  conformance(
    'should be able to switch session affinity for service with type clusterIP [LinuxOnly]',
    (ctx) =>
      execAffinityTestForNonLBService(
        ctx,
        affinityService('affinity-clusterip-transition', 'ClusterIP'),
        true,
      ),
  ),
  conformance('should have session affinity work for NodePort service [LinuxOnly]', (ctx) =>
    execAffinityTestForNonLBService(ctx, affinityService('affinity-nodeport', 'NodePort'), false),
  ),
  conformance('should be able to switch session affinity for NodePort service [LinuxOnly]', (ctx) =>
    execAffinityTestForNonLBService(ctx, affinityService('affinity-nodeport-transition', 'NodePort'), true),
  ),
  conformance('should find a service from listing all namespaces', serviceFromAllNamespaces),
  conformance('should delete a collection of services', deleteServiceCollection),
  conformance('should serve endpoints on same port and different protocols', samePortDifferentProtocols),
];
