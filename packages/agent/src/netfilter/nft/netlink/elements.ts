// Set and map elements straight to the kernel over nf_tables netlink, from this process: what `nft -f` of the same
// element operations does to the kernel's state, without nft's parser, evaluator and cache (≈ 70% of a cold
// start's `nft -f` at 10,000 flat Services), listing a set's elements without nft's JSON of the whole table, and
// listing a table's own objects without a single element (listTable, table.ts). One NetlinkElements owns one
// socket (socket.ts) and does one thing at a time on it. Only element operations on sets whose schema is known go
// this way (canApply); everything else stays with nft.
//
// apply(): one batch, one kernel transaction (encode.ts); the kernel applies it inside the send, which for a large
// batch runs on a koffi worker thread, and answers every message (we ask for ACKs), so an error names its
// operation: the message by its sequence number, the element by the extended ACK's offset of the bad attribute.
import { setImmediate } from 'node:timers/promises';
import { describeObject } from '../objects.js';
import type { NftOperation } from '../objects.js';
import type { NftErrorCode } from '../errors.js';
import type { NftTableRef } from '../serialize.js';
import type { NftListing } from '../executor.js';
import type { ListedElement, NetlinkMessageView } from './decode.js';
import { decodeSetElemMessage, netlinkMessages, parseErrorReply } from './decode.js';
import type { BatchOperations, EncodedBatch } from './encode.js';
import { batchOperation, batchSize, encodeElementBatch, operationForReply } from './encode.js';
import {
  HOST_LE,
  NFGENMSG_LEN,
  NFPROTO,
  NFTA_SET_ELEM_LIST_SET,
  NFTA_SET_ELEM_LIST_TABLE,
  NFT_MSG_GETSETELEM,
  NFT_MSG_NEWSETELEM,
  NLMSG_DONE,
  NLMSG_ERROR,
  NLMSG_HDRLEN,
  NLM_F_DUMP,
  NLM_F_DUMP_INTR,
  NLM_F_MULTI,
  NLM_F_REQUEST,
  align4,
  nftMessageType,
} from './protocol.js';
import type { ElementSchema } from './schema.js';
import type { SocketFailure, SocketResult } from './socket.js';
import { NetfilterSocket, strerror } from './socket.js';
import { LISTING_FAMILIES, LISTING_PARTS, TableListingReader, listingRequest } from './table.js';
import { generationRequest, readGeneration } from './generation.js';

export type { ListedElement } from './decode.js';

/** Why an apply or list failed, with what the kernel said and which operation it was about. */
export interface NetlinkElementError {
  /** As the nft executor classifies: NotFound (ENOENT), Exists (EEXIST), Busy (EBUSY), Invalid (bad text), Failed. */
  readonly code: NftErrorCode;
  readonly message: string;
  /** The kernel's errno, when the kernel refused. */
  readonly errno?: number;
  /** libc's text for errno, as nft prints it ("No such file or directory"). */
  readonly errnoText?: string;
  /** The kernel's own words (extended ACK), when it gave some. */
  readonly kernelText?: string;
  /** Index of the failing operation in the input, when one is to blame. */
  readonly index?: number;
  readonly operation?: NftOperation;
  /** How many of the batch's messages the kernel refused (it checks all of them before it aborts). */
  readonly refusedMessages?: number;
}

export interface NetlinkApplyStats {
  /** Turning the operations into the batch, on this thread. */
  readonly encodeMs: number;
  /** Sending it and reading the kernel's answers: the kernel's transaction. */
  readonly kernelMs: number;
  readonly messages: number;
  readonly bytes: number;
}

export type NetlinkApplyResult =
  | { readonly ok: true; readonly stats: NetlinkApplyStats }
  | { readonly ok: false; readonly error: NetlinkElementError };

export type NetlinkListResult =
  | { readonly ok: true; readonly elements: ListedElement[] }
  | { readonly ok: false; readonly error: NetlinkElementError };

export type NetlinkTableResult =
  | { readonly ok: true; readonly listing: NftListing }
  | { readonly ok: false; readonly error: NetlinkElementError };

