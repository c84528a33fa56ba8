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
import type { NftElement, NftOperation } from '../../netfilter/nft/objects.js';

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

/** The element operation for a key held as text (see the header). */
function elementObject(set: string, key: string, value?: string, comment?: string): NftElement {
  return {
    kind: 'element',
    set,
    key: [key],
    ...(value !== undefined && value !== '' ? { value: [value] } : {}),
    ...(comment !== undefined ? { comment } : {}),
  };
}

export class ElementLedger {
  #desired = new Map<string, WantedSet>();
  #kernel = new Map<string, Map<string, string>>();

  /** Forgets what is wanted (a full sync claims everything again). */
  resetDesired(): void {
    this.#desired = new Map();
  }

  /** Replaces what the kernel holds (read back by a full sync). */
  setKernel(kernel: Map<string, Map<string, string>>): void {
    this.#kernel = kernel;
  }

  /**
   * Claims `elements` for one port. `claims` receives (set, key) pairs, the port's handle for release(): the key
   * strings are the ledger's own, so the port's record of what it owns costs two references per element.
   */
  claim(
    elements: readonly NftElement[],
    touched: Map<string, Set<string>> | undefined,
    claims: string[],
  ): void {
    for (const e of elements) {
      let set = this.#desired.get(e.set);
      if (!set) this.#desired.set(e.set, (set = wantedSet()));
      const key = elementKey(e);
      if (set.values.has(key)) set.owners.set(key, (set.owners.get(key) ?? 1) + 1);
      else {
        set.values.set(key, elementValue(e));
        if (e.comment !== undefined) set.comments.set(key, e.comment);
      }
      claims.push(e.set, key);
      if (touched) touch(touched, e.set, key);
    }
  }

  /** Releases what claim() recorded in `claims` for one port. */
  release(claims: readonly string[], touched: Map<string, Set<string>>): void {
    for (let i = 0; i + 1 < claims.length; i += 2) {
      const setName = claims[i] as string;
      const key = claims[i + 1] as string;
      const set = this.#desired.get(setName);
      if (set?.values.has(key)) {
        const n = set.owners.get(key);
        if (n === undefined) {
          set.values.delete(key);
          set.comments.delete(key);
        } else if (n > 2) set.owners.set(key, n - 1);
        else set.owners.delete(key);
      }
      touch(touched, setName, key);
    }
  }

  /** Operations that make the kernel hold the wanted elements of these keys: adds (and re-adds) first, then deletes. */
  diff(
    keysBySet: Iterable<readonly [string, Iterable<string>]>,
    adds: NftOperation[],
    deletes: NftOperation[],
    updates: KernelUpdates,
  ): void {
    for (const [setName, keys] of keysBySet) {
      const desired = this.#desired.get(setName);
      const kernel = this.#kernel.get(setName);
      for (const key of keys) {
        const d = desired?.values.get(key);
        const k = kernel?.get(key);
        if (d !== undefined) {
          if (k === d) continue;
          if (k !== undefined) adds.push({ verb: 'delete', object: elementObject(setName, key) });
          adds.push({
            verb: 'add',
            object: elementObject(setName, key, d, desired?.comments.get(key)),
          });
          updates.push(setName, key, d);
        } else if (k !== undefined) {
          deletes.push({ verb: 'delete', object: elementObject(setName, key) });
          updates.push(setName, key, undefined);
        }
      }
    }
  }

  /** Every key wanted or held in `setName`, each once. */
  *allKeys(setName: string): Generator<string> {
    const a = this.#desired.get(setName)?.values;
    const b = this.#kernel.get(setName);
    if (a) yield* a.keys();
    if (b) for (const k of b.keys()) if (!a?.has(k)) yield k;
  }

  apply(updates: KernelUpdates): void {
    const { sets, keys, values } = updates;
    let setName: string | undefined;
    let set: Map<string, string> | undefined;
    for (let i = 0; i < sets.length; i++) {
      if (sets[i] !== setName) {
        setName = sets[i] as string;
        set = this.#kernel.get(setName);
        if (!set) this.#kernel.set(setName, (set = new Map()));
      }
      const key = keys[i] as string;
      const value = values[i];
      if (value === undefined) set?.delete(key);
      else set?.set(key, value);
    }
  }
}

export function touch(touched: Map<string, Set<string>>, set: string, key: string): void {
  const keys = touched.get(set);
  if (keys) keys.add(key);
  else touched.set(set, new Set([key]));
}
