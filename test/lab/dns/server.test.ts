// The DNS server on loopback (no root: an unprivileged port), asked by Node's own resolver (c-ares) and by hand
// over UDP and TCP: what a pod's resolver sees, without a lab.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createSocket } from 'node:dgram';
import { Resolver } from 'node:dns/promises';
import { connect } from 'node:net';
import type { EndpointSlice } from '../../../packages/agent/src/api/objects.js';
import { SILENT_LOGGER } from '../../../packages/agent/src/util/logger.js';
import { ClusterRecords } from '../../../packages/lab/src/dns/records.js';
import { respond } from '../../../packages/lab/src/dns/responder.js';
import { startDnsServer, type DnsServer } from '../../../packages/lab/src/dns/server.js';
import {
  CLASS_IN,
  RCODE,
  RR_TYPE,
  decodeMessage,
  encodeMessage,
  type DnsMessage,
} from '../../../packages/lab/src/dns/wire.js';

/** A headless Service with this many ready endpoints answers with more than any UDP limit here. */
const MANY = 100;

function bigSlice(): EndpointSlice {
  return {
    metadata: {
      name: 'big-x',
      namespace: 'ns',
      resourceVersion: '1',
      labels: { 'kubernetes.io/service-name': 'big' },
    },
    addressType: 'IPv4',
    endpoints: Array.from({ length: MANY }, (_, i) => ({ addresses: [`198.18.20.${i + 1}`] })),
  };
}

function query(name: string, type: number, edns?: number): Buffer {
  const m: DnsMessage = {
    header: { id: 7, opcode: 0, rcode: 0, flags: { qr: false, aa: false, tc: false, rd: true, ra: false } },
    questions: [{ name, type, class: CLASS_IN }],
    answers: [],
    authority: [],
    additional: edns === undefined ? [] : [{ name: '', class: edns, ttl: 0, data: { kind: 'OPT' } }],
  };
  return encodeMessage(m);
}

function askUdp(port: number, bytes: Buffer): Promise<DnsMessage> {
  return new Promise((resolve, reject) => {
    const s = createSocket('udp4');
    s.once('message', (m) => {
      s.close();
      resolve(decodeMessage(m));
    });
    s.once('error', reject);
    s.send(bytes, port, '127.0.0.1');
  });
}

/** Two queries on one TCP connection, each framed by its length; both answers. */
function askTcp(port: number, queries: readonly Buffer[]): Promise<DnsMessage[]> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let got = Buffer.alloc(0);
    const answers: DnsMessage[] = [];
    socket.on('data', (chunk: Buffer) => {
      got = Buffer.concat([got, chunk]);
      while (got.length >= 2 && got.length >= 2 + got.readUInt16BE(0)) {
        answers.push(decodeMessage(got.subarray(2, 2 + got.readUInt16BE(0))));
        got = got.subarray(2 + got.readUInt16BE(0));
      }
      if (answers.length === queries.length) {
        socket.end();
        resolve(answers);
      }
    });
    socket.on('error', reject);
    for (const q of queries) {
      const len = Buffer.alloc(2);
      len.writeUInt16BE(q.length);
      socket.write(Buffer.concat([len, q]));
    }
  });
}

describe('DNS server over UDP and TCP', () => {
  const records = new ClusterRecords();
  let server: DnsServer | undefined;
  let resolver: Resolver;

  before(async () => {
    records.setService({
      metadata: { name: 'web', namespace: 'ns', resourceVersion: '1' },
      spec: { clusterIP: '198.19.0.2', clusterIPs: ['198.19.0.2'] },
    });
    records.setService({
      metadata: { name: 'big', namespace: 'ns', resourceVersion: '1' },
      spec: { clusterIP: 'None' },
    });
    records.setSlice(bigSlice());
    server = await startDnsServer({
      host: '127.0.0.1',
      port: 0,
      handle: (q, transport) => respond(records, q, transport),
      logger: SILENT_LOGGER,
    });
    resolver = new Resolver({ timeout: 2000, tries: 2 });
    resolver.setServers([`127.0.0.1:${server.port}`]);
  });

  after(async () => {
    await server?.close();
  });

  test('Node’s resolver: A answers, AAAA is ENODATA, an unknown name ENOTFOUND, another zone EREFUSED', async () => {
    assert.deepEqual(await resolver.resolve4('web.ns.svc.cluster.local'), ['198.19.0.2']);
    await assert.rejects(resolver.resolve6('web.ns.svc.cluster.local'), { code: 'ENODATA' });
    await assert.rejects(resolver.resolve4('nope.ns.svc.cluster.local'), { code: 'ENOTFOUND' });
    await assert.rejects(resolver.resolve4('example.org'), { code: 'EREFUSED' });
  });

  test('a UDP answer over the limit is sent truncated (TC, no records); EDNS raises the limit; TCP has it all', async () => {
    const port = server?.port ?? 0;
    const plain = await askUdp(port, query('big.ns.svc.cluster.local', RR_TYPE.A));
    assert.equal(plain.header.flags.tc, true);
    assert.equal(plain.answers.length, 0);
    assert.equal(plain.questions[0]?.name, 'big.ns.svc.cluster.local');
    const edns = await askUdp(port, query('big.ns.svc.cluster.local', RR_TYPE.A, 4096));
    assert.equal(edns.header.flags.tc, false);
    assert.equal(edns.answers.length, MANY);
    assert.ok(
      edns.additional.some((r) => r.data.kind === 'OPT'),
      'an EDNS query gets an OPT record back',
    );
    const small = await askUdp(port, query('web.ns.svc.cluster.local', RR_TYPE.A));
    assert.equal(small.header.flags.tc, false);
    assert.equal(small.header.flags.aa, true);
    assert.equal(small.header.id, 7);
    const [a, b] = await askTcp(port, [
      query('big.ns.svc.cluster.local', RR_TYPE.A),
      query('nope.ns.svc.cluster.local', RR_TYPE.A),
    ]);
    assert.equal(a?.header.flags.tc, false);
    assert.equal(a?.answers.length, MANY);
    assert.equal(b?.header.rcode, RCODE.NXDOMAIN);
    // c-ares gets TC over UDP and asks again over TCP on its own.
    assert.equal((await resolver.resolve4('big.ns.svc.cluster.local')).length, MANY);
  });

  test('garbage with a header gets FORMERR; a response or a cut header gets nothing', () => {
    const bad = Buffer.concat([
      query('web.ns.svc.cluster.local', RR_TYPE.A).subarray(0, 12),
      Buffer.from([0xc0, 40]),
    ]);
    const reply = respond(records, bad, 'udp');
    assert.ok(reply);
    assert.equal(decodeMessage(reply).header.rcode, RCODE.FORMERR);
    assert.equal(decodeMessage(reply).header.id, 7);
    assert.equal(respond(records, Buffer.from([1, 2, 3]), 'udp'), undefined);
    const response = Buffer.from(query('web.ns.svc.cluster.local', RR_TYPE.A));
    response.writeUInt16BE(0x8100, 2);
    assert.equal(respond(records, response, 'udp'), undefined);
    const notQuery = Buffer.from(query('web.ns.svc.cluster.local', RR_TYPE.A));
    notQuery.writeUInt16BE(0x1100, 2); // opcode 2 (STATUS)
    assert.equal(
      decodeMessage(respond(records, notQuery, 'udp') ?? Buffer.alloc(0)).header.rcode,
      RCODE.NOTIMP,
    );
  });
});
