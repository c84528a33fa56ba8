// A small cluster on this host for one proxy mode: nodes and pods as network namespaces (src/lab/netns), a pod
// server in every pod, and per node the mode's real backend fed by the real change trackers, its commands run
// inside that node's namespace. Scenarios apply Services and EndpointSlices and send real packets.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { EndpointSlice, Service } from '../../../packages/agent/src/api/objects.js';
import type { EndpointsMap } from '../../../packages/agent/src/model/endpoint-slice-cache.js';
import { EndpointsChangeTracker } from '../../../packages/agent/src/model/endpoints-change-tracker.js';
import type { IPFamily } from '../../../packages/agent/src/model/ip.js';
import { IP_FAMILIES } from '../../../packages/agent/src/model/ip.js';
import type {
  ServicePortMap,
  SkippedObject,
} from '../../../packages/agent/src/model/service-change-tracker.js';
import { ServiceChangeTracker } from '../../../packages/agent/src/model/service-change-tracker.js';
import type { CommandRunner } from '../../../packages/agent/src/netfilter/command.js';
import { hostCommandRunner } from '../../../packages/agent/src/netfilter/command.js';
import type { BackendSyncResult, ProxyBackend } from '../../../packages/agent/src/sync/backend.js';
import { FakeClock } from '../../../packages/agent/src/util/clock.js';
import { nodeNetworkConfig } from '../../../packages/agent/src/sync/node-network.js';
import { inNamespace } from '../../../packages/netns/src/exec.js';
import { listAddresses } from '../../../packages/netns/src/link.js';
import { listNamespaces, sweepNamespaces } from '../../../packages/netns/src/namespace.js';
import type { PodServerHandle } from '../../../packages/netns/src/pod-process.js';
import { startPodServerIn } from '../../../packages/netns/src/pod-process.js';
import type { NodePlan, PodPlan, TopologyPlan } from '../../../packages/netns/src/topology.js';
import { buildTopology, destroyTopology, planTopology } from '../../../packages/netns/src/topology.js';
import type { DataplaneBackend, ModeSupport } from './backends.js';
import { MODE_SUPPORT } from './backends.js';
import { familyOf, POD_TCP_PORT, POD_UDP_PORT } from './objects.js';
import type { EndpointConditions, SliceEndpoint } from './objects.js';
import type { BackgroundTraffic, RequestOutcome, TrafficSpec } from './traffic.js';
import { sendRequests, startTraffic } from './traffic.js';
import { scaledTimeout } from '../../helpers/wait-for.js';

/** Upstream's default masquerade bit. */
const MASQUERADE_BIT = 14;
/** Moved on the fake clock before every sync, so stale chains (kept > 1 s upstream) are really cleaned up. */
const CLOCK_STEP_MS = 2_000;
/**
 * How long a request may take before it counts as unanswered, unless a scenario says otherwise. Generous, so a
 * busy machine never turns an answer into a failure; scenarios that expect a drop pass a short timeout instead.
 */
const ANSWER_TIMEOUT_MS = 5_000;

export interface NodeSync {
  readonly node: string;
  readonly family: IPFamily;
  readonly full: boolean;
  readonly changedServices: readonly string[];
  readonly result: BackendSyncResult;
}

/**
 * One node's proxy for one family: the trackers, the live maps they check out into, and the backend. A dual-stack
 * node runs one per family, and each sees every object (as upstream's metaproxier feeds both).
 */
class NodeProxy {
  readonly services: ServiceChangeTracker;
  readonly endpoints: EndpointsChangeTracker;
  readonly serviceMap: ServicePortMap = new Map();
  readonly endpointsMap: EndpointsMap = new Map();
  synced = false;

  constructor(
    readonly node: NodePlan,
    readonly family: IPFamily,
    readonly backend: ProxyBackend,
    readonly onSkip: (s: SkippedObject) => void,
  ) {
    this.services = new ServiceChangeTracker({ family, onSkip });
    this.endpoints = new EndpointsChangeTracker({ family, nodeName: node.name, onSkip });
  }

