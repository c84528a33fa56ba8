// The in-process executor's element path: a transaction that only adds, deletes or flushes elements of sets whose
// declarations we know goes straight to the kernel over nf_tables netlink (netlink/), one batch, one kernel
// transaction; anything else (tables, chains, rules, set declarations, interval sets) goes to the executor it
// wraps (libnftables, or the `nft` command), unchanged. The kernel state is the same either way: netlink/'s kernel
// tests hold the two equal element for element.
//
// Why: at 10,000 flat Services a cold start is ≈ 126,000 element operations, and ≈ 70% of `nft -f`'s time for them
// is nft's own parser, evaluator and cache; reading a 100,000-Service table back through `nft --json` takes nft
// ≈ 3.4 GiB, and even its terse listing (no elements printed) fetches every element: 81 s and 2.2 GiB at 1.2
// million. Here the element part is encoded from the text our planner already holds, and the table's objects are
// read over netlink without their elements (netlink/table.ts); a full sync reads no element at all (it refills), and
// writes its refill, however large, as one element-only transaction through here (writesElementsOf).
//
// The schemas (key and value layout of each set) come from the layout's declarations (useDeclarations), given
// once by the backend: the sets exist with exactly those types, since the same declarations are in every full
// sync's setup.
import type { Logger } from '../../util/logger.js';
import { SILENT_LOGGER } from '../../util/logger.js';
import { NftError } from './errors.js';
import type { NftExecutor, NftListing, NftRunStats } from './executor.js';
import type { NftElement, NftMap, NftSet } from './objects.js';
import type { NftTableRef } from './serialize.js';
import type { NftTransaction } from './transaction.js';
import type { NetlinkElementError, NetlinkElements } from './netlink/elements.js';
import { canApply } from './netlink/elements.js';
import type { ElementSchema } from './netlink/schema.js';
import { elementSchemas } from './netlink/schema.js';

function toNftError(e: NetlinkElementError): NftError {
  return new NftError(e.message, {
    code: e.code,
    ...(e.operation !== undefined ? { operation: e.operation } : {}),
    ...(e.index !== undefined ? { line: e.index + 1 } : {}),
    ...(e.kernelText !== undefined ? { detail: e.kernelText } : {}),
  });
}

/**
 * Operations per transaction of a cold start written over netlink. A kernel transaction costs little beyond its
 * elements, so the pieces are cut small for our memory, not the kernel's: a piece's operations live from the
 * moment they are made until the kernel answered, while the next piece is made, and a piece of 100,000 (≈ 20 MiB
 * of operation objects) outlived every young-generation collection meanwhile and was copied into the old one. At
 * 100,000 flat Services that was ≈ 230 MiB of garbage, all of a cold start's peak heap above what it keeps. 5,000
 * (≈ 1 MiB) die young. Measured with the sampling heap profiler on bench/workload.ts's cluster.
 */
export const NETLINK_COLD_START_CHUNK = 5_000;

/** Counts of what went where, for tests and the log. */
export interface ElementsExecutorCounts {
  readonly netlinkTransactions: number;
  readonly delegatedTransactions: number;
  readonly netlinkListings: number;
  /** Table listings (list()) asked of netlink, and how many of them nft answered instead. */
  readonly netlinkTableListings: number;
  readonly tableListingFallbacks: number;
}

/**
 * An executor with no listWithElements: list() is netlink's listing of the table's objects (no element), and
 * listElements, for a declared set, netlink's dump of that set alone (`inspect`; a full sync reads none).
 */
