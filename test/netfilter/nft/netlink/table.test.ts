// The netlink table listing's reader (src/netfilter/nft/netlink/table.ts) on the kernel's own answers, recorded for
// the zoo tables (test/fixtures/netlink/nft-table-replies.json): what it makes of them is what our JSON parser
// makes of nft 1.0.6's listing recorded with them, but for the differences table.ts states (and table-zoo.ts
// takes out, and nothing else); a datatype it does not know is an error naming the set; answers about another
// table, or from two generations of the ruleset, are told apart. The requests are checked byte for byte. Against
// a live kernel, with the kube-proxy layouts' tables: table-kernel.test.ts.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parseTableJson } from '../../../../packages/agent/src/netfilter/nft/json.js';
import {
  netlinkMessages,
  parseErrorReply,
} from '../../../../packages/agent/src/netfilter/nft/netlink/decode.js';
import type { ListingPart } from '../../../../packages/agent/src/netfilter/nft/netlink/table.js';
import {
  LISTING_FAMILIES,
  LISTING_PARTS,
  TableListingReader,
  listingRequest,
} from '../../../../packages/agent/src/netfilter/nft/netlink/table.js';
import type { RecordedListing } from '../../../fixtures/netlink/record-table.js';
import { ODD_TABLE, ZOO_TABLES, asNft106JsonGives } from './table-zoo.js';
import { netlinkFixture } from './vectors.js';

const fixture = netlinkFixture<{ tables: string; listings: RecordedListing[] }>('nft-table-replies.json');

function recorded(family: string, table: string): RecordedListing {
  const r = fixture.listings.find((l) => l.family === family && l.table === table);
  assert.ok(r, `${family} ${table} recorded`);
  return r;
}

/** Feeds every recorded answer of `r` to a reader, in the order asked; the first problem, if any. */
function readRecorded(r: RecordedListing): { reader: TableListingReader; problem?: string } {
  const reader = new TableListingReader(LISTING_FAMILIES[r.family] as number, r.table);
  for (const part of LISTING_PARTS) {
    for (const hex of r.parts[part]?.datagrams ?? []) {
      const buf = Buffer.from(hex, 'hex');
      for (const m of netlinkMessages(buf, buf.length)) {
        assert.equal(m.seq, r.parts[part]?.seq, `${part}: the answer to its own request`);
        const problem = reader.read(buf, m);
        if (problem !== undefined) return { reader, problem };
      }
    }
  }
  return { reader };
}

/** The recorded datagrams of one part, as one buffer per datagram. */
function datagrams(r: RecordedListing, part: ListingPart): Buffer[] {
  return (r.parts[part]?.datagrams ?? []).map((hex) => Buffer.from(hex, 'hex'));
}