  async sync(forceFull: boolean): Promise<NodeSync> {
    const services = this.services.checkout(this.serviceMap);
    const endpoints = this.endpoints.checkout(this.endpointsMap);
    const changed = new Set([...services.updatedServices, ...endpoints.updatedServices]);
    const full = forceFull || !this.synced;
    let result: BackendSyncResult;
    try {
      result = await this.backend.sync(
        {
          serviceMap: this.serviceMap,
          endpointsMap: this.endpointsMap,
          topology: { nodeName: this.node.name },
        },
        { full, changedServices: changed },
      );
    } catch (e) {
      // The next sync after a failure must be full, as the proxier would do.
      this.synced = false;
      throw new Error(
        `${this.node.name} ${this.family}: ${full ? 'full' : 'partial'} sync failed: ${e instanceof Error ? e.message : String(e)}`,
        {
          cause: e,
        },
      );
    }
    this.synced = true;
    return { node: this.node.name, family: this.family, full, changedServices: [...changed].sort(), result };
  }
}

export interface TestPod {
  readonly name: string;
  readonly namespace: string;
  readonly nodeName: string;
  readonly ip: string;
  readonly ip6: string;
}

/** Anything with an address of each family (pods, nodes, the client). */
export function addressOf(x: { readonly ip: string; readonly ip6: string }, family: IPFamily): string {
  return family === 'IPv4' ? x.ip : x.ip6;
}

/** A node's addresses of one family: the ones a masqueraded packet from it can carry. */
export function nodeAddresses(node: NodePlan, family: IPFamily): string[] {
  return family === 'IPv4' ? [node.ip, node.gatewayIP] : [node.ip6, node.gatewayIP6];
}

export interface MakeTestClusterOptions {
  readonly mode: DataplaneBackend;
  /** The run's namespace prefix (runPrefix()); the caller sweeps it in its own `finally` too. */
  readonly prefix: string;
  readonly nodes: number;
  readonly podsPerNode: number | readonly number[];
  /** The families each node proxies (one backend per family); default both. */
  readonly families?: readonly IPFamily[];
  readonly runner?: CommandRunner;
  /** Replaces MODE_SUPPORT[mode] (the harness's own tests use a backend that fails on purpose). */
  readonly support?: ModeSupport;
}

/** Services and EndpointSlices to apply or remove together. */
export interface ClusterObjects {
  readonly services?: readonly Service[];
  readonly slices?: readonly EndpointSlice[];
}

const key = (o: { metadata: { namespace?: string; name?: string } }): string =>
  `${o.metadata.namespace ?? ''}/${o.metadata.name ?? ''}`;

export class TestCluster {
  private readonly services = new Map<string, Service>();
  private readonly slices = new Map<string, EndpointSlice>();
  private readonly skipped: (SkippedObject & { readonly family: IPFamily })[] = [];
  private proxies: NodeProxy[] = [];
  private readonly servers: PodServerHandle[] = [];
  private trafficCount = 0;
  readonly clock = new FakeClock(Date.UTC(2026, 0, 1));

  private constructor(
    public mode: DataplaneBackend,
    readonly plan: TopologyPlan,
    readonly runner: CommandRunner,
    readonly stateDir: string,
    private support: ModeSupport,
    private readonly families: readonly IPFamily[],
  ) {}

