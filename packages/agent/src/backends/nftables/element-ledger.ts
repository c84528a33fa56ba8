// Which elements of the shared sets and maps are wanted, by how many service ports, and what the kernel holds, so
// that a sync writes only the keys its changed ports touched: new key → add, new value → delete + add (nft refuses
// to re-add a key with another value), no owner left → delete. The kernel side changes only through apply(), after
// nft succeeded.
//
// Everything is kept as text (key fields and value fields each joined with ` . `), one string per key and per
// value, and no element object is kept: at 100,000 Services the flat layout holds over a million elements, and
// an object, two arrays and their field strings per element were most of the agent's memory and of its garbage
// collector's work. The operations diff() writes carry that text as one pre-joined field (objects.ts allows it);
// the serializer joins fields with ` . `, so the line nft reads is the same as from split fields.
import type { NftElement, NftOperation, NftVerb } from '../../netfilter/nft/objects.js';

/** What the kernel will hold once the transaction succeeded: (set, key, value or undefined for deleted) each. */
export class KernelUpdates {
  readonly sets: string[] = [];
  readonly keys: string[] = [];
  readonly values: (string | undefined)[] = [];

  push(set: string, key: string, value: string | undefined): void {
    this.sets.push(set);
    this.keys.push(key);
    this.values.push(value);
  }

