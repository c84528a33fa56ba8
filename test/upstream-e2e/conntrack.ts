// Ports of kubernetes/kubernetes test/e2e/network/conntrack.go and kube_proxy.go: "[sig-network] Conntrack" and "[sig-network] KubeProxy".
// Each asserts what upstream asserts, with upstream's names, counts and timeouts; tests not ported say why.
// The lab's way of running conntrack.go's client (node for nc) and reading a node's table is in conntrack-udp.ts;
// this project's own tests of the two UDP stale-entry bugs upstream fixed in 2026 are in conntrack-stale.ts.
import { KUBE_PROXY_TESTS } from './conntrack-kube-proxy.js';
import { CONNTRACK_STALE_TESTS } from './conntrack-stale.js';
import {
  clientAndServerNodes,
  createSync,
  createUdpClientPod,
  failWithClientLogs,
  logContains,
  clientLogs,
  udpClientLoop,
  udpServerPod,
} from './conntrack-udp.js';
import { validateEndpointsPortsOrFail } from './endpoints.js';
import { delay } from './framework.js';
import { fieldString, type KubeObject } from './kube.js';
import { serviceSpec, TestJig } from './jig.js';
import type { NotPortedTest, PortedTest, UpstreamContext } from './registry-types.js';

const FILE = 'conntrack.go';
const CONNTRACK = '[sig-network] Conntrack';

const serviceName = 'svc-udp';
const podClient = 'pod-client';
const podBackend1 = 'pod-server-1';
const podBackend2 = 'pod-server-2';
const podBackend3 = 'pod-server-3';

function conntrackTest(it: string, run: (ctx: UpstreamContext) => Promise<void>): PortedTest {
  return { name: `${CONNTRACK} ${it}`, conformance: false, file: FILE, run };
}

/** udpJig.CreateUDPService with upstream's tweak: one port "udp" 80 → 80/UDP of `type`. */
async function createUDPService(
  ctx: UpstreamContext,
  jig: TestJig,
  type: 'ClusterIP' | 'NodePort',
  tweak?: (spec: KubeObject) => void,
): Promise<KubeObject> {
  ctx.step(`creating a UDP service ${serviceName} with type=${type} in ${ctx.namespace}`);
  // The jig's TCP template with the ports replaced is CreateUDPService's result: the tweak sets every port.
  return jig.createTCPService((svc) => {
    const spec = serviceSpec(svc);
    spec.type = type;
    spec.ports = [{ port: 80, name: 'udp', protocol: 'UDP', targetPort: 80 }];
    tweak?.(spec);
  });
}

async function expectClientReaches(ctx: UpstreamContext, backend: string, what: string): Promise<void> {
  if (!(await logContains(ctx, backend, podClient)))
    await failWithClientLogs(ctx, podClient, `Failed to connect to ${what}`);
}

async function logClient(ctx: UpstreamContext): Promise<void> {
  ctx.log(`Pod client logs: ${await clientLogs(ctx, podClient)}`);
}

interface Preamble {
  readonly type: 'ClusterIP' | 'NodePort';
  readonly hostNetworkClient?: boolean;
  /** nc's -w: 5 in most tests, 1 in the internalTrafficPolicy one. */
  readonly waitSeconds?: number;
  readonly tweak?: (spec: KubeObject) => void;
}

/**
 * What every UDP test starts with: the nodes, the UDP Service, and the client pod sending to it (a NodePort
 * Service at the server node's IP, else the ClusterIP), its log logged.
 */
