// The DNS wire format (RFC 1035 §4, AAAA from RFC 3596, SRV from RFC 2782, OPT from RFC 6891): one message as a
// plain value, decoded from and encoded to bytes in this file only. Names are dotted text without the final dot
// ("" is the root); a label holding a "." or "\" is written with a backslash, as zone files write it, so that any
// name that arrives can be echoed back unchanged. Decoding follows compression pointers, but only backwards (a
// pointer to the same or a later offset is a format error), which is what makes a pointer loop impossible.
// Encoding compresses owner names and the names inside CNAME and SOA data, only onto the same spelling (so the
// case a client sent comes back as sent); SRV targets are written whole, as RFC 2782 asks.
import { isIPv4, isIPv6 } from 'node:net';

export const CLASS_IN = 1;

/** The record types this codec reads into values; other types are kept as opaque bytes. */
export const RR_TYPE = {
  A: 1,
  CNAME: 5,
  SOA: 6,
  AAAA: 28,
  SRV: 33,
  OPT: 41,
  ANY: 255,
} as const;

export const RCODE = {
  NOERROR: 0,
  FORMERR: 1,
  SERVFAIL: 2,
  NXDOMAIN: 3,
  NOTIMP: 4,
  REFUSED: 5,
} as const;

export const OPCODE_QUERY = 0;

export type RecordData =
  | { readonly kind: 'A'; readonly address: string }
  | { readonly kind: 'AAAA'; readonly address: string }
  | { readonly kind: 'CNAME'; readonly target: string }
  | {
      readonly kind: 'SRV';
      readonly priority: number;
      readonly weight: number;
      readonly port: number;
      readonly target: string;
    }
  | {
      readonly kind: 'SOA';
      readonly mname: string;
      readonly rname: string;
      readonly serial: number;
      readonly refresh: number;
      readonly retry: number;
      readonly expire: number;
      readonly minimum: number;
    }
  /** EDNS: the record's class is the sender's UDP payload size; options are not read. */
  | { readonly kind: 'OPT' }
  | { readonly kind: 'OPAQUE'; readonly type: number; readonly bytes: Buffer };

const TYPE_OF_KIND: Readonly<Record<Exclude<RecordData['kind'], 'OPAQUE'>, number>> = {
  A: RR_TYPE.A,
  AAAA: RR_TYPE.AAAA,
  CNAME: RR_TYPE.CNAME,
  SRV: RR_TYPE.SRV,
  SOA: RR_TYPE.SOA,
  OPT: RR_TYPE.OPT,
};

export function recordType(data: RecordData): number {
  return data.kind === 'OPAQUE' ? data.type : TYPE_OF_KIND[data.kind];
}

export interface ResourceRecord {
  readonly name: string;
  readonly class: number;
  readonly ttl: number;
  readonly data: RecordData;
}

export interface DnsQuestion {
  readonly name: string;
  readonly type: number;
  readonly class: number;
}

/** The header's one-bit flags, named as dig prints them (`;; flags: qr aa rd`). */
export interface DnsFlags {
  /** A response. */
  readonly qr: boolean;
  /** Authoritative answer. */
  readonly aa: boolean;
  /** Truncated: the answer did not fit, ask again over TCP. */
  readonly tc: boolean;
  /** Recursion desired. */
  readonly rd: boolean;
  /** Recursion available. */
  readonly ra: boolean;
}

/** The header (RFC 1035 §4.1.1) but for its section counts, which encoding takes from the sections. */
export interface DnsHeader {
  readonly id: number;
  readonly opcode: number;
  readonly rcode: number;
  readonly flags: DnsFlags;
}

/** A message (RFC 1035 §4.1): the header, then its four sections. */
export interface DnsMessage {
  readonly header: DnsHeader;
  readonly questions: readonly DnsQuestion[];
  readonly answers: readonly ResourceRecord[];
  readonly authority: readonly ResourceRecord[];
  readonly additional: readonly ResourceRecord[];
}

/** The three sections of resource records: what a lookup finds. */
export type RecordSections = Pick<DnsMessage, 'answers' | 'authority' | 'additional'>;

/** Bytes that are no DNS message; `id` is set when the header could be read (a FORMERR can then answer). */
export class DnsFormatError extends Error {
  constructor(
    message: string,
    readonly id?: number,
  ) {
    super(message);
    this.name = 'DnsFormatError';
  }
}

const HEADER_BYTES = 12;
const MAX_NAME_BYTES = 255;
const MAX_LABEL_BYTES = 63;

