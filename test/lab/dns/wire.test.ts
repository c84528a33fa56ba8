import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  CLASS_IN,
  DnsFormatError,
  RR_TYPE,
  decodeMessage,
  encodeMessage,
  nameLabels,
  type DnsMessage,
} from '../../../packages/lab/src/dns/wire.js';

const QUERY_FLAGS = { qr: false, aa: false, tc: false, rd: true, ra: false };
const HEADER = { id: 0x1234, opcode: 0, rcode: 0, flags: QUERY_FLAGS };

function query(name: string, type: number): DnsMessage {
  return {
    header: HEADER,
    questions: [{ name, type, class: CLASS_IN }],
    answers: [],
    authority: [],
    additional: [],
  };
}

/** A name in wire form, label by label, without compression. */
function wireName(name: string): Buffer {
  return Buffer.concat([
    ...name.split('.').map((l) => Buffer.concat([Buffer.from([l.length]), Buffer.from(l, 'latin1')])),
    Buffer.from([0]),
  ]);
}

function header(counts: readonly [number, number, number, number], flags = 0x0100): Buffer {
  const b = Buffer.alloc(12);
  b.writeUInt16BE(0xbeef, 0);
  b.writeUInt16BE(flags, 2);
  counts.forEach((c, i) => b.writeUInt16BE(c, 4 + 2 * i));
  return b;
}

function u16s(...values: number[]): Buffer {
  const b = Buffer.alloc(values.length * 2);
  values.forEach((v, i) => b.writeUInt16BE(v, 2 * i));
  return b;
}

