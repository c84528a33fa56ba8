// `lab soak`: seed 003's scenario as a measured run against a running lab. In order:
//   1. the workload (workload.ts) in namespace soak, and the wait until its pods are ready and every proxy synced;
//   2. watches on the soak's Pods (for the churn) and EndpointSlices (the eligibility timeline), a sampler of
//      every proxy's /metrics, and the load generators: one in the client host (NodePorts), one in the soak-client
//      pod (ClusterIPs), each with its long-lived connections;
//   3. for the duration: churn at the given rate, and the faults asked for (lock holders, proxy restarts, API
//      server outages);
//   4. then: flipped pods made ready again, the proxies left to settle, every node checked for stale UDP conntrack
//      entries (the doctor's check), the kube-proxy pods checked for exits the soak did not cause;
//   5. the soak namespace deleted, and the report built (report.ts), with its picture (plot.ts).
// Everything runs in the lab's namespaces and against its API server; nothing in the root network namespace.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { EndpointSlice, Node, Service } from 'kube-proxy-ts/api/objects.js';
import { clusterView } from 'kube-proxy-ts/inspect/doctor/cluster-view.js';
import { staleUdpConntrack } from 'kube-proxy-ts/inspect/doctor/checks/stale-udp-conntrack.js';
import type { DoctorContext } from 'kube-proxy-ts/inspect/doctor/types.js';
import {
  netnsCommandRunner,
  type CommandRunner,
  type StreamRunner,
} from 'kube-proxy-ts/netfilter/command.js';
import {
  labPaths,
  podNamespaceName,
  type LabLayout,
  type LabNodeLayout,
  type LabPaths,
} from '../cluster/layout.js';
import { listNamespaces } from '@kube-proxy-ts/netns/index.js';
import { nodeEnvironment } from '../cluster/node-env.js';
import { fetchProxySettings } from '../cluster/metrics.js';
import type { AgentSettings } from 'kube-proxy-ts/inspect/doctor/types.js';
import { formatGoDuration } from 'kube-proxy-ts/config/duration.js';
import { labCliArgv } from '../cluster/processes.js';
import { layoutOf, readLabState, type LabState } from '../cluster/state.js';
import { Churn, type PodState } from './churn.js';
import { EligibilityTimeline } from './eligibility.js';
import { signalProxy, startLockHolders, type ProxyRestart } from './faults.js';
import { labApi, type LabApi } from './lab-client.js';
import type { LoadConfig, LoadRecord } from './load-generator.js';
import { API_OUTAGE_MS } from '../cluster/relay.js';
import { NodeSampler } from './node-sampler.js';
import { IptablesSaveSampler } from './iptables-save.js';
import { buildReport, failedTotal, type Generator, type SoakInputs, type SoakReport } from './report.js';
import { frontendsOf, soakTargets, type SoakTargets } from './targets.js';
import {
  CLIENT,
  SOAK_NAMESPACE,
  deployment,
  deployments,
  flappyCount,
  flappyName,
  service,
  servicePlan,
} from './workload.js';

export interface SoakOptions {
  readonly durationMs: number;
  readonly services: number;
  readonly churnPerSecond: number;
  readonly ratePerSecond: number;
  readonly competingLockHolder: boolean;
  readonly restartProxyEveryMs?: number;
  readonly apiserverOutageEveryMs?: number;
}

export interface SoakDeps {
  readonly stateDir: string;
  readonly runner: CommandRunner;
  readonly streams: StreamRunner;
  readonly progress: (line: string) => void;
  /** Asks the lab for an API server outage (in-process: lab.apiServerOutage; else SIGUSR2 to the lab). */
  readonly apiOutage?: () => void;
}

export const SOAK_LIMITS = {
  minDurationMs: 5_000,
  maxDurationMs: 2 * 3600_000,
  maxServices: 2000,
  maxChurnPerSecond: 100,
  maxRatePerSecond: 1000,
  minRestartEveryMs: 5_000,
} as const;

