// metrics.k8s.io for `kubectl top`, as metrics-server would serve it, from the real processes: every 5 s the
// lab reads /proc/PID/stat (user + system CPU ticks) and /proc/PID/status (VmRSS) of each pod's processes (those
// in its network namespace, or its containers' for hostNetwork pods) and of each node (its namespace's processes,
// which include its host-network pods, plus its pods'). CPU is the rate over the last interval, in nanocores;
// memory the resident set, as a container's working set is approximated by metrics-server's users.
import { readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';

/** USER_HZ: the unit of /proc/PID/stat's utime and stime; 100 on every Linux the lab runs on. */
const CLOCK_TICKS_PER_SECOND = 100;
export const USAGE_INTERVAL_MS = 5_000;

export interface ProcessUsage {
  readonly cpuTicks: number;
  readonly rssBytes: number;
}

/** One process's CPU ticks and resident memory; undefined when it is gone. */
export function readProcessUsage(pid: number, procRoot = '/proc'): ProcessUsage | undefined {
  try {
    const stat = readFileSync(`${procRoot}/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces and parentheses: fields are counted after its last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const utime = Number(fields[11]);
    const stime = Number(fields[12]);
    const status = readFileSync(`${procRoot}/${pid}/status`, 'utf8');
    const rssKb = Number(/^VmRSS:\s+(\d+)\s+kB/m.exec(status)?.[1] ?? '0');
    if (!Number.isFinite(utime) || !Number.isFinite(stime)) return undefined;
    return { cpuTicks: utime + stime, rssBytes: rssKb * 1024 };
  } catch {
    return undefined;
  }
}

export interface Usage {
  readonly cpuNanoCores: number;
  readonly memoryBytes: number;
}

/** Which processes make up each thing measured ("node/NAME", "pod/NS/NAME/CONTAINER"). */
export type UsageGroups = () => Promise<ReadonlyMap<string, readonly number[]>>;

export class UsageSampler {
  private previous = new Map<number, number>();
  private previousAt = 0;
  private latest = new Map<string, Usage>();
  private sampledAt = 0;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;

  constructor(
    private readonly groups: UsageGroups,
    private readonly read: (pid: number) => ProcessUsage | undefined = readProcessUsage,
    /** Wall-clock milliseconds (tests give their own). */
    private readonly now: () => number = Date.now,
  ) {}

  start(intervalMs = USAGE_INTERVAL_MS): void {
    void this.sample();
    this.timer = setInterval(() => void this.sample(), intervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }

  /** One round: CPU over the time since the last round (a process new since then counts from the next). */
  sample(): Promise<void> {
    this.running ??= (async () => {
      try {
        const groups = await this.groups();
        const now = this.now();
        const seconds = (now - this.previousAt) / 1000;
        const ticks = new Map<number, number>();
        const next = new Map<string, Usage>();
        for (const [key, pids] of groups) {
          let cpuTicks = 0;
          let rss = 0;
          for (const pid of new Set(pids)) {
            const u = this.read(pid);
            if (!u) continue;
            ticks.set(pid, u.cpuTicks);
            rss += u.rssBytes;
            const before = this.previous.get(pid);
            if (before !== undefined && u.cpuTicks >= before) cpuTicks += u.cpuTicks - before;
          }
          const cores = this.previousAt > 0 && seconds > 0 ? cpuTicks / CLOCK_TICKS_PER_SECOND / seconds : 0;
          next.set(key, { cpuNanoCores: Math.round(cores * 1e9), memoryBytes: rss });
        }
        this.previous = ticks;
        this.previousAt = now;
        this.latest = next;
        this.sampledAt = now;
      } finally {
        this.running = undefined;
      }
    })();
    return this.running;
  }

  usage(key: string): Usage | undefined {
    return this.latest.get(key);
  }

  get timestamp(): string {
    return new Date(this.sampledAt || Date.now()).toISOString().replace(/\.\d+Z$/, 'Z');
  }
}

const cpuQuantity = (u: Usage | undefined): string => `${u?.cpuNanoCores ?? 0}n`;
const memoryQuantity = (u: Usage | undefined): string => `${Math.round((u?.memoryBytes ?? 0) / 1024)}Ki`;

export interface MetricsPod {
  readonly namespace: string;
  readonly name: string;
  readonly containers: readonly string[];
}

/**
 * The metrics.k8s.io/v1beta1 routes (nodes, pods, namespaced pods, one by name); false for any other path.
 * Lists only: label selectors are not applied (kubectl top -l filters nothing here).
 */
export function serveMetrics(
  req: IncomingMessage,
  res: ServerResponse,
  parts: readonly string[],
  sampler: UsageSampler,
  nodes: () => readonly string[],
  pods: () => readonly MetricsPod[],
): boolean {
  if (parts[0] !== 'apis' || parts[1] !== 'metrics.k8s.io' || parts[2] !== 'v1beta1') return false;
  const rest = parts.slice(3);
  let namespace: string | undefined;
  if (rest[0] === 'namespaces' && rest.length >= 3) {
    namespace = rest[1];
    rest.splice(0, 2);
  }
  const [resource, name] = rest;
  if ((resource !== 'nodes' && resource !== 'pods') || rest.length > 2 || req.method !== 'GET') return false;
  const window = `${USAGE_INTERVAL_MS / 1000}s`;
  const timestamp = sampler.timestamp;
  const send = (code: number, body: object): void => {
    const text = JSON.stringify(body);
    res.writeHead(code, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
    res.end(text);
  };
  const notFound = (kind: string): void =>
    send(404, {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: `${kind} "${name ?? ''}" not found`,
      reason: 'NotFound',
      code: 404,
    });
  // One object when the path names one (404 when there is none), else the list.
  const reply = (kind: 'NodeMetrics' | 'PodMetrics', items: readonly object[]): true => {
    const apiVersion = 'metrics.k8s.io/v1beta1';
    if (name === undefined) send(200, { kind: `${kind}List`, apiVersion, metadata: {}, items });
    else if (items[0]) send(200, { kind, apiVersion, ...items[0] });
    else notFound(kind.toLowerCase());
    return true;
  };
  if (resource === 'nodes') {
    const items = nodes()
      .filter((n) => name === undefined || n === name)
      .map((n) => {
        const u = sampler.usage(`node/${n}`);
        return {
          metadata: { name: n, creationTimestamp: timestamp },
          timestamp,
          window,
          usage: { cpu: cpuQuantity(u), memory: memoryQuantity(u) },
        };
      });
    return reply('NodeMetrics', items);
  }
  const items = pods()
    .filter(
      (p) =>
        (namespace === undefined || p.namespace === namespace) && (name === undefined || p.name === name),
    )
    .map((p) => ({
      metadata: { name: p.name, namespace: p.namespace, creationTimestamp: timestamp },
      timestamp,
      window,
      containers: p.containers.map((c) => {
        const u = sampler.usage(`pod/${p.namespace}/${p.name}/${c}`);
        return { name: c, usage: { cpu: cpuQuantity(u), memory: memoryQuantity(u) } };
      }),
    }));
  return reply('PodMetrics', items);
}
