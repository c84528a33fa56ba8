// Upstream's whole-ruleset vectors (nft-v2-*.json), fed through the model into NftablesBackend on FakeNft.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { NftablesBackend } from '../../../packages/agent/src/backends/nftables/backend.js';
import { FakeNft } from '../../../packages/agent/src/netfilter/nft/fake.js';
import type { CommandRunner } from '../../../packages/agent/src/netfilter/command.js';
import { FakeClock } from '../../../packages/agent/src/util/clock.js';
import { loadVector, nodeConfigFromVector, normaliseNft } from './helpers.js';
import { ModelCluster } from '../../helpers/model-cluster.js';
import type { NftVector } from './helpers.js';

const NO_COMMANDS: CommandRunner = {
  run: () => Promise.reject(new Error('unit tests run no commands')),
};

function setUp(v: NftVector): {
  fake: FakeNft;
  backend: NftablesBackend;
  cluster: ModelCluster;
  clock: FakeClock;
} {
  const fake = new FakeNft();
  const clock = new FakeClock(1_000_000);
  const node = nodeConfigFromVector(v.proxierConfig);
  const backend = new NftablesBackend({ node, commands: NO_COMMANDS, clock, executor: fake });
  const cluster = new ModelCluster(v.proxierConfig.ipFamily, v.proxierConfig.nodeName);
  for (const s of v.services ?? []) cluster.upsertService(s);
  for (const s of v.endpointSlices ?? []) cluster.upsertSlice(s);
  return { fake, backend, cluster, clock };
}

describe('nft-v2 golden vectors', () => {
  for (const name of ['nft-v2-TestOverallNFTablesRules', 'nft-v2-TestBadIPs']) {
    test(name, async () => {
      const v = loadVector(name);
      const { fake, backend, cluster } = setUp(v);
      await cluster.sync(backend, true);
      assert.equal(normaliseNft(fake.dump()), normaliseNft(v.expected ?? ''));
    });
  }

  test('nft-v2-TestSyncProxyRulesRepeated, step by step', async () => {
    const v = loadVector('nft-v2-TestSyncProxyRulesRepeated');
    const { fake, backend, cluster, clock } = setUp(v);
    let first = true;
    for (const [i, step] of (v.steps ?? []).entries()) {
      let last = -1;
      for (const action of step.actions) {
        if ('addService' in action) cluster.upsertService(action.addService);
        else if ('deleteService' in action) cluster.deleteService(action.deleteService);
        else if ('addEndpointSlice' in action) cluster.upsertSlice(action.addEndpointSlice);
        else if ('updateEndpointSlice' in action) cluster.upsertSlice(action.updateEndpointSlice);
        else if ('ageStaleChainsSeconds' in action) clock.advance(action.ageStaleChainsSeconds * 1000);
        else if ('sync' in action) {
          last = (await cluster.sync(backend, first)).operations;
          first = false;
        }
      }
      const where = `step ${i}: ${step.description}`;
      assert.equal(normaliseNft(fake.dump()), normaliseNft(step.expected), where);
      if (step.expectedLastTransactionOperations !== undefined) {
        assert.equal(last, step.expectedLastTransactionOperations, `${where}: operations`);
      }
      if (step.expectedStaleChains !== undefined) {
        assert.deepEqual(backend.staleChains, [...step.expectedStaleChains].sort(), `${where}: stale chains`);
      }
    }
  });

  test('nft-v2-TestSyncProxyRulesStartup: converges from a live table in one transaction that refills it', async () => {
    const v = loadVector('nft-v2-TestSyncProxyRulesStartup');
    // The setup operations of a first full sync, counted from upstream-backends.md §1.2–1.4: 1 table; 3 sets +
    // 5 maps; 8 base chains × (add, delete, add, flush); 7 regular chains × (add, flush); 22 fixed rules;
    // nodeport-ips flush + its one element.
    const setupOps = 1 + 8 + 8 * 4 + 7 * 2 + 22 + 2;
    const empty = setUp({ ...v, services: [], endpointSlices: [] });
    await empty.cluster.sync(empty.backend, true);
    assert.equal(empty.fake.lastTransaction?.size, setupOps, 'setup operations on an empty node');

    const { fake, backend, cluster } = setUp(v);
    fake.load(v.preexistingState ?? '');
    const before = fake.transactions.length;
    await cluster.sync(backend, true);
    assert.equal(normaliseNft(fake.dump()), normaliseNft(v.expected ?? ''));
    // As upstream's proxier does it: one transaction, which flushes the seven shared containers and writes all
    // nine of their elements (cluster-ips 3, service-ips 2, no-endpoint-services 1, hairpin-connections 3) and
    // both service chains (add, flush, rule each), never reading an element back.
    assert.equal(fake.transactions.length - before, 1, 'one transaction');
    assert.equal(fake.lastTransaction?.size, setupOps + 7 + 9 + 6);
  });
});
