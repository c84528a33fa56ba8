// The netlink element writer against nft itself: for the operations of vectors.ts, the batch encode.ts writes must
// be, message for message and byte for byte, the batch nft 1.0.6 sent for the same text (recorded with strace in
// test/fixtures/netlink/nft-setelem-batches.json), but for the two documented differences: our messages ask for
// an ACK, and nft's NFTA_SET_ELEM_LIST_SET_ID (read by the kernel only for a set made in the same batch) is not
// written. Also: which operations are refused, and why, before anything is sent.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { FLAT_LAYOUT } from '../../../../packages/agent/src/backends/nftables/flat/layout.js';
import { flatSetupParts } from '../../../../packages/agent/src/backends/nftables/flat/setup.js';
import { sharedSets, familyWords } from '../../../../packages/agent/src/backends/nftables/setup.js';
import type { NftOperation } from '../../../../packages/agent/src/netfilter/nft/objects.js';
import type { EncodedBatch } from '../../../../packages/agent/src/netfilter/nft/netlink/encode.js';
import {
  batchOperation,
  batchSize,
  encodeElementBatch,
  operationForReply,
} from '../../../../packages/agent/src/netfilter/nft/netlink/encode.js';
import type { ElementSchema } from '../../../../packages/agent/src/netfilter/nft/netlink/schema.js';
import {
  elementSchema,
  elementSchemas,
} from '../../../../packages/agent/src/netfilter/nft/netlink/schema.js';
import { nodeFor } from '../../../backends/nftables/flat-objects.js';
import type { VectorFamily } from './vectors.js';
import { elementText, recordedBatches, vectorContainers, vectorOperations } from './vectors.js';

const fixture = recordedBatches();

const NLM_F_ACK = 0x4;
const SETELEM_TYPES = new Set([(10 << 8) | 12, (10 << 8) | 14]);
const LIST_SET_ID = 4;

interface Message {
  readonly type: number;
  readonly flags: number;
  readonly seq: number;
  readonly bytes: Buffer;
}

/** The messages of a batch, split by their nlmsg_len (read here, not with the code under test). */
function split(batch: Buffer): Message[] {
  const out: Message[] = [];
  for (let at = 0; at < batch.length;) {
    const len = batch.readUInt32LE(at);
    assert.ok(len >= 16 && at + len <= batch.length, `message at ${at} has length ${len}`);
    out.push({
      type: batch.readUInt16LE(at + 4),
      flags: batch.readUInt16LE(at + 6),
      seq: batch.readUInt32LE(at + 8),
      bytes: batch.subarray(at, at + len),
    });
    at += (len + 3) & ~3;
  }
  return out;
}

/**
 * A message with the documented differences taken out: the ACK flag cleared, the sequence number zeroed (nft gives
 * every message of one command the command's number, we give each message its own), and a set element message's
 * top-level NFTA_SET_ELEM_LIST_SET_ID dropped (its length fixed up). Hex, so a failure shows where they differ.
 */
function normalized(m: Message): string {
  const head = Buffer.from(m.bytes.subarray(0, 20));
  head.writeUInt16LE(m.flags & ~NLM_F_ACK, 6);
  head.writeUInt32LE(0, 8);
  const attrs: Buffer[] = [];
  for (let at = 20; at < m.bytes.length;) {
    const len = m.bytes.readUInt16LE(at);
    const type = m.bytes.readUInt16LE(at + 2) & 0x3fff;
    const padded = (len + 3) & ~3;
    if (!(SETELEM_TYPES.has(m.type) && type === LIST_SET_ID)) attrs.push(m.bytes.subarray(at, at + padded));
    at += padded;
  }
  const out = Buffer.concat([head, ...attrs]);
  out.writeUInt32LE(out.length, 0);
  return out.toString('hex');
}

function schemasOf(family: VectorFamily): Map<string, ElementSchema> {
  return elementSchemas(vectorContainers(family));
}

function encoded(family: VectorFamily, ops: readonly NftOperation[], seq = 0): EncodedBatch {
  const r = encodeElementBatch({ family, table: 'kube-proxy' }, ops, schemasOf(family), seq);
  if ('reason' in r) assert.fail(`encode failed: ${r.reason}`);
  return r;
}

