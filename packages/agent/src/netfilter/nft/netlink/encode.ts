// Element operations (`add`/`create`/`delete element`, `flush set|map`) as one nf_tables netlink batch: the bytes
// nft itself sends for the same `nft -f` text, so that the kernel ends up in exactly the same state. A batch is
// NFNL_MSG_BATCH_BEGIN, the messages, NFNL_MSG_BATCH_END: one kernel transaction, applied whole or not at all.
//
// Message by message, as nft 1.0.6 writes them (checked byte for byte against it: test/netfilter/nft/netlink/):
// a run of operations with the same verb on the same set is one NEWSETELEM or DELSETELEM message holding many
// elements, started afresh when its element list would pass 64 KiB (an attribute's length is 16 bits); `flush` is
// a DELSETELEM without an element list. Three differences, all on purpose and none seen by the kernel's state:
// every message asks for an ACK (nft asks for none and learns only of errors), and has a sequence number of its
// own (nft gives all messages of one command the command's), so that each answer is tied to its message and an
// error to its operation; and nft's NFTA_SET_ELEM_LIST_SET_ID (the id of a set made in the same batch, which the
// kernel reads only when no set of that name exists) is left out, since this writer never makes sets.
//
// This is the hot path of a cold start (126,000 element operations at 10,000 flat Services): the text of each
// field is parsed in place (fields.ts) into one growing, zero-filled buffer, with no intermediate objects.
import type { NftElement, NftOperation } from '../objects.js';
import { describeObject } from '../objects.js';
import { quoteComment } from '../quote.js';
import type { NftTableRef } from '../serialize.js';
import type { OperationStream } from '../transaction.js';
import {
  fieldEnd,
  lastFieldProblem,
  writeIPv4,
  writeIPv6,
  writeNumgen,
  writePort,
  writeProto,
} from './fields.js';
import {
  HOST_LE,
  NFGENMSG_LEN,
  NFNL_MSG_BATCH_BEGIN,
  NFNL_MSG_BATCH_END,
  NFNL_SUBSYS_NFTABLES,
  NFPROTO,
  NFTA_DATA_VALUE,
  NFTA_DATA_VERDICT,
  NFTA_SET_ELEM_DATA,
  NFTA_SET_ELEM_KEY,
  NFTA_SET_ELEM_LIST_ELEMENTS,
  NFTA_SET_ELEM_LIST_SET,
  NFTA_SET_ELEM_LIST_TABLE,
  NFTA_SET_ELEM_USERDATA,
  NFTA_VERDICT_CHAIN,
  NFTA_VERDICT_CODE,
  NFT_MSG_DELSETELEM,
  NFT_MSG_NEWSETELEM,
  NLA_F_NESTED,
  NLA_HDRLEN,
  NLA_TYPE_MASK,
  NLMSG_HDRLEN,
  NLM_F_ACK,
  NLM_F_CREATE,
  NLM_F_EXCL,
  NLM_F_REQUEST,
  UDATA_SET_ELEM_COMMENT,
  VERDICT_CODES,
  align4,
  nftMessageType,
} from './protocol.js';
import type { ElementFieldType, ElementSchema } from './schema.js';
import { FIELD_SIZE } from './schema.js';

/** One nf_tables message of a batch and the operations it carries. */
export interface BatchMessage {
  readonly seq: number;
  /** Where the message starts in the batch's bytes. */
  readonly offset: number;
  /** Operations [firstOp, endOp) of the input are in this message. */
  readonly firstOp: number;
  readonly endOp: number;
}

export interface EncodedBatch {
  /** The whole batch, ready for one send. */
  readonly bytes: Buffer;
  /** Sequence numbers: BATCH_BEGIN's is firstSeq, the messages' follow, BATCH_END's is lastSeq. */
  readonly firstSeq: number;
  readonly lastSeq: number;
  /** The element messages, in order (messages[k].seq === firstSeq + 1 + k). */
  readonly messages: readonly BatchMessage[];
  /** For each operation, where its element (or its flush message) starts in `bytes`. */
  readonly operationOffsets: Uint32Array;
}

