// The netlink table listing (NetlinkElements.listTable, netlink/table.ts) against nft in the real kernel: tables
// loaded with `nft -f` (the flat and the upstream layout's full sync for the kube-proxy tests' cluster, IPv4 and
// IPv6, and the zoo of table-zoo.ts beside them) are listed by a child process inside the test's namespace
// (table-child.ts) both over netlink and by the nft executor (`nft --json --terse list table`, parseTableJson):
// the two must be equal, but for the differences table.ts states, which nft's own text listing must confirm. A
// missing table is NotFound on both sides; NftElementsExecutor.list() gives the netlink listing, and nft's for a
// table the reader refuses. Then, reported and not asserted: the time of both listings of a table holding 100,000
// elements in one map.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { before, describe, test } from 'node:test';
import { renderFullSyncTransaction } from '../../../../packages/agent/src/backends/nftables/backend.js';
import { FLAT_LAYOUT } from '../../../../packages/agent/src/backends/nftables/flat/layout.js';
import type { NftablesLayout } from '../../../../packages/agent/src/backends/nftables/layout.js';
import { UPSTREAM_LAYOUT } from '../../../../packages/agent/src/backends/nftables/upstream-layout.js';
import type { IPFamily } from '../../../../packages/agent/src/model/ip.js';
import type { NftListing } from '../../../../packages/agent/src/netfilter/nft/executor.js';
import { flatCluster, nodeFor } from '../../../backends/nftables/flat-objects.js';
import { kernelNamespaces, runInNamespace } from '../../../helpers/kernel.js';
import type { ListedOrRefused, TableReport } from './table-child.js';
import { ODD_TABLE, ZOO_TABLES, asNft106JsonGives } from './table-zoo.js';

const suite = kernelNamespaces(['flat', 'upstream', 'big']);
const { prefix } = suite;
const [flatNs, upstreamNs, bigNs] = suite.names;
const BIG_ELEMENTS = 100_000;

