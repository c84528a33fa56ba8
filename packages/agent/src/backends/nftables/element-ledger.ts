// Which elements of the shared sets and maps are wanted, by how many service ports, and what the kernel holds, so
// that a sync writes only the keys its changed ports touched: new key → add, new value → delete + add (nft refuses
// to re-add a key with another value), no owner left → delete. The kernel side changes only through apply(), after
// nft succeeded.
//
// Everything is kept as text (key fields and value fields each joined with ` . `), one string per key and per
// value, and no element object is kept: at 100,000 Services the flat layout holds over a million elements, and
// an object, two arrays and their field strings per element were most of the agent's memory and of its garbage
// collector's work. Most of those million are a flat port's endpoint entries, `frontend . slot` → endpoint for
// slots 0…N-1: they are claimed as one run (ElementRun) and kept as the frontend and the port's values, with no
// key string and no map entry per element (the keys are made only when an operation is written). The operations
// this ledger writes carry their text as one pre-joined field (objects.ts allows it); the serializer joins fields
// with ` . `, so the line nft reads is the same as from split fields.
//
// A full sync starts from an empty kernel: it flushes every container of a live table, or fills a table it just
// made (planner.ts), so it needs no view of the kernel's elements and reads none back.
import type { NftElement, NftOperation, NftVerb } from '../../netfilter/nft/objects.js';
import { MultisetDigest } from './digest.js';

/** Between the values of an ElementRun (no value's text holds a line break: validate.ts). */
export const RUN_SEPARATOR = '\n';

/**
 * The elements `prefix . 0` … `prefix . n-1` of one map, valued by the n values in `values` (a flat port's
 * endpoint entries for one frontend). One owner's run is one entry of the ledger and one string of values,
 * however many elements it holds.
 */
export interface ElementRun {
  readonly set: string;
  /** The key's fields before the index, joined with ` . `. */
  readonly prefix: string;
  /** Each index's value as text, in index order, joined with RUN_SEPARATOR ('' for none). */
  readonly values: string;
}

/** A run's values, one per index. */
function runValues(values: string | undefined): readonly string[] {
  return values === undefined || values === '' ? NO_VALUES : values.split(RUN_SEPARATOR);
}

/** How many elements a run's values make. */
function runLength(values: string): number {
  if (values === '') return 0;
  let n = 1;
  for (let at = values.indexOf(RUN_SEPARATOR); at >= 0; at = values.indexOf(RUN_SEPARATOR, at + 1)) n++;
  return n;
}

/** The keys (and run prefixes) of each set that a partial sync's releases and claims touched. */
export class Touched {
  readonly keys = new Map<string, Set<string>>();
  readonly runs = new Map<string, Set<string>>();
}

/** What the kernel will hold once a partial sync's transaction succeeded (undefined: nothing at that key). */
export class KernelUpdates {
  readonly elements: [set: string, key: string, value: string | undefined][] = [];
  readonly runs: [set: string, prefix: string, values: string | undefined][] = [];

  get size(): number {
    return this.elements.length + this.runs.length;
  }
}

export function elementKey(e: NftElement): string {
  // A one-field key (a plain set's, or a key this ledger wrote pre-joined) is its own text: no copy.
  return e.key.length === 1 ? (e.key[0] as string) : e.key.join(' . ');
}

export function elementValue(e: NftElement): string {
  if (!e.value) return '';
  return e.value.length === 1 ? (e.value[0] as string) : e.value.join(' . ');
}

/** The key of a run's element at `index`. */
export function runKey(prefix: string, index: number): string {
  return `${prefix} . ${index}`;
}

/** The wanted elements of one set or map. */
interface WantedSet {
  /** key → value ('' for a set's element); the first port to claim a key decides its value and comment. */
  readonly values: Map<string, string>;
  /** Keys claimed by more than one port → how many (most keys have one owner, and no entry here). */
  readonly owners: Map<string, number>;
  /** Comments of the wanted elements that have one (the no-endpoint maps'). */
  readonly comments: Map<string, string>;
  /** Run prefix → its values; the first port to claim a prefix decides them. */
  readonly runs: Map<string, string>;
  /** Prefixes claimed by more than one port → how many. */
  readonly runOwners: Map<string, number>;
}

function wantedSet(): WantedSet {
  return { values: new Map(), owners: new Map(), comments: new Map(), runs: new Map(), runOwners: new Map() };
}

/**
 * The element of a partial sync's operation for a key held as text (see the header). One literal per shape, no
 * spread: a spread-built object costs about twice a literal's memory and time.
 */