async function udpServiceWithClient(ctx: UpstreamContext, o: Preamble) {
  const { client, server } = clientAndServerNodes(ctx);
  const udpJig = new TestJig(ctx, serviceName);
  const svc = await createUDPService(ctx, udpJig, o.type, o.tweak);
  const port = svc.spec as { ports: { port: number; nodePort?: number }[] };
  const [host, target] =
    o.type === 'NodePort'
      ? [server.internalIP, port.ports[0]!.nodePort ?? 0]
      : [fieldString(svc, 'spec', 'clusterIP'), port.ports[0]!.port];
  ctx.step(`creating a client pod for probing the service ${serviceName}`);
  const loop = udpClientLoop(host, target, o.waitSeconds ?? 5);
  await createUdpClientPod(ctx, podClient, client.name, loop, o.hostNetworkClient);
  await logClient(ctx);
  return { client, server, udpJig };
}

/** The two "server pod cycles" tests, and the hostNetwork client one: backend 1, then 2 with 1 deleted. */
async function serverPodCycles(ctx: UpstreamContext, o: Preamble): Promise<void> {
  const { server, udpJig } = await udpServiceWithClient(ctx, o);

  ctx.step(`creating a backend pod ${podBackend1} for the service ${serviceName}`);
  await createSync(ctx, udpServerPod(podBackend1, udpJig.labels, server.name));
  await validateEndpointsPortsOrFail(ctx, serviceName, { [podBackend1]: [80] });

  ctx.step(`checking client pod connected to the backend 1 on Node IP ${server.internalIP}`);
  await expectClientReaches(ctx, podBackend1, 'backend 1');

  ctx.step(`creating a second backend pod ${podBackend2} for the service ${serviceName}`);
  await createSync(ctx, udpServerPod(podBackend2, udpJig.labels, server.name));

  ctx.log(`Cleaning up ${podBackend1} pod`);
  await ctx.kube.delete(ctx.namespace, 'pod', podBackend1);
  await validateEndpointsPortsOrFail(ctx, serviceName, { [podBackend2]: [80] });

  ctx.step(`checking client pod connected to the backend 2 on Node IP ${server.internalIP}`);
  await expectClientReaches(ctx, podBackend2, 'backend 2');
}

/** Regression test for upstream #126934: endpoints cycle on the client's node of an internalTrafficPolicy=Local Service. */
async function itpLocalCycles(ctx: UpstreamContext): Promise<void> {
  const { client, server, udpJig } = await udpServiceWithClient(ctx, {
    type: 'ClusterIP',
    waitSeconds: 1, // this test's nc waits 1 s (-w 1): one try a second
    tweak: (spec) => {
      spec.internalTrafficPolicy = 'Local';
    },
  });

  ctx.step(`creating a backend pod ${podBackend1} for the service ${serviceName}`);
  const serverPod1 = udpServerPod(podBackend1, udpJig.labels, client.name);
  await createSync(ctx, structuredClone(serverPod1));
  await validateEndpointsPortsOrFail(ctx, serviceName, { [podBackend1]: [80] });

  ctx.step(`checking client pod connected to the backend 1 on Node ${client.name}`);
  await expectClientReaches(ctx, podBackend1, 'backend 1');

  ctx.step(`creating a second backend pod ${podBackend2} for the service ${serviceName}`);
  await createSync(ctx, udpServerPod(podBackend2, udpJig.labels, server.name));
  await validateEndpointsPortsOrFail(ctx, serviceName, { [podBackend1]: [80], [podBackend2]: [80] });

  ctx.log(`Cleaning up ${podBackend1} pod`);
  await ctx.kube.delete(ctx.namespace, 'pod', podBackend1);
  await validateEndpointsPortsOrFail(ctx, serviceName, { [podBackend2]: [80] });

  // Upstream's own 5 s sleep: "wait for kube-proxy to not merge both endpoints changes", so the client sends to
  // the ClusterIP while it has no local endpoint and creates the blackhole entry this test is about.
  await delay(5_000, ctx.signal);

  const serverPod3 = structuredClone(serverPod1);
  (serverPod3.metadata as KubeObject).name = podBackend3;
  await createSync(ctx, serverPod3);
  await validateEndpointsPortsOrFail(ctx, serviceName, { [podBackend3]: [80], [podBackend2]: [80] });

  ctx.step(`checking client pod connected to the backend 3 on Node ${client.name}`);
  await expectClientReaches(ctx, podBackend3, 'backend 3');
}

