// What a node's proxy has programmed, read from the kernel after each of its syncs, and what that sync changed.
// A proxy also changes its tables outside a sync (a new mode's proxy removes the old mode's leftovers right after
// its first sync; stale chains go a moment later), and so can a user (`nft delete element …`): each sync's read is
// followed by one a few seconds later, and every node is read again now and then; those are shown only when the
// text changed, and say so.
// Both backends are read every time: after a mode switch the page shows the new backend's objects appear and the
// old one's leave (each mode cleans up the other's leftovers). Counters are cut out of the text (they move with
// traffic, not with syncs), so the diff shows what the proxy wrote, nothing else.
import type { CommandRunner } from 'kube-proxy-ts/netfilter/command.js';
import { KUBE_IPTABLES_HINT, KUBE_KUBELET_CANARY } from '../cluster/kubelet-iptables.js';
import { diffLines, type LineDiff } from './line-diff.js';

/**
 * Why the tables were read: a sync, a few seconds after one, the periodic read, or a page opening after syncs no
 * page watched (reads are made only while a page is open).
 */
export type CaptureReason = 'sync' | 'after-sync' | 'poll' | 'opened';

export interface RulesetCapture {
  readonly node: string;
  readonly why: CaptureReason;
  /** Unix milliseconds. */
  readonly t: number;
  /** Which backends' objects the node holds now. */
  readonly holds: { readonly nftables: boolean; readonly iptables: boolean };
  readonly lines: readonly string[];
  /** Against the capture before (absent for the first one). */
  readonly diff?: LineDiff;
  /** The command lines that produced the text, as a user would type them in the node. */
  readonly commands: readonly string[];
}

export const NFT_COMMAND = ['nft', 'list', 'table', 'ip', 'kube-proxy'] as const;

/** nft's `counter packets N bytes M` and iptables-save's `[N:M]` chain counters read as zero. */
export function withoutCounters(line: string): string {
  return line.replace(/counter packets \d+ bytes \d+/g, 'counter').replace(/^(:\S+ \S+) \[\d+:\d+\]$/, '$1');
}

/** The kubelet's chains (cluster/kubelet-iptables.ts): every node has them, whichever mode its proxy runs. */
const KUBELET_CHAINS = new RegExp(`\\b(${KUBE_IPTABLES_HINT}|${KUBE_KUBELET_CANARY})\\b`, 'g');

/** iptables-save's text without its dated comments; empty when it holds no kube-proxy chain (kubelet's aside). */
export function kubeProxyIptables(text: string): string[] {
  const lines = text.split('\n').filter((l) => l !== '' && !l.startsWith('#'));
  return lines.some((l) => l.replace(KUBELET_CHAINS, '').includes('KUBE-')) ? lines.map(withoutCounters) : [];
}

async function readIptables(
  runner: CommandRunner,
  namespace: string,
  env: Readonly<Record<string, string>>,
): Promise<{ lines: string[]; command: string }> {
  // The proxy runs whichever iptables its node's PATH names (the lab's --iptables, else the host's alternative);
  // a host may hold rules in the other back end too.
  for (const cmd of ['iptables-save', 'iptables-legacy-save']) {
    const r = await runner.run('ip', ['netns', 'exec', namespace, cmd], { timeoutMs: 15_000, env });
    if (r.code !== 0) continue;
    const lines = kubeProxyIptables(r.stdout);
    if (lines.length > 0) return { lines, command: cmd };
  }
  return { lines: [], command: 'iptables-save' };
}

