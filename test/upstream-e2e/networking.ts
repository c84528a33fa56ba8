// Ports of kubernetes/kubernetes test/e2e/network/networking.go: "[sig-network] Networking" and its Granular Checks: Services.
// Each asserts what upstream asserts, with upstream's names, counts and timeouts; tests not ported say why. The
// setup they share (netserver pods, the test pods, the NodePort and session-affinity Services, the dial loops) is
// networking-config.ts, upstream's e2enetwork.NetworkingTestConfig.
import { randomBytes } from 'node:crypto';
import { serveHostnameService, SERVE_HOSTNAME_SERVICE_PORT, startServeHostnameService } from './affinity.js';
import { fail, poll, POLL_MS, RESTART_NODE_READY_AGAIN_TIMEOUT_MS } from './framework.js';
import { stopServeHostnameService } from './jig.js';
import { field, fieldArray, fieldString, type CommandResult, type KubeObject } from './kube.js';
import {
  CLUSTER_HTTP_PORT,
  CLUSTER_UDP_PORT,
  ENDPOINT_HTTP_PORT,
  NetworkingTestConfig,
  SESSION_AFFINITY_CHECKS,
  type DialError,
  type Family,
} from './networking-config.js';
import { agnhostPod, podIsReady, waitForPod } from './pods.js';
import type { NotPortedTest, PortedTest, UpstreamContext } from './registry-types.js';
import { verifyServeHostnameServiceUp } from './service-nodes-hosts.js';

const FILE = 'networking.go';
const NETWORKING = '[sig-network] Networking';
const GRANULAR = `${NETWORKING} Granular Checks: Services`;

/** ports.ProxyHealthzPort and ports.ProxyStatusPort (the metrics server's, which serves /proxyMode). */
const PROXY_HEALTHZ_PORT = 10256;
const PROXY_STATUS_PORT = 10249;
/** secondNodePortSvcName (networking_utils.go). */
const SECOND_NODE_PORT_SVC_NAME = 'second-node-port-service';

function ported(name: string, run: (ctx: UpstreamContext) => Promise<void>): PortedTest {
  return { name, conformance: false, file: FILE, run };
}

/** framework.Failf(prefix + ", %v", err) when a dial returned an error. */
function must(err: DialError, prefix = 'failed dialing endpoint'): void {
  if (err !== undefined) fail(`${prefix}, ${err}`);
}

async function checkKubeProxyURLs(ctx: UpstreamContext): Promise<void> {
  // upstream: "this is overkill we just need the host networking pod to hit kube-proxy urls".
  const config = await NetworkingTestConfig.create(ctx, { hostNetwork: true });
  ctx.step('checking kube-proxy URLs');
  await config.getSelfURL(PROXY_HEALTHZ_PORT, '/healthz', '200 OK');
  // Verify /healthz returns the proper content.
  await config.getSelfURL(PROXY_HEALTHZ_PORT, '/healthz', 'lastUpdated');
  // Verify /proxyMode returns http status code 200.
  await config.getSelfURLStatusCode(PROXY_STATUS_PORT, '/proxyMode', '200');
}

/** Where a Granular Check dials from: the test container pod, the node (hostNetwork pod), the first endpoint. */
export type Source = 'pod' | 'node' | 'endpoint';

/**
 * One dial loop from `source` to ip:port expecting every endpoint's hostname, with upstream's step text (a node
 * source is named by its NodeIP of `family`).
 */
async function dialAllEndpoints(
  ctx: UpstreamContext,
  config: NetworkingTestConfig,
  source: Source,
  protocol: 'http' | 'udp',
  target: { readonly ip: string; readonly port: number; readonly what: string },
  family: Family = 'primary',
): Promise<void> {
  const t = {
    protocol,
    targetIP: target.ip,
    targetPort: target.port,
    maxTries: config.maxTries,
    minTries: 0,
  };
  const expected = config.endpointHostnames();
  const from = {
    pod: config.testContainerPod.name,
    node: `${config.nodeIPOf(family)} (node)`,
    endpoint: `${config.endpointPods[0]?.name ?? ''} (endpoint)`,
  }[source];
  ctx.step(`dialing(${protocol}) ${from} --> ${target.ip}:${target.port} (${target.what})`);
  if (source === 'pod') must(await config.dialFromTestContainer(t, expected));
  else if (source === 'node') must(await config.dialFromNode(t, expected));
  else must(await config.dialFromEndpointContainer(t, expected));
}

