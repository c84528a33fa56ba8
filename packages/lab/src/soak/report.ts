// From what the soak saw to what it reports: every request classified (answered by an eligible endpoint, or
// refused / timed out / reset / answered by a pod that was not a ready or serving endpoint then), per Service and
// per kind of churn; each node's proxy as its metrics tell it (network programming latency, syncs, lock waits);
// what the proxy restarts did to long-lived connections; and the guarantees the soak holds the proxy to.
import { histogram, type HistogramSummary, type Sample } from 'kube-proxy-ts/inspect/prometheus.js';
import type { ChurnRecord } from './churn.js';
import type { EligibilityTimeline } from './eligibility.js';
import type { LostConnection, ProxyRestart } from './faults.js';
import {
  CONTROL_SERVICE,
  type LoadRecord,
  type LoadTarget,
  type LongTarget,
  type Outcome,
} from './load-generator.js';
import { HISTOGRAMS, type NodeSeries } from './node-sampler.js';
import type { IptablesSaveSummary } from './iptables-save.js';
import { notBackInTime, outageRecoveries, type OutageRecovery } from './outages.js';
import type { ChurnKind } from './workload.js';

export interface Generator {
  /** "client" (the host outside the cluster) or "pod/NAME". */
  readonly where: string;
  readonly targets: readonly LoadTarget[];
  readonly long: readonly LongTarget[];
  readonly records: readonly LoadRecord[];
}

export interface SoakInputs {
  readonly settings: SoakSettings;
  readonly startedAt: number;
  readonly endedAt: number;
  readonly generators: readonly Generator[];
  readonly churnOf: ReadonlyMap<string, ChurnKind>;
  readonly timeline: EligibilityTimeline;
  readonly churn: readonly ChurnRecord[];
  readonly nodes: ReadonlyMap<string, NodeSeries>;
  readonly restarts: readonly ProxyRestart[];
  readonly apiOutages: readonly number[];
  /** How long each outage cut the nodes off (ms). */
  readonly apiOutageMs: number;
  readonly staleUdpConntrack: { readonly count: number; readonly evidence: readonly string[] };
  /** Container restarts of each node's kube-proxy that the soak did not cause. */
  readonly unexpectedProxyExits: number;
  /** Each node's iptables-save timed during the run (iptables-save.ts). */
  readonly iptablesSave: Readonly<Record<string, IptablesSaveSummary>>;
}

export interface SoakSettings {
  readonly mode: string;
  /** The running mode's minSyncPeriod and syncPeriod, as the proxies' /configz gives them. */
  readonly minSyncPeriod?: string;
  readonly syncPeriod?: string;
  readonly layout?: string;
  readonly iptables?: string;
  readonly durationSeconds: number;
  readonly services: number;
  readonly churnPerSecond: number;
  readonly ratePerSecond: number;
  readonly competingLockHolder: boolean;
  readonly restartProxyEverySeconds?: number;
  readonly apiserverOutageEverySeconds?: number;
}

export interface Failed {
  refused: number;
  timeout: number;
  reset: number;
  wrongEndpoint: number;
  other: number;
}

export interface Tally {
  sent: number;
  succeeded: number;
  failed: Failed;
}

export interface FailureSample {
  /** Seconds since the soak's start. */
  readonly at: number;
  readonly from: string;
  readonly service: string;
  readonly to: string;
  readonly kind: keyof Failed;
  readonly pod?: string;
  /** A wrong endpoint's answering pod: how long before the request it had left the Service's eligible pods… */
  readonly leftMsBefore?: number;
  /** …or how long after the request's end it became eligible (a new pod's address reached too soon). */
  readonly eligibleMsAfter?: number;
}

/** One node after one API server outage. */
export interface OutageReport {
  readonly node: string;
  /** Seconds since the soak's start when the outage began. */
  readonly at: number;
  /** From the outage's start to the first sample showing the node receiving changes again (1 s resolution). */
  readonly heardAfterMs?: number;
  /** From the outage's start to its first sync after that. */
  readonly syncedAfterMs?: number;
}

export interface LatencyMs {
  readonly count: number;
  readonly p50?: number;
  readonly p99?: number;
  /** The upper bound of the highest histogram bucket observed (bucket precision). */
  readonly max?: number;
}

