// The netlink element reader: nft's own messages (the recorded batches of test/fixtures/netlink/) read back as the
// text nft lists for them (the expectations below are nft 1.0.6's `nft --json list` of a table holding exactly
// these elements), our writer's messages read back the same, IPv6 printed as glibc's inet_ntop prints it, and the
// kernel's error replies taken apart. The same reader against a live kernel set: kernel.test.ts.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type {
  ListedElement,
  NetlinkMessageView,
} from '../../../../packages/agent/src/netfilter/nft/netlink/decode.js';
import {
  decodeSetElemMessage,
  netlinkMessages,
  parseErrorReply,
} from '../../../../packages/agent/src/netfilter/nft/netlink/decode.js';
import { encodeElementBatch } from '../../../../packages/agent/src/netfilter/nft/netlink/encode.js';
import { formatIPv6 } from '../../../../packages/agent/src/netfilter/nft/netlink/fields.js';
import { elementSchemas } from '../../../../packages/agent/src/netfilter/nft/netlink/schema.js';
import type { VectorFamily } from './vectors.js';
import { recordedBatches, vectorContainers, vectorOperations } from './vectors.js';

const fixture = recordedBatches();

const NEWSETELEM = (10 << 8) | 12;

/** The set a message is about (its NFTA_SET_ELEM_LIST_SET), read here rather than by the code under test. */
function setOf(buf: Buffer, m: NetlinkMessageView): string {
  for (let at = m.offset + 20; at < m.offset + m.length;) {
    const len = buf.readUInt16LE(at);
    if ((buf.readUInt16LE(at + 2) & 0x3fff) === 2) return buf.toString('latin1', at + 4, at + len - 1);
    at += (len + 3) & ~3;
  }
  return '';
}

/** Every element the NEWSETELEM messages of a batch add, by set, sorted by key. */
function added(family: VectorFamily, batch: Buffer): Map<string, ListedElement[]> {
  const schemas = elementSchemas(vectorContainers(family));
  const out = new Map<string, ListedElement[]>();
  for (const m of netlinkMessages(batch, batch.length)) {
    if (m.type !== NEWSETELEM) continue;
    const set = setOf(batch, m);
    const schema = schemas.get(set);
    assert.ok(schema, set);
    const list = out.get(set) ?? [];
    assert.equal(decodeSetElemMessage(batch, m, schema, list), undefined);
    out.set(set, list);
  }
  for (const list of out.values()) list.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  return out;
}

// nft's listing of the ip6 table after the vectors' adds (nft --json, fields joined as json.ts joins them).
const IP6: Record<string, ListedElement[]> = {
  'cluster-ips': [
    { key: '2001:db8:1:2:3:4:5:6' },
    { key: '2001:db8::' },
    { key: '2001:db8::1:0:0:1' },
    { key: '2001:db8::2' },
    { key: '2001:db8::a' },
    { key: '2001:db8:ff::7' },
    { key: '2001:db8:ff::8', comment: 'created' },
  ],
  'service-ips': [
    { key: '2001:db8:ff:: . tcp . 80', value: 'goto dispatch-tcp-10', comment: 'ns/web:http' },
    { key: '2001:db8:ff::1 . udp . 53', value: 'drop' },
    { key: '2001:db8:ff::2 . sctp . 9', value: 'accept', comment: '' },
    {
      key: '2001:db8:ff::3 . tcp . 443',
      value: 'jump service-ABCDEFGH-ns/svc/tcp/http',
      comment: "a 'q' \\\\ b",
    },
    { key: '2001:db8:ff::4 . tcp . 0', value: 'return', comment: 'x'.repeat(128) },
    { key: '2001:db8:ff::5 . udp . 65535', value: 'continue', comment: 'café ✓' },
  ],
  'service-nodeports': [
    { key: 'sctp . 1', value: 'drop' },
    { key: 'tcp . 30080', value: 'goto external-cluster' },
    { key: 'udp . 30053', value: 'goto external-cluster', comment: 'ns/dns:dns' },
  ],
  'hairpin-connections': [{ key: '2001:db8:10::1 . 2001:db8:10::1 . tcp . 8080' }],
  'firewall-frontends': [{ key: '2001:db8:ff::9 . tcp . 80', comment: 'ns/lb:http' }],
  ports: [{ key: '65535' }, { key: '80' }],
  'addr-by-port': [{ key: '53', value: '2001:db8:10::35' }],
  'endpoints-tcp': [
    { key: '2001:db8:ff:: . tcp . 80 . 0', value: '2001:db8:10::1 . 8080' },
    { key: '2001:db8:ff:: . tcp . 80 . 1', value: '2001:db8:10::2 . 8080' },
    { key: '2001:db8:ff:: . tcp . 80 . 4294967295', value: '2001:db8:10::4 . 1' },
    { key: '2001:db8:ff:: . tcp . 80 . 65537', value: '2001:db8:10::3 . 8080' },
  ],
  'nodeport-endpoints-udp': [{ key: 'udp . 30053 . 0', value: '2001:db8:10::5 . 53' }],
};