export async function captureRuleset(
  runner: CommandRunner,
  node: string,
  namespace: string,
  t: number,
  /** The node's environment (its xtables lock, its iptables back end first on PATH: cluster/node-env.ts). */
  env: Readonly<Record<string, string>> = {},
): Promise<Omit<RulesetCapture, 'diff' | 'why'>> {
  const nft = await runner.run('ip', ['netns', 'exec', namespace, ...NFT_COMMAND], { timeoutMs: 15_000 });
  const nftLines =
    nft.code === 0
      ? nft.stdout
          .split('\n')
          .filter((l) => l.trim() !== '')
          .map(withoutCounters)
      : [];
  const ipt = await readIptables(runner, namespace, env);
  const lines = [
    `# ${NFT_COMMAND.join(' ')}`,
    ...(nftLines.length > 0 ? nftLines : ['# (no table ip kube-proxy)']),
    `# ${ipt.command} (kube-proxy's chains)`,
    ...(ipt.lines.length > 0 ? ipt.lines : ['# (no KUBE- chains)']),
  ];
  return {
    node,
    t,
    holds: { nftables: nftLines.length > 0, iptables: ipt.lines.length > 0 },
    lines,
    commands: [NFT_COMMAND.join(' '), ipt.command],
  };
}

/**
 * The last capture of each node, and the diff against the one before. Captures of one node run one at a time; a
 * request during a capture asks for one more afterwards (several: one more, for the weightiest reason).
 */
export class RulesetTracker {
  private readonly last = new Map<string, RulesetCapture>();
  /** Each node's tables as they were before its last sync: a read after the sync shows the sync's whole effect. */
  private readonly beforeSync = new Map<string, readonly string[]>();
  private readonly busy = new Map<string, Promise<void>>();
  private readonly again = new Map<string, CaptureReason>();

  private readonly lastRead = new Map<string, number>();

  constructor(
    private readonly capture: (node: string) => Promise<Omit<RulesetCapture, 'diff' | 'why'>>,
    private readonly onCapture: (c: RulesetCapture) => void,
    /**
     * At least this long between two reads of one node (default 2 s): under churn a proxy syncs every second, and
     * reading 1,000 Services' tables that often would cost the node more than the page is worth.
     */
    private readonly minGapMs = 2000,
  ) {}

  request(node: string, why: CaptureReason = 'sync'): Promise<void> {
    const running = this.busy.get(node);
    if (running) {
      const queued = this.again.get(node);
      if (queued !== 'sync') this.again.set(node, why === 'sync' || queued === undefined ? why : queued);
      return running;
    }
    const p = (async () => {
      let reason: CaptureReason | undefined = why;
      while (reason !== undefined) {
        const wait = (this.lastRead.get(node) ?? -Infinity) + this.minGapMs - Date.now();
        if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
        // A sync asked for while waiting makes this read a sync's.
        if (this.again.get(node) === 'sync') reason = 'sync';
        this.again.delete(node);
        this.lastRead.set(node, Date.now());
        try {
          this.record(await this.capture(node), reason);
        } catch {
          // The node went away (the lab is stopping); the next sync tries again.
        }
        reason = this.again.get(node);
      }
    })().finally(() => this.busy.delete(node));
    this.busy.set(node, p);
    return p;
  }

  /**
   * Keeps (and hands on) a capture; one not caused by a sync only when the text changed. A read after a sync is
   * diffed against the tables before that sync (the sync and what the proxy did right after it, together); a
   * periodic read against the read before.
   */
  record(c: Omit<RulesetCapture, 'diff' | 'why'>, why: CaptureReason = 'sync'): RulesetCapture {
    const prev = this.last.get(c.node);
    if (prev && why !== 'sync' && sameLines(prev.lines, c.lines)) return prev;
    if (why === 'sync') {
      if (prev) this.beforeSync.set(c.node, prev.lines);
    } else if (why === 'poll' || why === 'opened') this.beforeSync.delete(c.node);
    const base = (why === 'after-sync' ? this.beforeSync.get(c.node) : undefined) ?? prev?.lines;
    const full: RulesetCapture = base ? { ...c, why, diff: diffLines(base, c.lines) } : { ...c, why };
    this.last.set(c.node, full);
    this.onCapture(full);
    return full;
  }

  snapshot(): RulesetCapture[] {
    return [...this.last.values()];
  }

  async idle(): Promise<void> {
    while (this.busy.size > 0) await Promise.all([...this.busy.values()]);
  }
}

function sameLines(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}
