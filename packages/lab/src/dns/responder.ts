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
  type DnsMessage,
  type ResourceRecord,
} from './wire.js';

export type Transport = 'udp' | 'tcp';

/** What a UDP client without EDNS can take (RFC 1035 §4.2.1). */
export const CLASSIC_UDP_LIMIT = 512;
/** The payload size this server offers in its own OPT record: the DNS flag day 2020 advice. */
export const EDNS_UDP_SIZE = 1232;

const EMPTY: Omit<DnsMessage, 'id' | 'opcode' | 'rd' | 'rcode' | 'questions'> = {
  qr: true,
  aa: false,
  tc: false,
  ra: false,
  answers: [],
  authority: [],
  additional: [],
};

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
    return encodeMessage({ ...EMPTY, id: e.id, opcode, rd: false, rcode: RCODE.FORMERR, questions: [] });
  }
  if (message.qr) return undefined;
  const response = answer(records, message);
  const bytes = encodeMessage(response);
  if (transport === 'tcp') return bytes;
  const opt = message.additional.find((r) => r.data.kind === 'OPT');
  const limit = Math.max(CLASSIC_UDP_LIMIT, opt ? opt.class : 0);
  if (bytes.length <= limit) return bytes;
  return encodeMessage({
    ...response,
    tc: true,
    answers: [],
    authority: [],
    additional: response.additional.filter((r) => r.data.kind === 'OPT'),
  });
}

/** The response message for a decoded query. */
export function answer(records: ClusterRecords, query: DnsMessage): DnsMessage {
  const hasOpt = query.additional.some((r) => r.data.kind === 'OPT');
  const base = {
    ...EMPTY,
    id: query.id,
    opcode: query.opcode,
    rd: query.rd,
    questions: query.questions,
    additional: hasOpt ? [optRecord()] : [],
  };
  if (query.opcode !== OPCODE_QUERY) return { ...base, rcode: RCODE.NOTIMP };
  const question = query.questions[0];
  if (query.questions.length !== 1 || question === undefined) return { ...base, rcode: RCODE.FORMERR };
  if (question.class !== CLASS_IN) return { ...base, rcode: RCODE.REFUSED };
  const found = records.lookup(question.name, question.type);
  return {
    ...base,
    aa: found.authoritative,
    rcode: found.rcode,
    answers: found.answers,
    authority: found.authority,
    additional: [...found.additional, ...base.additional],
  };
}