/** What is wrong with the options, or undefined. */
export function checkSoakOptions(o: SoakOptions): string | undefined {
  const L = SOAK_LIMITS;
  if (o.durationMs < L.minDurationMs || o.durationMs > L.maxDurationMs)
    return `--duration: ${o.durationMs / 1000} s is outside ${L.minDurationMs / 1000} s … ${L.maxDurationMs / 3600_000} h`;
  if (!Number.isInteger(o.services) || o.services < 2 || o.services > L.maxServices)
    return `--services: ${o.services} is outside 2 … ${L.maxServices}`;
  if (!(o.churnPerSecond >= 0 && o.churnPerSecond <= L.maxChurnPerSecond))
    return `--churn: ${o.churnPerSecond} is outside 0 … ${L.maxChurnPerSecond} changes per second`;
  if (!(o.ratePerSecond > 0 && o.ratePerSecond <= L.maxRatePerSecond))
    return `--rate: ${o.ratePerSecond} is outside 1 … ${L.maxRatePerSecond} requests per second`;
  for (const [flag, v] of [
    ['--restart-proxy-every', o.restartProxyEveryMs],
    ['--apiserver-outage-every', o.apiserverOutageEveryMs],
  ] as const)
    if (v !== undefined && v < L.minRestartEveryMs)
      return `${flag}: at least ${L.minRestartEveryMs / 1000} s`;
  return undefined;
}

/**
 * How long a request may take before it counts as a timeout. Generous: a blackholed request never answers, and a
 * busy two-core machine must not turn slow answers into failures.
 */
const REQUEST_TIMEOUT_MS = 5000;

/** Churn writes in flight at once. */
const CHURN_IN_FLIGHT = 4;

/** A proxy is restarted only this long before the end at the latest. */
const RESTART_ROOM_MS = 12_000;

const delay = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function podState(pod: unknown): PodState | undefined {
  if (!isRecord(pod) || !isRecord(pod.metadata)) return undefined;
  const labels = isRecord(pod.metadata.labels) ? pod.metadata.labels : {};
  const status = isRecord(pod.status) ? pod.status : {};
  const conditions = Array.isArray(status.conditions) ? status.conditions : [];
  return {
    name: String(pod.metadata.name),
    app: String(labels.app ?? ''),
    ready: conditions.some((c) => isRecord(c) && c.type === 'Ready' && c.status === 'True'),
    terminating: pod.metadata.deletionTimestamp !== undefined,
    ...(typeof status.podIP === 'string' ? { ip: status.podIP } : {}),
    ...(isRecord(pod.spec) && typeof pod.spec.nodeName === 'string' ? { node: pod.spec.nodeName } : {}),
  };
}

/** Polls `check` every 500 ms until it returns true or `ms` pass; says what it waited for when it gives up. */
async function waitUntil(what: string, ms: number, check: () => boolean | Promise<boolean>): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`soak: ${what} did not happen in ${ms / 1000} s`);
    await delay(500);
  }
}

/**
 * Waits until every proxy has nothing pending in two samples in a row, a second or more after the last change
 * (so that the change has reached the proxies' watches).
 */
async function settled(
  sampler: NodeSampler,
  nodes: readonly { readonly name: string }[],
  what: string,
): Promise<void> {
  await delay(1000);
  const quiet = (): boolean =>
    nodes.every((n) => {
      const p = sampler.latest(n.name);
      return p !== undefined && p.pendingEndpoints === 0 && p.pendingServices === 0 && p.lastSyncMs > 0;
    });
  let inARow = 0;
  await waitUntil(what, 120_000, async () => {
    await sampler.sampleOnce();
    inARow = quiet() ? inARow + 1 : 0;
    return inARow >= 2;
  });
}

/** A load generator's NDJSON file, read as it grows. */
class RecordFile {
  private offset = 0;
  private partial = '';
  readonly records: LoadRecord[] = [];

  constructor(readonly path: string) {}

  read(): void {
    let buf: Buffer;
    try {
      buf = readFileSync(this.path);
    } catch {
      return;
    }
    const text = this.partial + buf.subarray(this.offset).toString('utf8');
    this.offset = buf.length;
    const lines = text.split('\n');
    this.partial = lines.pop() ?? '';
    for (const line of lines) {
      try {
        this.records.push(JSON.parse(line) as LoadRecord);
      } catch {
        // a torn line cannot happen (whole lines are appended); skip anything else
      }
    }
  }
}

async function createWorkload(api: LabApi, services: number): Promise<void> {
  const create = async (path: string, body: object): Promise<void> => {
    await api.request('POST', path, body);
  };
  await create('/api/v1/namespaces', {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name: SOAK_NAMESPACE },
  });
  for (const d of deployments(services))
    await create(`/apis/apps/v1/namespaces/${SOAK_NAMESPACE}/deployments`, deployment(d.name, d.replicas));
  for (const plan of servicePlan(services))
    await create(`/api/v1/namespaces/${SOAK_NAMESPACE}/services`, service(plan));
}