function elementObject(set: string, key: string, value?: string, comment?: string): NftElement {
  const hasValue = value !== undefined && value !== '';
  if (comment === undefined)
    return hasValue
      ? { kind: 'element', set, key: [key], value: [value] }
      : { kind: 'element', set, key: [key] };
  return hasValue
    ? { kind: 'element', set, key: [key], value: [value], comment }
    : { kind: 'element', set, key: [key], comment };
}

/**
 * An operation of the stream of element operations a full sync makes (a cold start, a live table's refill: over a
 * million), which is its own element (`object` is the operation itself): one object per element, not an operation
 * and an element (measured on the 100,000-Service refill, whose million operations live until the kernel
 * answered, the garbage collector's largest share). Instances of a class, not literals: V8 watches which literals'
 * objects survive and may allocate all of a literal's objects straight into the old generation, and it did so for
 * these, which at a cold start live only until their piece is written (≈ 230 MiB of old-generation garbage at
 * 100,000 Services). Key and value are arrays made when read: the writer reads them once.
 */
class StreamedElementOperation implements NftOperation, NftElement {
  readonly kind = 'element' as const;
  readonly verb: NftVerb = 'add';
  constructor(
    readonly set: string,
    readonly keyText: string,
    readonly valueText: string | undefined,
    readonly comment: string | undefined,
  ) {}

  get object(): NftElement {
    return this;
  }

  get key(): readonly string[] {
    return [this.keyText];
  }

  get value(): readonly string[] | undefined {
    return this.valueText === undefined ? undefined : [this.valueText];
  }
}

/** The kernel's side where it is not the wanted one: key (or prefix) → what it holds, null for nothing. */
type Differences<V> = Map<string, Map<string, V | null>>;

function differencesOf<V>(all: Differences<V>, setName: string): Map<string, V | null> {
  let differs = all.get(setName);
  if (!differs) all.set(setName, (differs = new Map()));
  return differs;
}

const NO_VALUES: readonly string[] = [];

export class ElementLedger {
  #desired = new Map<string, WantedSet>();
  /**
   * Whether the kernel's containers are empty as far as this ledger knows: from the start of a full sync (it
   * flushes them, or made them) until its commit. Afterwards the kernel is known to hold exactly the wanted
   * elements, and only where a later sync's claims and releases made the two differ is the kernel's side kept
   * (#differs, #runDiffers): at 100,000 Services a second map of every element cost as much as the wanted one.
   */
  #kernelEmpty = true;
  #differs: Differences<string> = new Map();
  #runDiffers: Differences<string> = new Map();

  /** Forgets what is wanted and what the kernel holds: a full sync claims everything again, on emptied containers. */
  resetDesired(): void {
    this.#desired = new Map();
    this.#kernelEmpty = true;
    this.#differs = new Map();
    this.#runDiffers = new Map();
  }

  /** A full sync's transaction succeeded: the kernel now holds exactly the wanted elements. */
  kernelIsDesired(): void {
    this.#kernelEmpty = false;
    this.#differs = new Map();
    this.#runDiffers = new Map();
  }