export class NftElementsExecutor implements NftExecutor {
  readonly ref: NftTableRef;
  readonly coldStartChunk = NETLINK_COLD_START_CHUNK;
  readonly #inner: NftExecutor & { close?(): void };
  readonly #elements: NetlinkElements;
  #schemas: ReadonlyMap<string, ElementSchema> = new Map();
  #counts = {
    netlinkTransactions: 0,
    delegatedTransactions: 0,
    netlinkListings: 0,
    netlinkTableListings: 0,
    tableListingFallbacks: 0,
  };
  #listingFallback: string | undefined;

  readonly #logger: Logger;

  /** `logger` hears of a table listing nft had to answer (at 100,000 Services, minutes of nft instead of ms). */
  constructor(
    inner: NftExecutor & { close?(): void },
    elements: NetlinkElements,
    logger: Logger = SILENT_LOGGER,
  ) {
    this.ref = inner.ref;
    this.#inner = inner;
    this.#elements = elements;
    this.#logger = logger;
  }

  /** The table's set and map declarations (the layout's): which of them netlink may write, and how. */
  useDeclarations(declarations: readonly (NftSet | NftMap)[]): void {
    this.#schemas = elementSchemas(declarations);
  }

  /** A declared set netlink writes (not an interval set, whose elements stay with nft: netlink/schema.ts). */
  writesElementsOf(set: string): boolean {
    return this.#schemas.has(set);
  }

  get counts(): ElementsExecutorCounts {
    return { ...this.#counts };
  }

  /** Why the last table listing that nft answered could not be read over netlink, if one was. */
  get listingFallback(): string | undefined {
    return this.#listingFallback;
  }

  async run(tx: NftTransaction): Promise<NftRunStats> {
    if (tx.error) throw tx.error;
    if (tx.size === 0) return { serializeMs: 0, applyMs: 0 };
    // A streamed transaction (a refill's elements, for sets writesElementsOf named) is written as it is made; the
    // encoder refuses an operation netlink cannot write, naming it.
    const stream = tx.stream;
    if (stream === undefined && !canApply(tx.operations, this.#schemas)) {
      this.#counts.delegatedTransactions++;
      return this.#inner.run(tx);
    }
    this.#counts.netlinkTransactions++;
    const r = await this.#elements.apply(this.ref, stream ?? tx.operations, this.#schemas);
    if (!r.ok) throw toNftError(r.error);
    return { serializeMs: r.stats.encodeMs, applyMs: r.stats.kernelMs };
  }

  /**
   * The table's objects over netlink. A missing table is NotFound, as nft says it. Any other failure (something
   * in the table the netlink reader does not know, a socket error, a ruleset that kept changing under the dumps)
   * falls back to the executor we wrap: nft can list anything in the table, only slowly, and a full sync must not
   * fail because our reader's vocabulary is narrow. Should nft fail too, its error says that netlink failed first.
   */
  async list(): Promise<NftListing> {
    this.#counts.netlinkTableListings++;
    const r = await this.#elements.listTable(this.ref);
    if (r.ok) return r.listing;
    if (r.error.code === 'NotFound') throw toNftError(r.error);
    this.#counts.tableListingFallbacks++;
    this.#listingFallback = r.error.message;
    this.#logger.warn('could not read the nftables table over netlink; nft lists it instead, which is slow', {
      table: `${this.ref.family} ${this.ref.table}`,
      error: r.error.message,
    });
    try {
      return await this.#inner.list();
    } catch (e) {
      if (!(e instanceof NftError)) throw e;
      throw new NftError(`${e.message} (asked of nft after the netlink listing failed: ${r.error.message})`, {
        code: e.code,
        ...(e.detail !== undefined ? { detail: e.detail } : {}),
      });
    }
  }

  /** The ruleset's generation in this network namespace (netlink/generation.ts). */
  async generation(): Promise<number> {
    const r = await this.#elements.generation();
    if (!r.ok) throw toNftError(r.error);
    return r.id;
  }

  async listElements(kind: 'set' | 'map', name: string): Promise<NftElement[]> {
    const schema = this.#schemas.get(name);
    if (schema === undefined) return this.#inner.listElements(kind, name);
    this.#counts.netlinkListings++;
    const r = await this.#elements.list(this.ref, name, schema);
    if (!r.ok) throw toNftError(r.error);
    return r.elements.map((e) => ({
      kind: 'element',
      set: name,
      key: [e.key],
      ...(e.value !== undefined ? { value: [e.value] } : {}),
      ...(e.comment !== undefined ? { comment: e.comment } : {}),
    }));
  }

  close(): void {
    this.#elements.close();
    this.#inner.close?.();
  }
}
