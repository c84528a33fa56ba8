// An in-memory nftables table behind the NftExecutor interface (after knftables fake.go). run() applies a
// transaction to a copy-on-write view and commits only when every operation succeeded; it checks what the kernel
// checks for our rule shapes (jump/goto targets and @set references exist, a referenced chain or set cannot be
// deleted, an element cannot be re-added with another value) and fails like nft (NotFound, Exists, Busy).
// dump() writes the state as sorted `add` lines through the same serializer the real executor uses.
import { NftError } from './errors.js';
import type { NftExecutor, NftListing, NftRunStats } from './executor.js';
import type { NftChain, NftElement, NftMap, NftOperation, NftSet, NftTable, NftVerb } from './objects.js';
import { parseOperations } from './parse.js';
import type { NftTableRef } from './serialize.js';
import { writeOperation } from './serialize.js';
import type { NftTransaction } from './transaction.js';

interface FakeRule {
  readonly rule: string;
  readonly comment?: string;
  readonly handle: number;
}

interface FakeChain {
  readonly chain: NftChain;
  readonly rules: FakeRule[];
}

interface FakeSet {
  readonly object: NftSet | NftMap;
  /** element key text (`a . b`) → element */
  readonly elements: Map<string, NftElement>;
}

interface FakeState {
  table: NftTable | undefined;
  chains: Map<string, FakeChain>;
  sets: Map<string, FakeSet>;
  nextHandle: number;
}

const CHAIN_REF = /\b(?:jump|goto) ([A-Za-z0-9_./-]+)/g;
const SET_REF = /@([A-Za-z0-9_./-]+)/g;

function keyText(e: NftElement): string {
  return e.key.join(' . ');
}

function valueText(e: NftElement): string {
  return (e.value ?? []).join(' . ');
}

/** A working copy: containers are copied the first time the transaction touches them. */
class Working {
  readonly state: FakeState;
  readonly #ownedChains = new Set<string>();
  readonly #ownedSets = new Set<string>();

  constructor(base: FakeState) {
    this.state = {
      table: base.table,
      chains: new Map(base.chains),
      sets: new Map(base.sets),
      nextHandle: base.nextHandle,
    };
  }

