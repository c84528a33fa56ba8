// A digest of a multiset of texts that does not depend on their order: each entry is hashed on its own (two
// 32-bit lanes of a multiply-xorshift hash, keyed by a seed) and the hashes are summed lane by lane. Two ledgers
// that hold the same elements give the same digest however their maps were filled (a restarted agent renders in
// its model's order, the one that stopped had filled its maps in the order of years of churn).
//
// Not a cryptographic hash: what it guards is a restart's decision to trust the table it finds (state.ts), where a
// mistake is an accident (an element changed while no agent ran, and the digests collide: one chance in 2^64), not
// an attack: the seed is random per saved state, kept in a file only root reads, so no one outside can make
// cluster objects whose entries cancel out.

export class MultisetDigest {
  #a = 0;
  #b = 0;
  #count = 0;
  #h1 = 0;
  #h2 = 0;
  readonly #seed: number;

  constructor(seed: number) {
    this.#seed = seed >>> 0;
  }

  /** Adds one entry, made of up to four texts in order (their lengths are hashed too: ("ab", "c") ≠ ("a", "bc")). */
  add(p0: string, p1: string, p2 = '', p3 = ''): void {
    this.#h1 = 0xdeadbeef ^ this.#seed;
    this.#h2 = 0x41c6ce57 ^ this.#seed;
    this.#mix(p0);
    this.#mix(p1);
    this.#mix(p2);
    this.#mix(p3);
    const h1 = this.#h1;
    const h2 = this.#h2;
    const f1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
    const f2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(f1 ^ (f1 >>> 13), 3266489909);
    this.#a = (this.#a + (f1 >>> 0)) >>> 0;
    this.#b = (this.#b + (f2 >>> 0)) >>> 0;
    this.#count++;
  }

  #mix(s: string): void {
    let h1 = this.#h1;
    let h2 = this.#h2;
    for (let i = 0; i < s.length; i++) {
      const c = s.charCodeAt(i);
      h1 = Math.imul(h1 ^ c, 2654435761);
      h2 = Math.imul(h2 ^ c, 1597334677);
    }
    this.#h1 = Math.imul(h1 ^ (s.length + 0x10000), 2654435761);
    this.#h2 = Math.imul(h2 ^ (s.length + 0x10000), 1597334677);
  }

  /** `count:hex`, the number of entries and the two lanes' sums. */
  get value(): string {
    const hex = (n: number): string => n.toString(16).padStart(8, '0');
    return `${this.#count}:${hex(this.#a)}${hex(this.#b)}`;
  }
}