async function deleteWorkload(api: LabApi, runner: CommandRunner, prefix: string): Promise<void> {
  try {
    // Pods first and at once (the soak is over; no need to wait out their grace), then the namespace.
    await api.request('DELETE', `/api/v1/namespaces/${SOAK_NAMESPACE}/pods?gracePeriodSeconds=0`);
  } catch {
    // no pods, or no namespace
  }
  try {
    await api.request('DELETE', `/api/v1/namespaces/${SOAK_NAMESPACE}`);
  } catch {
    return;
  }
  await waitUntil(`namespace ${SOAK_NAMESPACE} to be gone`, 120_000, async () => {
    try {
      await api.request('GET', `/api/v1/namespaces/${SOAK_NAMESPACE}`);
      return false;
    } catch {
      return true;
    }
  });
  // And the pods' sandboxes: the lab's kubelet removes their network namespaces after the objects are gone.
  const podNamespaces = podNamespaceName(prefix, SOAK_NAMESPACE, '');
  await waitUntil(`the soak pods' network namespaces to be removed`, 60_000, async () =>
    (await listNamespaces(runner)).every((n) => !n.startsWith(podNamespaces)),
  );
}

interface ProxyPodStatus {
  readonly names: readonly string[];
  readonly restarts: number;
}

async function proxyPods(api: LabApi): Promise<ProxyPodStatus> {
  const list = (await api.request(
    'GET',
    '/api/v1/namespaces/kube-system/pods?labelSelector=k8s-app%3Dkube-proxy',
  )) as {
    items?: unknown[];
  };
  let restarts = 0;
  const names: string[] = [];
  for (const p of list.items ?? []) {
    if (!isRecord(p) || !isRecord(p.metadata) || !isRecord(p.status)) continue;
    names.push(String(p.metadata.name));
    for (const c of Array.isArray(p.status.containerStatuses) ? p.status.containerStatuses : [])
      if (isRecord(c) && typeof c.restartCount === 'number') restarts += c.restartCount;
  }
  return { names: names.sort(), restarts };
}

/** A generator as the soak runs it: where, what to, its settings and the file it writes its records to. */
type SoakGenerator = Omit<Generator, 'records'> & { file: RecordFile; netns: string; config: LoadConfig };

/** The timers of the soak's faults, all cleared when it ends (or fails). */
class Timers {
  private readonly all: NodeJS.Timeout[] = [];
  after(ms: number, run: () => void): void {
    this.all.push(setTimeout(run, ms));
  }
  clear(): void {
    for (const t of this.all) clearTimeout(t);
  }
}

/** The soak's view of its workload: Pods (for the churn) and EndpointSlices (the eligibility timeline). */
function watchWorkload(
  api: LabApi,
  signal: AbortSignal,
): { pods: Map<string, PodState>; timeline: EligibilityTimeline; watches: Promise<unknown>[] } {
  const pods = new Map<string, PodState>();
  const timeline = new EligibilityTimeline();
  const watches = [
    api.watch(
      `/api/v1/namespaces/${SOAK_NAMESPACE}/pods`,
      (type, obj) => {
        if (type === 'RESET') return void pods.clear();
        const p = podState(obj);
        if (!p) return;
        if (type === 'DELETED') pods.delete(p.name);
        else pods.set(p.name, p);
      },
      signal,
    ),
    api.watch(
      `/apis/discovery.k8s.io/v1/namespaces/${SOAK_NAMESPACE}/endpointslices`,
      (type, obj) => (type === 'RESET' ? timeline.reset() : timeline.observe(type, obj, Date.now())),
      signal,
    ),
  ].map((p) => p.catch(() => undefined));
  return { pods, timeline, watches };
}

