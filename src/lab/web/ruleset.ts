// What a node's proxy has programmed, read from the kernel after each of its syncs, and what that sync changed.
// Both backends are read every time: after a mode switch the page shows the new backend's objects appear and the
// old one's leave (each mode cleans up the other's leftovers). Counters are cut out of the text (they move with
// traffic, not with syncs), so the diff shows what the proxy wrote, nothing else.
import type { CommandRunner } from '../../netfilter/command.js';
import { diffLines, type LineDiff } from './line-diff.js';

export interface RulesetCapture {
  readonly node: string;
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

/** iptables-save's text without its dated comments; empty when it holds no kube-proxy chain. */
export function kubeProxyIptables(text: string): string[] {
  const lines = text.split('\n').filter((l) => l !== '' && !l.startsWith('#'));
  return lines.some((l) => l.includes('KUBE-')) ? lines.map(withoutCounters) : [];
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
): Promise<Omit<RulesetCapture, 'diff'>> {
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
 * sync during a capture asks for one more afterwards (several such syncs: one more).
 */
export class RulesetTracker {
  private readonly last = new Map<string, RulesetCapture>();
  private readonly busy = new Map<string, Promise<void>>();
  private readonly again = new Set<string>();

  constructor(
    private readonly capture: (node: string) => Promise<Omit<RulesetCapture, 'diff'>>,
    private readonly onCapture: (c: RulesetCapture) => void,
  ) {}

  request(node: string): Promise<void> {
    const running = this.busy.get(node);
    if (running) {
      this.again.add(node);
      return running;
    }
    const p = (async () => {
      do {
        this.again.delete(node);
        try {
          this.record(await this.capture(node));
        } catch {
          // The node went away (the lab is stopping); the next sync tries again.
        }
      } while (this.again.has(node));
    })().finally(() => this.busy.delete(node));
    this.busy.set(node, p);
    return p;
  }

  record(c: Omit<RulesetCapture, 'diff'>): RulesetCapture {
    const prev = this.last.get(c.node);
    const full: RulesetCapture = prev ? { ...c, diff: diffLines(prev.lines, c.lines) } : c;
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