/** A reader over one message; every read checks the bounds. */
class Reader {
  offset = 0;
  constructor(
    readonly buf: Buffer,
    private readonly id?: number,
  ) {}

  fail(message: string): never {
    throw new DnsFormatError(`${message} (at byte ${this.offset})`, this.id);
  }

  need(n: number): void {
    if (this.offset + n > this.buf.length) this.fail(`message ends early: ${n} more bytes expected`);
  }

  u8(): number {
    this.need(1);
    return this.buf.readUInt8(this.offset++);
  }

  u16(): number {
    this.need(2);
    const v = this.buf.readUInt16BE(this.offset);
    this.offset += 2;
    return v;
  }

  u32(): number {
    this.need(4);
    const v = this.buf.readUInt32BE(this.offset);
    this.offset += 4;
    return v;
  }

  bytes(n: number): Buffer {
    this.need(n);
    const b = this.buf.subarray(this.offset, this.offset + n);
    this.offset += n;
    return b;
  }

  /** A name at the current offset, following compression pointers; the offset moves past its first form. */
  name(): string {
    const labels: string[] = [];
    let at = this.offset;
    let resumeAt: number | undefined;
    let limit = this.offset;
    let wireBytes = 1;
    for (;;) {
      if (at >= this.buf.length) this.fail('name runs past the end of the message');
      const len = this.buf.readUInt8(at);
      if ((len & 0xc0) === 0xc0) {
        if (at + 1 >= this.buf.length) this.fail('compression pointer cut short');
        const target = ((len & 0x3f) << 8) | this.buf.readUInt8(at + 1);
        // Only backwards: each jump lands strictly before the name's start and before the last jump's landing,
        // so a chain of pointers must end.
        if (target >= limit) {
          this.offset = at;
          this.fail(`compression pointer to ${target} does not point backwards`);
        }
        resumeAt ??= at + 2;
        at = target;
        limit = target;
        continue;
      }
      if ((len & 0xc0) !== 0) this.fail(`label type 0x${(len & 0xc0).toString(16)} is not supported`);
      if (len === 0) break;
      wireBytes += len + 1;
      if (wireBytes > MAX_NAME_BYTES) this.fail(`name longer than ${MAX_NAME_BYTES} bytes`);
      if (at + 1 + len > this.buf.length) this.fail('label runs past the end of the message');
      labels.push(escapeLabel(this.buf.subarray(at + 1, at + 1 + len)));
      at += 1 + len;
    }
    this.offset = resumeAt ?? at + 1;
    return labels.join('.');
  }
}

function escapeLabel(bytes: Buffer): string {
  return bytes.toString('latin1').replace(/[.\\]/g, (c) => `\\${c}`);
}

/** "a.b\.c" → ["a", "b.c"]; "" (the root) → []. */
export function nameLabels(name: string): string[] {
  const text = name.endsWith('.') && !name.endsWith('\\.') ? name.slice(0, -1) : name;
  if (text === '') return [];
  const labels: string[] = [];
  let current = '';
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '\\' && i + 1 < text.length) current += text[++i];
    else if (c === '.') {
      labels.push(current);
      current = '';
    } else current += c;
  }
  labels.push(current);
  return labels;
}

function readRecordData(r: Reader, type: number, length: number): RecordData {
  const end = r.offset + length;
  r.need(length);
  const data = ((): RecordData => {
    switch (type) {
      case RR_TYPE.A:
        if (length !== 4) r.fail(`A record of ${length} bytes`);
        return { kind: 'A', address: [...r.bytes(4)].join('.') };
      case RR_TYPE.AAAA: {
        if (length !== 16) r.fail(`AAAA record of ${length} bytes`);
        const b = r.bytes(16);
        const groups: string[] = [];
        for (let i = 0; i < 16; i += 2) groups.push(b.readUInt16BE(i).toString(16));
        return { kind: 'AAAA', address: canonicalIPv6(groups.join(':')) };
      }
      case RR_TYPE.CNAME:
        return { kind: 'CNAME', target: r.name() };
      case RR_TYPE.SRV:
        return { kind: 'SRV', priority: r.u16(), weight: r.u16(), port: r.u16(), target: r.name() };
      case RR_TYPE.SOA:
        return {
          kind: 'SOA',
          mname: r.name(),
          rname: r.name(),
          serial: r.u32(),
          refresh: r.u32(),
          retry: r.u32(),
          expire: r.u32(),
          minimum: r.u32(),
        };
      case RR_TYPE.OPT:
        r.bytes(length);
        return { kind: 'OPT' };
      default:
        return { kind: 'OPAQUE', type, bytes: Buffer.from(r.bytes(length)) };
    }
  })();
  if (r.offset !== end) r.fail(`record data of type ${type} is not ${length} bytes long`);
  return data;
}

