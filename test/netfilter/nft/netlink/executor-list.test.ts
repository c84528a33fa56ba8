// NftElementsExecutor.list() (src/netfilter/nft/elements-executor.ts): the table listing over netlink, nft's only
// when netlink fails for another reason than a missing table, and an error that says both when nft fails too. The
// netlink side is a stand-in here (what it answers is set per test); against the kernel: table-kernel.test.ts.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { NftElementsExecutor } from '../../../../packages/agent/src/netfilter/nft/elements-executor.js';
import { NftError } from '../../../../packages/agent/src/netfilter/nft/errors.js';
import type { NftListing } from '../../../../packages/agent/src/netfilter/nft/executor.js';
import { FakeNft } from '../../../../packages/agent/src/netfilter/nft/fake.js';
import type {
  NetlinkElements,
  NetlinkTableResult,
} from '../../../../packages/agent/src/netfilter/nft/netlink/elements.js';
import { recordingLogger } from '../../../../packages/agent/src/util/logger.js';

const NETLINK_LISTING: NftListing = {
  table: { kind: 'table', comment: 'rules for kube-proxy' },
  chains: [{ kind: 'chain', name: 'services' }],
  sets: [],
  maps: [],
  rules: [{ chain: 'services', handle: 7 }],
};

/** A NetlinkElements that answers listTable with `answer` and counts the calls. */
function netlinkAnswering(answer: NetlinkTableResult): { elements: NetlinkElements; calls: () => number } {
  let calls = 0;
  const stand = {
    listTable: async () => {
      calls++;
      return answer;
    },
    close: () => undefined,
  };
  return { elements: stand as unknown as NetlinkElements, calls: () => calls };
}

/** The executor under test over a fake nft holding a table with one chain, or none. */
function executor(answer: NetlinkTableResult, withTable = true) {
  const inner = new FakeNft();
  if (withTable) inner.load('add table ip kube-proxy\nadd chain ip kube-proxy from-nft\n');
  let innerLists = 0;
  const list = inner.list.bind(inner);
  inner.list = () => {
    innerLists++;
    return list();
  };
  const netlink = netlinkAnswering(answer);
  const logger = recordingLogger();
  return {
    exec: new NftElementsExecutor(inner, netlink.elements, logger),
    innerLists: () => innerLists,
    netlink,
    logged: () => logger.records.map((r) => `${r.level}: ${r.msg} ${String(r.fields.error ?? '')}`),
  };
}

describe('NftElementsExecutor.list()', () => {
  test('is the netlink listing, without asking nft', async () => {
    const { exec, innerLists, netlink } = executor({ ok: true, listing: NETLINK_LISTING });
    assert.deepEqual(await exec.list(), NETLINK_LISTING);
    assert.equal(netlink.calls(), 1);
    assert.equal(innerLists(), 0);
    assert.deepEqual([exec.counts.netlinkTableListings, exec.counts.tableListingFallbacks], [1, 0]);
  });

  test('a missing table is NotFound, and nft is not asked again', async () => {
    const { exec, innerLists } = executor({
      ok: false,
      error: {
        code: 'NotFound',
        message: 'nf_tables listing ip kube-proxy (table): No such file or directory',
      },
    });
    await assert.rejects(exec.list(), (e) => e instanceof NftError && e.code === 'NotFound');
    assert.equal(innerLists(), 0);
    assert.equal(exec.counts.tableListingFallbacks, 0);
  });

  test('any other failure is answered by nft, and says why', async () => {
    const why = 'netlink: ip kube-proxy holds set states: key datatype 26, not one this reader knows';
    const { exec, innerLists, logged } = executor({ ok: false, error: { code: 'Failed', message: why } });
    const listing = await exec.list();
    // The operator hears of it: at scale nft's listing takes minutes where netlink's takes milliseconds.
    assert.deepEqual(logged(), [
      `warn: could not read the nftables table over netlink; nft lists it instead, which is slow ${why}`,
    ]);
    assert.deepEqual(
      listing.chains.map((c) => c.name),
      ['from-nft'],
    );
    assert.equal(innerLists(), 1);
    assert.equal(exec.counts.tableListingFallbacks, 1);
    assert.equal(exec.listingFallback, why);
  });

  test("when nft fails too, its error keeps nft's code and names the netlink failure", async () => {
    const why = 'netlink receive: No buffer space available';
    const { exec } = executor({ ok: false, error: { code: 'Failed', message: why } }, false);
    await assert.rejects(exec.list(), (e) => {
      assert.ok(e instanceof NftError);
      assert.equal(e.code, 'NotFound');
      assert.match(e.message, /after the netlink listing failed: netlink receive: No buffer space available/);
      return true;
    });
  });
});
