// The `ipset restore` / `ipset save` line format, both ways: operations → restore text (the only place that writes
// it), and save text → the sets it lists. Also the diff from listed to desired entries.
//
// Ordering, so that a set an iptables rule matches is never missing and never emptier than both the old and the
// new state: creates first (with `ipset restore -exist` a create of a set that exists with the same options is a
// no-op), then every add, then every delete. A sync never destroys: a set may only go once no rule refers to it,
// which the caller does after the iptables rules are gone (IPSetClient.destroy).
import type { IPFamily } from '../../model/ip.js';
import type { IPSetSpec, IPSetType, PortRange } from './sets.js';
import { DEFAULT_HASH_SIZE, DEFAULT_MAX_ELEM, DEFAULT_PORT_RANGE, isIPSetType } from './sets.js';

export type IPSetOperation =
  | { readonly verb: 'create'; readonly set: IPSetSpec }
  | { readonly verb: 'add' | 'del'; readonly name: string; readonly entry: string }
  | { readonly verb: 'flush'; readonly name: string };

/** `family inet` / `family inet6`: ipset's word for a family. */
export function ipsetFamily(family: IPFamily): 'inet' | 'inet6' {
  return family === 'IPv6' ? 'inet6' : 'inet';
}

/** The create command's words, as upstream's createSet builds them (no `comment`: see IPSetSpec.comment). */
export function createArgs(set: IPSetSpec): string[] {
  const args = ['create', set.name, set.type];
  if (set.type === 'bitmap:port') {
    // bitmap:port takes no family: ipset refuses the word.
    const range = set.portRange ?? DEFAULT_PORT_RANGE;
    return [...args, 'range', `${range.first}-${range.last}`];
  }
  return [
    ...args,
    'family',
    ipsetFamily(set.family),
    'hashsize',
    String(set.hashSize ?? DEFAULT_HASH_SIZE),
    'maxelem',
    String(set.maxElem ?? DEFAULT_MAX_ELEM),
  ];
}

/** One operation as one restore line (no newline). Names and entries never hold spaces, so nothing is quoted. */
export function operationLine(op: IPSetOperation): string {
  switch (op.verb) {
    case 'create':
      return createArgs(op.set).join(' ');
    case 'add':
    case 'del':
      return `${op.verb} ${op.name} ${op.entry}`;
    case 'flush':
      return `flush ${op.name}`;
    default: {
      const never: never = op;
      throw new Error(`unknown ipset operation ${JSON.stringify(never)}`);
    }
  }
}

/** The input of `ipset restore -exist`: one line per operation, in the order given. */
export function restoreText(ops: readonly IPSetOperation[]): string {
  return ops.map((op) => operationLine(op) + '\n').join('');
}

const byText = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/**
 * The adds and deletes that turn `current` into `desired`, entries compared as text (entryText on our side, what
 * `ipset save` printed on the kernel's). Only the sets `desired` names are touched: an empty desired set empties
 * that set; a set absent from `current` is taken as empty (create it first). All adds come before all deletes,
 * each group in the order of `desired` and then by entry text, so the output is the same for the same states.
 */
export function diffSets(
  desired: ReadonlyMap<string, ReadonlySet<string>>,
  current: ReadonlyMap<string, ReadonlySet<string>>,
): IPSetOperation[] {
  const adds: IPSetOperation[] = [];
  const dels: IPSetOperation[] = [];
  for (const [name, want] of desired) {
    const have = current.get(name) ?? new Set<string>();
    for (const entry of [...want].filter((e) => !have.has(e)).sort(byText))
      adds.push({ verb: 'add', name, entry });
    for (const entry of [...have].filter((e) => !want.has(e)).sort(byText))
      dels.push({ verb: 'del', name, entry });
  }
  return [...adds, ...dels];
}

/** One sync's operations: create every set (a no-op for those that exist alike), then the diff. */
export function syncOperations(
  sets: readonly IPSetSpec[],
  desired: ReadonlyMap<string, ReadonlySet<string>>,
  current: ReadonlyMap<string, ReadonlySet<string>>,
): IPSetOperation[] {
  return [...sets.map((set): IPSetOperation => ({ verb: 'create', set })), ...diffSets(desired, current)];
}