/** An operation that cannot be written: which one (index in the input) and why. */
export interface EncodeError {
  readonly index: number;
  readonly reason: string;
}

/**
 * The largest element list in one message. Its attribute length is 16 bits; nft fills a message up to that and
 * starts the next one, and so do we (so the messages are nft's, and a batch has as few of them as it can).
 */
const MAX_ELEMENTS_ATTR = 0xffff;

// nft's lexer reads a name as ({letter}|[_.])({letter}|{digit}|[/\-_\.])*; the kernel keeps at most 255 bytes.
const CHAIN_NAME = /^[A-Za-z_.][A-Za-z0-9/\-_.]*$/;
const NAME_MAX = 255;

/** A batch buffer that grows (zero-filled, so padding is always zero as nft writes it). */
class Writer {
  buf: Buffer;
  pos = 0;

  constructor(capacity: number) {
    this.buf = Buffer.alloc(capacity);
  }

  ensure(more: number): void {
    if (this.pos + more <= this.buf.length) return;
    this.reserve(Math.max(this.buf.length * 2, this.pos + more));
  }

  /** Grows the buffer to `capacity` bytes (no smaller). */
  reserve(capacity: number): void {
    if (capacity <= this.buf.length) return;
    const next = Buffer.alloc(capacity);
    this.buf.copy(next, 0, 0, this.pos);
    this.buf = next;
  }

  /** Byte by byte: Buffer's writeUInt16LE checks its arguments, and this runs a few times per element. */
  u16(at: number, v: number): void {
    const b = this.buf;
    if (HOST_LE) {
      b[at] = v & 255;
      b[at + 1] = v >>> 8;
    } else {
      b[at] = v >>> 8;
      b[at + 1] = v & 255;
    }
  }

  u32(at: number, v: number): void {
    if (HOST_LE) this.buf.writeUInt32LE(v >>> 0, at);
    else this.buf.writeUInt32BE(v >>> 0, at);
  }

  /** Starts an attribute; returns its offset, for end(). */
  begin(type: number): number {
    const at = this.pos;
    this.u16(at + 2, type);
    this.pos += NLA_HDRLEN;
    return at;
  }

  /** Ends an attribute begun at `at`: its length (unpadded), then the padding. */
  end(at: number): void {
    this.u16(at, this.pos - at);
    this.pos = align4(this.pos);
  }

  /** A NUL-terminated ASCII string attribute (names were checked to be ASCII). */
  string(type: number, s: string): void {
    const at = this.begin(type);
    this.pos += this.buf.write(s, this.pos, 'latin1');
    this.pos += 1;
    this.end(at);
  }

  /** Netlink and nfgenmsg headers; the length is written by finish(). */
  header(type: number, flags: number, seq: number, family: number, resId: number): number {
    const at = this.pos;
    this.u16(at + 4, type);
    this.u16(at + 6, flags);
    this.u32(at + 8, seq);
    // nlmsg_pid 0: the kernel. nfgenmsg: family, version 0, res_id in network order.
    this.buf[at + NLMSG_HDRLEN] = family;
    this.buf.writeUInt16BE(resId, at + NLMSG_HDRLEN + 2);
    this.pos += NLMSG_HDRLEN + NFGENMSG_LEN;
    return at;
  }

  finish(at: number): void {
    this.u32(at, this.pos - at);
  }
}

/** What a message carries: how its operations' verb maps to the kernel's message and flags. */
type MessageKind = 'add' | 'create' | 'delete';

function messageFlags(kind: MessageKind): number {
  // `add element` is NLM_F_CREATE (an existing equal element is fine), `create element` also NLM_F_EXCL.
  if (kind === 'add') return NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE;
  if (kind === 'create') return NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL;
  return NLM_F_REQUEST | NLM_F_ACK;
}