/** The Service's ports for `protocol`: its ClusterIP port and its NodePort. */
function servicePorts(config: NetworkingTestConfig, protocol: 'http' | 'udp'): [number, number] {
  return protocol === 'http'
    ? [CLUSTER_HTTP_PORT, config.nodeHTTPPort]
    : [CLUSTER_UDP_PORT, config.nodeUDPPort];
}

/**
 * What pod-, node- and endpoint-Service check: every endpoint through the ClusterIP, then the first node's NodePort
 * (of `family`: dual_stack.go's Secondary IP Family checks dial SecondaryClusterIP and SecondaryNodeIP).
 */
async function dialClusterIPAndNodePort(
  ctx: UpstreamContext,
  config: NetworkingTestConfig,
  source: Source,
  protocol: 'http' | 'udp',
  family: Family = 'primary',
): Promise<void> {
  const [clusterPort, nodePort] = servicePorts(config, protocol);
  const targets = [
    { ip: config.clusterIPOf(family), port: clusterPort, what: 'config.clusterIP' },
    { ip: config.nodeIPOf(family), port: nodePort, what: 'nodeIP' },
  ];
  for (const target of targets) await dialAllEndpoints(ctx, config, source, protocol, target, family);
}

/** A config with EnableDualStack when the checks dial the secondary family. */
function createConfig(
  ctx: UpstreamContext,
  family: Family,
  options: { hostNetwork?: boolean; endpointsHostNetwork?: boolean } = {},
): Promise<NetworkingTestConfig> {
  return NetworkingTestConfig.create(ctx, { ...options, dualStack: family === 'secondary' });
}

/** pod-, node- and endpoint-Service: http and udp, of `family`. */
export async function granularCheck(
  ctx: UpstreamContext,
  source: Source,
  protocol: 'http' | 'udp',
  family: Family = 'primary',
): Promise<void> {
  const config = await createConfig(ctx, family, { hostNetwork: source === 'node' });
  await dialClusterIPAndNodePort(ctx, config, source, protocol, family);
}

/** createSecondNodePortService: a NodePort Service, http 80 → 8083 only, over the same pods; it and its NodePort. */
async function createSecondNodePortService(
  config: NetworkingTestConfig,
): Promise<{ clusterIP: string; httpPort: number }> {
  const created = await config.createService({
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: SECOND_NODE_PORT_SVC_NAME },
    spec: {
      type: 'NodePort',
      ports: [{ port: CLUSTER_HTTP_PORT, name: 'http', protocol: 'TCP', targetPort: ENDPOINT_HTTP_PORT }],
      selector: { ...config.serviceSelector },
    },
  });
  await config.mustHaveEndpoints(SECOND_NODE_PORT_SVC_NAME, config.endpointPods.length);
  const tcp = fieldArray(created, 'spec', 'ports').find((p) => fieldString(p, 'protocol') === 'TCP');
  return {
    clusterIP: fieldString(created, 'spec', 'clusterIP'),
    httpPort: Number(field(tcp, 'nodePort') ?? 0),
  };
}

async function multipleEndpointServices(ctx: UpstreamContext): Promise<void> {
  const config = await NetworkingTestConfig.create(ctx);
  ctx.step('creating a second service with same selector');
  const svc2 = await createSecondNodePortService(config);
  const dial = (what: string, ip: string, port: number): Promise<void> =>
    dialAllEndpoints(ctx, config, 'endpoint', 'http', { ip, port, what });
  // original service should work
  await dial('config.clusterIP', config.clusterIP, CLUSTER_HTTP_PORT);
  await dial('nodeIP', config.nodeIP, config.nodeHTTPPort);
  // Dial second service
  await dial('svc2.clusterIP', svc2.clusterIP, CLUSTER_HTTP_PORT);
  await dial('nodeIP', config.nodeIP, svc2.httpPort);
  ctx.step('deleting the original node port service');
  await config.deleteNodePortService();
  // Second service should continue to function unaffected
  await dial('svc2.clusterIP', svc2.clusterIP, CLUSTER_HTTP_PORT);
  await dial('nodeIP', config.nodeIP, svc2.httpPort);
}

