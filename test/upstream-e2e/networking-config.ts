// e2enetwork.NetworkingTestConfig (test/e2e/framework/network/utils.go), written anew: a netexec "netserver" pod
// on each node behind a NodePort Service (http 80 → 8083, udp 90 → 8081) and a ClientIP-affinity twin of it, a
// netexec test container pod that dials through its /dial, and (UseHostNetwork) a hostNetwork exec pod that dials
// from the node with curl. Upstream's ports, names, tries (MaxTries = endpoints² + 30), the 2 s between tries and
// its expected sets of hostnames are kept.
//
// One substitute: DialFromNode's UDP probe is `echo hostName | nc -w 1 -u HOST PORT` upstream. Lab pods run the
// host's files, which have no nc, so the same exchange (one datagram out, what comes back within nc's 1 s printed)
// is made with bash's /dev/udp (reachability.ts's reachabilityCommand, with nc's -w 1).
import { randomUUID } from 'node:crypto';
import {
  delay,
  fail,
  FOREVER_TEST_TIMEOUT_MS,
  poll,
  POD_DELETE_TIMEOUT_MS,
  POD_START_TIMEOUT_MS,
  POLL_MS,
  skipf,
} from './framework.js';
import { field, fieldArray, fieldString, KubectlError, type KubeObject } from './kube.js';
import { agnhostPod, AGNHOST_IMAGE, podIsReady, podIsRunning, waitForPod } from './pods.js';
import { reachabilityCommand } from './reachability.js';
import type { UpstreamContext } from './registry-types.js';

/** EndpointHTTPPort, EndpointUDPPort, testContainerHTTPPort, ClusterHTTPPort, ClusterUDPPort. */
export const ENDPOINT_HTTP_PORT = 8083;
export const ENDPOINT_UDP_PORT = 8081;
const TEST_CONTAINER_HTTP_PORT = 9080;
export const CLUSTER_HTTP_PORT = 80;
export const CLUSTER_UDP_PORT = 90;
/** SessionAffinityChecks: the tries of the session-affinity tests. */
export const SESSION_AFFINITY_CHECKS = 10;
/** hitEndpointRetryDelay and testTries: the pace of every dial loop, and the tries beyond endpoints². */
const HIT_ENDPOINT_RETRY_DELAY_MS = 2_000;
const TEST_TRIES = 30;
/** maxNetProxyPodsCount: at most this many nodes get a netserver pod. */
const MAX_NET_PROXY_PODS_COUNT = 10;
const TEST_POD_NAME = 'test-container-pod';
const HOST_TEST_POD_NAME = 'host-test-container-pod';
export const NODE_PORT_SERVICE_NAME = 'node-port-service';
const SESSION_AFFINITY_SERVICE_NAME = 'session-affinity-service';

export interface NetworkingOptions {
  /** UseHostNetwork: also run the host test container pod (hostNetwork), for DialFromNode and the self URLs. */
  readonly hostNetwork?: boolean;
  /** EndpointsUseHostNetwork: the netserver pods run in their node's network namespace. */
  readonly endpointsHostNetwork?: boolean;
  /**
   * EnableDualStack: both Services are created RequireDualStack, and SecondaryClusterIP and SecondaryNodeIP (the
   * other family's) are filled in.
   */
  readonly dualStack?: boolean;
}

/**
 * Which family a check dials: the Services' first ClusterIP's (ClusterIP, NodeIP) or, on an EnableDualStack
 * config, the other one (SecondaryClusterIP, SecondaryNodeIP: dual_stack.go's Granular Checks).
 */
export type Family = 'primary' | 'secondary';

interface PodView {
  readonly name: string;
  readonly podIP: string;
  /** The kubernetes.io/hostname its nodeSelector names (netserver pods). */
  readonly hostname: string;
}

interface NodeInfo {
  readonly name: string;
  readonly hostnameLabel: string;
  /** status.addresses' Hostname, where the node reports one. */
  readonly hostnameAddress?: string;
  readonly internalIPs: readonly string[];
}

/** What a dial loop sends where, and how often: upstream's (protocol, targetIP, targetPort, maxTries, minTries). */
export interface DialTarget {
  readonly protocol: 'http' | 'udp';
  readonly targetIP: string;
  readonly targetPort: number;
  readonly maxTries: number;
  readonly minTries: number;
}

