// What the rest of the code needs from nftables, for one table: run a transaction atomically, list the table's
// objects, list a set's or map's elements. NftCommandExecutor drives the real nft, either the `nft` binary or
// libnftables in this process (NftInvoker; which one: choose-executor.ts); FakeNft (fake.ts) keeps state in memory
// behind the same interface.
import type { CommandRunner } from '../command.js';
import { NftError, classifyNftMessage } from './errors.js';
import {
  parseElementsJson,
  parseObjectListsJson,
  parseTableJson,
  parseTableWithElementsJson,
} from './json.js';
import type { NftChain, NftElement, NftMap, NftOperation, NftSet, NftTable } from './objects.js';
import type { NftTableRef } from './serialize.js';
import { serializeTransaction } from './serialize.js';
import type { NftTransaction } from './transaction.js';

/** A rule as listed by the kernel: its text is not read back (JSON gives expressions, not nft syntax). */
export interface NftListedRule {
  readonly chain: string;
  readonly handle: number;
  readonly comment?: string;
}

export interface NftListing {
  readonly table: NftTable;
  readonly chains: readonly NftChain[];
  readonly sets: readonly NftSet[];
  readonly maps: readonly NftMap[];
  readonly rules: readonly NftListedRule[];
}

/** Where the time of one run went: writing the text (ours) and applying it (nft's). */
export interface NftRunStats {
  readonly serializeMs: number;
  readonly applyMs: number;
}

export interface NftExecutor {
  readonly ref: NftTableRef;
  /** Applies the transaction atomically; rejects with an NftError (the sticky error, or nft's, with its line). */
  run(tx: NftTransaction): Promise<NftRunStats>;
  /** The table's objects; rejects with NftError code NotFound when the table does not exist. */
  list(): Promise<NftListing>;
  /**
   * The table's chains, sets and maps, without rules (NotFound as list()), where list() would cost far more:
   * nft 1.0.6 fetches every element of a table for any listing of the table itself. A full sync lists this way.
   */
  listObjects?(): Promise<NftListing>;
  /** Elements of a set or map (key, value, comment); NotFound when it does not exist. */
  listElements(kind: 'set' | 'map', name: string): Promise<NftElement[]>;
  /**
   * The table's objects and the elements of all its sets and maps in one read (NotFound when there is no table);
   * an executor without it is read with list() and listElements(). A full sync uses neither: it lists only the
   * table's objects (list()) and refills every set.
   */
  listWithElements?(): Promise<{ listing: NftListing; elements: Map<string, NftElement[]> }>;
  /**
   * The ruleset's generation in this network namespace: raised by every nf_tables transaction committed, by
   * anyone (netlink/generation.ts). Absent where the executor cannot ask the kernel (the nft command).
   */
  generation?(): Promise<number>;
  /** The table's set and map declarations, for an executor that writes elements itself (elements-executor.ts). */
  useDeclarations?(declarations: readonly (NftSet | NftMap)[]): void;
  /**
   * At most this many operations per transaction when a layout fills a table in pieces (the layout's own limit,
   * for nft's memory, still applies): an executor whose transactions cost little each may ask for smaller ones.
   */
  readonly coldStartChunk?: number;
  /**
   * Whether element operations on `set` (adds, deletes, its flush) go straight to the kernel: a transaction of
   * only such operations is one kernel transaction whatever its size, at a small cost per element (netlink/),
   * while anything else goes through nft, whose cost per element is far larger. Absent: everything goes to nft.
   */
  writesElementsOf?(set: string): boolean;
}

/** Time limit for one nft run; a hung nft must not hang the proxy forever. */
const NFT_TIMEOUT_MS = 10 * 60 * 1000;

/**
 * Turns nft's stderr into an NftError naming the failing operation: nft reports `INPUT:LINE:COL…: Error: …`
 * (INPUT is `/dev/stdin` for `nft -f -`, the in-memory file's path for libnftables), and since every operation
 * is one line, LINE - 1 is the operation's index.
 */
export function parseNftError(
  stderr: string,
  ops: readonly NftOperation[],
  exitCode: number,
  operationAt: (line: number, column: number) => number | undefined = (line) => line - 1,
): NftError {
  const first = stderr.split('\n').find((l) => /Error:/.test(l)) ?? stderr.trim();
  const located = /^(?:\/dev\/stdin|-|\/proc\/self\/fd\/\d+):(\d+):(\d+)(?:-\d+)?:\s*Error:\s*(.*)$/.exec(
    first,
  );
  const message =
    (located ? located[3] : first.replace(/^.*?Error:\s*/, '')) || `nft exited with code ${exitCode}`;
  const code = classifyNftMessage(message);
  if (!located) return new NftError(`nft: ${message}`, { code, detail: stderr });
  const index = operationAt(Number(located[1]), Number(located[2]));
  const line = index === undefined ? Number(located[1]) : index + 1;
  const operation = index === undefined ? undefined : ops[index];
  return new NftError(
    `nft: ${message}`,
    operation ? { code, line, operation, detail: stderr } : { code, line, detail: stderr },
  );
}

/** What one nft run gave back, whichever way nft was reached: exit status (0 ok), stdout, stderr. */
export interface NftRunResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * How nft is reached: the `nft` binary through a CommandRunner (commandInvoker), or libnftables in this process
 * (library-executor.ts). The executor above it is the same for both, so both read and report alike.
 */