/** The generators: ClusterIPs from the soak-client pod (60% of the rate), NodePorts from the client host. */
async function loadGenerators(
  api: LabApi,
  state: LabState,
  layout: LabLayout,
  pods: ReadonlyMap<string, PodState>,
  options: SoakOptions,
  workDir: string,
): Promise<SoakGenerator[]> {
  const services = (await api.request('GET', `/api/v1/namespaces/${SOAK_NAMESPACE}/services`)) as {
    items?: Service[];
  };
  const clientPod = [...pods.values()].find((p) => p.app === CLIENT);
  if (!clientPod) throw new Error('soak: the soak-client pod is missing');
  const targets = soakTargets(
    servicePlan(options.services),
    frontendsOf(services.items ?? []),
    clientPod,
    pods.values(),
    layout.nodes,
  );
  const generator = (
    where: string,
    netns: string,
    of: SoakTargets['pod'],
    share: number,
    file: string,
  ): SoakGenerator => ({
    where,
    netns,
    targets: of.targets,
    long: of.long,
    config: {
      durationMs: options.durationMs,
      ratePerSecond: Math.max(1, Math.round(options.ratePerSecond * share)),
      timeoutMs: REQUEST_TIMEOUT_MS,
      targets: of.targets,
      long: of.long,
      longIntervalMs: 250,
    },
    file: new RecordFile(join(workDir, file)),
  });
  return [
    generator(
      `pod/${clientPod.name}`,
      podNamespaceName(state.prefix, SOAK_NAMESPACE, clientPod.name),
      targets.pod,
      0.6,
      'pod.ndjson',
    ),
    generator('client', layout.clientNamespace, targets.client, 0.4, 'client.ndjson'),
  ];
}

/** Each generator as `lab load` in its namespace; resolves when they are done. */
function startGenerators(
  generators: readonly SoakGenerator[],
  workDir: string,
  runner: CommandRunner,
  durationMs: number,
): Promise<{ code: number; stderr: string }[]> {
  return Promise.all(
    generators.map((g, i) => {
      const configPath = join(workDir, `load-${i}.json`);
      writeFileSync(configPath, JSON.stringify(g.config));
      return runner.run(
        'ip',
        ['netns', 'exec', g.netns, ...labCliArgv(['load', '--config', configPath, '--out', g.file.path])],
        { timeoutMs: durationMs + 60_000 },
      );
    }),
  );
}

/**
 * Churn: one change every 1/rate seconds, up to CHURN_IN_FLIGHT writes at once (an API server busy with the
 * EndpointSlices of 200 Services answers a write in a few hundred ms); past that the next change waits, so the
 * rate reached is what the cluster took, and the report says it.
 */
async function churnUntil(churn: Churn, perSecond: number, endAt: number): Promise<void> {
  if (perSecond <= 0) return;
  const every = 1000 / perSecond;
  const inFlight = new Set<Promise<void>>();
  for (let next = Date.now(); Date.now() < endAt;) {
    if (inFlight.size >= CHURN_IN_FLIGHT) await Promise.race(inFlight);
    const p = churn.step().finally(() => inFlight.delete(p));
    inFlight.add(p);
    next += every;
    await delay(Math.max(0, next - Date.now()));
  }
  await Promise.all(inFlight);
}

interface RestartContext {
  readonly nodes: readonly LabNodeLayout[];
  readonly paths: LabPaths;
  readonly deps: SoakDeps;
  readonly sampler: NodeSampler;
  readonly timers: Timers;
  readonly endAt: number;
}

/**
 * A proxy restart every `every` ms, the nodes in turn, SIGTERM and SIGKILL alternately; each one's record gets
 * the time its proxy synced again. `restarting` settles when the last restart's wait is over.
 */
function scheduleRestarts(
  every: number,
  durationMs: number,
  c: RestartContext,
): { restarts: ProxyRestart[]; restarting: Promise<void>[] } {
  const restarts: ProxyRestart[] = [];
  const restarting: Promise<void>[] = [];
  let n = 0;
  const restartOne = (): void => {
    // Room for the new process to come up and sync, and for the connections to show they survived.
    if (Date.now() + RESTART_ROOM_MS > c.endAt) return;
    const node = c.nodes[n % c.nodes.length];
    const signal = n % 2 === 0 ? 'SIGTERM' : 'SIGKILL';
    n++;
    if (!node) return;
    restarting.push(restartProxy(node.name, signal, restarts, c));
    c.timers.after(every, restartOne);
  };
  c.timers.after(Math.min(every, durationMs / 3), restartOne);
  return { restarts, restarting };
}