export interface SoakReport {
  readonly settings: SoakSettings;
  readonly durationSeconds: number;
  readonly requests: Tally & {
    readonly byChurn: Record<ChurnKind, Tally>;
    readonly byService: Record<string, Tally & { churn: ChurnKind; alwaysReady: boolean }>;
    /** How long the answering pod had been out of the Service's eligible endpoints, at most (ms). */
    readonly wrongEndpointLagMaxMs: number;
    /**
     * Failures to always-ready Services within 2 s of a failed control request (straight to a pod's address):
     * the machine's, not the rules'; left out of the guarantee and counted here.
     */
    readonly failedNearControlFailure: number;
    /**
     * Failures to always-ready Services whose path's node had its proxy down (restarting, until a second after
     * its first sync): the cost of the restart, left out of the guarantee and counted here.
     */
    readonly failedWhileProxyDown: number;
    /**
     * Failures to always-ready Services whose path's node had not yet heard the API server again after an outage
     * (from the outage's start until a second after its first sync once it heard): its rules stood still.
     */
    readonly failedWhileNodeDeaf: number;
    /** The first failures, each with where it was sent from and to (at most 50). */
    readonly failureSamples: readonly FailureSample[];
  };
  /** Requests straight to pod addresses, beside the Service traffic: what the machine itself delivered. */
  readonly control: Tally;
  readonly programmingLatencyMs: LatencyMs & { readonly byNode: Record<string, LatencyMs> };
  readonly syncs: Record<string, LatencyMs & { readonly metricsUnanswered: number }>;
  readonly lockWaits: Record<string, LatencyMs & { readonly totalMs: number }>;
  /** Each node's iptables-save during the run: seed 003's measure of the ruleset every iptables writer pays for. */
  readonly iptablesSave: Readonly<Record<string, IptablesSaveSummary>>;
  readonly churn: {
    readonly changes: number;
    /** Changes per second reached (the API server's pace can keep it under --churn). */
    readonly perSecond: number;
    readonly failedWrites: number;
    readonly byKind: Record<string, number>;
  };
  readonly proxyRestarts: {
    readonly count: number;
    readonly connectionsOpen: number;
    readonly connectionsSurvived: number;
    /** Restarts whose proxy synced again only after every connection open at it had ended (or had none open). */
    readonly unmeasured: number;
    readonly restarts: readonly ProxyRestart[];
  };
  readonly apiserverOutages: number;
  /** Each outage for each node: when it heard the API server again and synced. */
  readonly outageRecoveries: readonly OutageReport[];
  readonly staleUdpConntrack: number;
  readonly staleUdpConntrackEvidence: readonly string[];
  readonly unexpectedProxyExits: number;
  /** What the soak holds every proxy to; `ok` is false when one of them does not hold. */
  readonly guarantees: {
    readonly ok: boolean;
    /** Requests that failed to Services that always had a ready endpoint and only graceful churn (or none). */
    readonly failedToAlwaysReadyServices: number;
    readonly connectionsLostToProxyRestarts: number;
    /** Nodes that had not heard the API server again a minute after an outage ended. */
    readonly nodesNotBackAfterOutages: number;
    readonly staleUdpConntrack: number;
    readonly unexpectedProxyExits: number;
  };
  /** One entry per second of the run: requests and failures, and each node's pending endpoint changes. */
  readonly perSecond: readonly {
    readonly t: number;
    readonly sent: number;
    readonly failed: number;
    readonly pending: Record<string, number>;
  }[];
  readonly marks: readonly { readonly t: number; readonly what: string }[];
}

function emptyTally(): Tally {
  return { sent: 0, succeeded: 0, failed: { refused: 0, timeout: 0, reset: 0, wrongEndpoint: 0, other: 0 } };
}

export function failedTotal(t: Tally): number {
  const f = t.failed;
  return f.refused + f.timeout + f.reset + f.wrongEndpoint + f.other;
}

