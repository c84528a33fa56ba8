// Reading nf_tables netlink replies: walking the messages of one receive buffer, the kernel's error and ACK
// messages (with the extended ACK's text and the offset of the bad attribute), and the elements of a set dump as
// the text our JSON listing parser (../json.ts) gives for the same set: fields joined with ` . `, protocols and
// addresses as nft prints them, verdicts as `goto chain` or `drop`, and the element's comment. A dump comes a
// buffer at a time and is decoded as it comes, so memory follows the elements, not a text of the whole table.
import type { ElementFieldType, ElementSchema } from './schema.js';
import { FIELD_SIZE } from './schema.js';
import { formatField } from './fields.js';
import {
  HOST_LE,
  NFGENMSG_LEN,
  NFTA_DATA_VALUE,
  NFTA_DATA_VERDICT,
  NFTA_SET_ELEM_DATA,
  NFTA_SET_ELEM_FLAGS,
  NFTA_SET_ELEM_KEY,
  NFTA_SET_ELEM_LIST_ELEMENTS,
  NFTA_SET_ELEM_USERDATA,
  NFTA_VERDICT_CHAIN,
  NFTA_VERDICT_CODE,
  NFT_SET_ELEM_CATCHALL,
  NFT_SET_ELEM_INTERVAL_END,
  NLA_HDRLEN,
  NLA_TYPE_MASK,
  NLMSGERR_ATTR_MSG,
  NLMSGERR_ATTR_OFFS,
  NLMSG_HDRLEN,
  NLM_F_ACK_TLVS,
  NLM_F_CAPPED,
  UDATA_SET_ELEM_COMMENT,
  VERDICT_CODES,
  align4,
} from './protocol.js';

/** One element as listed: the same text as the JSON listing's key, value and comment. */
export interface ListedElement {
  readonly key: string;
  readonly value?: string;
  readonly comment?: string;
}

/** One netlink message inside a receive buffer. */
export interface NetlinkMessageView {
  readonly type: number;
  readonly flags: number;
  readonly seq: number;
  /** Where the message starts in the buffer, and its length (nlmsg_len). */
  readonly offset: number;
  readonly length: number;
}

function u16(buf: Buffer, at: number): number {
  return HOST_LE ? buf.readUInt16LE(at) : buf.readUInt16BE(at);
}

function u32(buf: Buffer, at: number): number {
  return HOST_LE ? buf.readUInt32LE(at) : buf.readUInt32BE(at);
}

/** The messages in buf[0, length); a message that runs past the end stops the walk (the kernel never sends one). */
export function netlinkMessages(buf: Buffer, length: number): NetlinkMessageView[] {
  const out: NetlinkMessageView[] = [];
  for (let at = 0; at + NLMSG_HDRLEN <= length;) {
    const len = u32(buf, at);
    if (len < NLMSG_HDRLEN || at + len > length) break;
    out.push({
      type: u16(buf, at + 4),
      flags: u16(buf, at + 6),
      seq: u32(buf, at + 8),
      offset: at,
      length: len,
    });
    at += align4(len);
  }
  return out;
}

/**
 * Calls `visit(type, start, end)` for each attribute in buf[start, end) (type without the nested and byte-order
 * bits; start and end of its payload).
 */
export function eachAttribute(
  buf: Buffer,
  start: number,
  end: number,
  visit: (type: number, from: number, to: number) => void,
): void {
  for (let at = start; at + NLA_HDRLEN <= end;) {
    const len = u16(buf, at);
    if (len < NLA_HDRLEN || at + len > end) return;
    visit(u16(buf, at + 2) & NLA_TYPE_MASK, at + NLA_HDRLEN, at + len);
    at += align4(len);
  }
}

/** What an NLMSG_ERROR message says: errno (0 for an ACK), which request, and the extended ACK's details. */
export interface NetlinkErrorReply {
  /** A positive errno, or 0 for an ACK. */
  readonly errno: number;
  /** The sequence number of the request it answers. */
  readonly seq: number;
  /** The kernel's own text (NLMSGERR_ATTR_MSG), when it gave one. */
  readonly text?: string;
  /** Offset of the offending attribute from the start of the request (NLMSGERR_ATTR_OFFS). */
  readonly offset?: number;
}

export function parseErrorReply(buf: Buffer, m: NetlinkMessageView): NetlinkErrorReply | undefined {
  const at = m.offset + NLMSG_HDRLEN;
  if (m.length < NLMSG_HDRLEN + 4 + NLMSG_HDRLEN) return undefined;
  const error = HOST_LE ? buf.readInt32LE(at) : buf.readInt32BE(at);
  const request = at + 4;
  const seq = u32(buf, request + 8);
  // The request is echoed whole, unless capped (NETLINK_CAP_ACK) to its header; TLVs follow it.
  const echoed = m.flags & NLM_F_CAPPED ? NLMSG_HDRLEN : u32(buf, request);
  let text: string | undefined;
  let offset: number | undefined;
  if (m.flags & NLM_F_ACK_TLVS) {
    eachAttribute(buf, request + align4(echoed), m.offset + m.length, (type, from, to) => {
      if (type === NLMSGERR_ATTR_MSG) text = buf.toString('utf8', from, to).replace(/\0+$/, '');
      else if (type === NLMSGERR_ATTR_OFFS && to - from >= 4) offset = u32(buf, from);
    });
  }
  return {
    errno: -error,
    seq,
    ...(text !== undefined ? { text } : {}),
    ...(offset !== undefined ? { offset } : {}),
  };
}

