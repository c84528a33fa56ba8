// An in-memory iptables for unit tests, behind the same CommandRunner seam the real one uses: it understands
// `iptables[-legacy|-nft] …`, `ip6tables…`, their -restore and -save, and `flock`, keeps per-family state, and
// fails the way the kernel does where kube-proxy depends on it (a jump to a missing chain, `-X` of a chain that
// is still referenced, `-C` of a missing rule). Restores commit table by table, as legacy iptables-restore does:
// a failing table leaves earlier committed tables applied and itself untouched.
//
// Simplifications: legacy and nft binaries share one state per family; rule matching is on exact argument arrays
// (the real -C canonicalises first); only kube-proxy's verbs are implemented.
import type { IPFamily } from '../../model/ip.js';
import type { CommandOptions, CommandResult, CommandRunner } from '../command.js';
import { parseRestore, tokenizeLine } from './parse.js';
import { ruleLine, savedChainLine } from './serialize.js';
import type { IptablesTableName } from './types.js';
import { BUILTIN_CHAINS, IPTABLES_TABLES, isIptablesTable } from './types.js';
import type { IptablesBackendKind } from './variant.js';

const STANDARD_TARGETS = new Set([
  'ACCEPT',
  'DROP',
  'RETURN',
  'QUEUE',
  'REJECT',
  'DNAT',
  'SNAT',
  'MASQUERADE',
  'MARK',
  'CONNMARK',
  'LOG',
  'NOTRACK',
  'CT',
  'REDIRECT',
]);

interface FakeChain {
  readonly builtin: boolean;
  policy: string;
  rules: string[][];
}
type FakeTable = Map<string, FakeChain>;
type FakeFamilyState = Map<IptablesTableName, FakeTable>;

function emptyTable(table: IptablesTableName): FakeTable {
  const t: FakeTable = new Map();
  for (const c of BUILTIN_CHAINS[table]) t.set(c, { builtin: true, policy: 'ACCEPT', rules: [] });
  return t;
}

function cloneTable(t: FakeTable): FakeTable {
  const out: FakeTable = new Map();
  for (const [name, c] of t) out.set(name, { builtin: c.builtin, policy: c.policy, rules: [...c.rules] });
  return out;
}

function jumpTarget(args: readonly string[]): string | undefined {
  for (let i = 0; i < args.length - 1; i++) if (args[i] === '-j' || args[i] === '-g') return args[i + 1];
  return undefined;
}