/** should update endpoints: every endpoint through the ClusterIP (of `family`), then again after one is deleted. */
export async function updateEndpoints(
  ctx: UpstreamContext,
  protocol: 'http' | 'udp',
  family: Family = 'primary',
): Promise<void> {
  const config = await createConfig(ctx, family);
  const [port] = servicePorts(config, protocol);
  const clusterIP = config.clusterIPOf(family);
  const t = {
    protocol,
    targetIP: clusterIP,
    targetPort: port,
    maxTries: config.maxTries,
    minTries: 0,
  };
  const from = config.testContainerPod.name;
  ctx.step(`dialing(${protocol}) ${from} --> ${clusterIP}:${port} (config.clusterIP)`);
  must(
    await config.dialFromTestContainer(t, config.endpointHostnames()),
    'failed dialing endpoint (initial)',
  );
  ctx.step('Deleting a pod which, will be replaced with a new endpoint');
  await config.deleteNetProxyPod();
  ctx.step(`dialing(${protocol}) ${from} --> ${clusterIP}:${port} (config.clusterIP) (endpoint recovery)`);
  must(
    await config.dialFromTestContainer({ ...t, minTries: config.maxTries }, config.endpointHostnames()),
    'failed dialing endpoint (recovery)',
  );
}

/** should update nodePort: ALL endpoints through the NodePort from the node, then none after the Service goes. */
async function updateNodePort(ctx: UpstreamContext, protocol: 'http' | 'udp'): Promise<void> {
  const config = await NetworkingTestConfig.create(ctx, { hostNetwork: true });
  const [, port] = servicePorts(config, protocol);
  const t = { protocol, targetIP: config.nodeIP, targetPort: port, maxTries: config.maxTries, minTries: 0 };
  ctx.step(
    `dialing(${protocol}) ${config.nodeIP} (node) --> ${config.nodeIP}:${port} (nodeIP) and getting ALL host endpoints`,
  );
  const err = await config.dialFromNode(t, config.endpointHostnames());
  if (err !== undefined)
    fail(
      protocol === 'http'
        ? `Error dialing http from node: ${err}`
        : `Failure validating that nodePort service WAS forwarding properly: ${err}`,
    );
  ctx.step('Deleting the node port access point');
  await config.deleteNodePortService();
  ctx.step(
    `dialing(${protocol}) ${config.nodeIP} (node) --> ${config.nodeIP}:${port} (nodeIP) and getting ZERO host endpoints`,
  );
  // upstream (#106770): 10 tries, each failing, are enough to say the NodePort no longer forwards.
  const gone = await config.dialFromNode({ ...t, maxTries: 10, minTries: 10 }, new Set());
  if (gone !== undefined) fail(`Failure validating that node port service STOPPED removed properly: ${gone}`);
}

async function basicNodePortUDP(ctx: UpstreamContext): Promise<void> {
  const config = await NetworkingTestConfig.create(ctx, { hostNetwork: true });
  const port = config.nodeUDPPort;
  ctx.step(
    `dialing(udp) ${config.nodeIP} (node) --> ${config.nodeIP}:${port} (nodeIP) and getting ALL host endpoints`,
  );
  const t = {
    protocol: 'udp',
    targetIP: config.nodeIP,
    targetPort: port,
    maxTries: config.maxTries,
    minTries: 0,
  } as const;
  const err = await config.dialFromNode(t, config.endpointHostnames());
  if (err !== undefined) fail(`Failure validating that nodePort service WAS forwarding properly: ${err}`);
}

/**
 * client IP based session affinity: one endpoint only, through the session-affinity Service (its ClusterIPs[1]
 * for the secondary family).
 */