function toMs(h: HistogramSummary | undefined): LatencyMs {
  if (!h) return { count: 0 };
  const ms = (s: number | undefined): number | undefined =>
    s === undefined ? undefined : Math.round(s * 10_000) / 10;
  const p50 = ms(h.p50);
  const p99 = ms(h.p99);
  const max = ms(h.maxBucket === Infinity ? undefined : h.maxBucket);
  return {
    count: h.count,
    ...(p50 !== undefined ? { p50 } : {}),
    ...(p99 !== undefined ? { p99 } : {}),
    ...(max !== undefined ? { max } : {}),
  };
}

/** A long-lived connection's answers, in order, and what it was (generator, target, connection). */
export interface LongHistory {
  readonly label: string;
  readonly points: readonly { readonly t: number; readonly r: Outcome }[];
}

function longHistories(generators: readonly Generator[]): LongHistory[] {
  const byKey = new Map<string, { t: number; r: Outcome }[]>();
  const labels = new Map<string, string>();
  generators.forEach((g, gi) => {
    for (const r of g.records) {
      if (r.k !== 'long') continue;
      const key = `${gi}/${r.i}/${r.c}`;
      const t = g.long[r.i];
      labels.set(
        key,
        `${g.where} → ${t?.service ?? '?'} via ${t?.via ?? '?'} ${t?.host ?? '?'}:${t?.port ?? '?'} #${r.c}`,
      );
      const h = byKey.get(key) ?? [];
      h.push({ t: r.t, r: r.r });
      byKey.set(key, h);
    }
  });
  return [...byKey].map(([key, h]) => ({
    label: labels.get(key) ?? key,
    points: h.sort((a, b) => a.t - b.t),
  }));
}

/**
 * What a proxy restart did to the long-lived connections open when the proxy stopped: each either survived (it
 * answered after the new process synced, with no failure between), was lost (it failed after the stop), or is
 * unmeasured: it kept answering until its load generator ended, and that was before the resync (each generator
 * ends on its own clock, so one's connections can end before a late resync and the other's after it).
 */
export function restartSurvival(
  histories: readonly LongHistory[],
  stoppedAt: number,
  syncedAt: number | undefined,
): { open: number; survived: number; unmeasured: number; lost: LostConnection[] } {
  let open = 0;
  let survived = 0;
  let unmeasured = 0;
  const lost: LostConnection[] = [];
  for (const { label, points } of histories) {
    const before = points.filter((x) => x.t <= stoppedAt);
    if (before.length === 0 || before.some((x) => x.r !== 'ok')) continue;
    const after = points.filter((x) => x.t > stoppedAt);
    const failure = after.find((x) => x.r !== 'ok');
    const lastAnswer = points[points.length - 1]?.t ?? 0;
    if (failure === undefined && (syncedAt === undefined || lastAnswer <= syncedAt)) {
      unmeasured++;
      continue;
    }
    open++;
    const firstFailure = failure?.t ?? Infinity;
    if (syncedAt !== undefined && after.some((x) => x.r === 'ok' && x.t > syncedAt && x.t < firstFailure))
      survived++;
    else if (failure !== undefined)
      lost.push({
        connection: label,
        outcome: failure.r,
        failedAfterMs: failure.t - stoppedAt,
        lastAnswerAfterMs:
          (before.concat(after.filter((x) => x.t < failure.t)).at(-1)?.t ?? stoppedAt) - stoppedAt,
      });
  }
  return { open, survived, unmeasured, lost };
}

interface Window {
  readonly node: string;
  readonly from: number;
  readonly to: number;
}

/** Whether time t fell in one of `node`'s windows. */
function inWindows(windows: readonly Window[]): (node: string | undefined, t: number) => boolean {
  return (node, t) => node !== undefined && windows.some((w) => w.node === node && t >= w.from && t <= w.to);
}

/** Requests straight to pod addresses, and whether one failed within 2 s of time t (the machine's failure). */
function controlRequests(o: SoakInputs): { control: Tally; nearControlFailure: (t: number) => boolean } {
  const control = emptyTally();
  const failedSeconds = new Set<number>();
  const secondOf = (t: number): number => Math.floor((t - o.startedAt) / 1000);
  for (const g of o.generators)
    for (const r of g.records) {
      const target = r.k === 'req' ? g.targets[r.i] : undefined;
      if (r.k !== 'req' || target?.service !== CONTROL_SERVICE) continue;
      control.sent++;
      if (r.r === 'ok') control.succeeded++;
      else {
        control.failed[r.r]++;
        failedSeconds.add(secondOf(r.t0));
      }
    }
  const nearControlFailure = (t: number): boolean => {
    const s = secondOf(t);
    for (let d = -2; d <= 2; d++) if (failedSeconds.has(s + d)) return true;
    return false;
  };
  return { control, nearControlFailure };
}