async function restartProxy(
  node: string,
  signal: 'SIGTERM' | 'SIGKILL',
  restarts: ProxyRestart[],
  c: RestartContext,
): Promise<void> {
  const { progress, runner } = c.deps;
  const r = await signalProxy(runner, node, c.paths.proxyPidFile(node), signal);
  if (typeof r === 'string') return progress(`proxy restart: ${r}`);
  progress(`${signal} to kube-proxy on ${node} (pid ${r.pid})`);
  restarts.push(r);
  try {
    await waitUntil(`kube-proxy on ${node} to sync after ${signal}`, 60_000, () => {
      const p = c.sampler.latest(node);
      return p !== undefined && p.t > r.at && p.lastSyncMs > r.at;
    });
    r.syncedAt = c.sampler.latest(node)?.lastSyncMs;
    progress(
      `kube-proxy on ${node} synced again ${(((r.syncedAt ?? 0) - r.at) / 1000).toFixed(1)} s after ${signal}`,
    );
  } catch (e) {
    progress(String(e));
  }
}

/** An API server outage every `every` ms (none in the last 5 s); the times they began. */
function scheduleOutages(
  every: number,
  outage: () => void,
  c: Pick<RestartContext, 'deps' | 'timers' | 'endAt'>,
): number[] {
  const began: number[] = [];
  const next = (): void => {
    if (Date.now() + 5000 > c.endAt) return;
    began.push(Date.now());
    outage();
    c.deps.progress('API server outage');
    c.timers.after(every, next);
  };
  c.timers.after(every, next);
  return began;
}

/** A progress line every 5 s while the soak runs: requests, failures, changes, each node's pending changes. */
function progressTicker(
  generators: readonly SoakGenerator[],
  churn: Churn,
  sampler: NodeSampler,
  nodes: readonly LabNodeLayout[],
  startedAt: number,
  progress: (line: string) => void,
): NodeJS.Timeout {
  return setInterval(() => {
    for (const g of generators) g.file.read();
    const recs = generators.flatMap((g) => g.file.records.filter((r) => r.k === 'req'));
    const failed = recs.filter((r) => r.r !== 'ok').length;
    const pending = nodes
      .map((n) => `${n.name} ${sampler.latest(n.name)?.pendingEndpoints ?? '?'}`)
      .join(', ');
    progress(
      `${((Date.now() - startedAt) / 1000).toFixed(0)} s: ${recs.length} requests, ${failed} not answered; ${churn.records.length} changes; pending ${pending}`,
    );
  }, 5000);
}

/**
 * After the load: flipped pods ready again, every proxy synced with nothing pending; then the nodes checked for
 * stale UDP entries. Pods still in their grace period are serving endpoints: their UDP entries are not stale
 * until they are gone and that removal is synced.
 */
async function settleAndCheckConntrack(
  churn: Churn,
  pods: ReadonlyMap<string, PodState>,
  sampler: NodeSampler,
  api: LabApi,
  deps: SoakDeps,
  nodes: readonly LabNodeLayout[],
): Promise<{ count: number; evidence: string[] }> {
  const { progress } = deps;
  await churn.restore();
  progress('waiting for terminating pods to be gone and every proxy to sync that');
  await waitUntil('the terminating soak pods to be gone', 120_000, () =>
    [...pods.values()].every((p) => !p.terminating),
  ).catch((e: unknown) => progress(String(e)));
  await settled(sampler, nodes, 'every proxy to settle after the soak').catch((e: unknown) =>
    progress(String(e)),
  );
  await delay(1500);
  return staleConntrack(api, deps.runner, nodes);
}

/** Exits of a kube-proxy the soak did not cause: restarts beyond its own, and pods replaced. */
function unexpectedExits(before: ProxyPodStatus, after: ProxyPodStatus, caused: number): number {
  const replaced = after.names.filter((n) => !before.names.includes(n)).length;
  return Math.max(0, after.restarts - before.restarts - caused) + replaced;
}

/**
 * What the soak ran against: the proxies' mode and sync periods as the first node's /configz gives them (after a
 * ConfigMap edit and a rollout restart they are not what `lab up` started with), else the lab's state.
 */