export async function sessionAffinity(
  ctx: UpstreamContext,
  protocol: 'http' | 'udp',
  family: Family = 'primary',
): Promise<void> {
  const config = await createConfig(ctx, family);
  const ip = config.sessionAffinityIPOf(family);
  const [port] = servicePorts(config, protocol);
  ctx.step(`dialing(${protocol}) ${config.testContainerPod.name} --> ${ip}:${port}`);
  // Check if number of endpoints returned are exactly one.
  const eps = await config.getEndpointsFromTestContainer(protocol, ip, port, SESSION_AFFINITY_CHECKS);
  if (eps.size === 0) fail('Unexpected no endpoints return');
  if (eps.size > 1) fail(`Unexpected endpoints return: ${JSON.stringify([...eps])}, expect 1 endpoints`);
}

/** upstream's messages: "42" × 1000 over http, "n" and 1999 × "o" over udp (lower case: netexec lower-cases UDP). */
const LARGE_HTTP_MESSAGE = '42'.repeat(1000);
const LARGE_UDP_MESSAGE = `n${'o'.repeat(1999)}`;

/** should be able to handle large requests: the echo of a large message through the ClusterIP of `family`. */
export async function largeRequests(
  ctx: UpstreamContext,
  protocol: 'http' | 'udp',
  family: Family = 'primary',
): Promise<void> {
  const config = await createConfig(ctx, family);
  await dialLarge(ctx, config, protocol, family);
}

async function dialLarge(
  ctx: UpstreamContext,
  config: NetworkingTestConfig,
  protocol: 'http' | 'udp',
  family: Family,
): Promise<void> {
  const [port] = servicePorts(config, protocol);
  const clusterIP = config.clusterIPOf(family);
  ctx.step(
    `dialing(${protocol}) ${config.testContainerPod.name} --> ${clusterIP}:${port} (config.clusterIP)`,
  );
  const message = protocol === 'http' ? LARGE_HTTP_MESSAGE : LARGE_UDP_MESSAGE;
  const t = {
    protocol,
    targetIP: clusterIP,
    targetPort: port,
    maxTries: config.maxTries,
    minTries: 0,
  };
  must(await config.dialEchoFromTestContainer(t, message));
}

/** networking.go's hostNetwork checks: pod- and node-Service, each over http and udp. */
const HOST_NETWORK_CHECKS: readonly (readonly [Source, 'http' | 'udp'])[] = [
  ['pod', 'http'],
  ['pod', 'udp'],
  ['node', 'http'],
  ['node', 'udp'],
];

/**
 * should function for service endpoints using hostNetwork: the `checks` (pod- and node-Service over http, udp),
 * then the large requests, with netserver pods on hostNetwork, through the addresses of `family`.
 */
export async function hostNetworkEndpoints(
  ctx: UpstreamContext,
  family: Family = 'primary',
  checks = HOST_NETWORK_CHECKS,
): Promise<void> {
  const config = await createConfig(ctx, family, { hostNetwork: true, endpointsHostNetwork: true });
  for (const [source, protocol] of checks) {
    ctx.step(`${source}-Service(hostNetwork): ${protocol}`);
    await dialClusterIPAndNodePort(ctx, config, source, protocol, family);
  }
  ctx.step('handle large requests: http(hostNetwork)');
  await dialLarge(ctx, config, 'http', family);
  ctx.step('handle large requests: udp(hostNetwork)');
  await dialLarge(ctx, config, 'udp', family);
}

/**
 * utils.NewHostExec: a pod in `node`'s own network namespace to run commands "on the node". Upstream's is privileged
 * and nsenters the host's mount namespace; a lab pod already runs the host's files (iptables-save and all), so a
 * hostNetwork agnhost pod pinned to the node is the same thing here.
 */
async function hostExec(
  ctx: UpstreamContext,
  node: string,
): Promise<(cmd: string) => Promise<CommandResult>> {
  const name = `hostexec-${node}-${randomBytes(3).toString('hex')}`;
  const pod = agnhostPod({ name }, {}, [], []);
  const spec = pod.spec as KubeObject;
  spec.hostNetwork = true;
  spec.nodeSelector = { 'kubernetes.io/hostname': node };
  await ctx.kube.create(ctx.namespace, pod);
  ctx.defer(() => ctx.kube.delete(ctx.namespace, 'pod', name));
  await waitForPod(ctx, name, 'ready', podIsReady);
  return (cmd) => ctx.kube.exec(ctx.namespace, name, cmd);
}