function readRecord(r: Reader): ResourceRecord {
  const name = r.name();
  const type = r.u16();
  const klass = r.u16();
  const ttl = r.u32();
  const length = r.u16();
  return { name, class: klass, ttl, data: readRecordData(r, type, length) };
}

/** One message from bytes; throws DnsFormatError (with the id when the header was whole). */
export function decodeMessage(buf: Buffer): DnsMessage {
  if (buf.length < HEADER_BYTES) throw new DnsFormatError(`${buf.length} bytes: shorter than a DNS header`);
  const id = buf.readUInt16BE(0);
  const r = new Reader(buf, id);
  r.offset = 2;
  const bits = r.u16();
  const counts = [r.u16(), r.u16(), r.u16(), r.u16()] as const;
  const questions: DnsQuestion[] = [];
  for (let i = 0; i < counts[0]; i++) questions.push({ name: r.name(), type: r.u16(), class: r.u16() });
  const sections = counts.slice(1).map((n) => Array.from({ length: n }, () => readRecord(r)));
  return {
    header: { id, opcode: (bits >> 11) & 0xf, rcode: bits & 0xf, flags: readFlags(bits) },
    questions,
    answers: sections[0] ?? [],
    authority: sections[1] ?? [],
    additional: sections[2] ?? [],
  };
}

/** Where each flag stands in the header's second 16-bit word. */
const FLAG_BITS = { qr: 0x8000, aa: 0x0400, tc: 0x0200, rd: 0x0100, ra: 0x0080 } as const;

function readFlags(bits: number): DnsFlags {
  const set = (bit: number): boolean => (bits & bit) !== 0;
  return {
    qr: set(FLAG_BITS.qr),
    aa: set(FLAG_BITS.aa),
    tc: set(FLAG_BITS.tc),
    rd: set(FLAG_BITS.rd),
    ra: set(FLAG_BITS.ra),
  };
}

/** The header's second 16-bit word: flags, opcode and rcode. */
function headerBits(h: DnsHeader): number {
  const { qr, aa, tc, rd, ra } = h.flags;
  const bit = (on: boolean, mask: number): number => (on ? mask : 0);
  return (
    ((h.opcode & 0xf) << 11) |
    (h.rcode & 0xf) |
    bit(qr, FLAG_BITS.qr) |
    bit(aa, FLAG_BITS.aa) |
    bit(tc, FLAG_BITS.tc) |
    bit(rd, FLAG_BITS.rd) |
    bit(ra, FLAG_BITS.ra)
  );
}

/** A growing buffer with the offsets of the names written so far, for compression. */
class Writer {
  private buf = Buffer.alloc(512);
  length = 0;
  private readonly names = new Map<string, number>();

  private room(n: number): void {
    if (this.length + n <= this.buf.length) return;
    const bigger = Buffer.alloc(Math.max(this.buf.length * 2, this.length + n));
    this.buf.copy(bigger, 0, 0, this.length);
    this.buf = bigger;
  }

  u8(v: number): void {
    this.room(1);
    this.buf.writeUInt8(v, this.length++);
  }

  u16(v: number): void {
    this.room(2);
    this.buf.writeUInt16BE(v, this.length);
    this.length += 2;
  }

  u32(v: number): void {
    this.room(4);
    this.buf.writeUInt32BE(v >>> 0, this.length);
    this.length += 4;
  }

  bytes(b: Buffer): void {
    this.room(b.length);
    b.copy(this.buf, this.length);
    this.length += b.length;
  }

  setU16(at: number, v: number): void {
    this.buf.writeUInt16BE(v, at);
  }

  name(name: string, compress: boolean): void {
    const labels = nameLabels(name);
    for (let i = 0; i < labels.length; i++) {
      // Case-sensitive: a pointer into a name spelt otherwise would change the case the asker sent (0x20).
      const suffix = labels.slice(i).join('.');
      const seen = compress ? this.names.get(suffix) : undefined;
      if (seen !== undefined) return this.u16(0xc000 | seen);
      // Pointers have 14 bits: a suffix written later than that can be written but not pointed to.
      if (this.length < 0x4000 && !this.names.has(suffix)) this.names.set(suffix, this.length);
      const label = Buffer.from(labels[i] ?? '', 'latin1');
      if (label.length === 0 || label.length > MAX_LABEL_BYTES)
        throw new Error(`name ${JSON.stringify(name)}: a label of ${label.length} bytes`);
      this.u8(label.length);
      this.bytes(label);
    }
    this.u8(0);
  }