function sameArgs(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

const ok = (stdout = ''): CommandResult => ({ code: 0, stdout, stderr: '' });
const fail = (code: number, stderr: string): CommandResult => ({ code, stdout: '', stderr: stderr + '\n' });

export interface FakeCall {
  readonly cmd: string;
  readonly args: readonly string[];
  readonly stdin?: string;
  readonly env?: Readonly<Record<string, string>>;
}

export interface FakeIptablesOptions {
  /** What `iptables --version` reports for the plain names (default nft, as on Debian). */
  readonly backend?: IptablesBackendKind;
  /** Lets `flock` simulate waiting: a held lock advances this clock by the time it waits. */
  readonly clock?: { advance(ms: number): void };
}

export class FakeIptables implements CommandRunner {
  readonly calls: FakeCall[] = [];
  /** Every restore input applied or attempted, in order. */
  readonly restores: { readonly family: IPFamily; readonly input: string; readonly ok: boolean }[] = [];
  private readonly state = new Map<IPFamily, FakeFamilyState>();
  private readonly backend: IptablesBackendKind;
  private readonly clock: { advance(ms: number): void } | undefined;
  private lockHeldMs = 0;
  private restoreFailure: string | undefined;

  constructor(options: FakeIptablesOptions = {}) {
    this.backend = options.backend ?? 'nft';
    this.clock = options.clock;
  }

  /** Someone else holds the xtables lock for `ms` more (advancing the fake clock is how it passes). */
  holdLock(ms: number): void {
    this.lockHeldMs = ms;
  }

  /** The next restore fails with this message, without applying anything. */
  failNextRestore(message: string): void {
    this.restoreFailure = message;
  }

  get lastRestore(): string | undefined {
    return this.restores.at(-1)?.input;
  }

  private family(f: IPFamily): FakeFamilyState {
    let s = this.state.get(f);
    if (!s) {
      s = new Map(IPTABLES_TABLES.map((t) => [t, emptyTable(t)]));
      this.state.set(f, s);
    }
    return s;
  }

  /** The table as iptables-save prints it (built-in chains first, then user chains by name). */
  dump(family: IPFamily, table: IptablesTableName): string {
    const t = this.family(family).get(table) as FakeTable;
    const chains = [...t.entries()];
    const ordered = [
      ...chains.filter(([, c]) => c.builtin),
      ...chains.filter(([, c]) => !c.builtin).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
    ];
    const lines = ['*' + table];
    for (const [name, c] of ordered) lines.push(savedChainLine(name, c.builtin ? c.policy : '-'));
    for (const [name, c] of ordered) for (const r of c.rules) lines.push(ruleLine({ chain: name, args: r }));
    lines.push('COMMIT', '');
    return lines.join('\n');
  }

  /** Chain name → rules (as argument arrays) of one table; a copy. */
  chains(family: IPFamily, table: IptablesTableName): Map<string, string[][]> {
    const t = this.family(family).get(table) as FakeTable;
    return new Map([...t].map(([name, c]) => [name, c.rules.map((r) => [...r])]));
  }

  /** Applies one rule line (`-t nat -A CHAIN …`), as an operator would by hand; throws on failure. */
  inject(family: IPFamily, line: string): void {
    const r = this.command(family, tokenizeLine(line));
    if (r.code !== 0) throw new Error(`fake iptables: ${line}: ${r.stderr.trim()}`);
  }

  async run(cmd: string, args: readonly string[], options: CommandOptions = {}): Promise<CommandResult> {
    const call: FakeCall = { cmd, args: [...args] };
    if (options.stdin !== undefined) Object.assign(call, { stdin: options.stdin });
    if (options.env !== undefined) Object.assign(call, { env: options.env });
    this.calls.push(call);
    if (cmd === 'flock') return this.flock(args);
    const m = /^(ip6?tables)(?:-(legacy|nft))?(?:-(restore|save))?$/.exec(cmd);
    if (!m) return fail(127, `${cmd}: not found (fake iptables)`);
    const family: IPFamily = m[1] === 'ip6tables' ? 'IPv6' : 'IPv4';
    const backend = (m[2] as IptablesBackendKind | undefined) ?? this.backend;
    if (args.includes('--version')) {
      const name = m[3] ? `${m[1]}-${m[3]}` : (m[1] as string);
      return ok(`${name} v1.8.9 (${backend === 'nft' ? 'nf_tables' : 'legacy'})\n`);
    }
    if (m[3] === 'save') return this.save(family, args);
    if (m[3] === 'restore') return this.restore(family, args, options.stdin ?? '');
    return this.command(family, args);
  }

  private flock(args: readonly string[]): CommandResult {
    const i = args.indexOf('-w');
    const waitMs = i >= 0 ? Number(args[i + 1]) * 1000 : Infinity;
    if (this.lockHeldMs <= 0) return ok();
    const waited = Math.min(this.lockHeldMs, waitMs);
    this.clock?.advance(waited);
    this.lockHeldMs -= waited;
    return this.lockHeldMs > 0 ? fail(1, '') : ok();
  }

  private save(family: IPFamily, args: readonly string[]): CommandResult {
    const i = args.indexOf('-t');
    if (i < 0) return ok(IPTABLES_TABLES.map((t) => this.dump(family, t)).join(''));
    const table = args[i + 1] ?? '';
    if (!isIptablesTable(table)) return fail(1, `iptables-save: Unable to open table ${table}`);
    return ok(this.dump(family, table));
  }

  private restore(family: IPFamily, args: readonly string[], input: string): CommandResult {
    const bin = family === 'IPv6' ? 'ip6tables-restore' : 'iptables-restore';
    const record = (okay: boolean): void => void this.restores.push({ family, input, ok: okay });
    if (this.restoreFailure !== undefined) {
      const msg = this.restoreFailure;
      this.restoreFailure = undefined;
      record(false);
      return fail(1, `${bin}: ${msg}`);
    }
    const noflush = args.includes('--noflush');
    const testOnly = args.includes('--test');
    const parsed = parseRestore(input);
    const problem = parsed.problems[0];
    if (problem) {
      record(false);
      return fail(2, `${bin}: line ${problem.line} failed (${problem.reason})`);
    }
    const state = this.family(family);
    for (const block of parsed.tables) {
      if (!block.committed) {
        record(false);
        return fail(1, `${bin}: COMMIT expected at line ${input.split('\n').length}`);
      }
      const work = noflush ? cloneTable(state.get(block.table) as FakeTable) : emptyTable(block.table);
      for (const op of block.ops) {
        const err =
          op.kind === 'chain'
            ? declareChain(work, op.chain, op.policy)
            : applyVerb(work, op.verb, op.chain, op.args);
        if (err !== undefined) {
          record(false);
          return fail(1, `${bin}: line ${op.line} failed: ${err}`);
        }
      }
      if (!testOnly) state.set(block.table, work);
    }
    record(true);
    return ok();
  }

  private command(family: IPFamily, args: readonly string[]): CommandResult {
    let table: string = 'filter';
    let verb: string | undefined;
    let chain: string | undefined;
    const rest: string[] = [];
    for (let i = 0; i < args.length; i++) {
      const a = args[i] as string;
      if (a === '-w' || a === '--wait' || a === '-W' || a === '--wait-interval') {
        if (/^\d+$/.test(args[i + 1] ?? '')) i++;
      } else if (a === '-t' || a === '--table') {
        table = args[++i] ?? '';
      } else if (verb === undefined && /^-[ACDFILNSXZ]$/.test(a)) {
        verb = a;
        const next = args[i + 1];
        if (next !== undefined && !next.startsWith('-')) chain = args[++i];
      } else if (verb !== undefined && (a === '-n' || a === '-v') && (verb === '-L' || verb === '-S')) {
        continue;
      } else {
        rest.push(a);
      }
    }
    if (!isIptablesTable(table)) return fail(3, `iptables: can't initialize iptables table \`${table}'`);
    if (verb === undefined) return fail(2, 'iptables: no command specified');
    const t = this.family(family).get(table) as FakeTable;
    if (verb === '-S' || verb === '-L') {
      if (chain === undefined) return ok();
      const c = t.get(chain);
      if (!c) return fail(1, 'iptables: No chain/target/match by that name.');
      return ok(c.rules.map((r) => ruleLine({ chain, args: r })).join('\n'));
    }
    if (verb === '-C') {
      const c = chain === undefined ? undefined : t.get(chain);
      if (!c) return fail(1, 'iptables: No chain/target/match by that name.');
      return c.rules.some((r) => sameArgs(r, rest))
        ? ok()
        : fail(1, 'iptables: Bad rule (does a matching rule exist in that chain?).');
    }
    const err = applyVerb(t, verb, chain, rest);
    return err === undefined ? ok() : fail(1, `iptables: ${err}.`);
  }
}

function declareChain(t: FakeTable, chain: string, policy: string): string | undefined {
  const c = t.get(chain);
  if (c) {
    c.rules = [];
    if (c.builtin && policy !== '-') c.policy = policy;
    return undefined;
  }
  if (policy !== '-') return `built-in chain ${chain} does not exist`;
  t.set(chain, { builtin: false, policy: '-', rules: [] });
  return undefined;
}

function referencedBy(t: FakeTable, chain: string): string | undefined {
  for (const [name, c] of t) if (c.rules.some((r) => jumpTarget(r) === chain)) return name;
  return undefined;
}

/** Applies one verb to a working table; returns the kernel's complaint, if any. */
function applyVerb(
  t: FakeTable,
  verb: string,
  chain: string | undefined,
  args: readonly string[],
): string | undefined {
  const c = chain === undefined ? undefined : t.get(chain);
  switch (verb) {
    case '-N':
      if (chain === undefined) return 'option "-N" requires an argument';
      if (c) return 'Chain already exists';
      t.set(chain, { builtin: false, policy: '-', rules: [] });
      return undefined;
    case '-F':
      if (chain === undefined) {
        for (const x of t.values()) x.rules = [];
        return undefined;
      }
      if (!c) return 'No chain/target/match by that name';
      c.rules = [];
      return undefined;
    case '-X': {
      const victims = chain === undefined ? [...t].filter(([, x]) => !x.builtin).map(([n]) => n) : [chain];
      for (const v of victims) {
        const x = t.get(v);
        if (!x) return 'No chain/target/match by that name';
        if (x.builtin) return `Cannot delete built-in chain ${v}`;
        if (x.rules.length > 0) return `Directory not empty (chain ${v})`;
        const user = referencedBy(t, v);
        if (user !== undefined && !victims.includes(user)) return `Too many links (${v} is used by ${user})`;
      }
      for (const v of victims) t.delete(v);
      return undefined;
    }
    case '-A':
    case '-I': {
      if (!c) return `No chain/target/match by that name (${chain ?? ''})`;
      let rule = [...args];
      let index = 0;
      if (verb === '-I' && /^\d+$/.test(rule[0] ?? '')) {
        index = Number(rule[0]) - 1;
        rule = rule.slice(1);
      }
      const target = jumpTarget(rule);
      if (target !== undefined && !STANDARD_TARGETS.has(target)) {
        const dest = t.get(target);
        if (!dest || dest.builtin) return `Couldn't load target \`${target}'`;
      }
      if (verb === '-A') c.rules.push(rule);
      else c.rules.splice(index, 0, rule);
      return undefined;
    }
    case '-D': {
      if (!c) return 'No chain/target/match by that name';
      const i = c.rules.findIndex((r) => sameArgs(r, args));
      if (i < 0) return 'Bad rule (does a matching rule exist in that chain?)';
      c.rules.splice(i, 1);
      return undefined;
    }
    case '-Z':
      return undefined;
    default:
      return `unsupported command ${verb}`;
  }
}