  get size(): number {
    return this.sets.length;
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

/** The wanted elements of one set or map. */
interface WantedSet {
  /** key → value ('' for a set's element); the first port to claim a key decides its value and comment. */
  readonly values: Map<string, string>;
  /** Keys claimed by more than one port → how many (most keys have one owner, and no entry here). */
  readonly owners: Map<string, number>;
  /** Comments of the wanted elements that have one (the no-endpoint maps'). */
  readonly comments: Map<string, string>;
}

function wantedSet(): WantedSet {
  return { values: new Map(), owners: new Map(), comments: new Map() };
}

/**
 * The element of a partial sync's operation (or a full sync's delete) for a key held as text (see the header).
 * One literal per shape, no spread: a spread-built object costs about twice a literal's memory and time.
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
  constructor(
    readonly verb: NftVerb,
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

export class ElementLedger {
  #desired = new Map<string, WantedSet>();
  /**
   * The kernel as a full sync read it back, from setKernel() until that sync's commit (kernelIsDesired()).
   * Afterwards the kernel is known to hold exactly the wanted elements, and only where a later sync's claims and
   * releases made the two differ is the kernel's value kept (#differs): at 100,000 Services a second map of
   * every element (and the updates that filled it after a cold start) cost as much as the wanted one.
   */
  #listed: Map<string, Map<string, string>> | undefined = new Map();
  /** set → key → what the kernel holds where it is not the wanted value (null: no element). */
  #differs = new Map<string, Map<string, string | null>>();

  /** Forgets what is wanted (a full sync claims everything again, then gives what it read back to setKernel). */
  resetDesired(): void {
    this.#desired = new Map();
    this.#listed = new Map();
    this.#differs = new Map();
  }

  /** Replaces what the kernel holds (read back by a full sync). */
  setKernel(kernel: Map<string, Map<string, string>>): void {
    this.#listed = kernel;
    this.#differs = new Map();
  }

  /** A full sync's transaction succeeded: the kernel now holds exactly the wanted elements. */
  kernelIsDesired(): void {
    this.#listed = undefined;
    this.#differs = new Map();
  }

  #kernelValue(setName: string, key: string): string | undefined {
    if (this.#listed) return this.#listed.get(setName)?.get(key);
    const differs = this.#differs.get(setName);
    if (differs?.has(key)) return differs.get(key) ?? undefined;
    return this.#desired.get(setName)?.values.get(key);
  }

  /** Before the wanted value of `key` changes from `was`: keep what the kernel holds, if it is derived from it. */
  #remember(setName: string, key: string, was: string | undefined): void {
    if (this.#listed) return;
    let differs = this.#differs.get(setName);
    if (!differs) this.#differs.set(setName, (differs = new Map()));
    if (!differs.has(key)) differs.set(key, was ?? null);
  }

  /**
   * Claims `elements` for one port and returns its (set, key) pairs, the port's handle for release(). The array
   * is made at its final length: grown by push, a port's two dozen pairs sat in room for forty.
   */
  claim(elements: readonly NftElement[], touched: Map<string, Set<string>> | undefined): string[] {
    const claims = new Array<string>(2 * elements.length);
    let at = 0;
    for (const e of elements) {
      let set = this.#desired.get(e.set);
      if (!set) this.#desired.set(e.set, (set = wantedSet()));
      const key = elementKey(e);
      if (set.values.has(key)) set.owners.set(key, (set.owners.get(key) ?? 1) + 1);
      else {
        this.#remember(e.set, key, undefined);
        set.values.set(key, elementValue(e));
        if (e.comment !== undefined) set.comments.set(key, e.comment);
      }
      claims[at++] = e.set;
      claims[at++] = key;
      if (touched) touch(touched, e.set, key);
    }
    return claims;
  }

  /** Releases what claim() recorded in `claims` for one port. */
  release(claims: readonly string[], touched: Map<string, Set<string>>): void {
    for (let i = 0; i + 1 < claims.length; i += 2) {
      const setName = claims[i] as string;
      const key = claims[i + 1] as string;
      const set = this.#desired.get(setName);
      const value = set?.values.get(key);
      if (set && value !== undefined) {
        const n = set.owners.get(key);
        if (n === undefined) {
          this.#remember(setName, key, value);
          set.values.delete(key);
          set.comments.delete(key);
        } else if (n > 2) set.owners.set(key, n - 1);
        else set.owners.delete(key);
      }
      touch(touched, setName, key);
    }
  }

  /**
   * Operations that make the kernel hold the wanted elements of these keys: adds (and re-adds) first, then
   * deletes. `updates` (a partial sync's; a full sync's commit is kernelIsDesired()) records what changes.
   */
  diff(
    keysBySet: Iterable<readonly [string, Iterable<string>]>,
    adds: NftOperation[],
    deletes: NftOperation[],
    updates: KernelUpdates | undefined,
  ): void {
    for (const [setName, keys] of keysBySet) {
      const desired = this.#desired.get(setName);
      const differs = this.#listed ? undefined : this.#differs.get(setName);
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
          adds.push({
            verb: 'add',
            object: elementObject(setName, key, d, desired?.comments.get(key)),
          });
        } else {
          deletes.push({ verb: 'delete', object: elementObject(setName, key) });
        }
        updates?.push(setName, key, d);
      }
    }
  }

  /**
   * A full sync's element operations for these sets (in this order): `deletes` receives the delete of every held
   * key no port wants (few), and the adds of every wanted key the kernel lacks or holds with another value
   * (delete + add) come back unmade, with their number: the plan makes them as they are written.
   */
  fullDiff(
    setNames: readonly string[],
    deletes: NftOperation[],
  ): { readonly count: number; make(only?: (set: string) => boolean): Iterable<NftOperation> } {
    let count = 0;
    for (const setName of setNames) {
      const wanted = this.#desired.get(setName)?.values;
      if (wanted)
        for (const [key, d] of wanted) {
          const k = this.#kernelValue(setName, key);
          if (k !== d) count += k === undefined ? 1 : 2;
        }
      const held = this.#listed ? this.#listed.get(setName) : this.#differs.get(setName);
      if (held)
        for (const [key, v] of held)
          if (v !== null && !wanted?.has(key))
            deletes.push({ verb: 'delete', object: elementObject(setName, key) });
    }
    return { count, make: (only) => this.#adds(only ? setNames.filter(only) : setNames) };
  }

  *#adds(setNames: readonly string[]): Generator<NftOperation> {
    for (const setName of setNames) {
      const desired = this.#desired.get(setName);
      if (!desired) continue;
      // Keys, then a lookup: destructuring each entry of a million-element map made an array per element.
      for (const key of desired.values.keys()) {
        const d = desired.values.get(key) as string;
        const k = this.#kernelValue(setName, key);
        if (k === d) continue;
        if (k !== undefined) yield new StreamedElementOperation('delete', setName, key, undefined, undefined);
        const value = d === '' ? undefined : d;
        yield new StreamedElementOperation('add', setName, key, value, desired.comments.get(key));
      }
    }
  }

  /** Every key wanted or held in `setName`, each once. */
  *allKeys(setName: string): Generator<string> {
    const a = this.#desired.get(setName)?.values;
    if (a) yield* a.keys();
    const held = this.#listed ? this.#listed.get(setName) : this.#differs.get(setName);
    if (held) for (const [k, v] of held) if (!a?.has(k) && v !== null) yield k;
  }

  /** A partial sync's transaction succeeded: the kernel holds what `updates` says. */
  apply(updates: KernelUpdates): void {
    const { sets, keys, values } = updates;
    for (let i = 0; i < sets.length; i++) {
      const setName = sets[i] as string;
      const key = keys[i] as string;
      const value = values[i];
      if (this.#listed) {
        let set = this.#listed.get(setName);
        if (!set) this.#listed.set(setName, (set = new Map()));
        if (value === undefined) set.delete(key);
        else set.set(key, value);
        continue;
      }
      let differs = this.#differs.get(setName);
      if (value === this.#desired.get(setName)?.values.get(key)) differs?.delete(key);
      else {
        if (!differs) this.#differs.set(setName, (differs = new Map()));
        differs.set(key, value ?? null);
      }
    }
  }
}

export function touch(touched: Map<string, Set<string>>, set: string, key: string): void {
  const keys = touched.get(set);
  if (keys) keys.add(key);
  else touched.set(set, new Set([key]));
}