/** Comments are written as nft receives them from our text: sanitized and quoted (quote.ts), without the quotes. */
const commentCache = new Map<string, Buffer>();
function commentBytes(comment: string): Buffer {
  let b = commentCache.get(comment);
  if (b === undefined) {
    b = Buffer.from(quoteComment(comment).slice(1, -1), 'utf8');
    if (commentCache.size > 100_000) commentCache.clear();
    commentCache.set(comment, b);
  }
  return b;
}

/**
 * Writes the fields of `parts` (entries of a key or value, each one field or several joined with ` . `) as
 * `types` at w.pos; returns why they are not such fields, or undefined.
 */
function writeFields(
  w: Writer,
  parts: readonly string[],
  types: readonly ElementFieldType[],
  length: number,
): string | undefined {
  const concat = types.length > 1;
  const buf = w.buf;
  let field = 0;
  let at = w.pos;
  for (let p = 0; p < parts.length; p++) {
    const text = parts[p] as string;
    const n = text.length;
    let start = 0;
    while (true) {
      const type = types[field];
      if (type === undefined) return `more than ${types.length} fields`;
      let end: number;
      // A switch, not a table of writers: each call site then sees one function, and is inlined.
      switch (type) {
        case 'ipv4_addr':
          end = writeIPv4(text, start, buf, at);
          break;
        case 'ipv6_addr':
          end = writeIPv6(text, start, buf, at);
          break;
        case 'inet_proto':
          end = writeProto(text, start, buf, at);
          break;
        case 'inet_service':
          end = writePort(text, start, buf, at);
          break;
        case 'numgen':
          end = writeNumgen(text, start, buf, at);
          break;
      }
      if (end < 0) {
        return `${JSON.stringify(text.slice(start, fieldEnd(text, start)))} is ${lastFieldProblem()}`;
      }
      at += concat ? align4(FIELD_SIZE[type]) : FIELD_SIZE[type];
      field++;
      if (end === n) break;
      if (text.charCodeAt(end + 1) !== 46 || text.charCodeAt(end + 2) !== 32 || end + 3 >= n) {
        return `${JSON.stringify(text)} does not separate its fields with " . "`;
      }
      start = end + 3;
    }
  }
  if (field !== types.length) return `${field} fields where ${types.length} are needed`;
  w.pos += length;
  return undefined;
}

/** The verdict text `drop`, `accept`, `continue`, `return`, `goto CHAIN` or `jump CHAIN` as NFTA_DATA_VERDICT. */
function writeVerdict(w: Writer, text: string): string | undefined {
  const space = text.indexOf(' ');
  const word = space < 0 ? text : text.slice(0, space);
  if (!Object.hasOwn(VERDICT_CODES, word)) return `${JSON.stringify(text)} is not a verdict`;
  const code = VERDICT_CODES[word as keyof typeof VERDICT_CODES];
  const needsChain = word === 'goto' || word === 'jump';
  const chain = space < 0 ? '' : text.slice(space + 1);
  if (needsChain !== space >= 0) return `${JSON.stringify(text)} is not a verdict`;
  if (needsChain && (chain.length > NAME_MAX || !CHAIN_NAME.test(chain))) {
    return `${JSON.stringify(chain)} is not a chain name`;
  }
  const verdict = w.begin(NFTA_DATA_VERDICT | NLA_F_NESTED);
  const codeAttr = w.begin(NFTA_VERDICT_CODE);
  w.buf.writeInt32BE(code, w.pos);
  w.pos += 4;
  w.end(codeAttr);
  if (needsChain) w.string(NFTA_VERDICT_CHAIN, chain);
  w.end(verdict);
  return undefined;
}

function failure(index: number, op: NftOperation, reason: string): EncodeError {
  return { index, reason: `${op.verb} ${describeObject(op.object)}: ${reason}` };
}

