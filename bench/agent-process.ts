// The agent under the agent-process bench (bench/agent-run.ts): kube-proxy-ts started as a node starts it, the
// package's bin (packages/agent/dist/cli/main.js, what `kube-proxy-ts` runs) under node with AGENT_NODE_FLAGS, in
// the calling process's network namespace. Its JSON log (-v=2) is read line by line: each record keeps its own
// `ts` (the agent's clock, ms) and the moment this process read it. Its memory is read from /proc/PID/status.
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { AGENT_NODE_FLAGS } from 'kube-proxy-ts/util/node-flags.js';

/**
 * The bin the `kube-proxy-ts` package declares (package.json "bin"), resolved from the installed package; or
 * KPTS_BENCH_AGENT_BIN, another build's (e.g. a clean checkout's, while the working tree is mid-change).
 */
export function agentMain(): string {
  const given = process.env.KPTS_BENCH_AGENT_BIN;
  if (given) return given;
  const require = createRequire(import.meta.url);
  const pkgPath = require.resolve('kube-proxy-ts/package.json');
  const pkg = JSON.parse(readFileSync(pkgPath, 'utf8')) as { bin: Record<string, string> };
  const bin = pkg.bin['kube-proxy-ts'];
  if (bin === undefined) throw new Error(`${pkgPath} declares no kube-proxy-ts bin`);
  return join(dirname(pkgPath), bin);
}

export interface AgentRecord {
  readonly msg: string;
  /** The agent's own time of the record, ms since the epoch (its JSON log's ts). */
  readonly ts: number;
  readonly fields: Readonly<Record<string, unknown>>;
}

interface Waiter {
  readonly test: (r: AgentRecord) => boolean;
  readonly resolve: (r: AgentRecord) => void;
  readonly reject: (e: Error) => void;
}

/** VmHWM and VmRSS of a process, MiB. */
export interface Memory {
  readonly peakMiB: number;
  readonly rssMiB: number;
}

export function memoryOf(pid: number): Memory {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (field: string): number =>
    Number(new RegExp(`^${field}:\\s*(\\d+)`, 'm').exec(status)?.[1] ?? NaN);
  return { peakMiB: kib('VmHWM') / 1024, rssMiB: kib('VmRSS') / 1024 };
}

/** A process's direct children (e.g. `nft`, when the agent runs the binary): name → peak RSS (VmHWM) in MiB. */
export function childPeaks(pid: number): Map<string, number> {
  const peaks = new Map<string, number>();
  let tids: string[] = [];
  try {
    tids = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(' ');
  } catch {
    return peaks; // the process ended
  }
  for (const tid of tids) {
    if (tid === '') continue;
    try {
      const status = readFileSync(`/proc/${tid}/status`, 'utf8');
      const name = /^Name:\s*(\S+)/m.exec(status)?.[1] ?? '?';
      const kib = Number(/^VmHWM:\s*(\d+)/m.exec(status)?.[1] ?? 0);
      peaks.set(name, Math.max(peaks.get(name) ?? 0, kib / 1024));
    } catch {
      // the child ended between the listing and the read
    }
  }
  return peaks;
}

export class BenchAgent {
  /** Date.now() just before the spawn. */
  readonly spawnedAt: number;
  readonly records: AgentRecord[] = [];
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private readonly child: ChildProcess;
  private readonly waiters = new Set<Waiter>();
  private partial = '';
  private tail: string[] = [];
  private gone = false;

  constructor(args: readonly string[]) {
    this.spawnedAt = Date.now();
    this.child = spawn(process.execPath, [...AGENT_NODE_FLAGS, agentMain(), ...args], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    this.child.stderr?.setEncoding('utf8');
    this.child.stderr?.on('data', (s: string) => this.onData(s));
    this.exited = new Promise((resolve) => {
      this.child.on('exit', (code, signal) => {
        this.gone = true;
        for (const w of this.waiters) w.reject(new Error(`agent exited (${code ?? signal}):\n${this.log()}`));
        this.waiters.clear();
        resolve({ code, signal });
      });
    });
  }

  get pid(): number {
    if (this.child.pid === undefined) throw new Error('agent did not start');
    return this.child.pid;
  }

  /** The last lines of its log, for errors. */
  log(): string {
    return this.tail.join('\n');
  }

  /** The first record (already read, or still to come) that passes `test`. */
  waitFor(test: (r: AgentRecord) => boolean, what: string, timeoutMs: number): Promise<AgentRecord> {
    const seen = this.records.find(test);
    if (seen) return Promise.resolve(seen);
    if (this.gone) return Promise.reject(new Error(`agent exited before ${what}:\n${this.log()}`));
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters.delete(waiter);
        reject(new Error(`no ${what} within ${timeoutMs} ms:\n${this.log()}`));
      }, timeoutMs);
      const waiter: Waiter = {
        test,
        resolve: (r) => (clearTimeout(timer), resolve(r)),
        reject: (e) => (clearTimeout(timer), reject(e)),
      };
      this.waiters.add(waiter);
    });
  }

  async stop(signal: NodeJS.Signals): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    if (!this.gone) this.child.kill(signal);
    return this.exited;
  }

  private onData(text: string): void {
    const lines = (this.partial + text).split('\n');
    this.partial = lines.pop() ?? '';
    for (const line of lines) {
      if (line.trim() === '') continue;
      this.tail = [...this.tail.slice(-29), line];
      const r = parseRecord(line);
      if (!r) continue;
      this.records.push(r);
      for (const w of [...this.waiters])
        if (w.test(r)) {
          this.waiters.delete(w);
          w.resolve(r);
        }
    }
  }
}

/** One JSON log line as a record; undefined for lines that are not the agent's JSON records. */
export function parseRecord(line: string): AgentRecord | undefined {
  try {
    const v: unknown = JSON.parse(line);
    if (typeof v !== 'object' || v === null) return undefined;
    const { msg, ts, ...fields } = v as Record<string, unknown>;
    if (typeof msg !== 'string' || typeof ts !== 'number') return undefined;
    return { msg, ts: ts * 1000, fields };
  } catch {
    return undefined;
  }
}

/** A sync record (-v=2 'synced proxy rules'), with its kind and the proxier's own time for it. */
export function syncRecord(r: AgentRecord): { full: boolean; ms: number; operations: number } | undefined {
  if (r.msg !== 'synced proxy rules') return undefined;
  return { full: r.fields.full === true, ms: Number(r.fields.ms), operations: Number(r.fields.operations) };
}
