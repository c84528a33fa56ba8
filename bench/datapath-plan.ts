// The datapath bench's pure parts (bench/datapath.ts runs them): where every namespace's addresses are, which
// ClusterIPs the client dials, the percentiles, and the table. No kernel, no timing: test/bench covers them.
//
// Address plan, all in 198.19.0.0/16 (the bench workload's cluster CIDR, so the client counts as a pod and its
// Service traffic is not masqueraded, as a pod's on a node is not):
// - Endpoints: the workload (bench/workload.ts) gives Service i's two endpoints 198.19.0.0 + ((2i + e) mod 60,000),
//   i.e. 198.19.0.0 – 198.19.234.95. Backend pod 0 answers for 198.19.0.0/17, pod 1 for the rest of that range
//   (a `local` route on its loopback: the kernel accepts any address in the prefix), so every endpoint of every
//   Service is a listening pod without 60,000 namespaces.
// - Each pod's own link: 198.19.(240 + k).2/24, the node's end .1; the client's: 198.19.250.2/24, node .1.
// - The node forwards between them; rules are programmed only there.
import { benchService } from './workload.js';

export const DATAPATH_ENDPOINTS_PER_SERVICE = 2;
/** The port the Services' endpoints and the direct target listen on (the workload's targetPort). */
export const BACKEND_PORT = 8080;
/** The Services' port (the workload's). */
export const SERVICE_PORT = 80;
/** The pods' accept queue: longer than the connections of a row's columns together (bench/datapath-server.ts). */
export const DATAPATH_BACKLOG = 16384;
/** The workload's ClusterIPs stay in 198.18.128.0/17 up to this many Services. */
export const MAX_DATAPATH_SERVICES = 32768;

export interface PodLink {
  /** The pod's address on its link (the direct, non-Service target for pod 1). */
  readonly podAddress: string;
  readonly nodeAddress: string;
  readonly prefixLength: number;
  /** Prefixes the pod accepts as its own (endpoint addresses), routed to it by the node. */
  readonly localPrefixes: readonly string[];
}

export interface DatapathPlan {
  readonly client: { readonly address: string; readonly nodeAddress: string; readonly prefixLength: number };
  readonly pods: readonly PodLink[];
  /** A pod address that no Service has as an endpoint: the baseline's and the non-Service traffic's target. */
  readonly directTarget: string;
}

export const DATAPATH_PLAN: DatapathPlan = {
  client: { address: '198.19.250.2', nodeAddress: '198.19.250.1', prefixLength: 24 },
  pods: [
    {
      podAddress: '198.19.240.2',
      nodeAddress: '198.19.240.1',
      prefixLength: 24,
      localPrefixes: ['198.19.0.0/17'],
    },
    {
      podAddress: '198.19.241.2',
      nodeAddress: '198.19.241.1',
      prefixLength: 24,
      localPrefixes: ['198.19.128.0/18', '198.19.192.0/19', '198.19.224.0/21', '198.19.232.0/22'],
    },
  ],
  directTarget: '198.19.241.2',
};

function toInt(ip: string): number {
  return ip.split('.').reduce((n, o) => n * 256 + Number(o), 0);
}

/** Whether `ip` lies in `cidr` (IPv4). */
export function inPrefix(ip: string, cidr: string): boolean {
  const [base = '', len = '32'] = cidr.split('/');
  const bits = Number(len);
  const size = 2 ** (32 - bits);
  return Math.floor(toInt(ip) / size) === Math.floor(toInt(base) / size);
}

/** The pod that answers for `ip` (an endpoint address), or undefined when none does. */
export function podFor(plan: DatapathPlan, ip: string): number | undefined {
  const k = plan.pods.findIndex((p) => p.localPrefixes.some((c) => inPrefix(ip, c)));
  return k < 0 ? undefined : k;
}

/** A small seeded generator (mulberry32), so every mode at a size dials the same ClusterIPs in the same order. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** `count` ClusterIPs drawn uniformly from the first `services` Services, seeded. */
export function serviceTargets(services: number, count: number, seed = 1): string[] {
  if (services > MAX_DATAPATH_SERVICES)
    throw new Error(`the datapath bench's ClusterIPs stop at ${MAX_DATAPATH_SERVICES} Services`);
  const next = seededRandom(seed + services);
  return Array.from(
    { length: count },
    () => benchService(Math.floor(next() * services)).spec?.clusterIP ?? '',
  );
}