describe('the netlink element reader', () => {
  test("nft's own ip6 messages read as nft lists them", () => {
    const got = added('ip6', Buffer.from(fixture.ip6.batch, 'hex'));
    assert.deepEqual(Object.fromEntries(got), IP6);
  });

  test("nft's own ip messages: the same shapes, and all 1,504 endpoints", () => {
    const got = added('ip', Buffer.from(fixture.ip.batch, 'hex'));
    assert.deepEqual(got.get('cluster-ips'), [
      { key: '198.18.0.0' },
      { key: '198.18.128.7' },
      { key: '198.18.128.8', comment: 'created' },
      { key: '198.19.255.254' },
      { key: '198.19.255.255' },
    ]);
    assert.deepEqual(got.get('service-nodeports'), IP6['service-nodeports']);
    assert.deepEqual(got.get('service-ips')?.[3], {
      key: '198.18.128.3 . tcp . 443',
      value: 'jump service-ABCDEFGH-ns/svc/tcp/http',
      comment: "a 'q' \\\\ b",
    });
    const endpoints = got.get('endpoints-tcp') ?? [];
    assert.equal(endpoints.length, 1504);
    assert.ok(
      endpoints.some((e) => e.key === '198.18.130.24 . tcp . 1280 . 0' && e.value === '198.19.2.24 . 8080'),
    );
    assert.ok(
      endpoints.some((e) => e.key === '198.18.128.0 . tcp . 80 . 65537' && e.value === '198.19.0.3 . 8080'),
    );
  });

  for (const family of ['ip', 'ip6'] as const) {
    test(`${family}: our messages read back as nft's do`, () => {
      const r = encodeElementBatch(
        { family, table: 'kube-proxy' },
        vectorOperations(family),
        elementSchemas(vectorContainers(family)),
        0,
      );
      assert.ok(!('reason' in r));
      assert.deepEqual(added(family, r.bytes), added(family, Buffer.from(fixture[family].batch, 'hex')));
    });
  }

  test('IPv6 as glibc inet_ntop writes it (checked with Python socket.inet_ntop, which calls it)', () => {
    const cases: [string, string][] = [
      ['00000000000000000000000000000000', '::'],
      ['00000000000000000000000000000001', '::1'],
      ['20010db8000000000000000000000000', '2001:db8::'],
      ['20010db8000000000001000000000001', '2001:db8::1:0:0:1'],
      ['20010db8000000010000000000000001', '2001:db8:0:1::1'],
      ['00000000000000000000ffffc6120001', '::ffff:198.18.0.1'],
      ['000000000000000000000000c6120001', '::198.18.0.1'],
      ['20010db8000100020003000400050006', '2001:db8:1:2:3:4:5:6'],
      ['20010000000000010000000000000000', '2001:0:0:1::'],
      ['00000000000100000000000000000000', '0:0:1::'],
      ['20010db8000000000000ffff00000000', '2001:db8::ffff:0:0'],
      ['00000000000000010000000000000000', '0:0:0:1::'],
    ];
    for (const [hex, text] of cases) assert.equal(formatIPv6(Buffer.from(hex, 'hex'), 0), text, hex);
  });

  test('an error reply: errno, the request it answers, the kernel text and the offending offset', () => {
    // struct nlmsghdr, int error, the echoed request's header (capped), then NLMSGERR_ATTR_MSG and _OFFS.
    const text = Buffer.from('Element exists\0');
    const tlvs = Buffer.alloc(4 + 16 + 8);
    tlvs.writeUInt16LE(4 + text.length, 0);
    tlvs.writeUInt16LE(1, 2);
    text.copy(tlvs, 4);
    tlvs.writeUInt16LE(8, 20);
    tlvs.writeUInt16LE(2, 22);
    tlvs.writeUInt32LE(112, 24);
    const msg = Buffer.alloc(16 + 4 + 16 + tlvs.length);
    msg.writeUInt32LE(msg.length, 0);
    msg.writeUInt16LE(2, 4);
    msg.writeUInt16LE(0x100 | 0x200, 6);
    msg.writeInt32LE(-17, 16);
    msg.writeUInt32LE(52, 20);
    msg.writeUInt32LE(4242, 28);
    tlvs.copy(msg, 36);
    const [m] = netlinkMessages(msg, msg.length);
    assert.ok(m);
    assert.deepEqual(parseErrorReply(msg, m), { errno: 17, seq: 4242, text: 'Element exists', offset: 112 });
  });
});