describe('DNS wire format', () => {
  test('a query encodes as RFC 1035 lays it out, and decodes back', () => {
    const bytes = encodeMessage(query('web.svc.svc.cluster.local', RR_TYPE.A));
    assert.deepEqual(
      bytes,
      Buffer.concat([
        Buffer.from([0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0]),
        wireName('web.svc.svc.cluster.local'),
        u16s(1, 1),
      ]),
    );
    assert.deepEqual(decodeMessage(bytes), query('web.svc.svc.cluster.local', RR_TYPE.A));
  });

  test('every record kind survives a round trip; repeated names are compressed', () => {
    const soa = {
      kind: 'SOA',
      mname: 'ns.dns.cluster.local',
      rname: 'hostmaster.cluster.local',
      serial: 7,
      refresh: 7200,
      retry: 1800,
      expire: 86400,
      minimum: 5,
    } as const;
    const message: DnsMessage = {
      header: { ...HEADER, flags: { ...QUERY_FLAGS, qr: true, aa: true } },
      questions: [{ name: 'X.ns.svc.cluster.local', type: RR_TYPE.ANY, class: CLASS_IN }],
      answers: [
        {
          name: 'X.ns.svc.cluster.local',
          class: CLASS_IN,
          ttl: 5,
          data: { kind: 'A', address: '198.19.0.7' },
        },
        {
          name: 'x.ns.svc.cluster.local',
          class: CLASS_IN,
          ttl: 5,
          data: { kind: 'AAAA', address: '2001:db8::a:0:0:1' },
        },
        {
          name: '_http._tcp.x.ns.svc.cluster.local',
          class: CLASS_IN,
          ttl: 5,
          data: { kind: 'SRV', priority: 0, weight: 100, port: 80, target: 'x.ns.svc.cluster.local' },
        },
        {
          name: 'e.ns.svc.cluster.local',
          class: CLASS_IN,
          ttl: 5,
          data: { kind: 'CNAME', target: 'example.org' },
        },
      ],
      authority: [{ name: 'cluster.local', class: CLASS_IN, ttl: 5, data: soa }],
      additional: [{ name: '', class: 1232, ttl: 0, data: { kind: 'OPT' } }],
    };
    const bytes = encodeMessage(message);
    assert.deepEqual(decodeMessage(bytes), message);
    // The answer's owner name is a pointer to the question's (offset 12).
    const firstAnswer = 12 + wireName('X.ns.svc.cluster.local').length + 4;
    assert.equal(bytes.readUInt16BE(firstAnswer), 0xc000 | 12);
    // The next, spelt in lower case, keeps its own first label and points at the question's "ns.svc…".
    assert.deepEqual([...bytes.subarray(firstAnswer + 16, firstAnswer + 18)], [1, 0x78]);
    assert.equal(bytes.readUInt16BE(firstAnswer + 18), 0xc000 | 14);
    // The SRV target is written whole (RFC 2782), though every suffix of it was written before.
    assert.ok(bytes.includes(wireName('x.ns.svc.cluster.local')));
  });

  test('compression pointers in a query are followed, through a chain of them', () => {
    // Pointers only go backwards, so the question (right after the header) is written whole and later names
    // point into it, and into each other.
    const q = Buffer.concat([
      header([1, 1, 0, 0]),
      wireName('web.svc.cluster.local'), // 12
      u16s(RR_TYPE.A, CLASS_IN),
    ]);
    const svcAt = 12 + 4; // "svc.cluster.local" inside the question
    const answer = Buffer.concat([
      Buffer.from([3, ...Buffer.from('api'), 0xc0, svcAt]), // api → @svc.cluster.local
      u16s(RR_TYPE.CNAME, CLASS_IN, 0, 30, 2),
      u16s(0xc000 | 12), // CNAME target: → web.svc.cluster.local
    ]);
    const decoded = decodeMessage(Buffer.concat([q, answer]));
    assert.equal(decoded.questions[0]?.name, 'web.svc.cluster.local');
    assert.equal(decoded.answers[0]?.name, 'api.svc.cluster.local');
    assert.deepEqual(decoded.answers[0]?.data, { kind: 'CNAME', target: 'web.svc.cluster.local' });
    // A second-level chain: a name pointing at "api…", which itself points into the question.
    const apiAt = q.length;
    const chained = Buffer.concat([
      q,
      answer,
      Buffer.from([1, 0x78, 0xc0, apiAt]),
      u16s(RR_TYPE.A, CLASS_IN, 0, 30, 4),
      Buffer.from([198, 19, 0, 1]),
    ]);
    chained.writeUInt16BE(2, 6); // two answers
    assert.equal(decodeMessage(chained).answers[1]?.name, 'x.api.svc.cluster.local');
  });

  test('pointer loops, forward pointers and truncated messages are format errors, with the id when known', () => {
    const loop = Buffer.concat([header([1, 0, 0, 0]), Buffer.from([0xc0, 12]), u16s(1, 1)]);
    assert.throws(
      () => decodeMessage(loop),
      (e: unknown) => e instanceof DnsFormatError && e.id === 0xbeef,
    );
    const forward = Buffer.concat([header([1, 0, 0, 0]), Buffer.from([0xc0, 20]), u16s(1, 1), wireName('a')]);
    assert.throws(() => decodeMessage(forward), DnsFormatError);
    // A two-step loop: a label, then a pointer back to its own start.
    const twoStep = Buffer.concat([header([1, 0, 0, 0]), Buffer.from([1, 0x61, 0xc0, 12]), u16s(1, 1)]);
    assert.throws(() => decodeMessage(twoStep), DnsFormatError);
    const cut = encodeMessage(query('web.svc', RR_TYPE.A)).subarray(0, 20);
    assert.throws(
      () => decodeMessage(cut),
      (e: unknown) => e instanceof DnsFormatError && e.id === 0x1234,
    );
    assert.throws(
      () => decodeMessage(Buffer.from([1, 2, 3])),
      (e: unknown) => e instanceof DnsFormatError && e.id === undefined,
    );
  });

  test('a label with a dot survives as an escaped name; labels and names over their limits are refused', () => {
    const odd = Buffer.concat([header([1, 0, 0, 0]), Buffer.from([3, 0x61, 0x2e, 0x62, 0]), u16s(1, 1)]);
    const decoded = decodeMessage(odd);
    assert.equal(decoded.questions[0]?.name, 'a\\.b');
    assert.deepEqual(nameLabels('a\\.b.c'), ['a.b', 'c']);
    assert.deepEqual(encodeMessage(decoded).subarray(12), odd.subarray(12));
    assert.throws(() => encodeMessage(query(`${'a'.repeat(64)}.local`, RR_TYPE.A)));
    const long = Buffer.concat([
      header([1, 0, 0, 0]),
      ...Array.from({ length: 5 }, () => Buffer.from([63, ...Buffer.alloc(63, 0x61)])),
      Buffer.from([0]),
      u16s(1, 1),
    ]);
    assert.throws(() => decodeMessage(long), /longer than 255/);
  });
});
