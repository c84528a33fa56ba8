// The one place that writes iptables-restore text. Upstream's convention: a token is written bare when it has no
// spaces (`--comment ns1/svc1:p80`) and double-quoted otherwise (`--comment "ns1/svc1:p80 cluster IP"`).
// iptables-restore reads one line per rule and, inside double quotes, takes `\x` as a literal x; so a hostile
// token (quotes, backslashes, newlines from an object name or a flag) is quoted with `"` and `\` escaped, and
// control characters (which would end the line or the C string) become spaces. No input can break a line.
import type { IptablesRule, RestoreInput, RestoreTable } from './types.js';

// Anything outside this set forces quoting: whitespace, quotes, backslash, control characters, '#'-led tokens.
// eslint-disable-next-line no-control-regex
const NEEDS_QUOTING = /[\s"'\\\x00-\x1f\x7f]/;
// eslint-disable-next-line no-control-regex
const CONTROL = /[\x00-\x1f\x7f]/g;

export function quoteArg(arg: string): string {
  if (arg !== '' && !NEEDS_QUOTING.test(arg) && arg[0] !== '#') return arg;
  return '"' + arg.replace(CONTROL, ' ').replace(/["\\]/g, '\\$&') + '"';
}

/** `-A CHAIN args…` */
export function ruleLine(rule: IptablesRule): string {
  let line = '-A ' + quoteArg(rule.chain);
  for (const a of rule.args) line += ' ' + quoteArg(a);
  return line;
}

/** `-I CHAIN args…`: inserts at the top of the chain (what `iptables -I` does without a position). */
export function insertLine(rule: IptablesRule): string {
  return '-I' + ruleLine(rule).slice(2);
}

/** `:CHAIN - [0:0]`: declares (creates or flushes) a user chain in a restore. */
export function chainLine(chain: string): string {
  return ':' + quoteArg(chain) + ' - [0:0]';
}

/** `:CHAIN POLICY [0:0]` as iptables-save prints it (built-in chains carry a policy; user chains "-"). */
export function savedChainLine(chain: string, policy: string): string {
  return ':' + quoteArg(chain) + ' ' + quoteArg(policy) + ' [0:0]';
}

/**
 * `-A` lines for `rules`, each ending in a newline: a piece of restore text that can be kept and joined into later
 * inputs unchanged (the backend caches one per service port).
 */
export function rulesText(rules: readonly IptablesRule[]): string {
  // join, not +=: it returns one flat string, where += leaves a rope of small pieces that a long-lived cache would
  // keep alive (several times the text's size).
  const lines: string[] = [];
  for (const r of rules) lines.push(ruleLine(r), '\n');
  return lines.join('');
}

/** `:CHAIN - [0:0]` lines for `chains`, each ending in a newline. */
export function chainsText(chains: readonly string[]): string {
  const lines: string[] = [];
  for (const c of chains) lines.push(chainLine(c), '\n');
  return lines.join('');
}

/** `-X CHAIN` lines for `chains`, each ending in a newline. */
export function deleteChainsText(chains: readonly string[]): string {
  let text = '';
  for (const c of chains) text += '-X ' + quoteArg(c) + '\n';
  return text;
}

/** A table block's first line (`*nat`), newline included. */
export function tableHeader(table: RestoreTable['table']): string {
  return '*' + table + '\n';
}

/** A table block's last line, newline included. */
export const COMMIT_LINE = 'COMMIT\n';

/** Appends one table block's lines to `out`. */
export function writeTable(out: string[], t: RestoreTable): void {
  out.push('*' + t.table);
  for (const c of t.chains) out.push(chainLine(c));
  for (const r of t.inserts ?? []) out.push(insertLine(r));
  for (const r of t.rules) out.push(ruleLine(r));
  for (const c of t.deleteChains) out.push('-X ' + quoteArg(c));
  out.push('COMMIT');
}

/** The whole restore input, newline-terminated. */
export function serializeRestore(input: RestoreInput): string {
  const out: string[] = [];
  for (const t of input.tables) writeTable(out, t);
  out.push('');
  return out.join('\n');
}