  done(): Buffer {
    return Buffer.from(this.buf.subarray(0, this.length));
  }
}

function writeAddress(w: Writer, kind: 'A' | 'AAAA', address: string): void {
  if (kind === 'A') {
    if (!isIPv4(address)) throw new Error(`A record: ${JSON.stringify(address)} is not an IPv4 address`);
    for (const part of address.split('.')) w.u8(Number(part));
    return;
  }
  if (!isIPv6(address)) throw new Error(`AAAA record: ${JSON.stringify(address)} is not an IPv6 address`);
  for (const group of expandIPv6(address)) w.u16(group);
}

function writeRecordData(w: Writer, data: RecordData): void {
  switch (data.kind) {
    case 'A':
    case 'AAAA':
      return writeAddress(w, data.kind, data.address);
    case 'CNAME':
      return w.name(data.target, true);
    case 'SRV':
      w.u16(data.priority);
      w.u16(data.weight);
      w.u16(data.port);
      return w.name(data.target, false);
    case 'SOA':
      w.name(data.mname, true);
      w.name(data.rname, true);
      for (const v of [data.serial, data.refresh, data.retry, data.expire, data.minimum]) w.u32(v);
      return;
    case 'OPT':
      return;
    case 'OPAQUE':
      return w.bytes(data.bytes);
  }
}

function writeRecord(w: Writer, rr: ResourceRecord): void {
  w.name(rr.name, true);
  w.u16(recordType(rr.data));
  w.u16(rr.class);
  w.u32(rr.ttl);
  const lengthAt = w.length;
  w.u16(0);
  writeRecordData(w, rr.data);
  w.setU16(lengthAt, w.length - lengthAt - 2);
}

export function encodeMessage(m: DnsMessage): Buffer {
  const w = new Writer();
  w.u16(m.header.id);
  w.u16(headerBits(m.header));
  for (const n of [m.questions, m.answers, m.authority, m.additional]) w.u16(n.length);
  for (const q of m.questions) {
    w.name(q.name, true);
    w.u16(q.type);
    w.u16(q.class);
  }
  for (const rr of [...m.answers, ...m.authority, ...m.additional]) writeRecord(w, rr);
  return w.done();
}

/** The eight 16-bit groups of an IPv6 address (no embedded IPv4 form: net.isIPv6 was checked by the caller). */
function expandIPv6(address: string): number[] {
  const tail = address.includes('.') ? ipv4Tail(address) : undefined;
  const text = tail ? tail.head : address;
  const [left = '', right] = text.split('::');
  const parts = (s: string): number[] => (s === '' ? [] : s.split(':').map((g) => parseInt(g, 16)));
  const head = parts(left);
  const rest = [...parts(right ?? ''), ...(tail?.groups ?? [])];
  const zeros = right === undefined ? 0 : 8 - head.length - rest.length;
  return [...head, ...Array<number>(zeros).fill(0), ...rest];
}

function ipv4Tail(address: string): { head: string; groups: number[] } {
  const at = address.lastIndexOf(':');
  const [a = 0, b = 0, c = 0, d = 0] = address
    .slice(at + 1)
    .split('.')
    .map(Number);
  const head = address.slice(0, at + 1);
  return { head: head.endsWith('::') ? head : head.slice(0, -1), groups: [(a << 8) | b, (c << 8) | d] };
}

/** RFC 5952's text of an address given as eight hex groups: the longest run of two or more zeros becomes "::". */
function canonicalIPv6(text: string): string {
  const groups = text.split(':');
  let best = -1;
  let bestLen = 0;
  for (let i = 0; i < groups.length;) {
    if (groups[i] !== '0') {
      i++;
      continue;
    }
    let j = i;
    while (j < groups.length && groups[j] === '0') j++;
    if (j - i > bestLen && j - i > 1) [best, bestLen] = [i, j - i];
    i = j;
  }
  if (best < 0) return groups.join(':');
  return `${groups.slice(0, best).join(':')}::${groups.slice(best + bestLen).join(':')}`;
}