function reportSettings(
  state: LabState,
  options: SoakOptions,
  running: AgentSettings | undefined,
): SoakInputs['settings'] {
  const mode = running?.mode ?? state.mode;
  return {
    mode,
    ...(running !== undefined
      ? {
          minSyncPeriod: formatGoDuration(running.minSyncPeriodSeconds * 1000),
          syncPeriod: formatGoDuration(running.syncPeriodSeconds * 1000),
        }
      : {}),
    ...(mode === 'nftables' ? { layout: state.nftablesLayout ?? 'upstream' } : {}),
    ...(state.iptables !== undefined ? { iptables: state.iptables } : {}),
    durationSeconds: options.durationMs / 1000,
    services: options.services,
    churnPerSecond: options.churnPerSecond,
    ratePerSecond: options.ratePerSecond,
    competingLockHolder: options.competingLockHolder,
    ...(options.restartProxyEveryMs !== undefined
      ? { restartProxyEverySeconds: options.restartProxyEveryMs / 1000 }
      : {}),
    ...(options.apiserverOutageEveryMs !== undefined
      ? { apiserverOutageEverySeconds: options.apiserverOutageEveryMs / 1000 }
      : {}),
  };
}

/** The lab as its state file records it, or an error saying why there is none. */
function openLab(stateDir: string): { state: LabState; layout: LabLayout; paths: LabPaths; api: LabApi } {
  const paths = labPaths(stateDir);
  const read = readLabState(paths.stateFile);
  if (!read.ok) throw new Error(read.missing ? 'no lab is up (kube-proxy-ts lab up)' : read.reason);
  const { state } = read;
  const api = labApi({ url: state.apiserverURL, token: state.token, caPem: state.caPem });
  return { state, layout: layoutOf(state), paths, api };
}

export async function runSoak(options: SoakOptions, deps: SoakDeps): Promise<SoakReport> {
  const bad = checkSoakOptions(options);
  if (bad !== undefined) throw new Error(bad);
  const { state, layout, paths, api } = openLab(deps.stateDir);
  const { progress } = deps;
  const workDir = join(deps.stateDir, 'soak');
  rmSync(workDir, { recursive: true, force: true });
  mkdirSync(workDir, { recursive: true, mode: 0o700 });

  progress(`removing what an earlier soak left, if anything`);
  await deleteWorkload(api, deps.runner, state.prefix);
  const plans = servicePlan(options.services);
  const expectedPods = deployments(options.services).reduce((a, d) => a + d.replicas, 0);
  progress(
    `creating namespace ${SOAK_NAMESPACE}: ${plans.length} Services, ${expectedPods} pods in ${deployments(options.services).length} Deployments`,
  );
  await createWorkload(api, options.services);

  const abort = new AbortController();
  const { pods, timeline, watches } = watchWorkload(api, abort.signal);
  const sampler = new NodeSampler(deps.runner, layout.nodes);
  const basePath = process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin';
  const saves = new IptablesSaveSampler(
    deps.runner,
    layout.nodes.map((n) => ({ ...n, env: nodeEnvironment(paths, n.name, state.iptables, basePath) })),
  );
  const lockHolders: { stop(): Promise<void> }[] = [];
  const timers = new Timers();
  try {
    await waitUntil(`${expectedPods} soak pods ready`, 300_000, () => {
      const ready = [...pods.values()].filter((p) => p.ready && !p.terminating).length;
      return ready >= expectedPods;
    });
    sampler.start();
    await settled(sampler, layout.nodes, 'every proxy to sync the soak workload');
    const generators = await loadGenerators(api, state, layout, pods, options, workDir);

    const kubeProxyBefore = await proxyPods(api);
    if (options.competingLockHolder) {
      progress('starting a competing xtables lock holder on every node (400 ms held, 200 ms free)');
      lockHolders.push(
        startLockHolders(
          deps.streams,
          layout.nodes.map((n) => nodeEnvironment(paths, n.name, undefined, '').XTABLES_LOCKFILE ?? ''),
        ),
      );
    }
    const runningConfig =
      layout.nodes[0] && (await fetchProxySettings(deps.runner, layout.nodes[0].namespace));
    const startedAt = Date.now();
    saves.start();
    const endAt = startedAt + options.durationMs;
    const [podGen, clientGen] = generators;
    const longCount = generators.flatMap((g) => g.long).reduce((a, l) => a + l.connections, 0);
    progress(
      `soak: ${options.durationMs / 1000} s, load ${options.ratePerSecond} req/s (${podGen?.targets.length} ClusterIP targets from ${podGen?.where.replace('pod/', '')}, ${clientGen?.targets.length} NodePort targets from the client; ${longCount} long-lived connections), churn ${options.churnPerSecond}/s`,
    );
    const running = startGenerators(generators, workDir, deps.runner, options.durationMs);
    const churn = new Churn(
      api,
      () => [...pods.values()],
      Array.from({ length: flappyCount(options.services) }, (_, k) => flappyName(k)),
    );
    const churning = churnUntil(churn, options.churnPerSecond, endAt);
    const faults = { nodes: layout.nodes, paths, deps, sampler, timers, endAt };
    const { restarts, restarting } =
      options.restartProxyEveryMs !== undefined
        ? scheduleRestarts(options.restartProxyEveryMs, options.durationMs, faults)
        : { restarts: [], restarting: [] };
    const apiOutages =
      options.apiserverOutageEveryMs !== undefined && deps.apiOutage
        ? scheduleOutages(options.apiserverOutageEveryMs, deps.apiOutage, faults)
        : [];
    const ticker = progressTicker(generators, churn, sampler, layout.nodes, startedAt, progress);
    const results = await running;
    clearInterval(ticker);
    await churning;
    timers.clear();
    await Promise.all(restarting);
    const endedAt = Date.now();
    await saves.stop();
    for (const h of lockHolders.splice(0)) await h.stop();
    results.forEach((r, i) => {
      if (r.code !== 0)
        progress(`load generator ${generators[i]?.where}: exit ${r.code}: ${r.stderr.trim().slice(0, 500)}`);
    });
    for (const g of generators) g.file.read();

    const stale = await settleAndCheckConntrack(churn, pods, sampler, api, deps, layout.nodes);
    const unexpectedProxyExits = unexpectedExits(kubeProxyBefore, await proxyPods(api), restarts.length);
    await sampler.stop();

    const report = buildReport({
      settings: reportSettings(state, options, runningConfig),
      iptablesSave: saves.summary(),
      startedAt,
      endedAt,
      generators: generators.map((g) => ({
        where: g.where,
        targets: g.targets,
        long: g.long,
        records: g.file.records,
      })),
      churnOf: new Map(plans.map((p) => [p.name, p.churn])),
      timeline,
      churn: churn.records,
      nodes: sampler.series,
      restarts,
      apiOutages,
      apiOutageMs: API_OUTAGE_MS,
      staleUdpConntrack: stale,
      unexpectedProxyExits,
    });
    progress(`soak done: ${report.requests.sent} requests, ${failedTotal(report.requests)} failed`);
    return report;
  } finally {
    timers.clear();
    for (const h of lockHolders) await h.stop();
    await saves.stop();
    await sampler.stop();
    abort.abort();
    await Promise.all(watches);
    progress(`deleting namespace ${SOAK_NAMESPACE}`);
    await deleteWorkload(api, deps.runner, state.prefix).catch((e: unknown) =>
      progress(`cleanup: ${String(e)}`),
    );
    rmSync(workDir, { recursive: true, force: true });
  }
}