/** The p-th percentile (0 < p ≤ 100) by nearest rank: a value that was measured. */
export function percentile(xs: readonly number[], p: number): number {
  if (xs.length === 0) throw new Error('percentile of no samples');
  const s = [...xs].sort((a, b) => a - b);
  const rank = Math.ceil((p / 100) * s.length);
  return s[Math.min(Math.max(rank, 1), s.length) - 1] ?? 0;
}

/** One run of the client: connect times in µs, and the wall time of the whole run. */
export interface ConnectRun {
  readonly connectUs: readonly number[];
  readonly elapsedMs: number;
}

/** Several runs as one: their samples together, their wall times added. */
export function pooled(runs: readonly ConnectRun[]): ConnectRun {
  return {
    connectUs: runs.flatMap((r) => r.connectUs),
    elapsedMs: runs.reduce((sum, r) => sum + r.elapsedMs, 0),
  };
}

export interface TrafficStats {
  readonly p50Us: number;
  readonly p99Us: number;
  readonly connPerSec: number;
}

export function trafficStats(run: ConnectRun): TrafficStats {
  return {
    p50Us: percentile(run.connectUs, 50),
    p99Us: percentile(run.connectUs, 99),
    connPerSec: run.connectUs.length / (run.elapsedMs / 1000),
  };
}

export interface DatapathRow {
  readonly mode: string;
  readonly services: number;
  /** The backend's first sync into the node namespace, ms (how long loading the rules took). */
  readonly loadMs: number;
  readonly service: TrafficStats;
  /** Client → pod IP through the node, before any rule was loaded. */
  readonly baseline: TrafficStats;
  /** The same traffic with the rule set loaded. */
  readonly nonService: TrafficStats;
}

function fmt(n: number, digits = 1): string {
  return n.toFixed(digits);
}

/** p50 of this row over p50 of the same mode's smallest row ('' when there is none to compare with). */
function ratioToSmallest(row: DatapathRow, rows: readonly DatapathRow[]): string {
  const same = rows.filter((r) => r.mode === row.mode).sort((a, b) => a.services - b.services);
  const first = same[0];
  return first === undefined ? '' : `${fmt(row.service.p50Us / first.service.p50Us, 2)}×`;
}

export const DATAPATH_HEADER = [
  'mode',
  'services',
  'load s',
  'p50 µs',
  'p99 µs',
  'conn/s',
  'baseline p50 µs',
  'baseline p99 µs',
  'non-Service p50 µs',
  'non-Service p99 µs',
  'p50 / smallest',
] as const;

/** The table's cells, row by row (header first). */
export function datapathCells(rows: readonly DatapathRow[]): string[][] {
  return [
    [...DATAPATH_HEADER],
    ...rows.map((r) => [
      r.mode,
      String(r.services),
      fmt(r.loadMs / 1000, 2),
      fmt(r.service.p50Us),
      fmt(r.service.p99Us),
      fmt(r.service.connPerSec, 0),
      fmt(r.baseline.p50Us),
      fmt(r.baseline.p99Us),
      fmt(r.nonService.p50Us),
      fmt(r.nonService.p99Us),
      ratioToSmallest(r, rows),
    ]),
  ];
}

/** The table as padded text, for the terminal. */
export function datapathTable(rows: readonly DatapathRow[]): string {
  const cells = datapathCells(rows);
  const widths = DATAPATH_HEADER.map((_, i) => Math.max(...cells.map((l) => (l[i] ?? '').length)));
  return cells.map((l) => l.map((c, i) => c.padStart(widths[i] ?? 0)).join('  ')).join('\n');
}

/** The table as Markdown, for docs/performance.md. */
export function datapathMarkdown(rows: readonly DatapathRow[]): string {
  const [header = [], ...body] = datapathCells(rows);
  const line = (cells: readonly string[]): string => `| ${cells.join(' | ')} |`;
  return [line(header), line(header.map(() => '---:')), ...body.map(line)].join('\n');
}
