// The temporary table `trace` adds: base chains of its own that set `meta nftrace` on the packets the user asked
// about, and empty chains at the end of the other hooks so that the trace shows each packet as it finally leaves
// (after kube-proxy's DNAT and masquerade).
//
// Priorities: marking at -190 runs after conntrack (-200), so `ct state new` is known, and before everything
// kube-proxy hooks (filter-prerouting-pre-dnat at dstnat-10 = -110, nat at dstnat = -100). The kernel accepts any
// priority for a filter chain, and a table of its own means nothing of kube-proxy's is touched.
import type { CommandRunner } from '../../netfilter/command.js';
import type { TraceTarget } from './target.js';

export const TRACE_TABLE = 'kube-proxy-ts-trace';
export const MARK_PRIORITY = -190;
export const OBSERVE_PRIORITY = 500;

export type NftFamily = 'ip' | 'ip6';

export interface TraceTableOptions {
  /** Trace every matching packet, not only those that open a connection (ct state new). */
  readonly allPackets?: boolean;
}

/** The match for the user's addresses, as nft expressions. */
export function traceMatch(target: TraceTarget): string {
  const ipk = target.family === 'IPv6' ? 'ip6' : 'ip';
  const parts = [`${ipk} daddr ${target.to.address}`];
  if (target.from !== undefined) parts.push(`${ipk} saddr ${target.from}`);
  if (target.to.port !== undefined) {
    parts.push(
      target.to.protocol ? `${target.to.protocol} dport ${target.to.port}` : `th dport ${target.to.port}`,
    );
  } else if (target.to.protocol) {
    parts.push(`meta l4proto ${target.to.protocol}`);
  }
  return parts.join(' ');
}

export function nftFamily(target: TraceTarget): NftFamily {
  return target.family === 'IPv6' ? 'ip6' : 'ip';
}

/** The whole table as `nft -f` input: one transaction that adds it, or replaces a leftover of a crashed run. */
export function traceTableText(target: TraceTarget, options: TraceTableOptions = {}): string {
  const family = nftFamily(target);
  const match = traceMatch(target);
  const state = options.allPackets ? '' : ' ct state new';
  const mark = (hook: string): string =>
    `  chain trace-${hook} {\n` +
    `    type filter hook ${hook} priority ${MARK_PRIORITY}; policy accept;\n` +
    `    ${match}${state} meta nftrace set 1\n` +
    `  }\n`;
  const observe = (hook: string): string =>
    `  chain seen-${hook} {\n    type filter hook ${hook} priority ${OBSERVE_PRIORITY}; policy accept;\n  }\n`;
  return (
    // `add` then `delete` makes the delete succeed whether or not a table was left over; both are in one
    // transaction with the new table, so there is never a moment with half of it.
    `add table ${family} ${TRACE_TABLE}\n` +
    `delete table ${family} ${TRACE_TABLE}\n` +
    `table ${family} ${TRACE_TABLE} {\n` +
    `  comment "kube-proxy-ts trace: temporary, removed when the trace ends"\n` +
    mark('prerouting') +
    mark('output') +
    observe('input') +
    observe('forward') +
    observe('postrouting') +
    `}\n`
  );
}

export async function installTraceTable(
  runner: CommandRunner,
  target: TraceTarget,
  options: TraceTableOptions = {},
): Promise<void> {
  const r = await runner.run('nft', ['-f', '-'], { stdin: traceTableText(target, options) });
  if (r.code !== 0)
    throw new Error(`could not add the trace table ${nftFamily(target)} ${TRACE_TABLE}: ${r.stderr.trim()}`);
}

/** Removes the trace table of both families if present (a leftover of a run that crashed included). */
export async function removeTraceTables(runner: CommandRunner): Promise<string[]> {
  const removed: string[] = [];
  for (const family of ['ip', 'ip6'] as const) {
    const list = await runner.run('nft', ['list', 'table', family, TRACE_TABLE]);
    if (list.code !== 0) continue;
    const r = await runner.run('nft', ['delete', 'table', family, TRACE_TABLE]);
    if (r.code !== 0)
      throw new Error(`could not remove the trace table ${family} ${TRACE_TABLE}: ${r.stderr.trim()}`);
    removed.push(`${family} ${TRACE_TABLE}`);
  }
  return removed;
}

/** Whether a trace table of either family is present (for tests and `doctor`). */
export async function traceTablePresent(runner: CommandRunner): Promise<boolean> {
  for (const family of ['ip', 'ip6'] as const) {
    if ((await runner.run('nft', ['list', 'table', family, TRACE_TABLE])).code === 0) return true;
  }
  return false;
}