/** The first operation that cannot go through netlink and why, or undefined when all can. */
export function unsupportedOperation(
  ops: readonly NftOperation[],
  schemas: ReadonlyMap<string, ElementSchema>,
): { readonly index: number; readonly reason: string } | undefined {
  for (let i = 0; i < ops.length; i++) {
    const { verb, object } = ops[i] as NftOperation;
    if (object.kind === 'element') {
      if (verb !== 'add' && verb !== 'create' && verb !== 'delete') {
        return { index: i, reason: `verb ${verb} of an element` };
      }
      if (!schemas.has(object.set)) return { index: i, reason: `no element schema for ${object.set}` };
    } else if (object.kind === 'set' || object.kind === 'map') {
      if (verb !== 'flush') return { index: i, reason: `${verb} of a ${object.kind}` };
      if (!schemas.has(object.name)) return { index: i, reason: `no element schema for ${object.name}` };
    } else {
      return { index: i, reason: `a ${object.kind}` };
    }
  }
  return undefined;
}

/** Whether every operation is an element add/create/delete or a set/map flush on a set in `schemas`. */
export function canApply(ops: readonly NftOperation[], schemas: ReadonlyMap<string, ElementSchema>): boolean {
  return unsupportedOperation(ops, schemas) === undefined;
}

/** A batch up to this size is sent on this thread: a few elements take the kernel well under a millisecond. */
const SYNC_MAX_BYTES = 64 * 1024;
/** Receive buffer room per message of a batch: one ACK each, a small datagram the kernel accounts as ≈ 1 KiB. */
const RECEIVE_BYTES_PER_MESSAGE = 2048;
/** One datagram: an ACK, an error, or a part of a dump (the kernel fills at most 32 KiB a part). */
const DATAGRAM_BYTES = 256 * 1024;
/** A dump the ruleset changed under is read again, this many times at most. */
const DUMP_TRIES = 3;
/** Parts of a dump read between two turns of the event loop, so a long listing does not stall everything. */
const DUMP_PARTS_PER_TURN = 64;

const ERRNO_CODES: ReadonlyMap<number, NftErrorCode> = new Map([
  [2, 'NotFound'],
  [17, 'Exists'],
  [16, 'Busy'],
]);

function kernelError(
  what: string,
  errno: number,
  more: Partial<NetlinkElementError> = {},
): NetlinkElementError {
  const errnoText = strerror(errno);
  const code = ERRNO_CODES.get(errno) ?? 'Failed';
  const kernelText = more.kernelText !== undefined ? ` (${more.kernelText})` : '';
  return { code, message: `${what}: ${errnoText}${kernelText}`, errno, errnoText, ...more };
}

function socketError(what: string, f: SocketFailure): NetlinkElementError {
  return { code: 'Failed', message: `${what}: ${f.message}`, errno: f.errno, errnoText: f.message };
}

export class NetlinkElements {
  readonly #socket: NetfilterSocket;
  readonly #datagram = Buffer.alloc(DATAGRAM_BYTES);
  #seq = 1;
  /** Calls on the socket take turns: replies are read by sequence number, but from one queue. */
  #queue: Promise<unknown> = Promise.resolve();
  #closed = false;

  private constructor(socket: NetfilterSocket) {
    this.#socket = socket;
  }

  /** A writer with its own socket in this process's network namespace, or why there cannot be one. */
  static open(): NetlinkElements | { error: string } {
    const s = NetfilterSocket.open();
    return 'error' in s ? s : new NetlinkElements(s);
  }

  #serialized<T>(work: () => Promise<T>): Promise<T> {
    if (this.#closed) return Promise.reject(new Error('NetlinkElements already closed'));
    const next = this.#queue.then(work, work);
    this.#queue = next.catch(() => undefined);
    return next;
  }

  /** Sequence numbers for `count` messages, never wrapping inside one batch. */
  #takeSeq(count: number): number {
    if (this.#seq + count >= 0xffffffff) this.#seq = 1;
    const first = this.#seq;
    this.#seq += count;
    return first;
  }

