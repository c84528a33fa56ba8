import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { isExists, isNotFound } from '../../../packages/agent/src/netfilter/nft/errors.js';
import { FakeNft } from '../../../packages/agent/src/netfilter/nft/fake.js';
import { NftTransaction } from '../../../packages/agent/src/netfilter/nft/transaction.js';

function base(): NftTransaction {
  return new NftTransaction()
    .add('add', { kind: 'table', comment: 'rules for kube-proxy' })
    .add('add', { kind: 'chain', name: 'services' })
    .add('add', { kind: 'set', name: 'cluster-ips', type: 'ipv4_addr', comment: 'Active ClusterIPs' })
    .add('add', {
      kind: 'map',
      name: 'service-ips',
      type: 'ipv4_addr . inet_proto . inet_service : verdict',
    });
}

/** Adds service-ips' element for 1.1.1.1 tcp 80 with `verdict`. */
function webElement(verdict: string): NftTransaction {
  return new NftTransaction().add('add', {
    kind: 'element',
    set: 'service-ips',
    key: ['1.1.1.1', 'tcp', '80'],
    value: [verdict],
  });
}

describe('FakeNft', () => {
  test('applies a transaction and dumps sorted add lines', async () => {
    const fake = new FakeNft();
    await fake.run(
      base()
        .add('add', { kind: 'chain', name: 'b-chain' })
        .add('add', {
          kind: 'rule',
          chain: 'services',
          rule: 'ip daddr . meta l4proto . th dport vmap @service-ips',
        })
        .add('add', { kind: 'element', set: 'cluster-ips', key: ['172.30.0.42'] })
        .add('add', { kind: 'element', set: 'cluster-ips', key: ['172.30.0.41'] })
        .add('add', {
          kind: 'element',
          set: 'service-ips',
          key: ['172.30.0.41', 'tcp', '80'],
          value: ['goto b-chain'],
        }),
    );
    assert.equal(
      fake.dump(),
      [
        'add table ip kube-proxy { comment "rules for kube-proxy" ; }',
        'add chain ip kube-proxy b-chain',
        'add chain ip kube-proxy services',
        'add set ip kube-proxy cluster-ips { type ipv4_addr ; comment "Active ClusterIPs" ; }',
        'add map ip kube-proxy service-ips { type ipv4_addr . inet_proto . inet_service : verdict ; }',
        'add rule ip kube-proxy services ip daddr . meta l4proto . th dport vmap @service-ips',
        'add element ip kube-proxy cluster-ips { 172.30.0.41 }',
        'add element ip kube-proxy cluster-ips { 172.30.0.42 }',
        'add element ip kube-proxy service-ips { 172.30.0.41 . tcp . 80 : goto b-chain }',
        '',
      ].join('\n'),
    );
    assert.equal(fake.lastTransaction?.size, 9);
  });

  test('all or nothing: a failing operation leaves the state untouched', async () => {
    const fake = new FakeNft();
    await fake.run(base());
    const before = fake.dump();
    const tx = new NftTransaction()
      .add('add', { kind: 'element', set: 'cluster-ips', key: ['172.30.0.1'] })
      .add('flush', { kind: 'chain', name: 'services' })
      .add('add', { kind: 'rule', chain: 'services', rule: 'jump missing-chain' });
    await assert.rejects(fake.run(tx), (e) => isNotFound(e) && /line 3/.test(String(e)));
    assert.equal(fake.dump(), before);
    assert.equal(fake.lastTransaction, tx);
  });

  test('rejects references to missing sets, NotFound on deletes, Exists on create and changed values', async () => {
    const fake = new FakeNft();
    await fake.run(base());
    await assert.rejects(
      fake.run(
        new NftTransaction().add('add', { kind: 'rule', chain: 'services', rule: 'ip saddr @nope drop' }),
      ),
      isNotFound,
    );
    await assert.rejects(
      fake.run(new NftTransaction().add('delete', { kind: 'chain', name: 'nope' })),
      isNotFound,
    );
    await assert.rejects(
      fake.run(new NftTransaction().add('create', { kind: 'chain', name: 'services' })),
      isExists,
    );
    await fake.run(webElement('drop'));
    await assert.rejects(fake.run(webElement('goto services')), isExists);
    await fake.run(webElement('drop'));
  });

  test('a chain or set still referenced cannot be deleted', async () => {
    const fake = new FakeNft();
    await fake.run(
      base()
        .add('add', { kind: 'chain', name: 'target' })
        .add('add', { kind: 'rule', chain: 'services', rule: 'ip daddr @cluster-ips goto target' }),
    );
    await assert.rejects(
      fake.run(new NftTransaction().add('delete', { kind: 'chain', name: 'target' })),
      /busy/,
    );
    await assert.rejects(
      fake.run(new NftTransaction().add('delete', { kind: 'set', name: 'cluster-ips' })),
      /busy/,
    );
    await fake.run(
      new NftTransaction()
        .add('flush', { kind: 'chain', name: 'services' })
        .add('delete', { kind: 'chain', name: 'target' })
        .add('delete', { kind: 'set', name: 'cluster-ips' }),
    );
    assert.equal(fake.hasChain('target'), false);
  });

  test('load() reads a dump back; dump(load(x)) is stable', async () => {
    const fake = new FakeNft();
    await fake.run(
      base().add('add', { kind: 'rule', chain: 'services', rule: 'drop', comment: 'x "y" \\ é' }),
    );
    const again = new FakeNft();
    again.load(fake.dump());
    assert.equal(again.dump(), fake.dump());
  });
});
