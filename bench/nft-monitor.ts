// The outside observer of the agent-process bench: `nft monitor` in the node's namespace prints each change the
// kernel commits to nf_tables (the kernel multicasts it at commit, nft prints and flushes one line per event), and
// this process notes the moment it reads each line (performance.now()). So "the kernel accepted the change" is
// seen by a process other than the agent, late by nft's print, a pipe and this event loop's wake-up: calibrate()
// measures that floor with elements this process adds itself.
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type { LibnftablesContext } from 'kube-proxy-ts/netfilter/nft/libnftables.js';
import { loadLibnftables } from 'kube-proxy-ts/netfilter/nft/libnftables.js';

export interface MonitorLine {
  readonly text: string;
  /** performance.now() when this process read it. */
  readonly at: number;
}

interface LineWaiter {
  readonly test: (l: MonitorLine) => boolean;
  readonly resolve: (l: MonitorLine) => void;
}

/** A line that adds something holding `address` (not as the prefix of a longer address). */
export function addsAddress(address: string): (l: MonitorLine) => boolean {
  const re = new RegExp(`(^|[^0-9.])${address.replaceAll('.', '\\.')}($|[^0-9])`);
  return (l) => l.text.startsWith('add ') && re.test(l.text);
}

export class NftMonitor {
  private readonly child: ChildProcess;
  private readonly waiters = new Set<LineWaiter>();
  private partial = '';
  private ended = false;

  constructor() {
    this.child = spawn('nft', ['monitor'], { stdio: ['ignore', 'pipe', 'inherit'] });
    this.child.stdout?.setEncoding('utf8');
    this.child.stdout?.on('data', (s: string) => this.onData(s, performance.now()));
    this.child.on('exit', () => (this.ended = true));
  }

  /** The next line read after this call that passes `test`. */
  next(test: (l: MonitorLine) => boolean, what: string, timeoutMs = 60_000): Promise<MonitorLine> {
    if (this.ended) return Promise.reject(new Error(`nft monitor has exited (waiting for ${what})`));
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters.delete(waiter);
        reject(new Error(`nft monitor printed no ${what} within ${timeoutMs} ms`));
      }, timeoutMs);
      const waiter: LineWaiter = { test, resolve: (l) => (clearTimeout(timer), resolve(l)) };
      this.waiters.add(waiter);
    });
  }

  /**
   * Resolves once nft has read the ruleset into its cache and waits in poll() for events: its CPU time has not
   * moved for a second. An event that arrives while it is still reading (seconds at 10,000 Services) leaves nft
   * 1.0.6 reading again and again and printing nothing, so nothing may change the ruleset before this.
   */
  async ready(): Promise<number> {
    const startedAt = performance.now();
    let last = -1;
    let still = 0;
    while (still < 5) {
      if (this.ended) throw new Error('nft monitor exited while reading the ruleset');
      await sleep(200);
      const cpu = cpuTicks(this.child.pid ?? 0);
      still = cpu === last ? still + 1 : 0;
      last = cpu;
      if (performance.now() - startedAt > 10 * 60_000)
        throw new Error('nft monitor still busy after 10 minutes');
    }
    return performance.now() - startedAt;
  }

  /**
   * Adds `runs` elements to a table of its own through libnftables in this process and times each from the call
   * to its monitor line: the observer's own delay plus a one-element transaction's, ms. Call ready() first; the
   * untimed first add shows the monitor prints before anything is timed by it.
   */
  async calibrate(runs: number): Promise<number[]> {
    const lib = loadLibnftables();
    if ('error' in lib) throw new Error(`libnftables: ${lib.error}`);
    const ctx = lib.newContext();
    try {
      const table = 'kpts-bench-probe';
      const first = this.next((l) => l.text.includes(table), 'the probe table', 60_000);
      await run(ctx, `add table ip ${table}\nadd set ip ${table} s { type ipv4_addr; }\n`);
      await first;
      const times: number[] = [];
      for (let k = 0; k < runs; k++) {
        const address = `198.18.100.${k + 1}`;
        const seen = this.next(addsAddress(address), 'probe element');
        const t0 = performance.now();
        await run(ctx, `add element ip kpts-bench-probe s { ${address} }\n`);
        times.push((await seen).at - t0);
      }
      await run(ctx, 'delete table ip kpts-bench-probe\n');
      return times;
    } finally {
      ctx.close();
    }
  }

  stop(): void {
    if (!this.ended) this.child.kill('SIGTERM');
  }

  private onData(text: string, at: number): void {
    const lines = (this.partial + text).split('\n');
    this.partial = lines.pop() ?? '';
    for (const t of lines) {
      const line = { text: t, at };
      for (const w of [...this.waiters])
        if (w.test(line)) {
          this.waiters.delete(w);
          w.resolve(line);
        }
    }
  }
}

/** utime + stime of a process, in clock ticks (/proc/PID/stat fields 14 and 15). */
function cpuTicks(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return -1;
  }
}

async function run(ctx: LibnftablesContext, text: string): Promise<void> {
  const r = await ctx.runText(text, false);
  if (r.code !== 0) throw new Error(`nft: ${r.stderr.trim()}`);
}