describe('the netlink element writer writes what nft writes', () => {
  for (const family of ['ip', 'ip6'] as const) {
    test(`${family}: every message of the batch, byte for byte (${fixture.nft})`, () => {
      const ops = vectorOperations(family);
      // The fixture was recorded from these operations (else it must be recorded again: record-nft.ts).
      assert.equal(fixture[family].elements, elementText(family, ops));
      const theirs = split(Buffer.from(fixture[family].batch, 'hex'));
      const batch = encoded(family, ops, theirs[0]?.seq ?? 0);
      const ours = split(batch.bytes);
      assert.equal(ours.length, theirs.length, 'message count');
      for (const [i, m] of theirs.entries()) {
        assert.equal(normalized(ours[i] as Message), normalized(m), `message ${i} (type ${m.type})`);
      }
      // The differences are only those: ACKs on the element messages, none on the batch's ends; a number per
      // message, from BATCH_BEGIN's (nft's) up.
      for (const m of ours.slice(1, -1)) assert.equal(m.flags & NLM_F_ACK, NLM_F_ACK);
      assert.deepEqual(
        ours.map((m) => m.seq),
        ours.map((_, i) => (theirs[0]?.seq ?? 0) + i),
      );
      assert.equal((ours[0] as Message).flags, 1);
      assert.equal((ours[ours.length - 1] as Message).flags, 1);
      assert.equal(batch.messages.length, ours.length - 2);
    });
  }

  test('a run past 64 KiB of elements is cut where nft cuts it, and the cut is not at a line of the text', () => {
    const theirs = split(Buffer.from(fixture.ip.batch, 'hex'));
    const endpoints = theirs.filter((m) => m.bytes.includes(Buffer.from('endpoints-tcp\0')));
    // The 4 edge-value elements are one command and one message; the 1,500 generated ones, one command, two.
    assert.equal(endpoints.filter((m) => m.type === ((10 << 8) | 12)).length, 3);
    const ops = vectorOperations('ip');
    const batch = encoded('ip', ops);
    const msgs = batch.messages.filter((m) => {
      const op = ops[m.firstOp] as NftOperation;
      return op.verb === 'add' && op.object.kind === 'element' && op.object.set === 'endpoints-tcp';
    });
    assert.equal(msgs.length, 3);
    assert.equal(msgs[1]?.endOp, msgs[2]?.firstOp);
    // The cut is by size: neither at the text's 1,000 elements a line nor at the end of the run.
    const cut = (msgs[2]?.firstOp ?? 0) - (msgs[1]?.firstOp ?? 0);
    assert.ok(cut > 500 && cut < 1500 && cut !== 1000, String(cut));
  });
});