  /** The next datagram: without waiting if one is queued, else on a worker thread (bounded by the socket). */
  async #receive(): Promise<SocketResult> {
    const now = this.#socket.receive(this.#datagram);
    if (!('bytes' in now) || now.bytes > 0) return now;
    return this.#socket.receiveAsync(this.#datagram);
  }

  /** Throws away replies left from an earlier call (a timed-out one), so that they are not read as ours. */
  #drain(): void {
    for (;;) {
      const r = this.#socket.receive(this.#datagram);
      if (!('bytes' in r) || r.bytes === 0) return;
    }
  }

  /**
   * Applies `ops` on table `ref` as one kernel transaction: all of them, or (on any error) none. The operations
   * must pass canApply; text that is not what the schema says (an address that is not one, a port out of range)
   * is an error before anything is sent.
   */
  apply(
    ref: NftTableRef,
    ops: BatchOperations,
    schemas: ReadonlyMap<string, ElementSchema>,
  ): Promise<NetlinkApplyResult> {
    return this.#serialized(() => this.#apply(ref, ops, schemas));
  }

  async #apply(
    ref: NftTableRef,
    ops: BatchOperations,
    schemas: ReadonlyMap<string, ElementSchema>,
  ): Promise<NetlinkApplyResult> {
    const count = batchSize(ops);
    if (count === 0) return { ok: true, stats: { encodeMs: 0, kernelMs: 0, messages: 0, bytes: 0 } };
    const t0 = performance.now();
    // Begin, at most one message per operation, end.
    const encoded = encodeElementBatch(ref, ops, schemas, this.#takeSeq(count + 2));
    const t1 = performance.now();
    if ('reason' in encoded) {
      const operation = batchOperation(ops, encoded.index);
      return {
        ok: false,
        error: {
          code: 'Invalid',
          message: `netlink: ${encoded.reason}`,
          ...(operation !== undefined ? { index: encoded.index, operation } : {}),
        },
      };
    }
    const reserve = this.#socket.reserve(
      encoded.bytes.length,
      encoded.messages.length * RECEIVE_BYTES_PER_MESSAGE + DATAGRAM_BYTES,
    );
    if (reserve) return { ok: false, error: socketError('netlink socket buffers', reserve) };
    this.#drain();
    const sent =
      encoded.bytes.length <= SYNC_MAX_BYTES
        ? this.#socket.send(encoded.bytes)
        : await this.#socket.sendAsync(encoded.bytes);
    if (!('bytes' in sent)) return { ok: false, error: socketError('netlink send', sent) };
    const error = await this.#answers(encoded, ops);
    const t2 = performance.now();
    if (error) return { ok: false, error };
    return {
      ok: true,
      stats: {
        encodeMs: t1 - t0,
        kernelMs: t2 - t1,
        messages: encoded.messages.length,
        bytes: encoded.bytes.length,
      },
    };
  }

  /**
   * Reads the kernel's answer to every message of the batch; returns the first error (by message order), or
   * undefined when every message was acknowledged. The kernel queues all answers before the send returns.
   */
  async #answers(batch: EncodedBatch, ops: BatchOperations): Promise<NetlinkElementError | undefined> {
    let pending = batch.messages.length;
    let batchLevel = false;
    const refused: { seq: number; errno: number; offset?: number; text?: string }[] = [];
    while (pending > 0) {
      let r = this.#socket.receive(this.#datagram);
      if ('bytes' in r && r.bytes === 0) {
        // All answers are queued by the time the send returns; after one about the batch as a whole (a failed
        // commit, no memory) the messages' own may never come. Waiting is only a guard.
        if (batchLevel) break;
        r = await this.#socket.receiveAsync(this.#datagram);
      }
      if (!('bytes' in r)) {
        return socketError(`netlink: no answer from the kernel for ${pending} of the batch's messages`, r);
      }
      for (const m of netlinkMessages(this.#datagram, r.bytes)) {
        if (m.type !== NLMSG_ERROR) continue;
        const reply = parseErrorReply(this.#datagram, m);
        if (reply === undefined || reply.seq < batch.firstSeq || reply.seq > batch.lastSeq) continue;
        if (reply.seq === batch.firstSeq || reply.seq === batch.lastSeq) {
          // About the batch as a whole (a failed commit, no memory): the messages' answers may not follow.
          if (reply.errno !== 0) refused.push(reply);
          batchLevel = true;
          continue;
        }
        pending--;
        if (reply.errno !== 0) refused.push(reply);
      }
    }
    if (refused.length === 0) {
      return batchLevel
        ? { code: 'Failed', message: 'netlink: the batch was answered as a whole' }
        : undefined;
    }
    refused.sort((a, b) => a.seq - b.seq);
    const first = refused[0] as (typeof refused)[number];
    const index = operationForReply(batch, first.seq, first.offset);
    const operation = index === undefined ? undefined : batchOperation(ops, index);
    const what = operation
      ? `nf_tables refused ${operation.verb} ${describeObject(operation.object)}`
      : 'nf_tables refused the batch';
    return kernelError(what, first.errno, {
      ...(first.text !== undefined ? { kernelText: first.text } : {}),
      ...(operation !== undefined ? { index, operation } : {}),
      refusedMessages: refused.length,
    });
  }

  /**
   * The elements of set or map `set` of table `ref`, read with `schema` (its declaration's): the text our JSON
   * listing parser gives for the same set. NotFound when the table or set does not exist.
   */
  list(ref: NftTableRef, set: string, schema: ElementSchema): Promise<NetlinkListResult> {
    return this.#serialized(async () => {
      for (let attempt = 1; ; attempt++) {
        const r = await this.#list(ref, set, schema);
        if (r !== 'interrupted') return r;
        if (attempt >= DUMP_TRIES) {
          return {
            ok: false,
            error: { code: 'Failed', message: `netlink: the ruleset kept changing while ${set} was listed` },
          };
        }
      }
    });
  }

  async #list(
    ref: NftTableRef,
    set: string,
    schema: ElementSchema,
  ): Promise<NetlinkListResult | 'interrupted'> {
    if (ref.family !== 'ip' && ref.family !== 'ip6') {
      return { ok: false, error: { code: 'Invalid', message: `netlink: table family ${ref.family}` } };
    }
    const seq = this.#takeSeq(1);
    const elements: ListedElement[] = [];
    const r = await this.#exchange(
      getSetElemRequest(NFPROTO[ref.family], ref.table, set, seq),
      seq,
      `nf_tables listing ${ref.family} ${ref.table} ${set}`,
      (buf, m) => {
        if (m.type !== nftMessageType(NFT_MSG_NEWSETELEM)) return undefined;
        const problem = decodeSetElemMessage(buf, m, schema, elements);
        return problem === undefined ? undefined : `${set} holds ${problem}`;
      },
    );
    if (r !== 'done') return r;
    return { ok: true, elements };
  }

  /**
   * The objects of table `ref` (table, chains, sets and maps, rules) without any element, as our JSON listing
   * parser gives them from `nft --json --terse list table` (table.ts says where, and why, the two differ).
   * NotFound when the table does not exist; Failed, naming it, for what the reader does not know (ask nft then).
   */
  listTable(ref: NftTableRef): Promise<NetlinkTableResult> {
    return this.#serialized(async () => {
      for (let attempt = 1; ; attempt++) {
        const r = await this.#listTable(ref);
        if (r !== 'interrupted') return r;
        if (attempt >= DUMP_TRIES) {
          return {
            ok: false,
            error: {
              code: 'Failed',
              message: `netlink: the ruleset kept changing while ${ref.family} ${ref.table} was listed`,
            },
          };
        }
      }
    });
  }

  async #listTable(ref: NftTableRef): Promise<NetlinkTableResult | 'interrupted'> {
    const family = LISTING_FAMILIES[ref.family];
    if (family === undefined) {
      return { ok: false, error: { code: 'Invalid', message: `netlink: table family ${ref.family}` } };
    }
    const reader = new TableListingReader(family, ref.table);
    let interrupted = false;
    // One request at a time, each read to its end: the table first (a missing table ends it there, as ENOENT),
    // rules after chains (the reader learns the binding chains, whose rules nft lists inside another rule).
    for (const part of LISTING_PARTS) {
      const seq = this.#takeSeq(1);
      const r = await this.#exchange(
        listingRequest(part, family, ref.table, seq),
        seq,
        `nf_tables listing ${ref.family} ${ref.table} (${part})`,
        (buf, m) => {
          const problem = reader.read(buf, m);
          return problem === undefined ? undefined : `${ref.family} ${ref.table} holds ${problem}`;
        },
      );
      if (r === 'interrupted') interrupted = true;
      else if (r !== 'done') return r;
      if (part === 'table' && !reader.sawTable) {
        return {
          ok: false,
          error: { code: 'Failed', message: `netlink: no answer about table ${ref.family} ${ref.table}` },
        };
      }
    }
    // The four answers are one listing only if no change came between them.
    if (interrupted || reader.mixedGenerations) return 'interrupted';
    return { ok: true, listing: reader.listing() };
  }

  /** The ruleset's generation (generation.ts): one request, one answer. */
  generation(): Promise<
    { readonly ok: true; readonly id: number } | { readonly ok: false; readonly error: NetlinkElementError }
  > {
    return this.#serialized(async () => {
      const seq = this.#takeSeq(1);
      let id: number | undefined;
      const r = await this.#exchange(generationRequest(seq), seq, 'nf_tables generation', (buf, m) => {
        const read = readGeneration(buf, m);
        if (typeof read === 'string') return read;
        id = read;
        return undefined;
      });
      if (r !== 'done' && r !== 'interrupted') return r;
      if (id === undefined)
        return {
          ok: false,
          error: { code: 'Failed', message: 'netlink: no answer to the generation request' },
        };
      return { ok: true, id };
    });
  }

  /**
   * Sends one request and reads its whole answer: a dump's parts up to NLMSG_DONE, or a single reply. `visit`
   * sees each of the answer's other messages and returns why it cannot be read, or undefined. 'interrupted' when
   * the kernel marked a part of the dump NLM_F_DUMP_INTR (the ruleset changed during it: read it again).
   */
  async #exchange(
    request: Buffer,
    seq: number,
    what: string,
    visit: (buf: Buffer, m: NetlinkMessageView) => string | undefined,
  ): Promise<'done' | 'interrupted' | { readonly ok: false; readonly error: NetlinkElementError }> {
    this.#drain();
    const sent = this.#socket.send(request);
    if (!('bytes' in sent)) return { ok: false, error: socketError('netlink send', sent) };
    let interrupted = false;
    for (let parts = 1; ; parts++) {
      const r = await this.#receive();
      if (!('bytes' in r)) return { ok: false, error: socketError('netlink receive', r) };
      if (r.bytes === 0)
        return { ok: false, error: { code: 'Failed', message: 'netlink: the dump stopped' } };
      for (const m of netlinkMessages(this.#datagram, r.bytes)) {
        if (m.seq !== seq) continue;
        if (m.flags & NLM_F_DUMP_INTR) interrupted = true;
        if (m.type === NLMSG_DONE) {
          // The dump's end carries its status: negative when the kernel stopped it with an error.
          const status =
            m.length >= NLMSG_HDRLEN + 4 ? doneStatus(this.#datagram, m.offset + NLMSG_HDRLEN) : 0;
          if (status < 0) return { ok: false, error: kernelError(what, -status) };
          return interrupted ? 'interrupted' : 'done';
        }
        if (m.type === NLMSG_ERROR) {
          const reply = parseErrorReply(this.#datagram, m);
          const errno = reply?.errno ?? 0;
          // An ACK ends a request that is not a dump; a dump's answer ends with NLMSG_DONE.
          if (errno === 0) {
            if (m.flags & NLM_F_MULTI) continue;
            return interrupted ? 'interrupted' : 'done';
          }
          return {
            ok: false,
            error: kernelError(what, errno, {
              ...(reply?.text !== undefined ? { kernelText: reply.text } : {}),
            }),
          };
        }
        const problem = visit(this.#datagram, m);
        if (problem !== undefined)
          return { ok: false, error: { code: 'Failed', message: `netlink: ${problem}` } };
        // The answer to a request that is not a dump is this one message.
        if (!(m.flags & NLM_F_MULTI)) return interrupted ? 'interrupted' : 'done';
      }
      if (parts % DUMP_PARTS_PER_TURN === 0) await setImmediate();
    }
  }

  /** Closes the socket once the call in flight, if any, is done. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    void this.#queue.then(() => this.#socket.close());
  }
}

function doneStatus(buf: Buffer, at: number): number {
  return HOST_LE ? buf.readInt32LE(at) : buf.readInt32BE(at);
}

/** NFT_MSG_GETSETELEM as a dump of one set (what `nft list set` sends). */
function getSetElemRequest(family: number, table: string, set: string, seq: number): Buffer {
  const attr = (s: string): number => align4(4 + Buffer.byteLength(s) + 1);
  const length = NLMSG_HDRLEN + NFGENMSG_LEN + attr(table) + attr(set);
  const b = Buffer.alloc(length);
  const u16 = (v: number, at: number): number => (HOST_LE ? b.writeUInt16LE(v, at) : b.writeUInt16BE(v, at));
  const u32 = (v: number, at: number): number => (HOST_LE ? b.writeUInt32LE(v, at) : b.writeUInt32BE(v, at));
  u32(length, 0);
  u16(nftMessageType(NFT_MSG_GETSETELEM), 4);
  u16(NLM_F_REQUEST | NLM_F_DUMP, 6);
  u32(seq, 8);
  b[NLMSG_HDRLEN] = family;
  let at = NLMSG_HDRLEN + NFGENMSG_LEN;
  for (const [type, s] of [
    [NFTA_SET_ELEM_LIST_TABLE, table],
    [NFTA_SET_ELEM_LIST_SET, set],
  ] as const) {
    u16(4 + Buffer.byteLength(s) + 1, at);
    u16(type, at + 2);
    b.write(s, at + 4, 'utf8');
    at += attr(s);
  }
  return b;
}