/** Regression test for upstream #105657: the server's endpoint exists, not ready, for 15 s (an init container). */
async function initialUnreadyEndpoints(ctx: UpstreamContext): Promise<void> {
  const { server, udpJig } = await udpServiceWithClient(ctx, { type: 'ClusterIP' });

  ctx.step(`creating a backend pod ${podBackend1} for the service ${serviceName}`);
  const serverPod1 = udpServerPod(podBackend1, udpJig.labels, server.name);
  // imageutils.BusyBox in upstream; the lab runs the command with the host's sh and sleep whatever the image.
  (serverPod1.spec as KubeObject).initContainers = [
    {
      name: 'init',
      image: 'registry.k8s.io/e2e-test-images/busybox:1.37.0-1',
      command: ['/bin/sh', '-c', 'echo Pausing start. && sleep 15'],
    },
  ];
  await createSync(ctx, serverPod1);
  await validateEndpointsPortsOrFail(ctx, serviceName, { [podBackend1]: [80] });

  ctx.step(`checking client pod connected to the backend on Node IP ${server.internalIP}`);
  await expectClientReaches(ctx, podBackend1, 'backend pod');
}

const UPSTREAM_TESTS: readonly PortedTest[] = [
  conntrackTest(
    'should be able to preserve UDP traffic when server pod cycles for a NodePort service',
    (ctx) => serverPodCycles(ctx, { type: 'NodePort' }),
  ),
  conntrackTest(
    'should be able to preserve UDP traffic when server pod cycles for a ClusterIP service',
    (ctx) => serverPodCycles(ctx, { type: 'ClusterIP' }),
  ),
  conntrackTest(
    'should be able to preserve UDP traffic when server pod cycles for a ClusterIP service with InternalTrafficPolicy set to Local',
    itpLocalCycles,
  ),
  conntrackTest(
    'should be able to preserve UDP traffic when server pod cycles for a ClusterIP service and client is hostNetwork',
    (ctx) => serverPodCycles(ctx, { type: 'ClusterIP', hostNetworkClient: true }),
  ),
  conntrackTest(
    'should be able to preserve UDP traffic when initial unready endpoints get ready',
    initialUnreadyEndpoints,
  ),
];

export const CONNTRACK_TESTS: readonly PortedTest[] = [
  ...UPSTREAM_TESTS,
  ...KUBE_PROXY_TESTS,
  ...CONNTRACK_STALE_TESTS,
];

export const CONNTRACK_NOT_PORTED: readonly NotPortedTest[] = [
  {
    name: `${CONNTRACK} proxy implementation should not be vulnerable to the invalid conntrack state bug [Privileged]`,
    conformance: false,
    file: FILE,
    reason:
      '(upstream\'s newer name for "should drop INVALID conntrack entries [Privileged]") its server is the ' +
      'regression-issue-74839 image, a raw-socket TCP server (NET_RAW) that injects an out-of-window packet into ' +
      "each connection and logs ERROR when the client answers with a RST; the lab's agnhost has no such server and " +
      'lab pods have no image to run it from',
  },
  {
    name: '[sig-network] KubeProxy should set TCP CLOSE_WAIT timeout [Privileged]',
    conformance: false,
    file: 'kube_proxy.go',
    reason:
      "its client and server are agnhost's `net --runner nat-closewait-client|nat-closewait-server`, which the lab's " +
      'agnhost does not have, and the server is reached on a hostPort, which the lab does not map; and what it checks, ' +
      "a 3600 s CLOSE_WAIT timeout, is kube-proxy's nf_conntrack_tcp_timeout_close_wait sysctl, which the lab's " +
      'proxies are configured not to write (conntrack.tcpCloseWaitTimeout: 0s): each node namespace reads the ' +
      "kernel's default, 60",
  },
];