/** The doctor's stale-udp-conntrack check on every node, over the cluster as the API server has it now. */
async function staleConntrack(
  api: LabApi,
  runner: CommandRunner,
  nodes: readonly { readonly name: string; readonly namespace: string }[],
): Promise<{ count: number; evidence: string[] }> {
  const list = async <T>(path: string): Promise<T[]> =>
    ((await api.request('GET', path)) as { items?: T[] }).items ?? [];
  const cluster = clusterView(
    {
      services: await list<Service>('/api/v1/services'),
      endpointSlices: await list<EndpointSlice>('/apis/discovery.k8s.io/v1/endpointslices'),
      nodes: await list<Node>('/api/v1/nodes'),
    },
    'the lab’s API server',
  );
  let count = 0;
  const evidence: string[] = [];
  for (const n of nodes) {
    const ctx: DoctorContext = {
      runner: netnsCommandRunner(n.namespace, runner),
      now: Date.now(),
      metricsURL: '',
      metrics: { error: 'not read' },
      healthzURL: '',
      healthz: { error: 'not read' },
      xtablesLockFile: '',
      cluster,
    };
    const f = await staleUdpConntrack.run.call(staleUdpConntrack, ctx);
    if (f.severity === 'skipped') {
      evidence.push(`${n.name}: not checked: ${f.summary}`);
      continue;
    }
    const stale = f.severity === 'ok' ? 0 : Number(/^(\d+)/.exec(f.summary)?.[1] ?? 1);
    count += stale;
    if (stale > 0) evidence.push(...f.evidence.map((e) => `${n.name}: ${e}`));
  }
  return { count, evidence };
}
