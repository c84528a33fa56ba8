// Which elements of the shared sets and maps are wanted, by how many service ports, and what the kernel holds, so
// that a sync writes only the keys its changed ports touched: new key → add, new value → delete + add (nft refuses
// to re-add a key with another value), no owner left → delete. The kernel side changes only through apply(), after
// nft succeeded.
import type { NftElement, NftOperation } from '../../netfilter/nft/objects.js';

interface Desired {
  readonly element: NftElement;
  readonly value: string;
  owners: number;
}

/** (set, key, value or undefined for deleted): what the kernel will hold once the transaction succeeded. */
export type KernelUpdate = readonly [string, string, string | undefined];

export function elementKey(e: NftElement): string {
  return e.key.join(' . ');
}

export function elementValue(e: NftElement): string {
  return e.value ? e.value.join(' . ') : '';
}

export class ElementLedger {
  #desired = new Map<string, Map<string, Desired>>();
  #kernel = new Map<string, Map<string, string>>();

  /** Forgets what is wanted (a full sync claims everything again). */
  resetDesired(): void {
    this.#desired = new Map();
  }

  /** Replaces what the kernel holds (read back by a full sync). */
  setKernel(kernel: Map<string, Map<string, string>>): void {
    this.#kernel = kernel;
  }

  claim(elements: readonly NftElement[], touched: Map<string, Set<string>> | undefined): void {
    for (const e of elements) {
      let set = this.#desired.get(e.set);
      if (!set) this.#desired.set(e.set, (set = new Map()));
      const key = elementKey(e);
      const d = set.get(key);
      if (d) d.owners++;
      else set.set(key, { element: e, value: elementValue(e), owners: 1 });
      if (touched) touch(touched, e.set, key);
    }
  }

  release(elements: readonly NftElement[], touched: Map<string, Set<string>>): void {
    for (const e of elements) {
      const set = this.#desired.get(e.set);
      const key = elementKey(e);
      const d = set?.get(key);
      if (d && --d.owners === 0) set?.delete(key);
      touch(touched, e.set, key);
    }
  }

  /** Operations that make the kernel hold the wanted elements of these keys: adds (and re-adds) first, then deletes. */
  diff(
    keysBySet: Iterable<readonly [string, Iterable<string>]>,
    adds: NftOperation[],
    deletes: NftOperation[],
    updates: KernelUpdate[],
  ): void {
    for (const [setName, keys] of keysBySet) {
      const desired = this.#desired.get(setName);
      const kernel = this.#kernel.get(setName);
      for (const key of keys) {
        const d = desired?.get(key);
        const k = kernel?.get(key);
        if (d) {
          if (k === d.value) continue;
          if (k !== undefined)
            adds.push({ verb: 'delete', object: { kind: 'element', set: setName, key: d.element.key } });
          adds.push({ verb: 'add', object: d.element });
          updates.push([setName, key, d.value]);
        } else if (k !== undefined) {
          deletes.push({ verb: 'delete', object: { kind: 'element', set: setName, key: key.split(' . ') } });
          updates.push([setName, key, undefined]);
        }
      }
    }
  }

  /** Every key wanted or held in `setName`, each once. */
  *allKeys(setName: string): Generator<string> {
    const a = this.#desired.get(setName);
    const b = this.#kernel.get(setName);
    if (a) yield* a.keys();
    if (b) for (const k of b.keys()) if (!a?.has(k)) yield k;
  }

  apply(updates: readonly KernelUpdate[]): void {
    for (const [setName, key, value] of updates) {
      let set = this.#kernel.get(setName);
      if (!set) this.#kernel.set(setName, (set = new Map()));
      if (value === undefined) set.delete(key);
      else set.set(key, value);
    }
  }
}

export function touch(touched: Map<string, Set<string>>, set: string, key: string): void {
  const keys = touched.get(set);
  if (keys) keys.add(key);
  else touched.set(set, new Set([key]));
}