type Excuse = 'nearControlFailure' | 'whileProxyDown' | 'whileNodeDeaf';

/**
 * Why a failure at time t through `node`'s rules is not the rules' fault, if it is not. While a node's proxy is
 * down (from its stop to a second after its first sync), or cut off from the API server (from an outage's start
 * to a second after its first sync once it hears again), its rules stand still: a pod that dies meanwhile is
 * still in them. Such failures are the fault's cost; those near a failed control request are the machine's.
 */
function excuses(
  o: SoakInputs,
  recoveries: readonly OutageRecovery[],
  nearControlFailure: (t: number) => boolean,
): (node: string | undefined, t: number) => Excuse | undefined {
  const whileProxyDown = inWindows(
    o.restarts.map((r) => ({ node: r.node, from: r.at, to: (r.syncedAt ?? o.endedAt) + 1000 })),
  );
  const whileNodeDeaf = inWindows(
    recoveries.map((r) => ({ node: r.node, from: r.at, to: (r.syncedAt ?? o.endedAt) + 1000 })),
  );
  return (node, t) =>
    nearControlFailure(t)
      ? 'nearControlFailure'
      : whileProxyDown(node, t)
        ? 'whileProxyDown'
        : whileNodeDeaf(node, t)
          ? 'whileNodeDeaf'
          : undefined;
}

/** An answered request's failure, if the answering pod was not an eligible endpoint then, and why. */
function wrongEndpoint(
  timeline: EligibilityTimeline,
  service: string,
  r: LoadRecord & { k: 'req' },
): Pick<FailureSample, 'leftMsBefore' | 'eligibleMsAfter'> | undefined {
  if (r.pod !== undefined && timeline.eligibleDuring(service, r.pod, r.t0, r.t1)) return undefined;
  if (r.pod === undefined) return {};
  const lag = timeline.ineligibleFor(service, r.pod, r.t0);
  const early = timeline.eligibleAfter(service, r.pod, r.t1);
  return {
    ...(lag !== undefined ? { leftMsBefore: lag } : {}),
    ...(early !== undefined ? { eligibleMsAfter: early } : {}),
  };
}

interface Classified {
  readonly total: Tally;
  readonly byChurn: Record<ChurnKind, Tally>;
  readonly byService: SoakReport['requests']['byService'];
  readonly failureSamples: FailureSample[];
  /** Failures to non-flipped Services left out of the guarantee, by why. */
  readonly excused: Map<FailureSample, Excuse>;
  readonly perSecond: { t: number; sent: number; failed: number; pending: Record<string, number> }[];
}