/**
 * The commands upstream builds from `iptables-save`: delete every jump from a non-KUBE chain into a KUBE- chain,
 * flush every KUBE- chain, then delete those chains (rules first: a chain cannot go while rules point at it).
 */
export function kubeChainDeletion(iptablesSave: string): string {
  const deleteRules: string[] = [];
  const deleteChains: string[] = [];
  let table = '';
  for (const line of iptablesSave.split('\n')) {
    if (line.startsWith('*')) table = line.slice(1);
    else if (table === '') continue;
    if (!line.startsWith('-A KUBE-') && line.includes('-j KUBE-'))
      deleteRules.push(`iptables -t ${table} -D ${line.slice(3)} || true`);
    if (line.startsWith(':KUBE-')) {
      const chain = (line.split(' ')[0] ?? '').slice(1);
      deleteRules.push(`iptables -t ${table} -F ${chain} || true`);
      deleteChains.push(`iptables -t ${table} -X ${chain} || true`);
    }
  }
  return [...deleteRules, ...deleteChains].join('\n');
}

async function recreateIptablesRules(ctx: UpstreamContext): Promise<void> {
  // e2enode.GetRandomReadySchedulableNode.
  const node =
    ctx.nodes[Math.floor(Math.random() * ctx.nodes.length)]?.name ??
    fail('failed to find a ready schedulable node');
  const exec = await hostExec(ctx, node);
  const svc = 'iptables-flush-test';
  ctx.defer(() => stopServeHostnameService(ctx, svc));
  const { podNames, serviceIP } = await startServeHostnameService(ctx, serveHostnameService(svc), 3);

  ctx.step(`dumping iptables rules on node ${node}`);
  const saved = await exec('iptables-save');
  ctx.log(saved.stdout);
  if (saved.code !== 0) fail(`couldn't dump iptable rules: exit ${saved.code}: ${saved.stderr.trim()}`);
  ctx.step('deleting all KUBE-* iptables chains');
  const deleted = await exec(kubeChainDeletion(saved.stdout));
  if (deleted.code !== 0)
    fail(`couldn't delete iptable rules: exit ${deleted.code}: ${deleted.stderr.trim()}`);

  ctx.step('verifying that kube-proxy rules are eventually recreated');
  await verifyServeHostnameServiceUp(ctx, podNames, serviceIP, SERVE_HOSTNAME_SERVICE_PORT);

  ctx.step('verifying that kubelet rules are eventually recreated');
  let last: CommandResult | undefined;
  const recreated = await poll(
    POLL_MS,
    RESTART_NODE_READY_AGAIN_TIMEOUT_MS,
    async () => {
      last = await exec('iptables-save -t mangle');
      return last.code === 0 && last.stdout.includes('\n:KUBE-IPTABLES-HINT');
    },
    ctx.signal,
  );
  if (!recreated) {
    ctx.log(last?.stdout ?? '');
    fail('kubelet did not recreate its iptables rules: timed out waiting for the condition');
  }
}

