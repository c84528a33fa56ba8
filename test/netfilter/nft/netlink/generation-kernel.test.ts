// The ruleset generation read over netlink (netlink/generation.ts) against what the kernel does with it: one more
// per committed transaction (however many objects it holds), none for a read or a transaction the kernel refused.
// A restart trusts the table it finds only if this number has not moved since the last agent stopped
// (backends/nftables/state.ts), so a commit it failed to see would be a table adopted wrongly.
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { kernelNamespaces, runInNamespace } from '../../../helpers/kernel.js';

const suite = kernelNamespaces(['generation']);
const [ns] = suite.names;

describe('the nf_tables generation over netlink', suite.options, () => {
  let r: Record<string, number>;

  suite.hooks();
  before(async () => {
    r = await runInNamespace(ns, new URL('./generation-child.ts', import.meta.url));
  });

  test('a read leaves it where it was', () => {
    assert.equal(r.again, r.start);
    assert.equal(r.afterListing, r.afterCommit);
  });

  test('a committed transaction raises it by one, whatever it holds', () => {
    assert.equal(r.afterCommit, (r.start as number) + 1);
    assert.equal(r.afterTwoChainsInOne, (r.afterRefused as number) + 1);
  });

  test('a refused transaction does not move it', () => {
    assert.notEqual(r.refusedCode, 0, 'nft accepted a rule in a chain that does not exist');
    assert.equal(r.afterRefused, r.afterListing);
  });
});