/** Every Service request: tallied by outcome, per Service and churn kind and second; each failure sampled. */
function classifyRequests(
  o: SoakInputs,
  recoveries: readonly OutageRecovery[],
  nearControlFailure: (t: number) => boolean,
): Classified {
  const c: Classified = {
    total: emptyTally(),
    byChurn: { graceful: emptyTally(), readiness: emptyTally(), none: emptyTally() },
    byService: {},
    failureSamples: [],
    excused: new Map(),
    perSecond: Array.from({ length: runSeconds(o) }, (_, i) => ({ t: i, sent: 0, failed: 0, pending: {} })),
  };
  const excuse = excuses(o, recoveries, nearControlFailure);
  for (const g of o.generators)
    for (const r of g.records) {
      const target = r.k === 'req' ? g.targets[r.i] : undefined;
      if (r.k !== 'req' || !target || target.service === CONTROL_SERVICE) continue;
      const churn = o.churnOf.get(target.service) ?? 'none';
      const svc = (c.byService[target.service] ??= {
        ...emptyTally(),
        churn,
        alwaysReady: o.timeline.alwaysReady(target.service, o.startedAt, o.endedAt),
      });
      const why = r.r === 'ok' ? wrongEndpoint(o.timeline, target.service, r) : {};
      const failure: keyof Failed | undefined =
        r.r !== 'ok' ? r.r : why !== undefined ? 'wrongEndpoint' : undefined;
      if (failure !== undefined) {
        const sample: FailureSample = {
          at: Math.round((r.t0 - o.startedAt) / 100) / 10,
          from: g.where,
          service: target.service,
          to: `${target.protocol} ${target.host}:${target.port} (${target.via})`,
          kind: failure,
          ...(r.pod !== undefined ? { pod: r.pod } : {}),
          ...why,
        };
        c.failureSamples.push(sample);
        const e = churn === 'readiness' ? undefined : excuse(target.node, r.t0);
        if (e !== undefined) c.excused.set(sample, e);
      }
      for (const t of [c.total, c.byChurn[churn], svc]) {
        t.sent++;
        if (failure === undefined) t.succeeded++;
        else t.failed[failure]++;
      }
      const bin = c.perSecond[Math.min(c.perSecond.length - 1, Math.max(0, secondOfRun(o, r.t0)))];
      if (bin) {
        bin.sent++;
        if (failure !== undefined) bin.failed++;
      }
    }
  for (const [node, series] of o.nodes)
    for (const p of series.points) {
      const bin = c.perSecond[secondOfRun(o, p.t)];
      if (bin) bin.pending[node] = Math.max(bin.pending[node] ?? 0, p.pendingEndpoints);
    }
  return c;
}

function runSeconds(o: SoakInputs): number {
  return Math.max(1, Math.ceil((o.endedAt - o.startedAt) / 1000));
}

function secondOfRun(o: SoakInputs, t: number): number {
  return Math.floor((t - o.startedAt) / 1000);
}

/** What each node's metrics observed during the run: programming latency, syncs, xtables lock waits. */
function nodeMetrics(o: SoakInputs): Pick<SoakReport, 'programmingLatencyMs' | 'syncs' | 'lockWaits'> {
  const allProgramming: Sample[] = [];
  const byNode: Record<string, LatencyMs> = {};
  const syncs: SoakReport['syncs'] = {};
  const lockWaits: SoakReport['lockWaits'] = {};
  for (const [node, series] of o.nodes) {
    allProgramming.push(
      ...series.samples(HISTOGRAMS.programming).map((s) => ({ ...s, labels: { ...s.labels, node } })),
    );
    byNode[node] = toMs(series.histogram(HISTOGRAMS.programming));
    syncs[node] = { ...toMs(series.histogram(HISTOGRAMS.sync)), metricsUnanswered: series.unanswered };
    const lock = series.histogram(HISTOGRAMS.lockWait);
    lockWaits[node] = { ...toMs(lock), totalMs: Math.round((lock?.sum ?? 0) * 1000) };
  }
  const programming = toMs(histogram({ samples: allProgramming }, HISTOGRAMS.programming));
  return { programmingLatencyMs: { ...programming, byNode }, syncs, lockWaits };
}

/** Each proxy restart with what it did to the long-lived connections open at it. */
function proxyRestarts(o: SoakInputs): SoakReport['proxyRestarts'] {
  const histories = longHistories(o.generators);
  let open = 0;
  let survived = 0;
  let unmeasured = 0;
  const restarts = o.restarts.map((r) => {
    const s = restartSurvival(histories, r.at, r.syncedAt);
    // A restart with no connection measured across it (none open, or all ended before the resync) tells nothing.
    if (s.open === 0) unmeasured++;
    open += s.open;
    survived += s.survived;
    return {
      ...r,
      atSecond: Math.round((r.at - o.startedAt) / 100) / 10,
      connectionsOpen: s.open,
      connectionsSurvived: s.survived,
      ...(s.unmeasured > 0 ? { connectionsUnmeasured: s.unmeasured } : {}),
      ...(s.lost.length > 0 ? { connectionsLost: s.lost } : {}),
    };
  });
  return {
    count: o.restarts.length,
    connectionsOpen: open,
    connectionsSurvived: survived,
    unmeasured,
    restarts,
  };
}