  static async create(options: MakeTestClusterOptions): Promise<TestCluster> {
    const support = options.support ?? MODE_SUPPORT[options.mode];
    if (support.create === null) throw new Error(`no ${options.mode} backend to test`);
    const runner = options.runner ?? hostCommandRunner;
    const plan = planTopology({
      prefix: options.prefix,
      nodes: options.nodes,
      podsPerNode: options.podsPerNode,
    });
    await sweepNamespaces(runner, plan.prefix + '-');
    const cluster = new TestCluster(
      options.mode,
      plan,
      runner,
      mkdtempSync(join(tmpdir(), `${plan.prefix}-`)),
      support,
      options.families ?? IP_FAMILIES,
    );
    try {
      await buildTopology(runner, plan);
      cluster.proxies = await cluster.makeProxies(support);
      // Pod servers start in parallel: each is a Node process, and start-up dominates.
      const started = await Promise.allSettled(
        plan.nodes
          .flatMap((n) => n.pods)
          .map((pod) =>
            startPodServerIn(runner, pod.namespace, {
              name: pod.name,
              tcpPorts: [POD_TCP_PORT],
              udpPorts: [POD_UDP_PORT],
              stateDir: cluster.stateDir,
              // A bound for a leaked server, which must outlast the suite: scaled (KPTS_TIMEOUT_SCALE) where the
              // suite runs slower, as in a guest (test/vm/in-guest.ts), or its servers die mid-run.
              maxLifetimeSeconds: scaledTimeout(600_000) / 1000,
              // Six Node processes start at once on a shared 2-core machine: be patient.
              readyTimeoutMs: scaledTimeout(60_000),
            }),
          ),
      );
      for (const s of started) if (s.status === 'fulfilled') cluster.servers.push(s.value);
      const failed = started.find((s): s is PromiseRejectedResult => s.status === 'rejected');
      if (failed) throw failed.reason;
      // The first sync is full on every node: the backend lays down its tables before any Service exists.
      await cluster.sync();
      return cluster;
    } catch (e) {
      await cluster.cleanup().catch(() => {});
      throw e;
    }
  }

  /** One proxy per node and family, with `support`'s backend (the trackers start empty). */
  private async makeProxies(support: ModeSupport): Promise<NodeProxy[]> {
    const create = support.create;
    if (create === null) throw new Error('no backend to test');
    const proxies: NodeProxy[] = [];
    for (const node of this.plan.nodes) {
      const hostInterfaces = await listAddresses(this.runner, node.namespace);
      for (const family of this.families) {
        const { config, problems } = nodeNetworkConfig({
          family,
          nodeName: node.name,
          nodeIPs: [node.ip, node.ip6],
          detectLocalMode: 'ClusterCIDR',
          clusterCIDRs: [this.plan.clusterCIDR, this.plan.clusterCIDR6],
          nodePortAddresses: support.nodePortAddresses,
          masqueradeAll: false,
          masqueradeBit: MASQUERADE_BIT,
          hostInterfaces,
          serviceCIDRs: [this.plan.serviceCIDR, this.plan.serviceCIDR6],
        });
        if (problems.length > 0) {
          throw new Error(`${node.name} ${family}: node network config: ${problems.join('; ')}`);
        }
        const backend = create({
          node: config,
          commands: inNamespace(this.runner, node.namespace),
          clock: this.clock,
          stateDir: this.stateDir,
          namespace: node.namespace,
        });
        const onSkip = (s: SkippedObject): void => void this.skipped.push({ ...s, family });
        proxies.push(new NodeProxy(node, family, backend, onSkip));
      }
    }
    return proxies;
  }

  /**
   * Restarts every node's proxy in `mode`, as an agent restarted with another mode: the new backends learn the
   * current objects and make their first (full) sync while the old mode's rules are still in the kernel; then,
   * per node, `afterFirstSync` runs with the node's command runner (the agent's cleanup of the other mode).
   */
  async switchMode(
    mode: DataplaneBackend,
    afterFirstSync: (node: NodePlan, commands: CommandRunner) => Promise<void>,
  ): Promise<NodeSync[]> {
    const support = MODE_SUPPORT[mode];
    const proxies = await this.makeProxies(support);
    for (const p of proxies) {
      for (const svc of this.services.values()) p.services.update(undefined, svc);
      for (const slice of this.slices.values()) p.endpoints.endpointSliceUpdate(slice, false);
    }
    this.proxies = proxies;
    this.mode = mode;
    this.support = support;
    const reports = await this.sync();
    for (const node of this.plan.nodes) await afterFirstSync(node, inNamespace(this.runner, node.namespace));
    return reports;
  }

