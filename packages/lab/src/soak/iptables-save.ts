// How long `iptables-save` takes on each node during the soak: seed 003's own yardstick for the size of the
// ruleset every iptables writer on the node pays for (it reports 50 ms after switching to IPVS). Every few seconds
// each node's `iptables-save` (the back end the node's proxies run, from the node's PATH) runs in the node's
// namespace; the time is the command's wall time as the soak sees it, process start included, the same for every
// mode, and the line count is the size of what it printed.
import type { CommandRunner } from 'kube-proxy-ts/netfilter/command.js';
import { Periodic } from './periodic.js';

export const IPTABLES_SAVE_EVERY_MS = 5000;

export interface IptablesSaveNode {
  readonly name: string;
  readonly namespace: string;
  /** The node's environment (PATH naming its iptables back end first). */
  readonly env: Readonly<Record<string, string>>;
}

export interface IptablesSaveSummary {
  /** Runs that printed a ruleset. */
  readonly count: number;
  /** Runs that failed (the command's status was not 0). */
  readonly failed: number;
  readonly p50Ms?: number;
  readonly maxMs?: number;
  /** Lines printed, at most over the run (the ruleset's size). */
  readonly maxLines?: number;
}

interface Sample {
  readonly ms: number;
  readonly lines: number;
}

/** The value at quantile `q` of `values` (nearest rank); undefined for none. */
function quantile(values: readonly number[], q: number): number | undefined {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}

export function summarizeIptablesSave(samples: readonly Sample[], failed: number): IptablesSaveSummary {
  const ms = samples.map((s) => s.ms);
  const p50 = quantile(ms, 0.5);
  return {
    count: samples.length,
    failed,
    ...(p50 !== undefined ? { p50Ms: Math.round(p50 * 10) / 10 } : {}),
    ...(ms.length > 0 ? { maxMs: Math.round(Math.max(...ms) * 10) / 10 } : {}),
    ...(samples.length > 0 ? { maxLines: Math.max(...samples.map((s) => s.lines)) } : {}),
  };
}

/** Times each node's iptables-save every IPTABLES_SAVE_EVERY_MS until stop(). */
export class IptablesSaveSampler {
  private readonly samples = new Map<string, Sample[]>();
  private readonly failures = new Map<string, number>();
  private readonly loop = new Periodic(IPTABLES_SAVE_EVERY_MS, () => this.sampleOnce());

  constructor(
    private readonly runner: CommandRunner,
    private readonly nodes: readonly IptablesSaveNode[],
    private readonly now: () => number = () => performance.now(),
  ) {
    for (const n of nodes) {
      this.samples.set(n.name, []);
      this.failures.set(n.name, 0);
    }
  }

  async sampleOnce(): Promise<void> {
    // One node at a time: two dumps at once would time each other.
    for (const n of this.nodes) {
      const t0 = this.now();
      const r = await this.runner.run('ip', ['netns', 'exec', n.namespace, 'iptables-save'], {
        env: n.env,
        timeoutMs: 60_000,
      });
      const ms = this.now() - t0;
      if (r.code !== 0) this.failures.set(n.name, (this.failures.get(n.name) ?? 0) + 1);
      else this.samples.get(n.name)?.push({ ms, lines: r.stdout.split('\n').filter((l) => l !== '').length });
    }
  }

  start(): void {
    this.loop.start();
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }

  summary(): Record<string, IptablesSaveSummary> {
    return Object.fromEntries(
      this.nodes.map((n) => [
        n.name,
        summarizeIptablesSave(this.samples.get(n.name) ?? [], this.failures.get(n.name) ?? 0),
      ]),
    );
  }
}