function churnSummary(o: SoakInputs): SoakReport['churn'] {
  const byKind: Record<string, number> = {};
  for (const c of o.churn) byKind[c.change] = (byKind[c.change] ?? 0) + 1;
  return {
    changes: o.churn.length,
    perSecond: Math.round((o.churn.length / Math.max(1, (o.endedAt - o.startedAt) / 1000)) * 10) / 10,
    failedWrites: o.churn.filter((c) => c.error !== undefined).length,
    byKind,
  };
}

function marks(o: SoakInputs): SoakReport['marks'] {
  return [
    ...o.restarts.map((r) => ({ t: r.at - o.startedAt, what: `${r.signal} kube-proxy on ${r.node}` })),
    ...o.apiOutages.map((t) => ({ t: t - o.startedAt, what: 'API server outage' })),
    ...o.churn
      .filter((c) => c.change !== 'ready' && c.change !== 'unready')
      .map((c) => ({ t: c.t - o.startedAt, what: `${c.change} ${c.target}` })),
  ].sort((a, b) => a.t - b.t);
}

export function buildReport(o: SoakInputs): SoakReport {
  const recoveries = outageRecoveries(o.nodes, o.apiOutages, o.apiOutageMs);
  const control = controlRequests(o);
  const c = classifyRequests(o, recoveries, control.nearControlFailure);
  const excusedBy = (why: Excuse): number => [...c.excused.values()].filter((e) => e === why).length;
  const restarts = proxyRestarts(o);
  const alwaysReady = (service: string): boolean => {
    const s = c.byService[service];
    return s !== undefined && s.churn !== 'readiness' && s.alwaysReady;
  };
  const guarantees = {
    failedToAlwaysReadyServices: c.failureSamples.filter((f) => alwaysReady(f.service) && !c.excused.has(f))
      .length,
    connectionsLostToProxyRestarts: restarts.connectionsOpen - restarts.connectionsSurvived,
    nodesNotBackAfterOutages: recoveries.filter((r) => notBackInTime(r, o.apiOutageMs, o.endedAt)).length,
    staleUdpConntrack: o.staleUdpConntrack.count,
    unexpectedProxyExits: o.unexpectedProxyExits,
  };
  return {
    settings: o.settings,
    durationSeconds: Math.round((o.endedAt - o.startedAt) / 100) / 10,
    requests: {
      ...c.total,
      byChurn: c.byChurn,
      byService: c.byService,
      wrongEndpointLagMaxMs: c.failureSamples.reduce((m, f) => Math.max(m, f.leftMsBefore ?? 0), 0),
      failedNearControlFailure: excusedBy('nearControlFailure'),
      failedWhileProxyDown: excusedBy('whileProxyDown'),
      failedWhileNodeDeaf: excusedBy('whileNodeDeaf'),
      // Failures to Services that must not fail first (they break a guarantee), then the others; in time order.
      failureSamples: c.failureSamples
        .map((f) => ({ f, key: c.byService[f.service]?.churn === 'readiness' ? 1 : 0 }))
        .sort((a, b) => a.key - b.key || a.f.at - b.f.at)
        .slice(0, 50)
        .map((x) => x.f),
    },
    control: control.control,
    ...nodeMetrics(o),
    iptablesSave: o.iptablesSave,
    churn: churnSummary(o),
    proxyRestarts: restarts,
    apiserverOutages: o.apiOutages.length,
    outageRecoveries: recoveries.map((r) => ({
      node: r.node,
      at: Math.round((r.at - o.startedAt) / 100) / 10,
      ...(r.heardAt !== undefined ? { heardAfterMs: r.heardAt - r.at } : {}),
      ...(r.syncedAt !== undefined ? { syncedAfterMs: Math.round(r.syncedAt - r.at) } : {}),
    })),
    staleUdpConntrack: o.staleUdpConntrack.count,
    staleUdpConntrackEvidence: o.staleUdpConntrack.evidence,
    unexpectedProxyExits: o.unexpectedProxyExits,
    guarantees: { ok: Object.values(guarantees).every((v) => v === 0), ...guarantees },
    perSecond: c.perSecond,
    marks: marks(o),
  };
}

function latency(l: LatencyMs): string {
  if (l.count === 0) return 'none observed';
  const f = (v: number | undefined): string => (v === undefined ? '?' : `${v} ms`);
  return `p50 ${f(l.p50)}, p99 ${f(l.p99)}, max ≤ ${f(l.max)} (${l.count})`;
}