describe('the netlink table reader on recorded kernel answers', () => {
  test('the recording is of the zoo as it is now', () => {
    assert.equal(fixture.tables, ZOO_TABLES + ODD_TABLE);
  });

  for (const [family, table] of [
    ['ip', 'zoo'],
    ['inet', 'zoo'],
  ] as const) {
    test(`${family} ${table}: what nft 1.0.6's JSON gives, but for the stated differences`, () => {
      const r = recorded(family, table);
      const { reader, problem } = readRecorded(r);
      assert.equal(problem, undefined);
      assert.equal(reader.sawTable, true);
      assert.equal(reader.mixedGenerations, false);
      const json = parseTableJson(r.json ?? '');
      assert.ok(typeof json !== 'string', String(json));
      assert.deepEqual(asNft106JsonGives(reader.listing()), json);
    });
  }

  test('ip zoo: the differences themselves, and what nft does not list', () => {
    const { reader } = readRecorded(recorded('ip', 'zoo'));
    const l = reader.listing();
    assert.deepEqual(l.table, { kind: 'table', comment: 'the zoo' });
    assert.deepEqual(
      l.chains.filter((c) => c.comment !== undefined).map((c) => [c.name, c.comment]),
      [
        ['input-drop', 'a base chain'],
        ['regular', 'regular'],
      ],
    );
    assert.deepEqual(
      l.sets.filter((s) => s.flags?.includes('dynamic')).map((s) => [s.name, s.flags]),
      [
        ['learned', ['dynamic']],
        ['short-lived', ['dynamic', 'timeout']],
      ],
    );
    // Signed priorities at both ends, named ones as numbers.
    assert.deepEqual(
      l.chains.filter((c) => c.base).map((c) => [c.name, c.base?.type, c.base?.hook, c.base?.priority]),
      [
        ['input-drop', 'filter', 'input', 5],
        ['source-nat', 'nat', 'postrouting', 100],
        ['lowest', 'route', 'output', -2147483648],
        ['highest', 'filter', 'prerouting', 2147483647],
      ],
    );
    // The anonymous sets and the `jump { … }` body are parts of their rules: not a set, not a chain, not a rule.
    assert.ok(l.sets.every((s) => !s.name.startsWith('__')));
    assert.ok(l.maps.every((m) => !m.name.startsWith('__')));
    assert.deepEqual(
      l.chains.map((c) => c.name),
      ['input-drop', 'source-nat', 'lowest', 'highest', 'regular', 'with-vmap'],
    );
    assert.deepEqual(
      l.rules.map((r) => [r.chain, r.comment]),
      [
        ['regular', 'an anonymous set'],
        ['regular', undefined],
        ['regular', undefined],
        ['with-vmap', 'an anonymous map'],
      ],
    );
    // The chain dump also brought ip odd's chain (the kernel filters chain dumps by family only).
    assert.equal(reader.foreignMessages, 1);
  });

  test('a datatype the reader does not know is an error naming the set, not a wrong type', () => {
    const { problem } = readRecorded(recorded('ip', 'odd'));
    assert.equal(problem, 'set states: key datatype 26, not one this reader knows');
  });

  test('a missing table: ENOENT to the table request', () => {
    const r = recorded('ip', 'nonexistent');
    assert.match(r.nftError ?? '', /No such file or directory/);
    const [buf] = datagrams(r, 'table');
    assert.ok(buf);
    const [m] = netlinkMessages(buf, buf.length);
    assert.ok(m);
    // The extended ACK points at the name: the attribute right after the headers (16 + 4 bytes).
    assert.deepEqual(parseErrorReply(buf, m), { errno: 2, seq: r.parts.table?.seq, offset: 20 });
  });

  test('answers from two generations of the ruleset are seen as such', () => {
    const r = recorded('ip', 'zoo');
    const reader = new TableListingReader(LISTING_FAMILIES.ip as number, 'zoo');
    const [table] = datagrams(r, 'table');
    const [chains] = datagrams(r, 'chains');
    assert.ok(table && chains);
    for (const m of netlinkMessages(table, table.length)) reader.read(table, m);
    // nfgenmsg.res_id, after the netlink header and the family and version bytes: the generation, big-endian.
    const [first] = netlinkMessages(chains, chains.length);
    assert.ok(first);
    const at = first.offset + 16 + 2;
    assert.equal(chains.readUInt16BE(at), table.readUInt16BE(16 + 2), 'recorded in one generation');
    reader.read(chains, first);
    assert.equal(reader.mixedGenerations, false);
    chains.writeUInt16BE((chains.readUInt16BE(at) + 1) & 0xffff, at);
    reader.read(chains, first);
    assert.equal(reader.mixedGenerations, true);
  });

  test('a reader of another table lists nothing from these answers', () => {
    const r = recorded('ip', 'zoo');
    const { reader, problem } = readRecorded({ ...r, table: 'kube-proxy' });
    assert.equal(problem, undefined);
    assert.equal(reader.sawTable, false);
    assert.deepEqual(reader.listing(), {
      table: { kind: 'table' },
      chains: [],
      sets: [],
      maps: [],
      rules: [],
    });
  });

  test('the requests: one attribute, the table name, with the message type and flags of each part', () => {
    const le = (n: number, bytes: number): string =>
      Buffer.from(Array.from({ length: bytes }, (_, i) => (n >> (8 * i)) & 0xff)).toString('hex');
    // nlmsghdr: length 36, type (NFNL_SUBSYS_NFTABLES << 8 | msg), flags, seq 7, port 0; nfgenmsg: AF 2, v0, res 0;
    // attribute: length 15 (4 + "kube-proxy" + NUL), type 1, text, one byte of padding.
    const expected = (msg: number, flags: number): string =>
      le(36, 4) +
      le((10 << 8) | msg, 2) +
      le(flags, 2) +
      le(7, 4) +
      le(0, 4) +
      '02000000' +
      le(15, 2) +
      le(1, 2) +
      Buffer.from('kube-proxy\0\0').toString('hex');
    assert.equal(listingRequest('table', 2, 'kube-proxy', 7).toString('hex'), expected(1, 0x1));
    assert.equal(listingRequest('chains', 2, 'kube-proxy', 7).toString('hex'), expected(4, 0x301));
    assert.equal(listingRequest('sets', 2, 'kube-proxy', 7).toString('hex'), expected(10, 0x301));
    assert.equal(listingRequest('rules', 2, 'kube-proxy', 7).toString('hex'), expected(7, 0x301));
  });
});