/** `nft -f` of `text` inside `ns`, from a file (the 100,000-element table is too long for an argument). */
function load(ns: string, text: string): void {
  const dir = mkdtempSync(join(tmpdir(), `${prefix}-`));
  try {
    const file = join(dir, 'tables.nft');
    writeFileSync(file, text);
    execFileSync('ip', ['netns', 'exec', ns, 'nft', '-f', file]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A fresh node's full sync for the kernel tests' cluster (a few Services of every kind), in `layout`. */
function fullSync(family: IPFamily, layout: NftablesLayout): string {
  const { cluster, load } = flatCluster(family);
  load(3);
  assert.deepEqual(cluster.skipped, []);
  return renderFullSyncTransaction(cluster.checkout().snapshot, nodeFor(family), undefined, layout);
}

/** One map of `count` elements (with comments, as the flat layout's are) in a table of its own. */
function bigTable(count: number): string {
  const lines = [
    'table ip big {',
    '  chain dispatch { }',
    '  map service-ips { type ipv4_addr . inet_proto . inet_service : verdict; comment "many elements"; }',
    '}',
  ];
  const chunk: string[] = [];
  const flush = (): void => {
    lines.push(`add element ip big service-ips { ${chunk.join(', ')} }`);
    chunk.length = 0;
  };
  for (let i = 0; i < count; i++) {
    chunk.push(
      `198.${18 + (i >> 16)}.${(i >> 8) & 255}.${i & 255} . tcp . 80 comment "ns/svc-${i}:http" : goto dispatch`,
    );
    if (chunk.length === 10_000) flush();
  }
  if (chunk.length > 0) flush();
  return lines.join('\n') + '\n';
}

async function runChild(ns: string, args: string[]): Promise<TableReport[]> {
  const out = await runInNamespace<{ reports: TableReport[] }>(
    ns,
    new URL('./table-child.ts', import.meta.url),
    args,
  );
  return out.reports;
}

function listingOf(x: ListedOrRefused, what: string): NftListing {
  assert.ok('listing' in x, `${what}: ${JSON.stringify(x)}`);
  return x.listing;
}

function netlinkListing(r: TableReport): NftListing {
  assert.ok(r.netlink.ok, `${r.family} ${r.table}: ${JSON.stringify(r.netlink)}`);
  return r.netlink.listing;
}

function escaped(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}

/** The table.ts differences, held against nft's text listing: each comment and `dynamic` flag is printed there. */
function assertDifferencesAreNftText(r: TableReport, listing: NftListing): void {
  const what = `${r.family} ${r.table}`;
  if (listing.table.comment !== undefined) {
    const head = new RegExp(
      `^table ${r.family} ${escaped(r.table)} \\{\\n\\tcomment "${escaped(listing.table.comment)}"\\n`,
    );
    assert.match(r.text, head, `${what}: the table's comment`);
  }
  for (const c of listing.chains) {
    if (c.comment === undefined) continue;
    const block = new RegExp(`\\n\\tchain ${escaped(c.name)} \\{\\n\\t\\tcomment "${escaped(c.comment)}"\\n`);
    assert.match(r.text, block, `${what}: chain ${c.name}'s comment`);
  }
  for (const s of listing.sets) {
    if (!s.flags?.includes('dynamic')) continue;
    const block = new RegExp(
      `\\n\\tset ${escaped(s.name)} \\{\\n[^}]*\\n\\t\\tflags ${escaped(s.flags.join(','))}\\n`,
    );
    assert.match(r.text, block, `${what}: set ${s.name}'s flags`);
  }
}

describe('the netlink table listing against nft', suite.options, () => {
  let flat: TableReport[];
  let upstream: TableReport[];

  suite.hooks();
  before(async () => {
    load(flatNs, fullSync('IPv4', FLAT_LAYOUT) + fullSync('IPv6', FLAT_LAYOUT) + ZOO_TABLES + ODD_TABLE);
    load(upstreamNs, fullSync('IPv4', UPSTREAM_LAYOUT) + fullSync('IPv6', UPSTREAM_LAYOUT));
    const tables = ['ip:kube-proxy', 'ip6:kube-proxy'];
    [flat, upstream] = await Promise.all([
      runChild(flatNs, [...tables, 'ip:zoo', 'inet:zoo', 'ip:odd', 'ip:no-such-table']),
      runChild(upstreamNs, [...tables, 'inet:kube-proxy']),
    ]);
  });

  function report(reports: TableReport[], family: string, table: string): TableReport {
    const r = reports.find((x) => x.family === family && x.table === table);
    assert.ok(r, `${family} ${table} listed`);
    return r;
  }

  for (const [layout, family] of [
    ['flat', 'ip'],
    ['flat', 'ip6'],
    ['upstream', 'ip'],
    ['upstream', 'ip6'],
  ] as const) {
    test(`${layout} layout, ${family}: the netlink listing is nft's, but for the stated differences`, () => {
      const r = report(layout === 'flat' ? flat : upstream, family, 'kube-proxy');
      const listing = netlinkListing(r);
      assert.deepEqual(asNft106JsonGives(listing), listingOf(r.nft, 'nft'));
      assertDifferencesAreNftText(r, listing);
      // Not vacuous: the layout's table, with everything a listing holds.
      assert.equal(listing.table.comment, 'rules for kube-proxy');
      assert.ok(listing.chains.filter((c) => c.base).length >= 8, 'base chains');
      assert.ok(
        listing.chains.some((c) => (c.base?.priority ?? 0) < 0),
        'a negative priority',
      );
      assert.ok(
        listing.chains.some((c) => c.comment !== undefined),
        'a chain comment',
      );
      assert.ok(listing.maps.length >= 4 && listing.sets.length >= 1, 'sets and maps');
      assert.ok(
        listing.maps.every((m) => m.comment !== undefined),
        'map comments',
      );
      assert.ok(listing.rules.length >= 30, `${listing.rules.length} rules`);
      assert.ok(
        listing.rules.some((x) => x.comment !== undefined),
        'rule comments',
      );
      assert.ok(
        listing.sets.some((s) => s.flags?.includes('dynamic')),
        'the affinity sets',
      );
      if (layout === 'flat') {
        assert.ok(
          listing.maps.some((m) => m.type?.includes('integer : ')),
          'a typeof map with a numgen slot',
        );
        assert.ok(
          listing.sets.some((s) => s.flags?.includes('interval')),
          'an interval set',
        );
      }
      // The elements executor's list() is the netlink listing, with no help from nft.
      assert.deepEqual(listingOf(r.executor, 'executor'), listing);
      assert.equal(r.counts.netlinkTableListings, 1);
      assert.equal(r.counts.tableListingFallbacks, 0);
    });
  }

  test('the zoo: every datatype, flag, chain form and comment the reader knows, ip and inet', () => {
    for (const family of ['ip', 'inet']) {
      const r = report(flat, family, 'zoo');
      const listing = netlinkListing(r);
      assert.deepEqual(asNft106JsonGives(listing), listingOf(r.nft, 'nft'));
      assertDifferencesAreNftText(r, listing);
      assert.deepEqual(listingOf(r.executor, 'executor'), listing);
    }
    const zoo = netlinkListing(report(flat, 'ip', 'zoo'));
    assert.equal(zoo.sets.length + zoo.maps.length, 20);
    assert.equal(zoo.rules.length, 4, 'the jump { … } body is not a rule of its own');
  });

  test('a missing table is NotFound over netlink, as the nft executor says it', () => {
    for (const r of [report(flat, 'ip', 'no-such-table'), report(upstream, 'inet', 'kube-proxy')]) {
      assert.ok(!r.netlink.ok);
      assert.deepEqual([r.netlink.error.code, r.netlink.error.errno], ['NotFound', 2]);
      assert.ok('code' in r.nft && 'code' in r.executor, JSON.stringify([r.nft, r.executor]));
      assert.equal(r.nft.code, 'NotFound');
      assert.equal(r.executor.code, 'NotFound');
      assert.equal(r.counts.tableListingFallbacks, 0, 'not asked of nft again');
    }
  });

  test('a table the reader does not know is listed by nft instead, saying why', () => {
    const r = report(flat, 'ip', 'odd');
    assert.ok(!r.netlink.ok);
    assert.equal(r.netlink.error.code, 'Failed');
    assert.match(r.netlink.error.message, /set states: key datatype 26/);
    assert.deepEqual(listingOf(r.executor, 'executor'), listingOf(r.nft, 'nft'));
    assert.equal(r.counts.tableListingFallbacks, 1);
    assert.match(r.fallback ?? '', /set states/);
  });

  test(`reported: listing a table of ${BIG_ELEMENTS.toLocaleString('en')} elements in one map`, async (t) => {
    load(bigNs, bigTable(BIG_ELEMENTS));
    const [r] = await runChild(bigNs, ['--measure', 'ip:big']);
    assert.ok(r?.timings);
    const listing = netlinkListing(r);
    assert.deepEqual(asNft106JsonGives(listing), listingOf(r.nft, 'nft'));
    assert.deepEqual(
      listing.maps.map((m) => m.name),
      ['service-ips'],
    );
    // The map really is that large (nft's text listing prints each element on a line of its own or with others).
    assert.ok(r.text.split('goto dispatch').length - 1 === BIG_ELEMENTS, 'every element is in the kernel');
    const ms = (xs: readonly number[]): string => xs.map((x) => x.toFixed(1)).join(', ');
    t.diagnostic(`netlink listTable: ${ms(r.timings.netlinkMs)} ms`);
    t.diagnostic(
      `nft --json --terse list table (nft executor): ${ms(r.timings.nftMs)} ms` +
        (r.timings.nftMaxRssKiB !== undefined
          ? `; nft's peak RSS ${(r.timings.nftMaxRssKiB / 1024).toFixed(0)} MiB`
          : ''),
    );
  });
});