function failures(t: Tally): string {
  const f = t.failed;
  return `refused ${f.refused}, timeout ${f.timeout}, reset ${f.reset}, wrong endpoint ${f.wrongEndpoint}, other ${f.other}`;
}

/** The outages, and for each how long every node took to hear the API server again and to sync. */
function outageLines(r: SoakReport): string[] {
  const secs = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;
  const heard = r.outageRecoveries.flatMap((x) => (x.heardAfterMs === undefined ? [] : [x.heardAfterMs]));
  const range =
    heard.length > 0
      ? `; nodes heard it again after ${secs(Math.min(...heard))} to ${secs(Math.max(...heard))}`
      : '';
  const lines = [`API server outages: ${r.apiserverOutages}${range}`];
  const byOutage = new Map<number, OutageReport[]>();
  for (const x of r.outageRecoveries) byOutage.set(x.at, [...(byOutage.get(x.at) ?? []), x]);
  for (const [at, nodes] of byOutage)
    lines.push(
      `  at ${at.toFixed(1)} s: ` +
        nodes
          .map(
            (x) =>
              `${x.node} ${x.heardAfterMs === undefined ? 'not heard again' : `heard again after ${secs(x.heardAfterMs)}`}` +
              (x.syncedAfterMs !== undefined ? `, synced after ${secs(x.syncedAfterMs)}` : ''),
          )
          .join('; '),
    );
  return lines;
}