export interface NftInvoker {
  /** `nft -f -` (checkOnly: `nft -c -f -`) of `text`; errors are located `INPUT:LINE:COL: Error: …`. */
  applyText(text: string, checkOnly: boolean): Promise<NftRunResult>;
  /** `nft --json [--terse] ARGS…` (a listing). */
  listJson(args: readonly string[], terse: boolean): Promise<NftRunResult>;
}

/** The `nft` binary through `commands` (this host, or `ip netns exec` of a namespace). */
export function commandInvoker(commands: CommandRunner): NftInvoker {
  return {
    applyText: (text, checkOnly) =>
      commands.run('nft', checkOnly ? ['-c', '-f', '-'] : ['-f', '-'], {
        stdin: text,
        timeoutMs: NFT_TIMEOUT_MS,
      }),
    listJson: (args, terse) =>
      commands.run('nft', terse ? ['--json', '--terse', ...args] : ['--json', ...args], {
        timeoutMs: NFT_TIMEOUT_MS,
      }),
  };
}

/** The executor for one table, over either way of reaching nft (NftInvoker). */
export class NftCommandExecutor implements NftExecutor {
  readonly ref: NftTableRef;
  readonly #nft: NftInvoker;

  /** `nft` is a CommandRunner (the binary is run through it) or an NftInvoker (e.g. libnftables in-process). */
  constructor(ref: NftTableRef, nft: CommandRunner | NftInvoker) {
    this.ref = ref;
    this.#nft = 'applyText' in nft ? nft : commandInvoker(nft);
  }

  async run(tx: NftTransaction): Promise<NftRunStats> {
    if (tx.error) throw tx.error;
    if (tx.size === 0) return { serializeMs: 0, applyMs: 0 };
    const t0 = performance.now();
    const text = serializeTransaction(this.ref, tx.operations);
    const t1 = performance.now();
    await this.#runText(text.text, tx.operations, false, (l, c) => text.operationAt(l, c));
    return { serializeMs: t1 - t0, applyMs: performance.now() - t1 };
  }

  /** `nft -c -f -`: parses and checks the transaction against the kernel without applying it. */
  async check(tx: NftTransaction): Promise<void> {
    if (tx.error) throw tx.error;
    const text = serializeTransaction(this.ref, tx.operations);
    await this.#runText(text.text, tx.operations, true, (l, c) => text.operationAt(l, c));
  }

  /** Runs already-serialized text, one line per operation of `ops` (render's output, or none). */
  runText(text: string, ops: readonly NftOperation[], checkOnly: boolean): Promise<void> {
    return this.#runText(text, ops, checkOnly);
  }

  async #runText(
    text: string,
    ops: readonly NftOperation[],
    checkOnly: boolean,
    operationAt?: (line: number, column: number) => number | undefined,
  ): Promise<void> {
    const r = await this.#nft.applyText(text, checkOnly);
    if (r.code !== 0) throw parseNftError(r.stderr, ops, r.code, operationAt);
  }

  async list(): Promise<NftListing> {
    const r = await this.#nft.listJson(['list', 'table', this.ref.family, this.ref.table], true);
    if (r.code !== 0) throw parseNftError(r.stderr, [], r.code);
    const parsed = parseTableJson(r.stdout);
    if (typeof parsed === 'string') throw new NftError(`nft list table: ${parsed}`, { code: 'Failed' });
    return parsed;
  }

  /**
   * `nft --json --terse list chains|sets|maps FAMILY`, this table's part of each: three small runs that fetch no
   * element (at 100,000 flat Services a few ms each, where `list table`, and even `list tables`, took nft 45–81 s
   * and 2.2 GiB). A table with none of these (or none at all) is listed by list(), cheaply then.
   */
  async listObjects(): Promise<NftListing> {
    const { family, table } = this.ref;
    const texts: string[] = [];
    for (const what of ['chains', 'sets', 'maps']) {
      const r = await this.#nft.listJson(['list', what, family], true);
      if (r.code !== 0) throw parseNftError(r.stderr, [], r.code);
      texts.push(r.stdout);
    }
    const parsed = parseObjectListsJson(texts, table);
    if (parsed === undefined) return this.list();
    if (typeof parsed === 'string') throw new NftError(`nft list ${family}: ${parsed}`, { code: 'Failed' });
    return parsed;
  }

  async listWithElements(): Promise<{ listing: NftListing; elements: Map<string, NftElement[]> }> {
    const r = await this.#nft.listJson(['list', 'table', this.ref.family, this.ref.table], false);
    if (r.code !== 0) throw parseNftError(r.stderr, [], r.code);
    const parsed = parseTableWithElementsJson(r.stdout);
    if (typeof parsed === 'string') throw new NftError(`nft list table: ${parsed}`, { code: 'Failed' });
    return parsed;
  }

  async listElements(kind: 'set' | 'map', name: string): Promise<NftElement[]> {
    const r = await this.#nft.listJson(['list', kind, this.ref.family, this.ref.table, name], false);
    if (r.code !== 0) throw parseNftError(r.stderr, [], r.code);
    const parsed = parseElementsJson(r.stdout, name);
    if (typeof parsed === 'string')
      throw new NftError(`nft list ${kind} ${name}: ${parsed}`, { code: 'Failed' });
    return parsed;
  }
}
