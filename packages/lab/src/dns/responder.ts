// From a query's bytes to the response's bytes: the protocol's rules around a lookup. One question per query
// (anything else is FORMERR, as in practice every server answers), opcode QUERY only (NOTIMP), class IN only
// (REFUSED). Over UDP an answer may be as long as the client said it can take (EDNS, RFC 6891), else 512 bytes
// (RFC 1035); a longer one goes out with TC set and no records, so that the client asks again over TCP. Bytes that
// are no query get a FORMERR when their header could be read, and nothing otherwise (nor does a response).
import type { ClusterRecords } from './records.js';
import {
  CLASS_IN,
  DnsFormatError,
  OPCODE_QUERY,
  RCODE,
  decodeMessage,
  encodeMessage,
  type DnsFlags,
  type DnsMessage,
  type RecordSections,
  type ResourceRecord,
} from './wire.js';

export type Transport = 'udp' | 'tcp';

/** What a UDP client without EDNS can take (RFC 1035 §4.2.1). */
export const CLASSIC_UDP_LIMIT = 512;
/** The payload size this server offers in its own OPT record: the DNS flag day 2020 advice. */
export const EDNS_UDP_SIZE = 1232;

/** A response's flags before the lookup: not authoritative, whole, and no recursion offered. */
const RESPONSE_FLAGS: DnsFlags = { qr: true, aa: false, tc: false, rd: false, ra: false };

const NO_RECORDS: RecordSections = { answers: [], authority: [], additional: [] };

function optRecord(): ResourceRecord {
  return { name: '', class: EDNS_UDP_SIZE, ttl: 0, data: { kind: 'OPT' } };
}

/** The response to `query`, or undefined when nothing should be sent back. */
export function respond(records: ClusterRecords, query: Buffer, transport: Transport): Buffer | undefined {
  let message: DnsMessage;
  try {
    message = decodeMessage(query);
  } catch (e) {
    if (!(e instanceof DnsFormatError) || e.id === undefined || query.length < 4) return undefined;
    // Only the header is trusted: echo the id and opcode, nothing else.
    const opcode = (query.readUInt16BE(2) >> 11) & 0xf;
    if ((query.readUInt16BE(2) & 0x8000) !== 0) return undefined;
    const header = { id: e.id, opcode, rcode: RCODE.FORMERR, flags: RESPONSE_FLAGS };
    return encodeMessage({ header, questions: [], ...NO_RECORDS });
  }
  if (message.header.flags.qr) return undefined;
  const response = answer(records, message);
  const bytes = encodeMessage(response);
  if (transport === 'tcp') return bytes;
  const opt = message.additional.find((r) => r.data.kind === 'OPT');
  const limit = Math.max(CLASSIC_UDP_LIMIT, opt ? opt.class : 0);
  if (bytes.length <= limit) return bytes;
  return encodeMessage({
    ...response,
    header: { ...response.header, flags: { ...response.header.flags, tc: true } },
    answers: [],
    authority: [],
    additional: response.additional.filter((r) => r.data.kind === 'OPT'),
  });
}

/** The response message for a decoded query. */
export function answer(records: ClusterRecords, query: DnsMessage): DnsMessage {
  const opt = query.additional.some((r) => r.data.kind === 'OPT') ? [optRecord()] : [];
  const { id, opcode, flags } = query.header;
  const reply = (rcode: number, aa: boolean, found: RecordSections): DnsMessage => ({
    header: { id, opcode, rcode, flags: { ...RESPONSE_FLAGS, aa, rd: flags.rd } },
    questions: query.questions,
    answers: found.answers,
    authority: found.authority,
    additional: [...found.additional, ...opt],
  });
  if (opcode !== OPCODE_QUERY) return reply(RCODE.NOTIMP, false, NO_RECORDS);
  const question = query.questions[0];
  if (query.questions.length !== 1 || question === undefined) return reply(RCODE.FORMERR, false, NO_RECORDS);
  if (question.class !== CLASS_IN) return reply(RCODE.REFUSED, false, NO_RECORDS);
  const found = records.lookup(question.name, question.type);
  return reply(found.rcode, found.authoritative, found);
}
