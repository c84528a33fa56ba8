// One run of the agent-process bench at one (layout, size), started by bench/agent-bench.ts inside a node
// namespace of its own (`ip netns exec`), where it is the API server (bench/api-server.ts on 127.0.0.1:6443) and
// the observer, and the agent (bench/agent-process.ts) is its child. In order, one agent process each:
//   1. first sync: spawn → lists done → first sync done, from the agent's JSON log records (their own ts), and its
//      VmHWM then (its peak so far) and its RSS a few seconds later;
//   2. one-endpoint changes: REPEATS writes of the middle Service's slice (its last endpoint's address), each
//      changed back, timed from the API server's write to the watch to `nft monitor`'s line of the new element
//      (bench/nft-monitor.ts), paced a minSyncPeriod apart so the agent's rate limit is not what is timed;
//      then /metrics asked until it counts the change's sync (the agent's post-sync work done: when its next sync
//      could start), timed from the same write, and one idle /metrics round trip half a pause after each change;
//   3. restart: SIGTERM (the agent leaves its table), a new agent, spawn → its first sync done.
// The row is printed on stdout after ROW_MARK.
import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import type { NftablesLayoutName } from 'kube-proxy-ts/config/nftables-layout.js';
import { BenchApiServer } from './api-server.js';
import type { AgentRecord } from './agent-process.js';
import { BenchAgent, childPeaks, memoryOf, syncRecord } from './agent-process.js';
import type { AgentRow } from './agent-table.js';
import { histogramTotals } from './agent-table.js';
import {
  AGENT_CHILD_ENV,
  agentFlags,
  API_TOKEN,
  kubeconfig,
  lastEndpointAddress,
  nodeObject,
  PATHS,
  ROW_MARK,
  serviceObject,
  sliceObject,
} from './agent-workload.js';
import { ENDPOINTS_PER_SERVICE, REPEATS } from './measure.js';
import { addsAddress, NftMonitor } from './nft-monitor.js';

/** The agent's default minSyncPeriod (1 s), and a margin: changes this far apart are never held back by it. */
const PACE_MS = 1200;
/** Time for the agent's post-sync work and the other mode's cleanup to end before its settled RSS is read. */
const SETTLE_MS = 3000;
const START_TIMEOUT_MS = 15 * 60_000;
const METRICS_URL = 'http://127.0.0.1:10249/metrics';
const execFileAsync = promisify(execFile);
const PARTIAL_SYNC = 'kubeproxy_sync_partial_proxy_rules_duration_seconds';

interface Spec {
  readonly layout: NftablesLayoutName;
  readonly size: number;
  readonly extraFlags: readonly string[];
}

interface StartResult {
  readonly upMs: number;
  readonly listAskedMs: number;
  readonly listServedMs: number;
  readonly listMs: number;
  readonly syncMs: number;
  readonly ownMs: number;
  readonly operations: number;
  readonly peakRssMiB: number;
}

const isListed = (resource: string) => (r: AgentRecord) =>
  r.msg === 'listed' && r.fields.resource === resource;

/** Waits for an agent's first sync; its children's peak RSS is sampled meanwhile (into `children`, by name). */
async function firstSync(
  agent: BenchAgent,
  api: BenchApiServer,
  children: Map<string, number>,
): Promise<StartResult> {
  const sample = (): void => {
    for (const [name, mib] of childPeaks(agent.pid))
      children.set(name, Math.max(children.get(name) ?? 0, mib));
  };
  const sampler = setInterval(sample, 5);
  try {
    const done = await agent.waitFor((r) => syncRecord(r) !== undefined, 'first sync', START_TIMEOUT_MS);
    const { peakMiB } = memoryOf(agent.pid);
    const sync = syncRecord(done);
    if (!sync?.full) throw new Error(`the agent's first sync was not full: ${JSON.stringify(done)}`);
    const lists = await Promise.all(
      ['services', 'endpointslices'].map((res) => agent.waitFor(isListed(res), `${res} listed`, 1000)),
    );
    const served = [PATHS.services, PATHS.endpointSlices];
    return {
      upMs: (agent.records[0]?.ts ?? NaN) - agent.spawnedAt,
      listAskedMs: Math.min(...served.map((p) => api.listStarted.get(p) ?? NaN)) - agent.spawnedAt,
      listServedMs: Math.max(...served.map((p) => api.listEnded.get(p) ?? NaN)) - agent.spawnedAt,
      listMs: Math.max(...lists.map((r) => r.ts)) - agent.spawnedAt,
      syncMs: done.ts - agent.spawnedAt,
      ownMs: sync.ms,
      operations: sync.operations,
      peakRssMiB: peakMiB,
    };
  } finally {
    clearInterval(sampler);
  }
}

async function partialSyncs(): Promise<{ sum: number; count: number }> {
  const res = await fetch(METRICS_URL);
  return histogramTotals(await res.text(), PARTIAL_SYNC);
}

