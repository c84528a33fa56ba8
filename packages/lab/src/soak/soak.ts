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
import { labLayout, labPaths, podNamespaceName } from '../cluster/layout.js';
import { listNamespaces } from '@kube-proxy-ts/netns/index.js';
import { nodeEnvironment } from '../cluster/node-env.js';
import { labCliArgv } from '../cluster/processes.js';
import { readLabState, type LabState } from '../cluster/state.js';
import { Churn, type PodState } from './churn.js';
import { EligibilityTimeline } from './eligibility.js';
import { signalProxy, startLockHolders, type ProxyRestart } from './faults.js';
import { labApi, type LabApi } from './lab-client.js';
import {
  CONTROL_SERVICE,
  type LoadConfig,
  type LoadRecord,
  type LoadTarget,
  type LongTarget,
} from './load-generator.js';
import { WEB_POD_PORT } from '../cluster/workload.js';
import { API_OUTAGE_MS } from '../cluster/relay.js';
import { NodeSampler } from './node-sampler.js';
import { buildReport, failedTotal, type Generator, type SoakReport } from './report.js';
import {
  ANCHOR,
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

export async function runSoak(options: SoakOptions, deps: SoakDeps): Promise<SoakReport> {
  const bad = checkSoakOptions(options);
  if (bad !== undefined) throw new Error(bad);
  const read = readLabState(labPaths(deps.stateDir).stateFile);
  if (!read.ok) throw new Error(read.missing ? 'no lab is up (kube-proxy-ts lab up)' : read.reason);
  const state: LabState = read.state;
  const layout = labLayout(state.nodes.length, state.prefix);
  const paths = labPaths(deps.stateDir);
  const api = labApi({ url: state.apiserverURL, token: state.token, caPem: state.caPem });
  const { progress } = deps;
  const workDir = join(deps.stateDir, 'soak');
  rmSync(workDir, { recursive: true, force: true });
  mkdirSync(workDir, { recursive: true, mode: 0o700 });

  progress(`removing what an earlier soak left, if anything`);
  await deleteWorkload(api, deps.runner, state.prefix);
  const plans = servicePlan(options.services);
  const churnOf = new Map(plans.map((p) => [p.name, p.churn]));
  const expectedPods = deployments(options.services).reduce((a, d) => a + d.replicas, 0);
  progress(
    `creating namespace ${SOAK_NAMESPACE}: ${plans.length} Services, ${expectedPods} pods in ${deployments(options.services).length} Deployments`,
  );
  await createWorkload(api, options.services);

  const abort = new AbortController();
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
      abort.signal,
    ),
    api.watch(
      `/apis/discovery.k8s.io/v1/namespaces/${SOAK_NAMESPACE}/endpointslices`,
      (type, obj) => (type === 'RESET' ? timeline.reset() : timeline.observe(type, obj, Date.now())),
      abort.signal,
    ),
  ].map((p) => p.catch(() => undefined));

  const sampler = new NodeSampler(deps.runner, layout.nodes);
  const lockHolders: { stop(): Promise<void> }[] = [];
  const timers: NodeJS.Timeout[] = [];
  try {
    await waitUntil(`${expectedPods} soak pods ready`, 300_000, () => {
      const ready = [...pods.values()].filter((p) => p.ready && !p.terminating).length;
      return ready >= expectedPods;
    });
    sampler.start();
    await settled(sampler, layout.nodes, 'every proxy to sync the soak workload');

    // Frontends: ClusterIPs and NodePorts, as the API server allocated them.
    const svcList = (await api.request('GET', `/api/v1/namespaces/${SOAK_NAMESPACE}/services`)) as {
      items?: Service[];
    };
    const frontends = new Map<string, { clusterIP: string; tcpNodePort?: number; udpNodePort?: number }>();
    for (const s of svcList.items ?? []) {
      const ports = s.spec?.ports ?? [];
      frontends.set(s.metadata?.name ?? '', {
        clusterIP: s.spec?.clusterIP ?? '',
        ...(ports.find((p) => p.protocol === 'TCP')?.nodePort !== undefined
          ? { tcpNodePort: ports.find((p) => p.protocol === 'TCP')?.nodePort }
          : {}),
        ...(ports.find((p) => p.protocol === 'UDP')?.nodePort !== undefined
          ? { udpNodePort: ports.find((p) => p.protocol === 'UDP')?.nodePort }
          : {}),
      });
    }
    const clientPod = [...pods.values()].find((p) => p.app === CLIENT);
    if (!clientPod) throw new Error('soak: the soak-client pod is missing');
    // ClusterIP load from a pod: a few Services of each churn kind (graceful, readiness) and the anchor.
    const clusterTargets: LoadTarget[] = [];
    for (const plan of [
      ...plans.filter((p) => p.name !== ANCHOR).slice(0, 8),
      ...plans.filter((p) => p.name === ANCHOR),
    ])
      for (const protocol of ['tcp', 'udp'] as const)
        clusterTargets.push({
          service: plan.name,
          protocol,
          via: 'clusterIP',
          host: frontends.get(plan.name)?.clusterIP ?? '',
          port: 80,
          ...(clientPod.node !== undefined ? { node: clientPod.node } : {}),
        });
    // The control: the anchor pods' own addresses, the same pod servers without any Service rule in the path.
    for (const p of [...pods.values()].filter((x) => x.app === ANCHOR && x.ip !== undefined))
      for (const protocol of ['tcp', 'udp'] as const)
        clusterTargets.push({
          service: CONTROL_SERVICE,
          protocol,
          via: 'podIP',
          host: p.ip ?? '',
          port: WEB_POD_PORT,
        });
    const anchor = frontends.get(ANCHOR);
    const podLong: LongTarget[] = [
      { service: ANCHOR, via: 'clusterIP', host: anchor?.clusterIP ?? '', port: 80, connections: 4 },
    ];
    // NodePort load from the client host, through every node.
    const nodePortTargets: LoadTarget[] = [];
    for (const plan of plans.filter((p) => p.nodePort && p.name !== ANCHOR))
      for (const n of layout.nodes) {
        const f = frontends.get(plan.name);
        if (f?.tcpNodePort !== undefined)
          nodePortTargets.push({
            service: plan.name,
            protocol: 'tcp',
            via: 'nodePort',
            host: n.ip,
            port: f.tcpNodePort,
            node: n.name,
          });
        if (f?.udpNodePort !== undefined)
          nodePortTargets.push({
            service: plan.name,
            protocol: 'udp',
            via: 'nodePort',
            host: n.ip,
            port: f.udpNodePort,
            node: n.name,
          });
      }
    const clientLong: LongTarget[] =
      anchor?.tcpNodePort === undefined
        ? []
        : layout.nodes.map((n) => ({
            service: ANCHOR,
            via: 'nodePort' as const,
            host: n.ip,
            port: anchor.tcpNodePort ?? 0,
            connections: 2,
          }));

    const generators: (Omit<Generator, 'records'> & {
      file: RecordFile;
      netns: string;
      config: LoadConfig;
    })[] = [
      {
        where: `pod/${clientPod.name}`,
        netns: podNamespaceName(state.prefix, SOAK_NAMESPACE, clientPod.name),
        targets: clusterTargets,
        long: podLong,
        config: {
          durationMs: options.durationMs,
          ratePerSecond: Math.max(1, Math.round(options.ratePerSecond * 0.6)),
          timeoutMs: REQUEST_TIMEOUT_MS,
          targets: clusterTargets,
          long: podLong,
          longIntervalMs: 250,
        },
        file: new RecordFile(join(workDir, 'pod.ndjson')),
      },
      {
        where: 'client',
        netns: layout.clientNamespace,
        targets: nodePortTargets,
        long: clientLong,
        config: {
          durationMs: options.durationMs,
          ratePerSecond: Math.max(1, Math.round(options.ratePerSecond * 0.4)),
          timeoutMs: REQUEST_TIMEOUT_MS,
          targets: nodePortTargets,
          long: clientLong,
          longIntervalMs: 250,
        },
        file: new RecordFile(join(workDir, 'client.ndjson')),
      },
    ];

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
    const startedAt = Date.now();
    progress(
      `soak: ${options.durationMs / 1000} s, load ${options.ratePerSecond} req/s (${clusterTargets.length} ClusterIP targets from ${clientPod.name}, ${nodePortTargets.length} NodePort targets from the client; ${[...podLong, ...clientLong].reduce((a, l) => a + l.connections, 0)} long-lived connections), churn ${options.churnPerSecond}/s`,
    );
    const running = generators.map((g, i) => {
      const configPath = join(workDir, `load-${i}.json`);
      writeFileSync(configPath, JSON.stringify(g.config));
      return deps.runner.run(
        'ip',
        ['netns', 'exec', g.netns, ...labCliArgv(['load', '--config', configPath, '--out', g.file.path])],
        {
          timeoutMs: options.durationMs + 60_000,
        },
      );
    });
    const endAt = startedAt + options.durationMs;

    // Churn: one change every 1/rate seconds, up to CHURN_IN_FLIGHT writes at once (an API server busy with the
    // EndpointSlices of 200 Services answers a write in a few hundred ms); past that the next change waits, so
    // the rate reached is what the cluster took, and the report says it.
    const churn = new Churn(
      api,
      () => [...pods.values()],
      Array.from({ length: flappyCount(options.services) }, (_, k) => flappyName(k)),
    );
    const churning = (async () => {
      if (options.churnPerSecond <= 0) return;
      const every = 1000 / options.churnPerSecond;
      const inFlight = new Set<Promise<void>>();
      for (let next = Date.now(); Date.now() < endAt;) {
        if (inFlight.size >= CHURN_IN_FLIGHT) await Promise.race(inFlight);
        const p = churn.step().finally(() => inFlight.delete(p));
        inFlight.add(p);
        next += every;
        await delay(Math.max(0, next - Date.now()));
      }
      await Promise.all(inFlight);
    })();

    // Faults on timers.
    const restarts: ProxyRestart[] = [];
    const restarting: Promise<void>[] = [];
    if (options.restartProxyEveryMs !== undefined) {
      let n = 0;
      const every = options.restartProxyEveryMs;
      const restartOne = (): void => {
        // Room for the new process to come up and sync, and for the connections to show they survived.
        if (Date.now() + RESTART_ROOM_MS > endAt) return;
        const node = layout.nodes[n % layout.nodes.length];
        const signal = n % 2 === 0 ? 'SIGTERM' : 'SIGKILL';
        n++;
        if (!node) return;
        restarting.push(
          (async () => {
            const r = await signalProxy(deps.runner, node.name, paths.proxyPidFile(node.name), signal);
            if (typeof r === 'string') return progress(`proxy restart: ${r}`);
            progress(`${signal} to kube-proxy on ${node.name} (pid ${r.pid})`);
            restarts.push(r);
            try {
              await waitUntil(`kube-proxy on ${node.name} to sync after ${signal}`, 60_000, () => {
                const p = sampler.latest(node.name);
                return p !== undefined && p.t > r.at && p.lastSyncMs > r.at;
              });
              r.syncedAt = sampler.latest(node.name)?.lastSyncMs;
              progress(
                `kube-proxy on ${node.name} synced again ${(((r.syncedAt ?? 0) - r.at) / 1000).toFixed(1)} s after ${signal}`,
              );
            } catch (e) {
              progress(String(e));
            }
          })(),
        );
        timers.push(setTimeout(restartOne, every));
      };
      timers.push(setTimeout(restartOne, Math.min(every, options.durationMs / 3)));
    }
    const apiOutages: number[] = [];
    if (options.apiserverOutageEveryMs !== undefined && deps.apiOutage) {
      const every = options.apiserverOutageEveryMs;
      const outage = (): void => {
        if (Date.now() + 5000 > endAt) return;
        apiOutages.push(Date.now());
        deps.apiOutage?.();
        progress('API server outage');
        timers.push(setTimeout(outage, every));
      };
      timers.push(setTimeout(outage, every));
    }

    // Progress every 5 s while it runs.
    const ticker = setInterval(() => {
      for (const g of generators) g.file.read();
      const recs = generators.flatMap((g) => g.file.records.filter((r) => r.k === 'req'));
      const failed = recs.filter((r) => r.r !== 'ok').length;
      const pending = layout.nodes
        .map((n) => `${n.name} ${sampler.latest(n.name)?.pendingEndpoints ?? '?'}`)
        .join(', ');
      progress(
        `${((Date.now() - startedAt) / 1000).toFixed(0)} s: ${recs.length} requests, ${failed} not answered; ${churn.records.length} changes; pending ${pending}`,
      );
    }, 5000);
    const results = await Promise.all(running);
    clearInterval(ticker);
    await churning;
    for (const t of timers) clearTimeout(t);
    await Promise.all(restarting);
    const endedAt = Date.now();
    for (const h of lockHolders.splice(0)) await h.stop();
    results.forEach((r, i) => {
      if (r.code !== 0)
        progress(`load generator ${generators[i]?.where}: exit ${r.code}: ${r.stderr.trim().slice(0, 500)}`);
    });
    for (const g of generators) g.file.read();

    // Settle: flipped pods ready again, every proxy synced with nothing pending; then look for stale UDP entries.
    // Pods still in their grace period are serving endpoints: their UDP entries are not stale until they are
    // gone and that removal is synced.
    await churn.restore();
    progress('waiting for terminating pods to be gone and every proxy to sync that');
    await waitUntil('the terminating soak pods to be gone', 120_000, () =>
      [...pods.values()].every((p) => !p.terminating),
    ).catch((e: unknown) => progress(String(e)));
    await settled(sampler, layout.nodes, 'every proxy to settle after the soak').catch((e: unknown) =>
      progress(String(e)),
    );
    await delay(1500);
    const stale = await staleConntrack(api, deps.runner, layout.nodes);
    const kubeProxyAfter = await proxyPods(api);
    const replaced = kubeProxyAfter.names.filter((n) => !kubeProxyBefore.names.includes(n)).length;
    const unexpectedProxyExits =
      Math.max(0, kubeProxyAfter.restarts - kubeProxyBefore.restarts - restarts.length) + replaced;
    await sampler.stop();

    const report = buildReport({
      settings: {
        mode: state.mode,
        ...(state.mode === 'nftables' ? { layout: state.nftablesLayout ?? 'upstream' } : {}),
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
      },
      startedAt,
      endedAt,
      generators: generators.map((g) => ({
        where: g.where,
        targets: g.targets,
        long: g.long,
        records: g.file.records,
      })),
      churnOf,
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
    for (const t of timers) clearTimeout(t);
    for (const h of lockHolders) await h.stop();
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
  const cluster = clusterView({
    services: await list<Service>('/api/v1/services'),
    endpointSlices: await list<EndpointSlice>('/apis/discovery.k8s.io/v1/endpointslices'),
    nodes: await list<Node>('/api/v1/nodes'),
  });
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
    const stale = f.severity === 'ok' ? 0 : Number(/^(\d+)/.exec(f.summary)?.[1] ?? 1);
    count += stale;
    if (stale > 0 || f.notChecked !== undefined) evidence.push(...f.evidence.map((e) => `${n.name}: ${e}`));
  }
  return { count, evidence };
}