/** The attribute type of the element after `written` others of its run: 1, 2, 3, …, 16383, 1, … */
function elementNumber(written: number): number {
  return (written % NLA_TYPE_MASK) + 1;
}

/**
 * An element's attributes (key; for add/create its value and comment) at w.pos, inside its NFTA_LIST_ELEM; or
 * why it cannot be written. Its own function, small, so that it is optimized after a few hundred elements rather
 * than when the loop around it is (which at 126,000 elements tripled the time of a first, cold batch).
 */
function writeElement(
  w: Writer,
  e: NftElement,
  schema: ElementSchema,
  withBody: boolean,
): string | undefined {
  const comment = withBody && e.comment !== undefined ? commentBytes(e.comment) : undefined;
  w.ensure(ELEMENT_OVERHEAD + schema.keyLength + schema.valueLength + (comment ? comment.length + 8 : 0));
  const keyAttr = w.begin(NFTA_SET_ELEM_KEY | NLA_F_NESTED);
  const keyValue = w.begin(NFTA_DATA_VALUE);
  let problem = writeFields(w, e.key, schema.key, schema.keyLength);
  if (problem !== undefined) return `key ${problem}`;
  w.end(keyValue);
  w.end(keyAttr);
  if (!withBody) return undefined;
  const value = e.value;
  if (schema.value === undefined) {
    if (value !== undefined && value.length > 0) return `set ${e.set} holds no values`;
  } else {
    if (value === undefined || value.length === 0) return `map ${e.set} needs a value`;
    const data = w.begin(NFTA_SET_ELEM_DATA | NLA_F_NESTED);
    if (schema.value === 'verdict') {
      problem = value.length === 1 ? writeVerdict(w, value[0] as string) : 'a verdict is one field';
    } else {
      const dataValue = w.begin(NFTA_DATA_VALUE);
      problem = writeFields(w, value, schema.value, schema.valueLength);
      w.end(dataValue);
    }
    if (problem !== undefined) return `value ${problem}`;
    w.end(data);
  }
  if (comment !== undefined) {
    const udata = w.begin(NFTA_SET_ELEM_USERDATA);
    w.buf[w.pos] = UDATA_SET_ELEM_COMMENT;
    w.buf[w.pos + 1] = comment.length + 1;
    comment.copy(w.buf, w.pos + 2);
    w.pos += 2 + comment.length + 1;
    w.end(udata);
  }
  return undefined;
}

/**
 * About the batch's size, from a pass over the operations: enough for most batches without growing, and not
 * much more (a 10 MB buffer where 5 are needed costs a garbage collection of its own, and lives as long as the
 * batch). Comments and chain names are counted at a typical length; the writer grows when they are longer.
 */
function estimatedBytes(ops: readonly NftOperation[], schemas: ReadonlyMap<string, ElementSchema>): number {
  let n = 4096;
  for (let i = 0; i < ops.length; i++) {
    const object = (ops[i] as NftOperation).object;
    if (object.kind !== 'element') {
      n += 64 + NAME_MAX;
      continue;
    }
    const s = schemas.get(object.set);
    if (s === undefined) continue;
    n += 16 + s.keyLength + (s.value === 'verdict' ? 48 : s.value ? 8 + s.valueLength : 0);
    if (object.comment !== undefined) n += 8 + object.comment.length;
  }
  return n;
}

/**
 * A streamed batch (its operations made as they are written) starts with this much room, and after this many
 * operations grows once to what they project for the whole count: doubling a 100 MB buffer would hold the old
 * and the new one at once.
 */
const STREAM_START_BYTES = 1 << 20;
const STREAM_PROJECT_AFTER = 4096;

/** The operations of one batch: an array, or a stream made as it is written (transaction.ts). */
export type BatchOperations = readonly NftOperation[] | OperationStream;

function isStream(ops: BatchOperations): ops is OperationStream {
  return !Array.isArray(ops);
}