describe('what the writer refuses before anything is sent', () => {
  const el = (
    set: string,
    key: string[],
    value?: string[],
    verb: NftOperation['verb'] = 'add',
  ): NftOperation => ({
    verb,
    object: { kind: 'element', set, key, ...(value ? { value } : {}) },
  });
  const good = el('cluster-ips', ['198.18.0.1']);
  const cases: [string, NftOperation, RegExp][] = [
    ['not an address', el('cluster-ips', ['198.18.0.256']), /"198\.18\.0\.256" is not an IPv4 address/],
    ['a short address', el('cluster-ips', ['198.18.0']), /not an IPv4 address/],
    ['a leading zero', el('cluster-ips', ['198.18.0.01']), /not an IPv4 address/],
    ['a host name', el('cluster-ips', ['localhost']), /not an IPv4 address/],
    ['IPv6 in an IPv4 set', el('cluster-ips', ['2001:db8::1']), /not an IPv4 address/],
    ['port out of range', el('firewall-frontends', ['198.18.0.1 . tcp . 65536']), /"65536" is not a port/],
    ['a service name', el('firewall-frontends', ['198.18.0.1 . tcp . http']), /"http" is not a port/],
    ['unknown protocol', el('firewall-frontends', ['198.18.0.1 . icmp . 80']), /"icmp" is not a protocol/],
    ['protocol out of range', el('firewall-frontends', ['198.18.0.1 . 256 . 80']), /not a protocol/],
    ['too few fields', el('firewall-frontends', ['198.18.0.1 . tcp']), /2 fields where 3 are needed/],
    ['too many fields', el('firewall-frontends', ['198.18.0.1 . tcp . 80 . 1']), /more than 3 fields/],
    [
      'a slot past 32 bits',
      el('endpoints-tcp', ['198.18.0.1 . tcp . 80 . 4294967296'], ['198.19.0.1 . 80']),
      /not a 32-bit number/,
    ],
    ['a map without value', el('service-ips', ['198.18.0.1 . tcp . 80']), /map service-ips needs a value/],
    ['a set with a value', el('cluster-ips', ['198.18.0.1'], ['drop']), /set cluster-ips holds no values/],
    ['not a verdict', el('service-ips', ['198.18.0.1 . tcp . 80'], ['goto']), /"goto" is not a verdict/],
    ['a verdict word', el('service-ips', ['198.18.0.1 . tcp . 80'], ['queue']), /"queue" is not a verdict/],
    ['drop with a chain', el('service-ips', ['198.18.0.1 . tcp . 80'], ['drop x']), /not a verdict/],
    [
      'a bad chain name',
      el('service-ips', ['198.18.0.1 . tcp . 80'], ['goto a;b']),
      /"a;b" is not a chain name/,
    ],
    [
      'a bad value',
      el('endpoints-tcp', ['198.18.0.1 . tcp . 80 . 0'], ['198.19.0.1 . x']),
      /value "x" is not a port/,
    ],
    ['an unknown set', el('no-such-set', ['198.18.0.1']), /no element schema for set no-such-set/],
    ['destroy', el('cluster-ips', ['198.18.0.1'], undefined, 'destroy'), /verb destroy is not written/],
    ['a chain', { verb: 'add', object: { kind: 'chain', name: 'x' } }, /only elements are written/],
    [
      'a set add',
      { verb: 'add', object: { kind: 'set', name: 'ports', type: 'inet_service' } },
      /only flush/,
    ],
  ];
  for (const [what, op, reason] of cases) {
    test(what, () => {
      const r = encodeElementBatch(
        { family: 'ip', table: 'kube-proxy' },
        [good, good, op],
        schemasOf('ip'),
        1,
      );
      assert.ok('reason' in r, 'refused');
      assert.equal(r.index, 2);
      assert.match(r.reason, reason);
    });
  }

  test('IPv6 text nft would not read is refused too', () => {
    for (const bad of [
      '2001:db8::198.18.0.1',
      '2001:db8:::1',
      '2001:db8::1::2',
      '2001:db8:1:2:3:4:5:6:7',
      '2001:db8:12345::1',
      ':1',
      '1:',
    ]) {
      const r = encodeElementBatch(
        { family: 'ip6', table: 'kube-proxy' },
        [el('cluster-ips', [bad])],
        schemasOf('ip6'),
        1,
      );
      assert.ok('reason' in r, bad);
      assert.match(r.reason, /not an IPv6 address/, bad);
    }
  });

  test('a table of another family', () => {
    const r = encodeElementBatch({ family: 'inet', table: 'kube-proxy' }, [good], schemasOf('ip'), 1);
    assert.ok('reason' in r);
    assert.match(r.reason, /family inet/);
  });
});

describe('a streamed batch (operations made as they are written)', () => {
  test('is the same bytes as the array it makes, made once; an operation is found again by its index', () => {
    const ops = vectorOperations('ip');
    // Enough operations that the writer projects its size from the first ones and grows once.
    const many = [...ops, ...ops, ...ops, ...ops];
    let made = 0;
    const stream = {
      count: many.length,
      *make(): Generator<NftOperation> {
        made++;
        yield* many;
      },
    };
    const fromArray = encoded('ip', many, 7);
    const r = encodeElementBatch({ family: 'ip', table: 'kube-proxy' }, stream, schemasOf('ip'), 7);
    if ('reason' in r) assert.fail(`encode failed: ${r.reason}`);
    assert.equal(made, 1, 'the stream is made once to be written');
    assert.ok(r.bytes.equals(fromArray.bytes), 'the same batch');
    assert.deepEqual(r.messages, fromArray.messages);
    assert.deepEqual([...r.operationOffsets], [...fromArray.operationOffsets]);
    assert.equal(batchSize(stream), many.length);
    assert.equal(batchOperation(stream, 1234), many[1234]);
    assert.equal(batchOperation(stream, many.length), undefined);
  });

  test('a stream that makes more operations than it announced is refused, naming the first extra one', () => {
    const ops = vectorOperations('ip');
    const stream = { count: 2, make: () => ops };
    const r = encodeElementBatch({ family: 'ip', table: 'kube-proxy' }, stream, schemasOf('ip'), 1);
    assert.ok('reason' in r);
    assert.equal(r.index, 2);
    assert.match(r.reason, /more than the 2 operations it announced/);
  });
});