/**
 * One idle /metrics scrape by curl (HTTP over the namespace's loopback, a new connection, as an operator's or a
 * scraper's): its own time_total, ms, so this process's garbage collector (it holds the API server's objects) is
 * not in it; and the partial syncs it counts.
 */
async function timedScrape(): Promise<{ ms: number; count: number }> {
  const { stdout } = await execFileAsync('curl', ['-sf', '-w', '\n%{time_total}', METRICS_URL], {
    maxBuffer: 16 * 1024 * 1024,
  });
  const cut = stdout.lastIndexOf('\n');
  const ms = Number(stdout.slice(cut + 1)) * 1000;
  return { ms, count: histogramTotals(stdout.slice(0, cut), PARTIAL_SYNC).count };
}

/**
 * Asks /metrics until its partial-sync count passes `count`, from the moment the kernel showed the change: the agent
 * answers a scrape on the event loop its post-sync work runs on, so the first answer that counts the change's sync
 * came after that work was done. Returns when that answer arrived.
 */
async function countedAfter(count: number): Promise<number> {
  for (;;) {
    const totals = await partialSyncs();
    if (totals.count > count) return performance.now();
  }
}

interface ChangeResult {
  readonly changeMs: number[];
  readonly revertMs: number[];
  readonly ackMs: number[];
  readonly doneMs: number[];
  readonly countedMs: number[];
  readonly changeSyncMs: number[];
  readonly scrapeMs: number[];
  readonly metricsPartialMeanMs: number;
}

/**
 * One write of Service i's slice in `variant`, timed to the kernel and to the first /metrics answer that counts its
 * sync; the agent's own sync time beside it. `counted` is the partial syncs counted before the write. No scrape is
 * sent from the write until the kernel showed the change (one would take the agent's event loop from the change), and
 * the idle scrape comes half a pause after the change, half a pause before the next write.
 */
async function timedWrite(
  ctx: { api: BenchApiServer; agent: BenchAgent; monitor: NftMonitor },
  i: number,
  variant: number,
  counted: number,
): Promise<{
  ms: number;
  ackMs: number;
  doneMs: number;
  countedMs: number;
  syncMs: number;
  scrapeMs: number;
  counted: number;
}> {
  const { api, agent, monitor } = ctx;
  const address = lastEndpointAddress(i, ENDPOINTS_PER_SERVICE, variant);
  const seen = monitor.next(addsAddress(address), `element with ${address}`);
  const before = agent.records.length;
  // The agent's records carry its Date.now(): the write's moment on that clock too (not performance.timeOrigin +
  // now(), which sits a few ms off it), both to the millisecond.
  const writeEpoch = Date.now();
  const write = api.write(PATHS.endpointSlices, sliceObject(i, ENDPOINTS_PER_SERVICE, variant));
  if (write.watchers !== 1) throw new Error(`${write.watchers} EndpointSlice watches open, not 1`);
  const line = await seen;
  const countedAt = await countedAfter(counted);
  const synced = await agent.waitFor(
    (r) => agent.records.indexOf(r) >= before && syncRecord(r) !== undefined,
    'the change sync',
    60_000,
  );
  // Logged once the post-sync work (health-check servers, metrics, conntrack) is done: the next sync could start.
  const done = await agent.waitFor(
    (r) => agent.records.indexOf(r) >= before && r.msg === 'sync done',
    'the change sync done',
    60_000,
  );
  const sync = syncRecord(synced);
  if (!sync || sync.full)
    throw new Error(`a one-endpoint change made a full sync: ${JSON.stringify(synced)}`);
  await sleep(PACE_MS / 2);
  const scrape = await timedScrape();
  await sleep(PACE_MS / 2);
  return {
    ms: line.at - write.writtenAt,
    ackMs: synced.ts - writeEpoch,
    doneMs: done.ts - writeEpoch,
    countedMs: countedAt - write.writtenAt,
    syncMs: sync.ms,
    scrapeMs: scrape.ms,
    counted: scrape.count,
  };
}

async function changes(
  api: BenchApiServer,
  agent: BenchAgent,
  monitor: NftMonitor,
  size: number,
): Promise<ChangeResult> {
  const i = Math.floor(size / 2);
  const ctx = { api, agent, monitor };
  const before = await partialSyncs();
  await sleep(PACE_MS / 2);
  const out: ChangeResult = {
    changeMs: [],
    revertMs: [],
    ackMs: [],
    doneMs: [],
    countedMs: [],
    changeSyncMs: [],
    scrapeMs: [],
    metricsPartialMeanMs: NaN,
  };
  let counted = before.count;
  for (let k = 1; k <= REPEATS; k++) {
    const there = await timedWrite(ctx, i, k, counted);
    out.changeMs.push(there.ms);
    out.changeSyncMs.push(there.syncMs);
    const back = await timedWrite(ctx, i, 0, there.counted);
    counted = back.counted;
    out.revertMs.push(back.ms);
    out.ackMs.push(there.ackMs, back.ackMs);
    out.doneMs.push(there.doneMs, back.doneMs);
    out.countedMs.push(there.countedMs, back.countedMs);
    out.scrapeMs.push(there.scrapeMs, back.scrapeMs);
  }
  const after = await partialSyncs();
  const mean = after.count > before.count ? (after.sum - before.sum) / (after.count - before.count) : NaN;
  return { ...out, metricsPartialMeanMs: mean * 1000 };
}

