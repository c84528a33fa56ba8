// Reads iptables-save output (and restore input, the same format) back into data: for stale-chain detection, for
// the fake's state, and for tests. The tokenizer follows iptables-restore's own rules (xshared.c
// add_param_to_argv): whitespace separates tokens; a double quote opens or closes a token; inside quotes a
// backslash makes the next character literal. iptables-save quotes comments that way (`"ns1/svc1:p80"`).
import type { IptablesTableName } from './types.js';
import { isIptablesTable } from './types.js';

export function tokenizeLine(line: string): string[] {
  const out: string[] = [];
  let cur = '';
  let inToken = false;
  let quoted = false;
  for (let i = 0; i < line.length; i++) {
    const ch = line[i] as string;
    if (quoted) {
      if (ch === '\\' && i + 1 < line.length) {
        cur += line[++i];
      } else if (ch === '"') {
        quoted = false;
        out.push(cur);
        cur = '';
        inToken = false;
      } else {
        cur += ch;
      }
      continue;
    }
    if (ch === '"') {
      if (inToken) out.push(cur);
      cur = '';
      quoted = true;
      inToken = true;
    } else if (ch === ' ' || ch === '\t' || ch === '\n') {
      if (inToken) out.push(cur);
      cur = '';
      inToken = false;
    } else {
      cur += ch;
      inToken = true;
    }
  }
  if (inToken || quoted) out.push(cur);
  return out;
}

export type RestoreOp =
  /** `:CHAIN POLICY [p:b]`; policy is "-" for user chains. */
  | { readonly kind: 'chain'; readonly chain: string; readonly policy: string; readonly line: number }
  /** `-A/-I/-D/-R CHAIN args…`, `-N/-F/-X/-Z [CHAIN]`. */
  | {
      readonly kind: 'command';
      readonly verb: string;
      readonly chain: string | undefined;
      readonly args: readonly string[];
      readonly line: number;
    };

export interface ParsedTable {
  readonly table: IptablesTableName;
  readonly ops: readonly RestoreOp[];
  /** Whether the block ended with COMMIT (a block without it is not applied by iptables-restore). */
  readonly committed: boolean;
}

export interface ParseProblem {
  readonly line: number;
  readonly text: string;
  readonly reason: string;
}

export interface ParsedRestore {
  readonly tables: readonly ParsedTable[];
  readonly problems: readonly ParseProblem[];
}

/** Parses restore/save text. Never throws: lines it cannot read are reported in `problems` with their number. */
export function parseRestore(text: string): ParsedRestore {
  const tables: ParsedTable[] = [];
  const problems: ParseProblem[] = [];
  let current: { table: IptablesTableName; ops: RestoreOp[] } | undefined;
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const lineNo = i + 1;
    const raw = lines[i] as string;
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    if (line.startsWith('*')) {
      if (current) problems.push({ line: lineNo, text: raw, reason: 'table started before COMMIT' });
      const name = line.slice(1);
      if (!isIptablesTable(name)) {
        problems.push({ line: lineNo, text: raw, reason: `unknown table ${JSON.stringify(name)}` });
        current = undefined;
        continue;
      }
      current = { table: name, ops: [] };
      continue;
    }
    if (line === 'COMMIT') {
      if (!current) problems.push({ line: lineNo, text: raw, reason: 'COMMIT outside a table' });
      else tables.push({ table: current.table, ops: current.ops, committed: true });
      current = undefined;
      continue;
    }
    if (!current) {
      problems.push({ line: lineNo, text: raw, reason: 'line outside a table' });
      continue;
    }
    if (line.startsWith(':')) {
      const tokens = tokenizeLine(line.slice(1));
      const chain = tokens[0];
      if (chain === undefined || chain === '') {
        problems.push({ line: lineNo, text: raw, reason: 'chain line without a name' });
        continue;
      }
      current.ops.push({ kind: 'chain', chain, policy: tokens[1] ?? '-', line: lineNo });
      continue;
    }
    const tokens = tokenizeLine(line);
    const verb = tokens[0] as string;
    if (!/^-[AIDRNFXZ]$/.test(verb)) {
      problems.push({ line: lineNo, text: raw, reason: `unknown command ${JSON.stringify(verb)}` });
      continue;
    }
    current.ops.push({ kind: 'command', verb, chain: tokens[1], args: tokens.slice(2), line: lineNo });
  }
  if (current) tables.push({ table: current.table, ops: current.ops, committed: false });
  return { tables, problems };
}

/**
 * The chain names declared in `table` of an iptables-save dump (upstream's GetChainsFromTable). Only chain lines
 * are read (no rule is tokenized): the dump of a large cluster has hundreds of thousands of lines.
 */
export function chainsInSave(text: string, table: IptablesTableName): Set<string> {
  const chains = new Set<string>();
  let inTable = false;
  let start = 0;
  while (start < text.length) {
    let end = text.indexOf('\n', start);
    if (end < 0) end = text.length;
    const first = text[start];
    if (first === '*') inTable = text.slice(start + 1, end).trim() === table;
    else if (first === ':' && inTable) {
      const name = tokenizeLine(text.slice(start + 1, end))[0];
      if (name) chains.add(name);
    } else if (first === 'C' && text.startsWith('COMMIT', start)) inTable = false;
    start = end + 1;
  }
  return chains;
}

/** What a dump says about one table: its chains, and the rules of the chains asked for. */
export interface SavedTable {
  readonly chains: ReadonlySet<string>;
  /** Rule arguments (after `-A CHAIN`) of the chains `rulesOf` selected, in order. */
  readonly rules: ReadonlyMap<string, readonly (readonly string[])[]>;
}

/**
 * Reads an iptables-save dump of any tables: every table's chain names, and the rules of the chains `rulesOf`
 * selects (only those lines are tokenized, so a dump with hundreds of thousands of per-service rules stays cheap).
 */
export function readSave(
  text: string,
  rulesOf: (table: IptablesTableName, chain: string) => boolean,
): Map<IptablesTableName, SavedTable> {
  const out = new Map<IptablesTableName, { chains: Set<string>; rules: Map<string, string[][]> }>();
  let current: { chains: Set<string>; rules: Map<string, string[][]> } | undefined;
  let table: IptablesTableName | undefined;
  let start = 0;
  while (start < text.length) {
    let end = text.indexOf('\n', start);
    if (end < 0) end = text.length;
    const first = text[start];
    if (first === '*') {
      const name = text.slice(start + 1, end).trim();
      table = isIptablesTable(name) ? name : undefined;
      current = undefined;
      if (table !== undefined) {
        current = out.get(table) ?? { chains: new Set(), rules: new Map() };
        out.set(table, current);
      }
    } else if (current !== undefined && table !== undefined) {
      if (first === ':') {
        const name = tokenizeLine(text.slice(start + 1, end))[0];
        if (name) current.chains.add(name);
      } else if (first === '-' && text.startsWith('-A ', start)) {
        const chainEnd = text.indexOf(' ', start + 3);
        const chain = text.slice(start + 3, chainEnd < 0 || chainEnd > end ? end : chainEnd);
        if (rulesOf(table, chain)) {
          const list = current.rules.get(chain) ?? [];
          list.push(tokenizeLine(text.slice(start, end)).slice(2));
          current.rules.set(chain, list);
        }
      } else if (first === 'C' && text.startsWith('COMMIT', start)) {
        current = undefined;
        table = undefined;
      }
    }
    start = end + 1;
  }
  return out;
}