describe('errors map back to the operation', () => {
  test('by message, and by the offset of the element the kernel pointed at', () => {
    const ops = vectorOperations('ip');
    const batch = encoded('ip', ops, 100);
    assert.equal(batch.firstSeq, 100);
    assert.equal(batch.lastSeq, 100 + batch.messages.length + 1);
    for (const m of batch.messages) {
      assert.equal(operationForReply(batch, m.seq), m.firstOp);
      for (let i = m.firstOp; i < m.endOp; i++) {
        const offset = (batch.operationOffsets[i] as number) - m.offset;
        assert.equal(operationForReply(batch, m.seq, offset), i);
        // An offset inside the element (its key) is the same element.
        assert.equal(operationForReply(batch, m.seq, offset + 8), i);
      }
    }
    assert.equal(operationForReply(batch, 100), undefined, 'BATCH_BEGIN is no operation');
    assert.equal(operationForReply(batch, batch.lastSeq), undefined, 'BATCH_END is no operation');
  });
});

describe('element schemas', () => {
  test('every set and map of the flat layout but the interval set is written through netlink', () => {
    for (const family of ['IPv4', 'IPv6'] as const) {
      const node = nodeFor(family);
      const shared = sharedSets(familyWords(node));
      const containers = [...shared.sets, ...shared.maps, ...flatSetupParts(node).containers];
      const unsupported = containers.filter((c) => 'unsupported' in elementSchema(c)).map((c) => c.name);
      assert.deepEqual(unsupported, ['firewall-allow']);
      // The layout's own list of diffed containers is the same set of names.
      const names = new Set(containers.map((c) => c.name));
      for (const c of FLAT_LAYOUT.elementContainers) assert.ok(names.has(c.name), c.name);
    }
  });

  test('lengths as the kernel keeps them (NFTA_SET_KEY_LEN / DATA_LEN that nft sent for these sets)', () => {
    // From `nft --debug=mnl` of the same declarations (nft 1.0.6): key 12 and 16 bytes, data 8.
    const s = (type: string): unknown => elementSchema({ kind: 'map', name: 'm', type });
    assert.deepEqual(s('ipv4_addr . inet_proto . inet_service : verdict'), {
      container: 'map',
      key: ['ipv4_addr', 'inet_proto', 'inet_service'],
      keyLength: 12,
      value: 'verdict',
      valueLength: 0,
    });
    const endpoints = elementSchema({
      kind: 'map',
      name: 'endpoints-tcp',
      typeof: 'ip daddr . meta l4proto . th dport . numgen random mod 2 : ip daddr . tcp dport',
    });
    assert.ok(!('unsupported' in endpoints));
    assert.equal(endpoints.keyLength, 16);
    assert.equal(endpoints.valueLength, 8);
  });

  test('what stays with nft is said, not thrown', () => {
    const cases: [Parameters<typeof elementSchema>[0], RegExp][] = [
      [{ kind: 'set', name: 'a', type: 'ipv4_addr', flags: ['interval'] }, /flags interval/],
      [{ kind: 'set', name: 'a', type: 'ipv4_addr', flags: ['dynamic', 'timeout'] }, /flags dynamic,timeout/],
      [{ kind: 'set', name: 'a', type: 'ipv4_addr', timeout: 10 }, /timeout/],
      [{ kind: 'set', name: 'a', type: 'ether_addr' }, /"ether_addr"/],
      [{ kind: 'set', name: 'a', type: 'ipv4_addr . mark' }, /"mark"/],
      [{ kind: 'set', name: 'a' }, /no type/],
      [{ kind: 'map', name: 'a', type: 'ipv4_addr' }, /without a value/],
      [{ kind: 'map', name: 'a', type: 'ipv4_addr : counter' }, /"counter"/],
      [{ kind: 'map', name: 'a', typeof: 'ip daddr : meta mark' }, /"meta mark"/],
      [{ kind: 'map', name: 'a', typeof: 'ip daddr . numgen random mod 2 offset 5 : ip daddr' }, /numgen/],
      [
        {
          kind: 'map',
          name: 'a',
          type: 'ipv6_addr . ipv6_addr . ipv6_addr . ipv6_addr . inet_proto : verdict',
        },
        /longer/,
      ],
    ];
    for (const [c, reason] of cases) {
      const s = elementSchema(c);
      assert.ok('unsupported' in s, JSON.stringify(c));
      assert.match(s.unsupported, reason);
    }
  });
});