  /** Runs commands inside a node's namespace. */
  nodeRunner(name: string): CommandRunner {
    return inNamespace(this.runner, this.node(name).namespace);
  }

  get nodes(): readonly NodePlan[] {
    return this.plan.nodes;
  }

  get pods(): readonly TestPod[] {
    return this.plan.nodes.flatMap((n) =>
      n.pods.map((p: PodPlan) => ({
        name: p.name,
        namespace: p.namespace,
        nodeName: p.nodeName,
        ip: p.ip,
        ip6: p.ip6,
      })),
    );
  }

  /** PIDs of the running pod servers (for tests of the harness's own cleanup). */
  get podServerPids(): readonly number[] {
    return this.servers.map((s) => s.pid);
  }

  get client(): { readonly namespace: string; readonly ip: string; readonly ip6: string } {
    return this.plan.client;
  }

  pod(name: string): TestPod {
    const pod = this.pods.find((p) => p.name === name);
    if (!pod) throw new Error(`no pod ${name} (have ${this.pods.map((p) => p.name).join(', ')})`);
    return pod;
  }

  node(name: string): NodePlan {
    const node = this.plan.nodes.find((n) => n.name === name);
    if (!node) throw new Error(`no node ${name}`);
    return node;
  }

  /** A pod as an EndpointSlice endpoint of `family` (by default ready, serving, on its own node). */
  endpoint(podName: string, family: IPFamily, conditions: EndpointConditions = {}): SliceEndpoint {
    const pod = this.pod(podName);
    return { ip: addressOf(pod, family), nodeName: pod.nodeName, podName: pod.name, ...conditions };
  }

  /** Adds or updates objects on every node's trackers, then syncs every node (partial after the first). */
  async apply(objects: ClusterObjects): Promise<NodeSync[]> {
    for (const svc of objects.services ?? []) {
      const previous = this.services.get(key(svc));
      for (const p of this.proxies) p.services.update(previous, svc);
      this.services.set(key(svc), svc);
    }
    for (const slice of objects.slices ?? []) {
      for (const p of this.proxies) p.endpoints.endpointSliceUpdate(slice, false);
      this.slices.set(key(slice), slice);
    }
    return this.sync();
  }

  /** Deletes objects (by namespace/name) from every node's trackers, then syncs every node. */
  async remove(objects: ClusterObjects): Promise<NodeSync[]> {
    for (const svc of objects.services ?? []) {
      const previous = this.services.get(key(svc));
      if (!previous) continue;
      for (const p of this.proxies) p.services.update(previous, undefined);
      this.services.delete(key(svc));
    }
    for (const slice of objects.slices ?? []) {
      const previous = this.slices.get(key(slice));
      if (!previous) continue;
      for (const p of this.proxies) p.endpoints.endpointSliceUpdate(previous, true);
      this.slices.delete(key(slice));
    }
    return this.sync();
  }

  /**
   * Applies `objects`, runs `body` and removes them again however `body` ends: the scenarios share one cluster,
   * and a failing one must not leave its Service behind for the next. Removal goes by namespace/name, so `body`
   * may update the objects it was given (a shrunk slice) and they are still removed.
   */
  async withObjects<T>(objects: ClusterObjects, body: () => Promise<T>): Promise<T> {
    await this.apply(objects);
    try {
      return await body();
    } finally {
      await this.remove(objects);
    }
  }

  private familyOfObject(kind: 'Service' | 'EndpointSlice', name: string): IPFamily | undefined {
    if (kind === 'Service') {
      const ip = this.services.get(name)?.spec?.clusterIP;
      return ip === undefined ? undefined : familyOf(ip);
    }
    const type = this.slices.get(name)?.addressType;
    return type === 'IPv4' || type === 'IPv6' ? type : undefined;
  }