  chainForWrite(name: string): FakeChain | undefined {
    const c = this.state.chains.get(name);
    if (!c || this.#ownedChains.has(name)) return c;
    const copy: FakeChain = { chain: c.chain, rules: [...c.rules] };
    this.state.chains.set(name, copy);
    this.#ownedChains.add(name);
    return copy;
  }

  setForWrite(name: string): FakeSet | undefined {
    const s = this.state.sets.get(name);
    if (!s || this.#ownedSets.has(name)) return s;
    const copy: FakeSet = { object: s.object, elements: new Map(s.elements) };
    this.state.sets.set(name, copy);
    this.#ownedSets.add(name);
    return copy;
  }

  putChain(c: FakeChain): void {
    this.state.chains.set(c.chain.name, c);
    this.#ownedChains.add(c.chain.name);
  }

  putSet(s: FakeSet): void {
    this.state.sets.set(s.object.name, s);
    this.#ownedSets.add(s.object.name);
  }
}

type Fail = (code: NftError['code'], message: string) => never;

/** A named chain, set or map, as a verb sees it. */
interface Container {
  readonly exists: boolean;
  add(): void;
  flush(): void;
  /** Whether a rule or map still refers to it (nft refuses to delete it then). */
  referenced(): boolean;
  remove(): void;
}

/** What nft's verbs do to a chain, set or map: the same rules for each kind. */
function applyContainerVerb(verb: NftVerb, c: Container, fail: Fail): void {
  if (verb === 'add' || verb === 'create') {
    if (c.exists) {
      if (verb === 'create') fail('Exists', 'File exists');
      return;
    }
    c.add();
  } else if (verb === 'flush') {
    if (!c.exists) fail('NotFound', 'No such file or directory');
    c.flush();
  } else {
    if (!c.exists) {
      if (verb === 'delete') fail('NotFound', 'No such file or directory');
      return;
    }
    if (c.referenced()) fail('Busy', 'Device or resource busy');
    c.remove();
  }
}

export class FakeNft implements NftExecutor {
  readonly ref: NftTableRef;
  #state: FakeState = { table: undefined, chains: new Map(), sets: new Map(), nextHandle: 1 };
  /** The last transaction passed to run(), whether or not it succeeded. */
  lastTransaction: NftTransaction | undefined;
  /** Every transaction run() was given, in order (tests count operations across several). */
  readonly transactions: NftTransaction[] = [];
  /** Test hook: return an error to make run() fail at that operation (after the checks above pass). */
  failOperation: ((op: NftOperation) => NftError | undefined) | undefined;
  /** Test hook: make list()/listElements() fail with this error. */
  failListing: NftError | undefined;
  /** The ruleset generation: one more per transaction that changed the table (run() or load()), as the kernel's. */
  #generation = 1;

  constructor(ref: NftTableRef = { family: 'ip', table: 'kube-proxy' }) {
    this.ref = ref;
  }

  async run(tx: NftTransaction): Promise<NftRunStats> {
    this.lastTransaction = tx;
    this.transactions.push(tx);
    if (tx.error) throw tx.error;
    const t0 = performance.now();
    this.#state = this.#apply(tx.operations);
    this.#generation++;
    return { serializeMs: 0, applyMs: performance.now() - t0 };
  }

  /** Applies operations synchronously (for loading a starting state); throws NftError on failure. */
  load(text: string): void {
    const { ops, errors } = parseOperations(text);
    if (errors.length > 0) throw new NftError(`cannot parse: ${errors[0]}`, { code: 'Invalid' });
    this.#state = this.#apply(ops);
    this.#generation++;
  }

  async generation(): Promise<number> {
    return this.#generation;
  }

  #apply(ops: readonly NftOperation[]): FakeState {
    const w = new Working(this.#state);
    ops.forEach((op, i) => {
      const fail = (code: NftError['code'], message: string): never => {
        throw new NftError(message, { code, operation: op, line: i + 1 });
      };
      const injected = this.failOperation?.(op);
      if (injected) throw injected;
      this.#applyOne(w, op, fail);
    });
    return w.state;
  }

  #applyOne(w: Working, op: NftOperation, fail: Fail): void {
    const { verb, object } = op;
    const s = w.state;
    if (object.kind !== 'table' && !s.table) fail('NotFound', 'No such file or directory (table)');
    switch (object.kind) {
      case 'table':
        if (verb === 'add' || verb === 'create') {
          if (s.table && verb === 'create') fail('Exists', 'File exists');
          s.table =
            object.comment !== undefined
              ? { kind: 'table', comment: object.comment }
              : (s.table ?? { kind: 'table' });
        } else if (verb === 'delete' || verb === 'destroy') {
          if (!s.table && verb === 'delete') fail('NotFound', 'No such file or directory');
          s.table = undefined;
          s.chains = new Map();
          s.sets = new Map();
        } else if (verb === 'flush') {
          if (!s.table) fail('NotFound', 'No such file or directory');
          for (const name of [...s.chains.keys()]) w.chainForWrite(name)?.rules.splice(0);
          for (const name of [...s.sets.keys()]) w.setForWrite(name)?.elements.clear();
        }
        return;
      case 'chain':
        return applyContainerVerb(
          verb,
          {
            exists: s.chains.has(object.name),
            add: () => w.putChain({ chain: object, rules: [] }),
            flush: () => w.chainForWrite(object.name)?.rules.splice(0),
            referenced: () => this.#chainReferenced(s, object.name),
            remove: () => s.chains.delete(object.name),
          },
          fail,
        );
      case 'rule': {
        const chain = w.chainForWrite(object.chain);
        if (!chain) return fail('NotFound', 'No such file or directory (chain)');
        const at =
          object.handle === undefined ? -1 : chain.rules.findIndex((r) => r.handle === object.handle);
        if (object.handle !== undefined && at < 0)
          fail('NotFound', 'No such file or directory (rule handle)');
        if (verb === 'delete' || verb === 'destroy') {
          chain.rules.splice(at, 1);
          return;
        }
        this.#checkReferences(s, object.rule, fail);
        const rule: FakeRule = {
          rule: object.rule,
          handle: s.nextHandle++,
          ...(object.comment !== undefined ? { comment: object.comment } : {}),
        };
        if (verb === 'replace') chain.rules[at] = { ...rule, handle: object.handle ?? rule.handle };
        else if (verb === 'insert') chain.rules.splice(at < 0 ? 0 : at, 0, rule);
        else chain.rules.splice(at < 0 ? chain.rules.length : at + 1, 0, rule);
        return;
      }
      case 'set':
      case 'map': {
        const existing = s.sets.get(object.name);
        if (existing && existing.object.kind !== object.kind)
          fail('Exists', `File exists (${existing.object.kind})`);
        return applyContainerVerb(
          verb,
          {
            exists: existing !== undefined,
            add: () => w.putSet({ object, elements: new Map() }),
            flush: () => w.setForWrite(object.name)?.elements.clear(),
            referenced: () => this.#setReferenced(s, object.name),
            remove: () => s.sets.delete(object.name),
          },
          fail,
        );
      }
      case 'element': {
        const set = w.setForWrite(object.set);
        if (!set) return fail('NotFound', 'No such file or directory (set)');
        const isMap = set.object.kind === 'map';
        if (
          isMap !== (object.value !== undefined && object.value.length > 0) &&
          (verb === 'add' || verb === 'create')
        ) {
          fail('Failed', isMap ? 'map element needs a value' : 'set element cannot have a value');
        }
        const key = keyText(object);
        const existing = set.elements.get(key);
        if (verb === 'add' || verb === 'create') {
          if (existing) {
            if (verb === 'create' || valueText(existing) !== valueText(object)) fail('Exists', 'File exists');
            return;
          }
          for (const v of object.value ?? []) this.#checkReferences(s, v, fail);
          set.elements.set(key, object);
        } else {
          if (!existing) {
            if (verb === 'delete') fail('NotFound', 'No such file or directory (element)');
            return;
          }
          set.elements.delete(key);
        }
        return;
      }
    }
  }

  #checkReferences(
    s: FakeState,
    text: string,
    fail: (code: NftError['code'], message: string) => never,
  ): void {
    for (const m of text.matchAll(CHAIN_REF)) {
      if (m[1] !== undefined && !s.chains.has(m[1]))
        fail('NotFound', `No such file or directory (chain ${m[1]})`);
    }
    for (const m of text.matchAll(SET_REF)) {
      if (m[1] !== undefined && !s.sets.has(m[1]))
        fail('NotFound', `No such file or directory (set ${m[1]})`);
    }
  }