export function formatReport(r: SoakReport): string {
  const s = r.settings;
  const lines = [
    `soak: ${s.mode}${s.layout ? ` (${s.layout} layout)` : ''}${s.iptables ? ` (iptables-${s.iptables})` : ''}` +
      `${s.minSyncPeriod !== undefined ? ` minSyncPeriod ${s.minSyncPeriod}, syncPeriod ${s.syncPeriod ?? '?'}` : ''}, ` +
      `${r.durationSeconds} s, ${s.services} Services, churn ${s.churnPerSecond}/s, load ${s.ratePerSecond} req/s` +
      `${s.competingLockHolder ? ', competing xtables lock holder' : ''}`,
    '',
    `requests: ${r.requests.sent} sent, ${r.requests.succeeded} succeeded, ${failedTotal(r.requests)} failed (${failures(r.requests)})`,
  ];
  for (const kind of ['graceful', 'readiness', 'none'] as const) {
    const t = r.requests.byChurn[kind];
    if (t.sent > 0)
      lines.push(
        `  to Services with ${kind} churn: ${t.sent} sent, ${failedTotal(t)} failed (${failures(t)})`,
      );
  }
  if (r.requests.failed.wrongEndpoint > 0)
    lines.push(
      `  wrong endpoint: the answering pod had left the Service's endpoints up to ${r.requests.wrongEndpointLagMaxMs} ms before`,
    );
  if (r.control.sent > 0)
    lines.push(
      `  control (straight to pod addresses, no Service rule): ${r.control.sent} sent, ${failedTotal(r.control)} failed` +
        (r.requests.failedNearControlFailure > 0
          ? `; ${r.requests.failedNearControlFailure} failures to always-ready Services came within 2 s of a control failure (the machine's, left out of the guarantee)`
          : ''),
    );
  if (r.requests.failedWhileProxyDown > 0)
    lines.push(
      `  ${r.requests.failedWhileProxyDown} failures to always-ready Services while their node's proxy was down (restarting): rules stand still meanwhile`,
    );
  if (r.requests.failedWhileNodeDeaf > 0)
    lines.push(
      `  ${r.requests.failedWhileNodeDeaf} failures to always-ready Services while their node had not heard the API server again after an outage: rules stand still meanwhile`,
    );
  const samples = r.requests.failureSamples;
  if (samples.length > 0) lines.push(`  first failures (of ${failedTotal(r.requests)}):`);
  for (const f of samples.slice(0, 10))
    lines.push(
      `    ${f.at.toFixed(1)} s ${f.kind}: ${f.from} → ${f.service} ${f.to}${f.pod !== undefined ? `, answered by ${f.pod}` : ''}` +
        (f.leftMsBefore !== undefined ? ` (it had left ${f.leftMsBefore} ms before)` : '') +
        (f.eligibleMsAfter !== undefined ? ` (eligible ${f.eligibleMsAfter} ms after)` : ''),
    );
  lines.push('', `network programming latency: ${latency(r.programmingLatencyMs)}`);
  for (const [node, l] of Object.entries(r.programmingLatencyMs.byNode))
    lines.push(`  ${node}: ${latency(l)}`);
  lines.push('syncs:');
  for (const [node, l] of Object.entries(r.syncs))
    lines.push(
      `  ${node}: ${latency(l)}${l.metricsUnanswered > 0 ? `, /metrics unanswered ${l.metricsUnanswered}×` : ''}`,
    );
  if (Object.values(r.lockWaits).some((l) => l.count > 0)) {
    lines.push('xtables lock waits:');
    for (const [node, l] of Object.entries(r.lockWaits))
      lines.push(`  ${node}: ${latency(l)}, ${l.totalMs} ms in all`);
  }
  const saves = Object.entries(r.iptablesSave ?? {});
  if (saves.length > 0) {
    lines.push('iptables-save (every 5 s on each node, process start included):');
    for (const [node, x] of saves)
      lines.push(
        `  ${node}: ${x.count === 0 ? 'not measured' : `p50 ${x.p50Ms} ms, max ${x.maxMs} ms (${x.count}), ${x.maxLines} lines at most`}` +
          (x.failed > 0 ? `, ${x.failed} failed` : ''),
      );
  }
  lines.push(
    '',
    `churn: ${r.churn.changes} changes, ${r.churn.perSecond}/s of ${r.settings.churnPerSecond}/s asked (${Object.entries(
      r.churn.byKind,
    )
      .map(([k, n]) => `${k} ${n}`)
      .join(', ')})` +
      `${r.churn.failedWrites > 0 ? `, ${r.churn.failedWrites} refused by the API server` : ''}`,
  );
  if (r.proxyRestarts.count > 0)
    lines.push(
      `proxy restarts: ${r.proxyRestarts.count}; long-lived connections open ${r.proxyRestarts.connectionsOpen}, survived ${r.proxyRestarts.connectionsSurvived}` +
        (r.proxyRestarts.unmeasured > 0
          ? ` (${r.proxyRestarts.unmeasured} restarts synced only after the load ended: not measured)`
          : ''),
    );
  for (const x of r.proxyRestarts.restarts)
    lines.push(
      `  ${x.atSecond === undefined ? '' : `at ${x.atSecond.toFixed(1)} s: `}${x.signal} ${x.node} (pid ${x.pid}): ${x.syncedAt === undefined ? 'no sync afterwards' : `synced again after ${((x.syncedAt - x.at) / 1000).toFixed(1)} s`}, ${x.connectionsSurvived}/${x.connectionsOpen} connections survived` +
        (x.connectionsUnmeasured
          ? ` (${x.connectionsUnmeasured} ended with the load before the resync)`
          : ''),
      ...(x.connectionsLost ?? []).map(
        (l) =>
          `    lost: ${l.connection}: ${l.outcome} ${(l.failedAfterMs / 1000).toFixed(1)} s after the stop (last answer ${(l.lastAnswerAfterMs / 1000).toFixed(1)} s)`,
      ),
    );
  if (r.apiserverOutages > 0) lines.push(...outageLines(r));
  lines.push(`stale UDP conntrack entries after the run: ${r.staleUdpConntrack}`);
  for (const e of r.staleUdpConntrackEvidence) lines.push(`  ${e}`);
  lines.push(`unexpected kube-proxy exits: ${r.unexpectedProxyExits}`);
  const g = r.guarantees;
  lines.push(
    '',
    g.ok
      ? 'guarantees: all held (no failed request to an always-ready Service, every connection survived the restarts, no stale UDP entry, no unexpected exit)'
      : `guarantees: NOT held: ${g.failedToAlwaysReadyServices} failed requests to always-ready Services, ${g.connectionsLostToProxyRestarts} connections lost to proxy restarts, ${g.nodesNotBackAfterOutages} nodes not back a minute after an outage, ${g.staleUdpConntrack} stale UDP entries, ${g.unexpectedProxyExits} unexpected exits`,
  );
  return `${lines.join('\n')}\n`;
}