  /** Syncs every node: full on a node's first sync or when asked, partial otherwise. */
  async sync(options: { full?: boolean } = {}): Promise<NodeSync[]> {
    // A proxier skipping a Service of the other family is normal; one skipping an object of its own family
    // means the scenario built something the model refuses (a harness bug).
    const ownFamily = this.skipped.filter((s) => this.familyOfObject(s.kind, s.name) === s.family);
    this.skipped.length = 0;
    if (ownFamily.length > 0) {
      const reasons = ownFamily.map((s) => `${s.family} ${s.kind} ${s.name}: ${s.reason}`).join('; ');
      throw new Error(`the model skipped a scenario's object (a harness bug): ${reasons}`);
    }
    this.clock.advance(CLOCK_STEP_MS);
    const reports: NodeSync[] = [];
    for (const p of this.proxies) reports.push(await p.sync(options.full ?? false));
    return reports;
  }

  /** `count` HTTP requests from a namespace, one connection each. */
  http(
    fromNamespace: string,
    ip: string,
    port: number,
    options: Partial<TrafficSpec> = {},
  ): Promise<RequestOutcome[]> {
    return this.send('http', fromNamespace, ip, port, options);
  }

  /** `count` UDP requests from a namespace, one socket each. */
  udp(
    fromNamespace: string,
    ip: string,
    port: number,
    options: Partial<TrafficSpec> = {},
  ): Promise<RequestOutcome[]> {
    return this.send('udp', fromNamespace, ip, port, options);
  }

  private send(
    proto: TrafficSpec['proto'],
    fromNamespace: string,
    ip: string,
    port: number,
    options: Partial<TrafficSpec>,
  ): Promise<RequestOutcome[]> {
    const spec = { proto, ip, port, count: 1, timeoutMs: ANSWER_TIMEOUT_MS, ...options };
    return sendRequests(this.runner, fromNamespace, spec);
  }

  /** Requests that keep going in the background until stop() (bounded by spec.count). */
  traffic(fromNamespace: string, spec: TrafficSpec): BackgroundTraffic {
    return startTraffic(this.runner, fromNamespace, spec, this.stateDir, `traffic-${++this.trafficCount}`);
  }

  /** What the mode programmed on every node, for a failing scenario's message. */
  async dumpRules(): Promise<string> {
    const parts: string[] = [];
    for (const node of this.plan.nodes) {
      for (const [cmd, ...args] of this.support.dump) {
        const r = await inNamespace(this.runner, node.namespace).run(cmd, args);
        parts.push(
          `--- ${node.name} (${node.namespace}): ${[cmd, ...args].join(' ')} exited ${r.code}\n${r.stdout}${r.stderr}`,
        );
      }
    }
    return parts.join('\n');
  }

  /** Stops every pod server, removes every namespace of the run and the state directory. Safe to call twice. */
  async cleanup(): Promise<void> {
    const errors: unknown[] = [];
    const stops = await Promise.allSettled(this.servers.map((s) => s.stop()));
    for (const s of stops) if (s.status === 'rejected') errors.push(s.reason);
    this.servers.length = 0;
    await destroyTopology(this.runner, this.plan).catch((e: unknown) => errors.push(e));
    rmSync(this.stateDir, { recursive: true, force: true });
    if (errors.length > 0) throw errors[0];
  }
}

export function makeTestCluster(options: MakeTestClusterOptions): Promise<TestCluster> {
  return TestCluster.create(options);
}

/**
 * A suite's last hook: removes its cluster (if one was made), sweeps whatever a failed build or clean-up left under
 * the run's prefix, and fails when a namespace of the run is still there.
 */
export async function removeTestCluster(cluster: TestCluster | undefined, prefix: string): Promise<void> {
  try {
    await cluster?.cleanup();
  } finally {
    await sweepNamespaces(hostCommandRunner, prefix + '-');
  }
  const left = (await listNamespaces(hostCommandRunner)).filter((n) => n.startsWith(prefix));
  if (left.length > 0) throw new Error(`namespaces of the run left behind: ${left.join(', ')}`);
}