/** A dial's outcome: undefined when it met its expectation, else upstream's error text. */
export type DialError = string | undefined;

/** NetexecDialResponse: what netexec's /dial answers. */
interface DialResponse {
  readonly responses: readonly string[];
  readonly errors: readonly string[];
}

function setsEqual(a: ReadonlySet<string>, b: ReadonlySet<string>): boolean {
  return a.size === b.size && [...a].every((x) => b.has(x));
}

function difference(a: ReadonlySet<string>, b: ReadonlySet<string>): string[] {
  return [...a].filter((x) => !b.has(x)).sort();
}

function show(s: ReadonlySet<string>): string {
  return `[${[...s].sort().join(' ')}]`;
}

function joinHostPort(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

/** The IPs and names here come from the API; anything else must not reach a shell. */
function safe(word: string): string {
  if (!/^[A-Za-z0-9.:%?=_/[\]-]*$/.test(word))
    throw new Error(`refusing to put ${JSON.stringify(word)} in a command`);
  return word;
}

/** makeCURLDialCommand. */
function curlDialCommand(
  ipPort: string,
  dialCmd: string,
  protocol: string,
  targetIP: string,
  port: number,
): string {
  return `curl -g -q -s 'http://${safe(ipPort)}/dial?request=${safe(dialCmd)}&protocol=${safe(protocol)}&host=${safe(targetIP)}&port=${port}&tries=1'`;
}

async function readyNodes(ctx: UpstreamContext): Promise<NodeInfo[]> {
  const wanted = new Set(ctx.nodes.map((n) => n.name));
  const nodes = (await ctx.kube.list('', 'nodes')).filter((n) =>
    wanted.has(fieldString(n, 'metadata', 'name')),
  );
  return nodes
    .map((n) => {
      const addresses = fieldArray(n, 'status', 'addresses');
      const hostnameAddress = fieldString(
        addresses.find((a) => field(a, 'type') === 'Hostname'),
        'address',
      );
      return {
        name: fieldString(n, 'metadata', 'name'),
        hostnameLabel: fieldString(n, 'metadata', 'labels', 'kubernetes.io/hostname'),
        ...(hostnameAddress !== '' ? { hostnameAddress } : {}),
        internalIPs: addresses
          .filter((a) => field(a, 'type') === 'InternalIP')
          .map((a) => fieldString(a, 'address')),
      };
    })
    .sort((a, b) => a.name.localeCompare(b.name));
}

/**
 * framework.WaitForServiceEndpointsNum: polls every `intervalMs` (not at once) until the Service's Endpoints have
 * `expectNum` addresses and its EndpointSlices `expectNum` distinct addresses of that family.
 */
export async function waitForServiceEndpointsNum(
  ctx: UpstreamContext,
  serviceName: string,
  expectNum: number,
  intervalMs: number,
  timeoutMs: number,
): Promise<boolean> {
  await delay(intervalMs, ctx.signal);
  return poll(
    intervalMs,
    timeoutMs - intervalMs,
    async () => {
      ctx.log(`Waiting for amount of service:${serviceName} endpoints to be ${expectNum}`);
      let endpoints: KubeObject;
      try {
        endpoints = await ctx.kube.get(ctx.namespace, 'endpoints', serviceName);
      } catch (e) {
        if (e instanceof KubectlError) return false;
        throw e;
      }
      const addresses = fieldArray(endpoints, 'subsets').flatMap((s) => fieldArray(s, 'addresses'));
      if (addresses.length !== expectNum) {
        ctx.log(`Unexpected number of Endpoints, got ${addresses.length}, expected ${expectNum}`);
        return false;
      }
      const v6 = addresses.some((a) => fieldString(a, 'ip').includes(':'));
      const slices = await ctx.kube.list(
        ctx.namespace,
        'endpointslices',
        `kubernetes.io/service-name=${serviceName}`,
      );
      if (slices.length === 0) {
        ctx.log('Waiting for at least 1 EndpointSlice to exist');
        return false;
      }
      const onSlices = new Set<string>();
      for (const s of slices) {
        if (fieldString(s, 'addressType') !== (v6 ? 'IPv6' : 'IPv4')) continue;
        for (const e of fieldArray(s, 'endpoints')) {
          const first = fieldArray(e, 'addresses')[0];
          if (typeof first === 'string') onSlices.add(first);
        }
      }
      if (onSlices.size !== expectNum) {
        ctx.log(`Unexpected number of Endpoints on Slices, got ${onSlices.size}, expected ${expectNum}`);
        return false;
      }
      return true;
    },
    ctx.signal,
  );
}

export class NetworkingTestConfig {
  testContainerPod!: PodView;
  hostTestContainerPod?: string;
  endpointPods: PodView[] = [];
  nodes: NodeInfo[] = [];
  nodePortService!: KubeObject;
  sessionAffinityService!: KubeObject;
  maxTries = 0;
  clusterIP = '';
  nodeIP = '';
  /** EnableDualStack only: the NodePort Service's second ClusterIP, and the first node InternalIP of its family. */
  secondaryClusterIP = '';
  secondaryNodeIP = '';
  nodeHTTPPort = 0;
  nodeUDPPort = 0;
  private readonly selector: Readonly<Record<string, string>>;

  private constructor(
    private readonly ctx: UpstreamContext,
    readonly options: NetworkingOptions,
  ) {
    ctx.step('creating a selector');
    this.selector = { [`selector-${randomUUID()}`]: 'true' };
  }

  /** NewNetworkingTestConfig: the pods, the two Services, and their endpoints in place. */
  static async create(ctx: UpstreamContext, options: NetworkingOptions = {}): Promise<NetworkingTestConfig> {
    const config = new NetworkingTestConfig(ctx, options);
    ctx.step(`Performing setup for networking test in namespace ${ctx.namespace}`);
    await config.setup();
    return config;
  }

  private async setup(): Promise<void> {
    const ctx = this.ctx;
    ctx.step('Creating the service pods in kubernetes');
    this.nodes = await readyNodes(ctx);
    this.endpointPods = await this.createNetProxyPods('netserver');
    ctx.step('Creating test pods');
    await this.createTestPods();
    const epCount = this.endpointPods.length;
    this.maxTries = epCount * epCount + TEST_TRIES;
    ctx.log(
      `Setting MaxTries for pod polling to ${this.maxTries} for networking test based on endpoint count ${epCount}`,
    );

    ctx.step('Getting node addresses');
    // e2eskipper.SkipUnlessNodeCountIsAtLeast(2).
    if (this.nodes.length < 2) skipf(`Requires at least 2 nodes (not ${this.nodes.length})`);
    ctx.step('Creating the service on top of the pods in kubernetes');
    this.nodePortService = await this.createService(this.nodePortServiceSpec(NODE_PORT_SERVICE_NAME, false));
    this.sessionAffinityService = await this.createService(
      this.nodePortServiceSpec(SESSION_AFFINITY_SERVICE_NAME, true),
    );
    for (const p of fieldArray(this.nodePortService, 'spec', 'ports')) {
      const nodePort = Number(field(p, 'nodePort') ?? 0);
      if (fieldString(p, 'protocol') === 'UDP') this.nodeUDPPort = nodePort;
      else if (fieldString(p, 'protocol') === 'TCP') this.nodeHTTPPort = nodePort;
    }
    this.clusterIP = fieldString(this.nodePortService, 'spec', 'clusterIP');
    // The first InternalIP of the ClusterIP's family (lab nodes have no ExternalIP, and upstream prefers one only
    // with PreferExternalAddresses); FirstAddressByTypeAndFamily gives "" where no node has one.
    const v6 = this.clusterIP.includes(':');
    const firstInternalIP = (ipv6: boolean): string =>
      this.nodes.flatMap((n) => n.internalIPs).find((ip) => ip.includes(':') === ipv6) ?? '';
    this.nodeIP = firstInternalIP(v6) || fail('no node InternalIP');
    if (this.options.dualStack) {
      this.secondaryClusterIP = String(fieldArray(this.nodePortService, 'spec', 'clusterIPs')[1] ?? '');
      this.secondaryNodeIP = firstInternalIP(!v6);
    }

    ctx.step('Waiting for NodePort service to expose endpoint');
    await this.mustHaveEndpoints(NODE_PORT_SERVICE_NAME, epCount);
    ctx.step('Waiting for Session Affinity service to expose endpoint');
    await this.mustHaveEndpoints(SESSION_AFFINITY_SERVICE_NAME, epCount);
  }

  /** WaitForServiceEndpointsNum(…, 1 s, ForeverTestTimeout) or fail, as setup and createSecondNodePortService do. */
  async mustHaveEndpoints(serviceName: string, count: number): Promise<void> {
    if (!(await waitForServiceEndpointsNum(this.ctx, serviceName, count, 1_000, FOREVER_TEST_TIMEOUT_MS)))
      fail(
        `failed to validate endpoints for service ${serviceName} in namespace: ${this.ctx.namespace}: timed out waiting for the condition`,
      );
  }

  /** createNetShellPodSpec: netexec on 8083/8081 with /healthz probes, pinned to a node by hostname. */
  private netShellPodSpec(podName: string, hostname: string): KubeObject {
    const args = ['netexec', `--http-port=${ENDPOINT_HTTP_PORT}`, `--udp-port=${ENDPOINT_UDP_PORT}`];
    // upstream binds the UDP listener of hostNetwork endpoints to the host's and the pod's IPs.
    if (this.options.endpointsHostNetwork) args.push('--udp-listen-addresses=$(HOST_IP),$(POD_IPS)');
    const probe = {
      initialDelaySeconds: 10,
      timeoutSeconds: 30,
      periodSeconds: 10,
      successThreshold: 1,
      failureThreshold: 3,
      httpGet: { path: '/healthz', port: ENDPOINT_HTTP_PORT },
    };
    const container: KubeObject = {
      name: 'webserver',
      image: AGNHOST_IMAGE,
      imagePullPolicy: 'IfNotPresent',
      args,
      ports: [
        { name: 'http', containerPort: ENDPOINT_HTTP_PORT },
        { name: 'udp', containerPort: ENDPOINT_UDP_PORT, protocol: 'UDP' },
      ],
      livenessProbe: probe,
      readinessProbe: probe,
    };
    if (this.options.endpointsHostNetwork)
      container.env = [
        { name: 'HOST_IP', valueFrom: { fieldRef: { fieldPath: 'status.hostIP' } } },
        { name: 'POD_IPS', valueFrom: { fieldRef: { fieldPath: 'status.podIPs' } } },
      ];
    return {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: podName, namespace: this.ctx.namespace, labels: { ...this.selector } },
      spec: {
        containers: [container],
        nodeSelector: { 'kubernetes.io/hostname': hostname },
        hostNetwork: this.options.endpointsHostNetwork === true,
      },
    };
  }

  private async podView(name: string, hostname = ''): Promise<PodView> {
    const pod = await this.ctx.kube.get(this.ctx.namespace, 'pod', name);
    return { name, podIP: fieldString(pod, 'status', 'podIP'), hostname };
  }

  /** createNetProxyPods: one netserver pod per node (at most maxNetProxyPodsCount), all Ready. */
  private async createNetProxyPods(prefix: string): Promise<PodView[]> {
    const nodes = this.nodes.slice(0, MAX_NET_PROXY_PODS_COUNT);
    const created: { name: string; hostname: string }[] = [];
    for (const [i, n] of nodes.entries()) {
      const name = `${prefix}-${i}`;
      await this.ctx.kube.create(this.ctx.namespace, this.netShellPodSpec(name, n.hostnameLabel));
      created.push({ name, hostname: n.hostnameLabel });
    }
    const running: PodView[] = [];
    for (const p of created) {
      await waitForPod(this.ctx, p.name, 'ready', podIsReady, POD_START_TIMEOUT_MS);
      running.push(await this.podView(p.name, p.hostname));
    }
    return running;
  }

  /** createTestPods: the netexec test container (9080) and, with UseHostNetwork, the hostNetwork exec pod. */
  private async createTestPods(): Promise<void> {
    const ctx = this.ctx;
    await ctx.kube.create(ctx.namespace, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: TEST_POD_NAME, namespace: ctx.namespace },
      spec: {
        containers: [
          {
            name: 'webserver',
            image: AGNHOST_IMAGE,
            imagePullPolicy: 'IfNotPresent',
            args: ['netexec', `--http-port=${TEST_CONTAINER_HTTP_PORT}`],
            ports: [{ name: 'http', containerPort: TEST_CONTAINER_HTTP_PORT }],
          },
        ],
      },
    });
    if (this.options.hostNetwork) {
      // e2epod.NewExecPodSpec(ns, name, hostNetwork=true): an agnhost pause pod in the node's namespace.
      const hostPod = agnhostPod({ name: HOST_TEST_POD_NAME }, {}, [], []);
      (hostPod.spec as KubeObject).hostNetwork = true;
      await ctx.kube.create(ctx.namespace, hostPod);
    }
    await waitForPod(ctx, TEST_POD_NAME, 'running', podIsRunning);
    this.testContainerPod = await this.podView(TEST_POD_NAME);
    if (this.options.hostNetwork) {
      await waitForPod(ctx, HOST_TEST_POD_NAME, 'running', podIsRunning);
      this.hostTestContainerPod = HOST_TEST_POD_NAME;
    }
  }

  /** createNodePortServiceSpec: NodePort, http 80 → 8083/TCP and udp 90 → 8081/UDP over the netserver pods. */
  private nodePortServiceSpec(name: string, sessionAffinity: boolean): KubeObject {
    return {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name },
      spec: {
        type: 'NodePort',
        ports: [
          { port: CLUSTER_HTTP_PORT, name: 'http', protocol: 'TCP', targetPort: ENDPOINT_HTTP_PORT },
          { port: CLUSTER_UDP_PORT, name: 'udp', protocol: 'UDP', targetPort: ENDPOINT_UDP_PORT },
        ],
        selector: { ...this.selector },
        sessionAffinity: sessionAffinity ? 'ClientIP' : 'None',
        ...(this.options.dualStack ? { ipFamilyPolicy: 'RequireDualStack' } : {}),
      },
    };
  }

  /** ClusterIP or SecondaryClusterIP. */
  clusterIPOf(family: Family): string {
    return family === 'primary' ? this.clusterIP : this.secondaryClusterIP;
  }

  /** NodeIP or SecondaryNodeIP. */
  nodeIPOf(family: Family): string {
    return family === 'primary' ? this.nodeIP : this.secondaryNodeIP;
  }

  /** The session-affinity Service's Spec.ClusterIP, or its Spec.ClusterIPs[1]. */
  sessionAffinityIPOf(family: Family): string {
    const ips = fieldArray(this.sessionAffinityService, 'spec', 'clusterIPs');
    return family === 'primary'
      ? fieldString(this.sessionAffinityService, 'spec', 'clusterIP')
      : String(ips[1] ?? '');
  }

  /** The netserver pods' selector, for a second Service over them (createSecondNodePortService). */
  get serviceSelector(): Readonly<Record<string, string>> {
    return this.selector;
  }

  /** CreateService: create, wait (5 s polls, 45 s) until it exists, and return what the API server holds. */
  async createService(svc: KubeObject): Promise<KubeObject> {
    const name = fieldString(svc, 'metadata', 'name');
    await this.ctx.kube.create(this.ctx.namespace, svc);
    let created: KubeObject | undefined;
    const exists = await poll(
      5_000,
      45_000,
      async () => {
        const r = await this.ctx.kube.run(['-n', this.ctx.namespace, 'get', 'service', name, '-o', 'json']);
        if (r.code === 0) created = JSON.parse(r.stdout) as KubeObject;
        return created !== undefined;
      },
      this.ctx.signal,
    );
    if (!exists || !created)
      fail(`error while waiting for service:${name} err: timed out waiting for the condition`);
    return created;
  }

  /** EndpointHostnames: the netserver pods' names, or for hostNetwork ones their node's hostname. */
  endpointHostnames(): Set<string> {
    return new Set(
      this.endpointPods.map((p) => {
        if (!this.options.endpointsHostNetwork) return p.name;
        const node = this.nodes.find((n) => n.name === p.hostname);
        return node?.hostnameAddress ?? p.hostname;
      }),
    );
  }

  /** GetResponseFromContainer: the curl of `cmd` (a /dial on some pod's netexec), run in the test container pod. */
  private async responseFromContainer(cmd: string): Promise<DialResponse | string> {
    const r = await this.ctx.kube.exec(this.ctx.namespace, this.testContainerPod.name, cmd);
    if (r.code !== 0)
      return `failed to execute ${JSON.stringify(cmd)}: exit ${r.code}, stdout: ${JSON.stringify(r.stdout)}, stderr: ${JSON.stringify(r.stderr)}`;
    try {
      const out = JSON.parse(r.stdout) as { responses?: unknown; errors?: unknown };
      const strings = (v: unknown): string[] =>
        Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
      return { responses: strings(out.responses), errors: strings(out.errors) };
    } catch (e) {
      return `failed to unmarshal curl response. Cmd ${cmd} run in ${this.testContainerPod.name}, output: ${r.stdout}, err: ${String(e)}`;
    }
  }

  /**
   * DialFromContainer: up to maxTries /dial requests (through the netexec at `via`), 2 s apart; done when the
   * answers seen are exactly `expected` (or none when none are expected) after at least minTries; an answer
   * outside `expected` fails at once.
   */
  async dialFromContainer(
    via: { readonly ip: string; readonly port: number },
    dialCommand: string,
    t: DialTarget,
    expected: ReadonlySet<string>,
  ): Promise<DialError> {
    const ctx = this.ctx;
    const cmd = curlDialCommand(
      joinHostPort(via.ip, via.port),
      dialCommand,
      t.protocol,
      t.targetIP,
      t.targetPort,
    );
    const responses = new Set<string>();
    for (let i = 0; i < t.maxTries; i++) {
      const resp = await this.responseFromContainer(cmd);
      if (typeof resp === 'string') {
        // A failed exec counts as a try, not a hard fail.
        ctx.log(`GetResponseFromContainer: ${resp}`);
        continue;
      }
      for (const r of resp.responses) if (r.trim() !== '') responses.add(r.trim());
      if (difference(responses, expected).length > 0) {
        const msg = `received unexpected responses... \nAttempt ${i}\nCommand ${cmd}\nretrieved ${show(responses)}\nexpected ${show(expected)}`;
        ctx.log(`encountered error during dial (${msg})`);
        return msg;
      }
      ctx.log(`Waiting for responses: ${JSON.stringify(difference(expected, responses))}`);
      if (
        (setsEqual(responses, expected) || (responses.size === 0 && expected.size === 0)) &&
        i + 1 >= t.minTries
      ) {
        ctx.log(`reached ${t.targetIP} after ${i}/${t.maxTries} tries`);
        return undefined;
      }
      await delay(HIT_ENDPOINT_RETRY_DELAY_MS, ctx.signal); // upstream's pace between tries
    }
    const msg = `did not find expected responses... \nTries ${t.maxTries}\nCommand ${cmd}\nretrieved ${show(responses)}\nexpected ${show(expected)}`;
    ctx.log(`encountered error during dial (${msg})`);
    return msg;
  }

  /** DialFromTestContainer: `hostname` through the test container's netexec (9080). */
  dialFromTestContainer(t: DialTarget, expected: ReadonlySet<string>): Promise<DialError> {
    const via = { ip: this.testContainerPod.podIP, port: TEST_CONTAINER_HTTP_PORT };
    return this.dialFromContainer(via, 'hostname', t, expected);
  }

  /** DialFromEndpointContainer: `hostname` through the first netserver pod's netexec (8083). */
  dialFromEndpointContainer(t: DialTarget, expected: ReadonlySet<string>): Promise<DialError> {
    const first = this.endpointPods[0] ?? fail('no endpoint pods');
    return this.dialFromContainer({ ip: first.podIP, port: ENDPOINT_HTTP_PORT }, 'hostname', t, expected);
  }

  /** DialEchoFromTestContainer: `echo?msg=M` (http) or `echo%20M` (udp); the one answer expected is M. */
  dialEchoFromTestContainer(t: DialTarget, message: string): Promise<DialError> {
    const dialCommand = t.protocol === 'http' ? `echo?msg=${message}` : `echo%20${message}`;
    const via = { ip: this.testContainerPod.podIP, port: TEST_CONTAINER_HTTP_PORT };
    return this.dialFromContainer(via, dialCommand, t, new Set([message]));
  }

  /** GetEndpointsFromTestContainer: every distinct `hostName` answer over `tries` /dial requests. */
  async getEndpointsFromTestContainer(
    protocol: string,
    targetIP: string,
    targetPort: number,
    tries: number,
  ): Promise<Set<string>> {
    const ctx = this.ctx;
    const pod = this.testContainerPod;
    const cmd = curlDialCommand(
      joinHostPort(pod.podIP, TEST_CONTAINER_HTTP_PORT),
      'hostName',
      protocol,
      targetIP,
      targetPort,
    );
    const eps = new Set<string>();
    for (let i = 0; i < tries; i++) {
      const r = await ctx.kube.exec(ctx.namespace, pod.name, cmd);
      if (r.code !== 0) {
        ctx.log(
          `Failed to execute ${JSON.stringify(cmd)}: exit ${r.code}, stdout: ${JSON.stringify(r.stdout)}, stderr: ${JSON.stringify(r.stderr)}`,
        );
        continue;
      }
      ctx.log(
        `Tries: ${tries}, in try: ${i}, stdout: ${r.stdout}, stderr: ${r.stderr}, command run in Pod ${pod.name}`,
      );
      let output: { responses?: unknown };
      try {
        output = JSON.parse(r.stdout) as { responses?: unknown };
      } catch (e) {
        ctx.log(
          `WARNING: Failed to unmarshal curl response. Cmd ${cmd} run in ${pod.name}, output: ${r.stdout}, err: ${String(e)}`,
        );
        continue;
      }
      for (const h of Array.isArray(output.responses) ? output.responses : [])
        if (typeof h === 'string' && h.trim() !== '') eps.add(h.trim());
      await delay(HIT_ENDPOINT_RETRY_DELAY_MS, ctx.signal); // upstream's pace between tries
    }
    return eps;
  }

  /**
   * DialFromNode: from the hostNetwork test pod, curl http://HOST:PORT/hostName (http) or one `hostName` datagram
   * (udp, see the file's comment), up to maxTries times 2 s apart, until the hostnames seen are exactly `expected`
   * after at least minTries.
   */
  async dialFromNode(t: DialTarget, expected: ReadonlySet<string>): Promise<DialError> {
    const { protocol, targetIP, targetPort, maxTries, minTries } = t;
    const ctx = this.ctx;
    const hostPod = this.hostTestContainerPod ?? fail('DialFromNode needs the UseHostNetwork option');
    const cmd =
      protocol === 'udp'
        ? reachabilityCommand(targetIP, targetPort, 'UDP', 1)
        : `curl -g -q -s --max-time 15 --connect-timeout 1 'http://${safe(joinHostPort(targetIP, targetPort))}/hostName'`;
    const filterCmd = `${cmd} | grep -v '^\\s*$'`;
    const eps = new Set<string>();
    ctx.log(
      `Going to poll ${targetIP} on port ${targetPort} at least ${minTries} times, with a maximum of ${maxTries} tries before failing`,
    );
    for (let i = 0; i < maxTries; i++) {
      const r = await ctx.kube.exec(ctx.namespace, hostPod, filterCmd);
      if (r.code !== 0 || r.stderr.length > 0) {
        // A failed command counts as a try; tests that confirm unreachability keep failing here for maxTries.
        ctx.log(
          `Failed to execute ${JSON.stringify(filterCmd)}: exit ${r.code}, stdout: ${JSON.stringify(r.stdout)}, stderr: ${JSON.stringify(r.stderr)}`,
        );
      } else if (r.stdout.trim() !== '') {
        eps.add(r.stdout.trim());
      }
      if (setsEqual(eps, expected) && i + 1 >= minTries) {
        ctx.log(`Found all ${eps.size} expected endpoints: ${show(eps)}`);
        return undefined;
      }
      ctx.log(
        `Waiting for ${show(new Set(difference(expected, eps)))} endpoints (expected=${show(expected)}, actual=${show(eps)})`,
      );
      await delay(HIT_ENDPOINT_RETRY_DELAY_MS, ctx.signal); // upstream's pace between tries
    }
    return `failed to find expected endpoints, \ntries ${maxTries}\nCommand ${cmd}\nretrieved ${show(eps)}\nexpected ${show(expected)}`;
  }

  /** GetSelfURL: `curl -i` of http://localhost:PORT/PATH from the hostNetwork pod must contain `expected`. */
  getSelfURL(port: number, path: string, expected: string): Promise<void> {
    this.ctx.step(`Getting kube-proxy self URL ${path}`);
    return this.executeCurlCmd(
      `curl -i -q -s --connect-timeout 1 http://localhost:${port}${safe(path)}`,
      expected,
    );
  }

  /** GetSelfURLStatusCode: the status code curl reports for http://localhost:PORT/PATH must contain `expected`. */
  getSelfURLStatusCode(port: number, path: string, expected: string): Promise<void> {
    this.ctx.step(`Checking status code against http://localhost:${port}${path}`);
    return this.executeCurlCmd(
      `curl -o /dev/null -i -q -s -w %{http_code} --connect-timeout 1 http://localhost:${port}${safe(path)}`,
      expected,
    );
  }

  /** executeCurlCmd: retried each second for 30 s until the output contains `expected`. */
  private async executeCurlCmd(cmd: string, expected: string): Promise<void> {
    const ctx = this.ctx;
    const podName = this.hostTestContainerPod ?? fail('the self URLs need the UseHostNetwork option');
    let msg = '';
    const ok = await poll(
      1_000,
      30_000,
      async () => {
        const r = await ctx.kube.exec(ctx.namespace, podName, cmd);
        if (r.code !== 0) {
          msg = `failed executing cmd ${cmd} in ${ctx.namespace}/${podName}: exit ${r.code}: ${r.stderr.trim()}`;
        } else if (!r.stdout.includes(expected)) {
          msg = `successfully executed ${cmd} in ${ctx.namespace}/${podName}, but output '${r.stdout}' doesn't contain expected string '${expected}'`;
        } else {
          return true;
        }
        ctx.log(msg);
        return false;
      },
      ctx.signal,
    );
    if (!ok) fail(`Timed out in 30s: ${msg}`);
  }

  /** DeleteNodePortService: delete it, then upstream's 15 s for kube-proxy to catch up. */
  async deleteNodePortService(): Promise<void> {
    await this.ctx.kube.mustRun(['-n', this.ctx.namespace, 'delete', 'service', NODE_PORT_SERVICE_NAME]);
    await delay(15_000, this.ctx.signal); // upstream's own wait: "wait for kube-proxy to catch up"
  }

  /** DeleteNetProxyPod: delete the first netserver pod, wait until it and its endpoint are gone, then 5 s. */
  async deleteNetProxyPod(): Promise<void> {
    const ctx = this.ctx;
    const pod = this.endpointPods[0] ?? fail('no endpoint pods');
    await ctx.kube.mustRun(['-n', ctx.namespace, 'delete', 'pod', pod.name, '--wait=false']);
    this.endpointPods = this.endpointPods.slice(1);
    const gone = await poll(
      POLL_MS,
      POD_DELETE_TIMEOUT_MS,
      async () =>
        (await ctx.kube.list(ctx.namespace, 'pods')).every(
          (p) => fieldString(p, 'metadata', 'name') !== pod.name,
        ),
      ctx.signal,
    );
    if (!gone) fail(`Failed to delete ${pod.name} pod: still present after ${POD_DELETE_TIMEOUT_MS / 1000}s`);
    if (
      !(await waitForServiceEndpointsNum(
        ctx,
        NODE_PORT_SERVICE_NAME,
        this.endpointPods.length,
        1_000,
        FOREVER_TEST_TIMEOUT_MS,
      ))
    )
      fail(`Failed to remove endpoint from service: ${NODE_PORT_SERVICE_NAME}`);
    await delay(5_000, ctx.signal); // upstream's own wait: "wait for kube-proxy to catch up with the pod being deleted"
  }
}