/** How many operations a batch has, and the one at `index` (a stream is made again up to it: errors only). */
export function batchSize(ops: BatchOperations): number {
  return isStream(ops) ? ops.count : ops.length;
}

export function batchOperation(ops: BatchOperations, index: number): NftOperation | undefined {
  if (!isStream(ops)) return ops[index];
  let i = 0;
  for (const op of ops.make()) if (i++ === index) return op;
  return undefined;
}

/** Room one element may need beyond its key and value bytes (headers, a verdict's chain name). */
const ELEMENT_OVERHEAD = 64 + NAME_MAX + 1;

/**
 * The batch for `ops` on table `ref`, with sequence numbers from `firstSeq`; or the first operation that cannot
 * be written and why (nothing is sent then). Every operation must be an element add/create/delete or a set/map
 * flush on a set in `schemas` (canApply in elements.ts says so beforehand).
 */
export function encodeElementBatch(
  ref: NftTableRef,
  ops: BatchOperations,
  schemas: ReadonlyMap<string, ElementSchema>,
  firstSeq: number,
): EncodedBatch | EncodeError {
  const count = batchSize(ops);
  const streamed = isStream(ops);
  if (ref.family !== 'ip' && ref.family !== 'ip6') {
    return { index: -1, reason: `table family ${ref.family} is not written through netlink` };
  }
  if (ref.table.length > NAME_MAX || !CHAIN_NAME.test(ref.table)) {
    return { index: -1, reason: `table name ${JSON.stringify(ref.table)} is not an nft name` };
  }
  const family = NFPROTO[ref.family];
  const w = new Writer(isStream(ops) ? STREAM_START_BYTES : estimatedBytes(ops, schemas));
  const messages: BatchMessage[] = [];
  const offsets = new Uint32Array(count);
  let seq = firstSeq;
  w.finish(w.header(NFNL_MSG_BATCH_BEGIN, NLM_F_REQUEST, seq++, 0, NFNL_SUBSYS_NFTABLES));

  /** The element message being filled: its offset, element list attribute, kind, set and first operation. */
  let msgAt = -1;
  let listAt = -1;
  let msgKind: MessageKind = 'add';
  let msgSet = '';
  let msgFirst = 0;
  /**
   * Element attributes written in this run of messages. nft numbers each element's attribute 1, 2, 3, … through
   * one command, across its messages, and counts the element that did not fit twice; the kernel reads no number,
   * but the same numbers make the same bytes. Past 16,383 (the attribute type's 14 bits) they start again at 1.
   */
  let runElements = 0;
  const close = (endOp: number): void => {
    if (msgAt < 0) return;
    w.end(listAt);
    w.finish(msgAt);
    messages.push({ seq: seq++, offset: msgAt, firstOp: msgFirst, endOp });
    msgAt = -1;
  };
  const open = (kind: MessageKind, set: string, first: number, continued = false): void => {
    const type = nftMessageType(kind === 'delete' ? NFT_MSG_DELSETELEM : NFT_MSG_NEWSETELEM);
    w.ensure(1024);
    msgAt = w.header(type, messageFlags(kind), seq, family, 0);
    w.string(NFTA_SET_ELEM_LIST_TABLE, ref.table);
    w.string(NFTA_SET_ELEM_LIST_SET, set);
    listAt = w.begin(NFTA_SET_ELEM_LIST_ELEMENTS | NLA_F_NESTED);
    msgKind = kind;
    msgSet = set;
    msgFirst = first;
    if (!continued) runElements = 0;
  };

  let i = -1;
  for (const op of isStream(ops) ? ops.make() : ops) {
    i++;
    if (i >= count) return failure(i, op, `the stream made more than the ${count} operations it announced`);
    if (streamed && i === STREAM_PROJECT_AFTER) w.reserve(Math.ceil((w.pos / i) * count * 1.05) + 65536);
    const object = op.object;

    if (object.kind === 'set' || object.kind === 'map') {
      if (op.verb !== 'flush') return failure(i, op, 'only flush of a set or map is written through netlink');
      if (!schemas.has(object.name)) return failure(i, op, 'no element schema for it');
      if (object.name.length > NAME_MAX || !CHAIN_NAME.test(object.name))
        return failure(i, op, 'not an nft name');
      close(i);
      // As nft: DELSETELEM with the set and table and no element list (set first, as nft orders them).
      w.ensure(1024);
      offsets[i] = w.pos;
      const at = w.header(nftMessageType(NFT_MSG_DELSETELEM), NLM_F_REQUEST | NLM_F_ACK, seq, family, 0);
      w.string(NFTA_SET_ELEM_LIST_SET, object.name);
      w.string(NFTA_SET_ELEM_LIST_TABLE, ref.table);
      w.finish(at);
      messages.push({ seq: seq++, offset: at, firstOp: i, endOp: i + 1 });
      continue;
    }
    if (object.kind !== 'element') return failure(i, op, 'only elements are written through netlink');
    const kind: MessageKind | undefined =
      op.verb === 'add' || op.verb === 'create' || op.verb === 'delete' ? op.verb : undefined;
    if (kind === undefined) return failure(i, op, `verb ${op.verb} is not written through netlink`);
    const schema = schemas.get(object.set);
    if (schema === undefined) return failure(i, op, `no element schema for set ${object.set}`);
    if (msgAt >= 0 && (kind !== msgKind || object.set !== msgSet)) close(i);
    if (msgAt < 0) {
      if (object.set.length > NAME_MAX || !CHAIN_NAME.test(object.set))
        return failure(i, op, 'set name is not an nft name');
      open(kind, object.set, i);
    }

    const elemAt = w.pos;
    const elem = w.begin(elementNumber(runElements) | NLA_F_NESTED);
    const problem = writeElement(w, object, schema, kind !== 'delete');
    if (problem !== undefined) return failure(i, op, problem);
    w.end(elem);
    runElements++;

    if (w.pos - listAt > MAX_ELEMENTS_ATTR) {
      // This element no longer fits: the message ends before it, and it starts the next one.
      const bytes = Buffer.from(w.buf.subarray(elemAt, w.pos));
      w.buf.fill(0, elemAt, w.pos);
      w.pos = elemAt;
      close(i);
      open(kind, object.set, i, true);
      w.ensure(bytes.length);
      offsets[i] = w.pos;
      bytes.copy(w.buf, w.pos);
      w.u16(w.pos + 2, elementNumber(++runElements - 1) | NLA_F_NESTED);
      w.pos += bytes.length;
    } else {
      offsets[i] = elemAt;
    }
  }
  close(i + 1);
  w.ensure(64);
  const end = w.header(NFNL_MSG_BATCH_END, NLM_F_REQUEST, seq, 0, NFNL_SUBSYS_NFTABLES);
  w.finish(end);
  return {
    bytes: w.buf.subarray(0, w.pos),
    firstSeq,
    lastSeq: seq,
    messages,
    operationOffsets: offsets,
  };
}

/**
 * The index of the operation an error reply is about: the message by its sequence number, and within it the
 * element the kernel pointed at (the extended ACK's offset of the bad attribute, from the message's start); an
 * error about the message as a whole (its set does not exist) is its first operation's.
 */
export function operationForReply(batch: EncodedBatch, seq: number, offset?: number): number | undefined {
  const m = batch.messages[seq - batch.firstSeq - 1];
  if (m === undefined || m.seq !== seq) return undefined;
  if (offset === undefined) return m.firstOp;
  const target = m.offset + offset;
  let lo = m.firstOp;
  let hi = m.endOp - 1;
  // The last operation whose element starts at or before the offset.
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if ((batch.operationOffsets[mid] as number) <= target) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}