  #chainReferenced(s: FakeState, name: string): boolean {
    const refers = (text: string): boolean => {
      for (const m of text.matchAll(CHAIN_REF)) if (m[1] === name) return true;
      return false;
    };
    for (const c of s.chains.values()) for (const r of c.rules) if (refers(r.rule)) return true;
    for (const set of s.sets.values()) {
      if (set.object.kind !== 'map') continue;
      for (const e of set.elements.values()) if (e.value && refers(valueText(e))) return true;
    }
    return false;
  }

  #setReferenced(s: FakeState, name: string): boolean {
    for (const c of s.chains.values()) {
      for (const r of c.rules) for (const m of r.rule.matchAll(SET_REF)) if (m[1] === name) return true;
    }
    return false;
  }

  async list(): Promise<NftListing> {
    if (this.failListing) throw this.failListing;
    const s = this.#state;
    if (!s.table) throw new NftError('No such file or directory', { code: 'NotFound' });
    const sets: NftSet[] = [];
    const maps: NftMap[] = [];
    for (const set of s.sets.values()) {
      if (set.object.kind === 'set') sets.push(set.object);
      else maps.push(set.object);
    }
    return {
      table: s.table,
      chains: [...s.chains.values()].map((c) => c.chain),
      sets,
      maps,
      rules: [...s.chains.values()].flatMap((c) =>
        c.rules.map((r) => ({
          chain: c.chain.name,
          handle: r.handle,
          ...(r.comment !== undefined ? { comment: r.comment } : {}),
        })),
      ),
    };
  }

  async listElements(kind: 'set' | 'map', name: string): Promise<NftElement[]> {
    if (this.failListing) throw this.failListing;
    const set = this.#state.sets.get(name);
    if (!this.#state.table || !set || set.object.kind !== kind) {
      throw new NftError('No such file or directory', { code: 'NotFound' });
    }
    return [...set.elements.values()];
  }

  /** Rules of a chain, in order (as `add rule` objects without handles). */
  rules(chain: string): string[] {
    return (this.#state.chains.get(chain)?.rules ?? []).map((r) => r.rule);
  }

  hasChain(name: string): boolean {
    return this.#state.chains.has(name);
  }

  /** The whole state as sorted `add` lines: table, chains, sets, maps, then rules and elements per container. */
  dump(): string {
    const s = this.#state;
    if (!s.table) return '';
    const lines: string[] = [writeOperation(this.ref, { verb: 'add', object: s.table })];
    const chains = [...s.chains.values()].sort((a, b) => cmp(a.chain.name, b.chain.name));
    const sets = [...s.sets.values()].sort((a, b) => cmp(a.object.name, b.object.name));
    for (const c of chains) lines.push(writeOperation(this.ref, { verb: 'add', object: c.chain }));
    for (const kind of ['set', 'map'] as const) {
      for (const set of sets)
        if (set.object.kind === kind)
          lines.push(writeOperation(this.ref, { verb: 'add', object: set.object }));
    }
    for (const c of chains) {
      for (const r of c.rules) {
        const rule = {
          kind: 'rule',
          chain: c.chain.name,
          rule: r.rule,
          ...(r.comment !== undefined ? { comment: r.comment } : {}),
        } as const;
        lines.push(writeOperation(this.ref, { verb: 'add', object: rule }));
      }
    }
    for (const set of sets) {
      const elements = [...set.elements.entries()].sort((a, b) => cmp(a[0], b[0]));
      for (const [, e] of elements) lines.push(writeOperation(this.ref, { verb: 'add', object: e }));
    }
    return lines.join('\n') + '\n';
  }
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