export const NETWORKING_TESTS: readonly PortedTest[] = [
  ported(`${NETWORKING} should check kube-proxy urls`, checkKubeProxyURLs),
  ported(`${GRANULAR} should function for pod-Service: http`, (ctx) => granularCheck(ctx, 'pod', 'http')),
  ported(`${GRANULAR} should function for pod-Service: udp`, (ctx) => granularCheck(ctx, 'pod', 'udp')),
  ported(`${GRANULAR} should function for node-Service: http`, (ctx) => granularCheck(ctx, 'node', 'http')),
  ported(`${GRANULAR} should function for node-Service: udp`, (ctx) => granularCheck(ctx, 'node', 'udp')),
  ported(`${GRANULAR} should function for endpoint-Service: http`, (ctx) =>
    granularCheck(ctx, 'endpoint', 'http'),
  ),
  ported(`${GRANULAR} should function for endpoint-Service: udp`, (ctx) =>
    granularCheck(ctx, 'endpoint', 'udp'),
  ),
  ported(
    `${GRANULAR} should function for multiple endpoint-Services with same selector`,
    multipleEndpointServices,
  ),
  ported(`${GRANULAR} should update endpoints: http`, (ctx) => updateEndpoints(ctx, 'http')),
  ported(`${GRANULAR} should update endpoints: udp`, (ctx) => updateEndpoints(ctx, 'udp')),
  ported(`${GRANULAR} should update nodePort: http [Slow]`, (ctx) => updateNodePort(ctx, 'http')),
  ported(`${GRANULAR} should support basic nodePort: udp functionality`, basicNodePortUDP),
  ported(`${GRANULAR} should update nodePort: udp [Slow]`, (ctx) => updateNodePort(ctx, 'udp')),
  ported(`${GRANULAR} should function for client IP based session affinity: http [LinuxOnly]`, (ctx) =>
    sessionAffinity(ctx, 'http'),
  ),
  ported(`${GRANULAR} should function for client IP based session affinity: udp [LinuxOnly]`, (ctx) =>
    sessionAffinity(ctx, 'udp'),
  ),
  ported(`${GRANULAR} should be able to handle large requests: http`, (ctx) => largeRequests(ctx, 'http')),
  ported(`${GRANULAR} should be able to handle large requests: udp`, (ctx) => largeRequests(ctx, 'udp')),
  {
    ...ported(`${GRANULAR} should function for service endpoints using hostNetwork`, (ctx) =>
      hostNetworkEndpoints(ctx),
    ),
    // Its netexec servers bind fixed ports (8083, 8081) in the nodes' namespace, as dual_stack.go's twin does:
    // run alone, so the two never collide in a parallel run.
    serial: true,
  },
  {
    ...ported(
      `${NETWORKING} should recreate its iptables rules if they are deleted [Disruptive]`,
      recreateIptablesRules,
    ),
    // It deletes a node's KUBE- chains under every other test's feet: alone, and on a lab of its own.
    serial: true,
  },
];

function notPorted(name: string, reason: string): NotPortedTest {
  return { name, conformance: false, file: FILE, reason };
}

const SCTP_REASON =
  'SCTP: the lab’s agnhost cannot open SCTP sockets (Node.js has none), so no netexec serves or dials SCTP';
const INTERNET_REASON =
  'Internet connectivity, not the proxy: lab traffic stays inside its namespaces on 198.18.0.0/15 and is never routed out';

export const NETWORKING_NOT_PORTED: readonly NotPortedTest[] = [
  notPorted(
    `${NETWORKING} should provide Internet connection for containers [Feature:Networking-IPv4]`,
    INTERNET_REASON,
  ),
  notPorted(
    `${NETWORKING} should provide Internet connection for containers [Feature:Networking-IPv6] [Experimental][LinuxOnly]`,
    INTERNET_REASON,
  ),
  notPorted(
    `${NETWORKING} should provider Internet connection for containers using DNS [Feature:Networking-DNS]`,
    `${INTERNET_REASON} (and google.com is resolved by Internet DNS)`,
  ),
  notPorted(
    `${NETWORKING} should provide unchanging, static URL paths for kubernetes api services`,
    'API server only, not proxy-dependent; the lab’s API server serves /healthz, /api, /apis, /openapi/v2 and /version but no /metrics',
  ),
  notPorted(`${GRANULAR} should function for pod-Service: sctp [Feature:SCTPConnectivity]`, SCTP_REASON),
  notPorted(
    `${GRANULAR} should function for node-Service: sctp [Feature:SCTPConnectivity]`,
    `${SCTP_REASON}; upstream skips it too (DialFromNode has no SCTP, #96482)`,
  ),
  notPorted(`${GRANULAR} should function for endpoint-Service: sctp [Feature:SCTPConnectivity]`, SCTP_REASON),
  notPorted(
    `${NETWORKING} should allow creating a Pod with an SCTP HostPort [LinuxOnly] [Serial]`,
    'SCTP hostPort and the sctp kernel module on nodes (lsmod); the lab’s nodes share the host’s kernel and its pods have no SCTP',
  ),
];
