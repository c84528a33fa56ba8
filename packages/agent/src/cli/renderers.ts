// Which pure renderer prints a mode's full-sync input (`kube-proxy-ts render`). Typed per mode, so a new mode
// without a renderer does not compile.
import type { JumpRule } from '../backends/iptables/jumps.js';
import { jumpArgs, jumpRulesFor } from '../backends/iptables/jumps.js';
import { renderIptablesRestore } from '../backends/iptables/render-cache.js';
import type { IptablesExtras } from '../backends/iptables/render.js';
import { renderIpvs } from '../backends/ipvs/render.js';
import { renderFullSyncTransaction } from '../backends/nftables/backend.js';
import { NFTABLES_LAYOUT_BY_NAME } from '../backends/nftables/layouts.js';
import type { NftablesLayoutName } from '../config/nftables-layout.js';
import type { ProxyMode } from '../config/proxy-mode.js';
import type { IPFamily } from '../model/ip.js';
import type { NodeNetworkConfig, ProxySnapshot } from '../sync/backend.js';

export type IptablesRenderOptions = IptablesExtras;

export const RENDERERS: Record<
  ProxyMode,
  (
    snapshot: ProxySnapshot,
    node: NodeNetworkConfig,
    iptables: IptablesRenderOptions,
    nftablesLayout: NftablesLayoutName,
  ) => string
> = {
  nftables: (snapshot, node, _iptables, layout) =>
    renderFullSyncTransaction(snapshot, node, undefined, NFTABLES_LAYOUT_BY_NAME[layout]),
  // iptables-restore skips lines that start with '#', so the jump block keeps the output valid restore input.
  iptables: (snapshot, node, extras) =>
    renderIptablesRestore(snapshot, node, extras) + jumpsCommentBlock(node, extras),
  ipvs: (snapshot, node, extras) => renderIpvs(snapshot, node, { randomFully: extras.randomFully }),
};

// Nothing here needs quoting but the jumps' comments; single quotes keep every other character as it is.
function shellWord(word: string): string {
  return /^[A-Za-z0-9_./:=,+-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

function shellLine(argv: readonly string[]): string {
  return argv.map(shellWord).join(' ');
}

function iptablesCommand(family: IPFamily): string {
  return family === 'IPv6' ? 'ip6tables' : 'iptables';
}

/**
 * The shell commands that ensure a node's jump rules, as upstream's syncProxyRules does before its restore:
 * for each jump in order, create its target chain unless it exists (`-N`; "already exists" is fine), then insert
 * the jump at the top of the built-in chain unless an identical one is there (`-C`, else `-I`).
 */
export function jumpCommands(rules: readonly JumpRule[], family: IPFamily): string[] {
  const cmd = iptablesCommand(family);
  const lines: string[] = [];
  const chains = new Set<string>();
  for (const j of rules) {
    const chain = `${j.table} ${j.to}`;
    if (!chains.has(chain)) {
      chains.add(chain);
      lines.push(`${shellLine([cmd, '-t', j.table, '-N', j.to])} 2>/dev/null || true`);
    }
    const args = jumpArgs(j);
    lines.push(
      `${shellLine([cmd, '-t', j.table, '-C', j.from, ...args])} || ${shellLine([cmd, '-t', j.table, '-I', j.from, ...args])}`,
    );
  }
  return lines;
}

/** What `render --proxy-mode iptables` ends with: the jump commands as comments, and why they are apart. */
function jumpsCommentBlock(node: NodeNetworkConfig, extras: IptablesExtras): string {
  const restore = node.family === 'IPv6' ? 'ip6tables-restore' : 'iptables-restore';
  const header = [
    '',
    `# Nothing above reaches these chains from the built-in ones: kube-proxy ensures the jumps one by one, apart`,
    `# from the restore input (as upstream does), so this input applied alone moves no packets. After`,
    `# '${restore} --noflush', run (or print them as a script with 'render --jumps-script'):`,
  ];
  const commands = jumpCommands(jumpRulesFor(node, extras), node.family).map((l) => `#   ${l}`);
  return [...header, ...commands].join('\n') + '\n';
}

/** `render --proxy-mode iptables --jumps-script`: the same commands as an executable shell script. */
export function jumpsScript(node: NodeNetworkConfig, extras: IptablesExtras): string {
  const lines = [
    '#!/bin/sh',
    `# The jump rules kube-proxy ensures from the built-in chains into KUBE-* chains (node ${node.nodeName},`,
    `# ${node.family}). Run after applying 'render --proxy-mode iptables' output with --noflush.`,
    'set -e',
    ...jumpCommands(jumpRulesFor(node, extras), node.family),
  ];
  return lines.join('\n') + '\n';
}