/** A set as `ipset save` lists it: its header and its entries as the kernel prints them. */
export interface SavedIPSet {
  readonly name: string;
  readonly type: IPSetType;
  /** From `family inet|inet6`; absent for bitmap:port, which has none. */
  readonly family?: IPFamily;
  readonly hashSize?: number;
  readonly maxElem?: number;
  readonly portRange?: PortRange;
  /** Header words we do not read (bucketsize 12, initval 0x…, comment, timeout …), in order. */
  readonly otherOptions: readonly string[];
  readonly entries: Set<string>;
}

export interface ParsedIPSetSave {
  readonly sets: Map<string, SavedIPSet>;
  /** Lines of the kept sets that could not be read, with the reason. */
  readonly problems: readonly { readonly line: number; readonly text: string; readonly reason: string }[];
}

/** Splits a line into words; ipset's own quoting ("…" around a comment) keeps a quoted word whole. */
export function splitIPSetLine(line: string): string[] {
  return [...line.matchAll(/"((?:[^"\\]|\\.)*)"|(\S+)/g)].map((m) => m[1] ?? m[2] ?? '');
}

function parsePortRange(text: string | undefined): PortRange | undefined {
  const m = /^(\d+)-(\d+)$/.exec(text ?? '');
  return m ? { first: Number(m[1]), last: Number(m[2]) } : undefined;
}

type HeaderFields = Omit<SavedIPSet, 'name' | 'type' | 'entries'>;

function parseCreateOptions(words: readonly string[]): HeaderFields {
  let family: IPFamily | undefined;
  const numbers = new Map<string, number>();
  let portRange: PortRange | undefined;
  const otherOptions: string[] = [];
  for (let i = 0; i < words.length; i++) {
    const [word, value] = [words[i] as string, words[i + 1] ?? ''];
    if (word === 'family' && (value === 'inet' || value === 'inet6'))
      family = value === 'inet6' ? 'IPv6' : 'IPv4';
    else if ((word === 'hashsize' || word === 'maxelem') && /^\d+$/.test(value))
      numbers.set(word, Number(value));
    else if (word === 'range' && parsePortRange(value)) portRange = parsePortRange(value);
    else {
      otherOptions.push(word);
      continue;
    }
    i++;
  }
  const hashSize = numbers.get('hashsize');
  const maxElem = numbers.get('maxelem');
  return {
    ...(family && { family }),
    ...(hashSize !== undefined && { hashSize }),
    ...(maxElem !== undefined && { maxElem }),
    ...(portRange && { portRange }),
    otherOptions,
  };
}

function readCreate(words: readonly string[]): SavedIPSet | string {
  const [, name, type, ...options] = words;
  if (name === undefined || type === undefined) return 'create without a name and a type';
  if (!isIPSetType(type)) return `set type ${type} is not one the agent uses`;
  return { name, type, ...parseCreateOptions(options), entries: new Set() };
}

/**
 * Reads `ipset save` output. Only sets for which `keep(name)` is true are read (others, e.g. another program's
 * sets of types we do not know, are skipped unread); for those, a line that cannot be read is a problem.
 */
export function parseIPSetSave(text: string, keep: (name: string) => boolean = () => true): ParsedIPSetSave {
  const sets = new Map<string, SavedIPSet>();
  const problems: { line: number; text: string; reason: string }[] = [];
  text.split('\n').forEach((line, i) => {
    const words = splitIPSetLine(line);
    const [verb, name] = words;
    if (verb === undefined || name === undefined || !keep(name)) return;
    const problem = (reason: string): void => void problems.push({ line: i + 1, text: line, reason });
    if (verb === 'create') {
      const set = readCreate(words);
      if (typeof set === 'string') problem(set);
      else sets.set(name, set);
    } else if (verb === 'add' && words[2] !== undefined) {
      const set = sets.get(name);
      if (set) set.entries.add(words[2]);
      else problem(`entry of set ${name} before its create line`);
    } else {
      problem(`unexpected line`);
    }
  });
  return { sets, problems };
}