const VERDICT_NAMES: ReadonlyMap<number, string> = new Map(
  Object.entries(VERDICT_CODES).map(([name, code]) => [code, name]),
);

function fieldsText(
  buf: Buffer,
  from: number,
  to: number,
  types: readonly ElementFieldType[],
  length: number,
): string | undefined {
  if (to - from !== length) return undefined;
  const concat = types.length > 1;
  let text = '';
  let at = from;
  for (let i = 0; i < types.length; i++) {
    const t = types[i] as ElementFieldType;
    if (i > 0) text += ' . ';
    text += formatField(t, buf, at);
    at += concat ? align4(FIELD_SIZE[t]) : FIELD_SIZE[t];
  }
  return text;
}

function verdictText(buf: Buffer, from: number, to: number): string | undefined {
  let code: number | undefined;
  let chain: string | undefined;
  eachAttribute(buf, from, to, (type, a, b) => {
    if (type === NFTA_VERDICT_CODE && b - a >= 4) code = buf.readInt32BE(a);
    else if (type === NFTA_VERDICT_CHAIN) chain = buf.toString('utf8', a, b).replace(/\0+$/, '');
  });
  const name = code === undefined ? undefined : VERDICT_NAMES.get(code);
  if (name === undefined) return undefined;
  if (name === 'goto' || name === 'jump') return chain === undefined ? undefined : `${name} ${chain}`;
  return name;
}

/** A string attribute without its terminating NUL. */
export function text(buf: Buffer, from: number, to: number): string {
  let end = to;
  while (end > from && buf[end - 1] === 0) end--;
  return buf.toString('utf8', from, end);
}

/** The string of userdata TLV `type` (libnftnl's: one byte type, one byte length), when there is one. */
export function udataString(buf: Buffer, from: number, to: number, type: number): string | undefined {
  for (let at = from; at + 2 <= to;) {
    const t = buf[at] as number;
    const len = buf[at + 1] as number;
    if (at + 2 + len > to) return undefined;
    if (t === type) return text(buf, at + 2, at + 2 + len);
    at += 2 + len;
  }
  return undefined;
}

/**
 * Appends the elements of one NEWSETELEM message (a dump's part, or a request) to `out`; returns why one cannot
 * be read with `schema`, or undefined.
 */
export function decodeSetElemMessage(
  buf: Buffer,
  m: NetlinkMessageView,
  schema: ElementSchema,
  out: ListedElement[],
): string | undefined {
  let problem: string | undefined;
  eachAttribute(buf, m.offset + NLMSG_HDRLEN + NFGENMSG_LEN, m.offset + m.length, (type, from, to) => {
    if (type !== NFTA_SET_ELEM_LIST_ELEMENTS || problem !== undefined) return;
    // Each element is an NFTA_LIST_ELEM (a request from nft numbers them instead; the kernel reads no type).
    eachAttribute(buf, from, to, (_type, ef, et) => {
      if (problem !== undefined) return;
      let key: string | undefined;
      let value: string | undefined;
      let comment: string | undefined;
      let flags = 0;
      let bad: string | undefined;
      eachAttribute(buf, ef, et, (t, a, b) => {
        if (t === NFTA_SET_ELEM_KEY) {
          eachAttribute(buf, a, b, (kt, ka, kb) => {
            if (kt === NFTA_DATA_VALUE) key = fieldsText(buf, ka, kb, schema.key, schema.keyLength);
          });
          if (key === undefined) bad = `a key of another length than ${schema.keyLength} bytes`;
        } else if (t === NFTA_SET_ELEM_DATA) {
          eachAttribute(buf, a, b, (dt, da, db) => {
            if (dt === NFTA_DATA_VERDICT && schema.value === 'verdict') value = verdictText(buf, da, db);
            else if (dt === NFTA_DATA_VALUE && Array.isArray(schema.value)) {
              value = fieldsText(buf, da, db, schema.value, schema.valueLength);
            }
          });
          if (value === undefined) bad = 'a value that does not fit the schema';
        } else if (t === NFTA_SET_ELEM_FLAGS && b - a >= 4) {
          flags = buf.readUInt32BE(a);
        } else if (t === NFTA_SET_ELEM_USERDATA) {
          comment = udataString(buf, a, b, UDATA_SET_ELEM_COMMENT);
        }
      });
      if (flags & NFT_SET_ELEM_INTERVAL_END) bad = 'an interval end';
      // nft lists the catch-all element (which has no key) as `*`.
      if (key === undefined && flags & NFT_SET_ELEM_CATCHALL) key = '*';
      if (bad === undefined && key === undefined) bad = 'no key';
      if (bad === undefined && schema.value !== undefined && value === undefined) bad = 'no value';
      if (bad !== undefined) {
        problem = `an element with ${bad}`;
        return;
      }
      out.push({
        key: key as string,
        ...(value !== undefined ? { value } : {}),
        ...(comment !== undefined ? { comment } : {}),
      });
    });
  });
  return problem;
}