  /** Whether the kernel is known to hold exactly the wanted elements: a sync committed, and nothing differs. */
  get kernelIsKnownDesired(): boolean {
    if (this.#kernelEmpty) return false;
    for (const d of this.#differs.values()) if (d.size > 0) return false;
    for (const d of this.#runDiffers.values()) if (d.size > 0) return false;
    return true;
  }

  /**
   * A digest of the wanted elements, keyed by `seed` (digest.ts): two ledgers give the same one exactly when they
   * want the same elements (keys, values, comments, runs), whatever order they were claimed in.
   */
  desiredDigest(seed: number): string {
    const d = new MultisetDigest(seed);
    for (const [setName, set] of this.#desired) {
      for (const [key, value] of set.values) d.add(setName, key, value, set.comments.get(key) ?? '');
      // A comment is never a NUL (sanitised), so a run cannot pass for an element.
      for (const [prefix, values] of set.runs) d.add(setName, prefix, values, '\0run');
    }
    return d.value;
  }

  #set(name: string): WantedSet {
    let set = this.#desired.get(name);
    if (!set) this.#desired.set(name, (set = wantedSet()));
    return set;
  }

  #kernelValue(setName: string, key: string): string | undefined {
    if (this.#kernelEmpty) return undefined;
    const differs = this.#differs.get(setName);
    if (differs?.has(key)) return differs.get(key) ?? undefined;
    return this.#desired.get(setName)?.values.get(key);
  }

  #kernelRun(setName: string, prefix: string): string | undefined {
    if (this.#kernelEmpty) return undefined;
    const differs = this.#runDiffers.get(setName);
    if (differs?.has(prefix)) return differs.get(prefix) ?? undefined;
    return this.#desired.get(setName)?.runs.get(prefix);
  }

  /** Before the wanted side of `key` changes from `was`: keep what the kernel holds, if it is derived from it. */
  #remember<V>(all: Differences<V>, setName: string, key: string, was: V | undefined): void {
    if (this.#kernelEmpty) return;
    const differs = differencesOf(all, setName);
    if (!differs.has(key)) differs.set(key, was ?? null);
  }

  /**
   * Claims one port's elements and runs and returns its handle for release(): the (set, key) pairs, then RUNS,
   * then the (set, prefix) pairs. The array is made at its final length: grown by push, a port's pairs sat in
   * room for twice as many.
   */
  claim(
    elements: readonly NftElement[],
    runs: readonly ElementRun[],
    touched: Touched | undefined,
  ): string[] {
    const claims = new Array<string>(2 * elements.length + (runs.length > 0 ? 1 + 2 * runs.length : 0));
    let at = 0;
    for (const e of elements) {
      const set = this.#set(e.set);
      const key = elementKey(e);
      if (set.values.has(key)) set.owners.set(key, (set.owners.get(key) ?? 1) + 1);
      else {
        this.#remember(this.#differs, e.set, key, undefined);
        set.values.set(key, elementValue(e));
        if (e.comment !== undefined) set.comments.set(key, e.comment);
      }
      claims[at++] = e.set;
      claims[at++] = key;
      if (touched) touch(touched.keys, e.set, key);
    }
    if (runs.length === 0) return claims;
    const keys = at;
    claims[at++] = RUNS;
    for (const run of runs) {
      const set = this.#set(run.set);
      // A run's prefix is the text of its frontend, which another element of the port has as its key (a flat
      // port's verdict): that one string is kept for both.
      let prefix = run.prefix;
      for (let j = 1; j < keys; j += 2)
        if (claims[j] === prefix) {
          prefix = claims[j] as string;
          break;
        }
      if (set.runs.has(prefix)) set.runOwners.set(prefix, (set.runOwners.get(prefix) ?? 1) + 1);
      else {
        this.#remember(this.#runDiffers, run.set, prefix, undefined);
        set.runs.set(prefix, run.values);
      }
      claims[at++] = run.set;
      claims[at++] = prefix;
      if (touched) touch(touched.runs, run.set, prefix);
    }
    return claims;
  }

  /** Releases what claim() recorded in `claims` for one port. */
  release(claims: readonly string[], touched: Touched): void {
    let i = 0;
    for (; i + 1 < claims.length && claims[i] !== RUNS; i += 2) {
      const setName = claims[i] as string;
      const key = claims[i + 1] as string;
      const set = this.#desired.get(setName);
      const value = set?.values.get(key);
      if (set && value !== undefined) {
        const n = set.owners.get(key);
        if (n === undefined) {
          this.#remember(this.#differs, setName, key, value);
          set.values.delete(key);
          set.comments.delete(key);
        } else if (n > 2) set.owners.set(key, n - 1);
        else set.owners.delete(key);
      }
      touch(touched.keys, setName, key);
    }
    for (i++; i + 1 < claims.length; i += 2) {
      const setName = claims[i] as string;
      const prefix = claims[i + 1] as string;
      const set = this.#desired.get(setName);
      const values = set?.runs.get(prefix);
      if (set && values !== undefined) {
        const n = set.runOwners.get(prefix);
        if (n === undefined) {
          this.#remember(this.#runDiffers, setName, prefix, values);
          set.runs.delete(prefix);
        } else if (n > 2) set.runOwners.set(prefix, n - 1);
        else set.runOwners.delete(prefix);
      }
      touch(touched.runs, setName, prefix);
    }
  }

  /**
   * Operations that make the kernel hold the wanted elements of the touched keys and runs: adds (and re-adds)
   * first, then deletes; `updates` records what changes, for apply(). Only after a full sync's commit: before it,
   * this ledger does not know what the kernel holds (a programming error, thrown).
   */
  diff(touched: Touched, adds: NftOperation[], deletes: NftOperation[], updates: KernelUpdates): void {
    if (this.#kernelEmpty) throw new Error('element ledger: a partial sync before a full sync committed');
    for (const [setName, prefixes] of touched.runs) this.#diffRuns(setName, prefixes, adds, deletes, updates);
    for (const [setName, keys] of touched.keys) {
      const desired = this.#desired.get(setName);
      const differs = this.#differs.get(setName);
      for (const key of keys) {
        const d = desired?.values.get(key);
        const k = this.#kernelValue(setName, key);
        if (d === k) {
          // Claimed back as it was (a re-rendered port): nothing differs any more.
          differs?.delete(key);
          continue;
        }
        if (d !== undefined) {
          if (k !== undefined) adds.push({ verb: 'delete', object: elementObject(setName, key) });
          adds.push({ verb: 'add', object: elementObject(setName, key, d, desired?.comments.get(key)) });
        } else {
          deletes.push({ verb: 'delete', object: elementObject(setName, key) });
        }
        updates.elements.push([setName, key, d]);
      }
    }
  }

  /** diff() for the touched runs of one set: only the indexes whose value changed are written. */
  #diffRuns(
    setName: string,
    prefixes: Iterable<string>,
    adds: NftOperation[],
    deletes: NftOperation[],
    updates: KernelUpdates,
  ): void {
    const desired = this.#desired.get(setName)?.runs;
    const differs = this.#runDiffers.get(setName);
    for (const prefix of prefixes) {
      const d = desired?.get(prefix);
      const k = this.#kernelRun(setName, prefix);
      if ((d ?? '') === (k ?? '')) {
        differs?.delete(prefix);
        continue;
      }
      const wanted = runValues(d);
      const held = runValues(k);
      for (let i = 0; i < Math.max(wanted.length, held.length); i++) {
        const dv = wanted[i];
        const kv = held[i];
        if (dv === kv) continue;
        const key = runKey(prefix, i);
        if (dv !== undefined) {
          if (kv !== undefined) adds.push({ verb: 'delete', object: elementObject(setName, key) });
          adds.push({ verb: 'add', object: elementObject(setName, key, dv) });
        } else deletes.push({ verb: 'delete', object: elementObject(setName, key) });
      }
      updates.runs.push([setName, prefix, d]);
    }
  }

  /**
   * A full sync's element adds for these sets (in this order), onto containers that are empty: every wanted
   * element, with their number; made as they are written.
   */
  fullDiff(setNames: readonly string[]): {
    readonly count: number;
    countOf(only: (set: string) => boolean): number;
    make(only?: (set: string) => boolean): Iterable<NftOperation>;
  } {
    const counts = new Map<string, number>();
    let count = 0;
    for (const setName of setNames) {
      const set = this.#desired.get(setName);
      if (!set) continue;
      let n = set.values.size;
      for (const values of set.runs.values()) n += runLength(values);
      counts.set(setName, n);
      count += n;
    }
    return {
      count,
      countOf: (only) => {
        let n = 0;
        for (const [setName, c] of counts) if (only(setName)) n += c;
        return n;
      },
      make: (only) => this.#adds(only ? setNames.filter(only) : setNames),
    };
  }

  *#adds(setNames: readonly string[]): Generator<NftOperation> {
    for (const setName of setNames) {
      const desired = this.#desired.get(setName);
      if (!desired) continue;
      for (const [prefix, values] of desired.runs) {
        let i = 0;
        for (const value of runValues(values))
          yield new StreamedElementOperation(setName, runKey(prefix, i++), value, undefined);
      }
      // Keys, then a lookup: destructuring each entry of a million-element map made an array per element.
      for (const key of desired.values.keys()) {
        const d = desired.values.get(key) as string;
        yield new StreamedElementOperation(setName, key, d === '' ? undefined : d, desired.comments.get(key));
      }
    }
  }

  /** A partial sync's transaction succeeded: the kernel holds what `updates` says. */
  apply(updates: KernelUpdates): void {
    for (const [setName, key, value] of updates.elements) {
      if (value === this.#desired.get(setName)?.values.get(key)) this.#differs.get(setName)?.delete(key);
      else differencesOf(this.#differs, setName).set(key, value ?? null);
    }
    for (const [setName, prefix, values] of updates.runs) {
      if (values === this.#desired.get(setName)?.runs.get(prefix))
        this.#runDiffers.get(setName)?.delete(prefix);
      else differencesOf(this.#runDiffers, setName).set(prefix, values ?? null);
    }
  }
}

/** Separates a claim handle's element pairs from its run pairs (no set is named with a NUL). */
const RUNS = '\0runs';

export function touch(touched: Map<string, Set<string>>, set: string, key: string): void {
  const keys = touched.get(set);
  if (keys) keys.add(key);
  else touched.set(set, new Set([key]));
}