function tableExists(): boolean {
  return execFileSync('nft', ['list', 'tables'], { encoding: 'utf8' }).includes('table ip kube-proxy');
}

async function run(spec: Spec): Promise<AgentRow> {
  const loadBefore = loadavg()[0] ?? NaN;
  const api = new BenchApiServer(API_TOKEN);
  api.load(PATHS.nodes, [nodeObject()]);
  api.load(
    PATHS.services,
    Array.from({ length: spec.size }, (_, i) => serviceObject(i)),
  );
  api.load(
    PATHS.endpointSlices,
    Array.from({ length: spec.size }, (_, i) => sliceObject(i, ENDPOINTS_PER_SERVICE, 0)),
  );
  await api.listen('127.0.0.1', 6443);
  const dir = mkdtempSync(join(tmpdir(), 'kpts-agent-bench-'));
  const agents: BenchAgent[] = [];
  let monitor: NftMonitor | undefined;
  try {
    const config = join(dir, 'kubeconfig');
    writeFileSync(config, kubeconfig());
    // KPTS_BENCH_AGENT_NO_STATE=1: no state dir, so the restart refills the table (and a build from before the
    // flag existed can be run: KPTS_BENCH_AGENT_BIN).
    const stateDir = process.env.KPTS_BENCH_AGENT_NO_STATE === '1' ? undefined : join(dir, 'state');
    const flags = [...agentFlags(config, spec.layout, stateDir), ...spec.extraFlags];
    const children = new Map<string, number>();
    const first = new BenchAgent(flags);
    agents.push(first);
    const start = await firstSync(first, api, children);
    const executor = await first.waitFor((r) => r.msg === 'nftables executor', 'executor record', 1000);
    await sleep(SETTLE_MS);
    const settledRssMiB = memoryOf(first.pid).rssMiB;

    monitor = new NftMonitor();
    const readyMs = await monitor.ready();
    process.stderr.write(
      `agent ${spec.layout} ${spec.size}: nft monitor ready after ${Math.round(readyMs)} ms\n`,
    );
    const observerMs = await monitor.calibrate(REPEATS);
    const changed = await changes(api, first, monitor, spec.size);
    const peakRssAfterChangesMiB = memoryOf(first.pid).peakMiB;
    monitor.stop();

    const stopAt = performance.now();
    const exit = await first.stop('SIGTERM');
    const stopMs = performance.now() - stopAt;
    const tableKept = tableExists();
    api.listStarted.clear();
    api.listEnded.clear();
    const second = new BenchAgent(flags);
    agents.push(second);
    const restart = await firstSync(second, api, children);
    await second.stop('SIGTERM');
    return {
      layout: spec.layout,
      extraFlags: spec.extraFlags.join(' '),
      services: spec.size,
      endpointsPerService: ENDPOINTS_PER_SERVICE,
      executor: String(executor.fields.executor),
      children: Object.fromEntries([...children].sort()),
      upMs: start.upMs,
      listAskedMs: start.listAskedMs,
      listServedMs: start.listServedMs,
      listMs: start.listMs,
      firstSyncMs: start.syncMs,
      firstSyncOwnMs: start.ownMs,
      peakRssMiB: start.peakRssMiB,
      settledRssMiB,
      peakRssAfterChangesMiB,
      ...changed,
      observerMs,
      stopMs,
      exitCode: exit.code,
      tableKept,
      restartUpMs: restart.upMs,
      restartListAskedMs: restart.listAskedMs,
      restartListMs: restart.listMs,
      restartSyncMs: restart.syncMs,
      restartOwnMs: restart.ownMs,
      restartOperations: restart.operations,
      restartPeakRssMiB: restart.peakRssMiB,
      loadBefore,
      loadAfter: loadavg()[0] ?? NaN,
    };
  } finally {
    monitor?.stop();
    for (const a of agents) await a.stop('SIGKILL');
    await api.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const spec = process.env[AGENT_CHILD_ENV];
if (spec === undefined) throw new Error(`${AGENT_CHILD_ENV} is not set: bench/agent-bench.ts starts this`);
const row = await run(JSON.parse(spec) as Spec);
process.stdout.write(`${ROW_MARK}${JSON.stringify(row)}\n`);
