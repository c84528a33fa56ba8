// The nft layer and nftables mode against the real `nft` inside a private network namespace.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  NftablesBackend,
  renderFullSyncTransaction,
} from '../../../packages/agent/src/backends/nftables/backend.js';
import { netnsCommandRunner } from '../../../packages/agent/src/netfilter/command.js';
import { NftError } from '../../../packages/agent/src/netfilter/nft/errors.js';
import { NftCommandExecutor } from '../../../packages/agent/src/netfilter/nft/executor.js';
import { FakeNft } from '../../../packages/agent/src/netfilter/nft/fake.js';
import { parseOperations } from '../../../packages/agent/src/netfilter/nft/parse.js';
import type { NftOperation } from '../../../packages/agent/src/netfilter/nft/objects.js';
import { NftTransaction } from '../../../packages/agent/src/netfilter/nft/transaction.js';
import { FakeClock } from '../../../packages/agent/src/util/clock.js';
import { kernelNamespaces } from '../../helpers/kernel.js';
import { loadVector, nodeConfigFromVector } from '../../backends/nftables/helpers.js';
import { ModelCluster } from '../../helpers/model-cluster.js';

const suite = kernelNamespaces(['nft']);
const [ns] = suite.names;
const ref = { family: 'ip', table: 'kube-proxy' } as const;

/** Empties the namespace's kube-proxy table (add-then-delete: nft 1.0.6 has no `destroy`), optionally re-adding it. */
async function resetTable(exec: NftCommandExecutor, recreate: boolean): Promise<void> {
  const tx = new NftTransaction().add('add', { kind: 'table' }).add('delete', { kind: 'table' });
  if (recreate) tx.add('add', { kind: 'table', comment: 'rules for kube-proxy' });
  await exec.run(tx);
}

function txFromText(text: string): NftTransaction {
  const { ops, errors } = parseOperations(text);
  assert.deepEqual(errors, []);
  const tx = new NftTransaction();
  for (const op of ops) tx.add(op.verb, op.object);
  return tx;
}

/** The full-sync transaction of upstream's TestOverallNFTablesRules vector, as text. */
function overallRulesText(): string {
  const v = loadVector('nft-v2-TestOverallNFTablesRules');
  const cluster = new ModelCluster('IPv4', v.proxierConfig.nodeName);
  for (const s of v.services ?? []) cluster.upsertService(s);
  for (const s of v.endpointSlices ?? []) cluster.upsertSlice(s);
  return renderFullSyncTransaction(cluster.checkout().snapshot, nodeConfigFromVector(v.proxierConfig));
}

describe('nft in a network namespace', suite.options, () => {
  const commands = netnsCommandRunner(ns);
  suite.hooks();

  test('applies a full transaction and reads the table back', async () => {
    const text = overallRulesText();
    const exec = new NftCommandExecutor(ref, commands);
    await resetTable(exec, false);
    await exec.run(txFromText(text));

    const fake = new FakeNft();
    await fake.run(txFromText(text));
    const listing = await exec.list();
    const fakeListing = await fake.list();
    // (nft 1.0.6 leaves table comments out of its JSON, so the table's comment is not compared.)
    assert.deepEqual(listing.chains.map((c) => c.name).sort(), fakeListing.chains.map((c) => c.name).sort());
    assert.deepEqual(listing.chains.find((c) => c.name === 'nat-prerouting')?.base, {
      type: 'nat',
      hook: 'prerouting',
      priority: -100,
    });
    assert.deepEqual(listing.maps.map((m) => m.type).sort(), fakeListing.maps.map((m) => m.type).sort());
    for (const c of [...fakeListing.sets, ...fakeListing.maps]) {
      const real = await exec.listElements(c.kind, c.name);
      const expected = await fake.listElements(c.kind, c.name);
      const show = (es: typeof real): string[] =>
        es.map((e) => `${e.key.join(' . ')} : ${(e.value ?? []).join(' . ')} # ${e.comment ?? ''}`).sort();
      assert.deepEqual(show(real), show(expected), `elements of ${c.name}`);
    }
  });

  test("listObjects() is list() without rules, this table's only, and NotFound without the table", async () => {
    const text = overallRulesText();
    const exec = new NftCommandExecutor(ref, commands);
    await resetTable(exec, false);
    await assert.rejects(exec.listObjects(), (e) => e instanceof NftError && e.code === 'NotFound');
    await exec.run(txFromText(text));
    // Another table of the same family, with objects of the same names, is not ours.
    const other = new NftCommandExecutor({ family: 'ip', table: 'kube-proxy-other' }, commands);
    await other.run(
      new NftTransaction()
        .add('add', { kind: 'table' })
        .add('add', { kind: 'chain', name: 'services' })
        .add('add', { kind: 'chain', name: 'not-ours' })
        .add('add', { kind: 'set', name: 'not-ours-either', type: 'ipv4_addr' }),
    );
    try {
      const objects = await exec.listObjects();
      const listing = await exec.list();
      assert.ok(listing.rules.length > 0);
      assert.deepEqual(objects, { ...listing, rules: [] });
    } finally {
      await other.run(new NftTransaction().add('delete', { kind: 'table' }));
    }
  });

  test('one listing with elements reads what list() and listElements() read', async () => {
    const v = loadVector('nft-v2-TestOverallNFTablesRules');
    const cluster = new ModelCluster('IPv4', v.proxierConfig.nodeName);
    for (const s of v.services ?? []) cluster.upsertService(s);
    for (const s of v.endpointSlices ?? []) cluster.upsertSlice(s);
    const exec = new NftCommandExecutor(ref, commands);
    await resetTable(exec, false);
    await exec.run(
      txFromText(
        renderFullSyncTransaction(cluster.checkout().snapshot, nodeConfigFromVector(v.proxierConfig)),
      ),
    );
    const both = await exec.listWithElements();
    const listing = await exec.list();
    assert.deepEqual(both.listing, listing);
    for (const c of [...listing.sets, ...listing.maps]) {
      assert.deepEqual(both.elements.get(c.name), await exec.listElements(c.kind, c.name), c.name);
    }
    await resetTable(exec, false);
    await assert.rejects(
      exec.listWithElements(),
      (e: unknown) => e instanceof NftError && e.code === 'NotFound',
    );
  });

  test('a bad transaction fails atomically with an error naming the object and line', async () => {
    const exec = new NftCommandExecutor(ref, commands);
    await resetTable(exec, true);
    const tx = new NftTransaction()
      .add('add', { kind: 'chain', name: 'good-chain' })
      .add('add', { kind: 'rule', chain: 'good-chain', rule: 'drop' })
      .add('add', { kind: 'rule', chain: 'good-chain', rule: 'jump no-such-chain' });
    await assert.rejects(exec.run(tx), (e: unknown) => {
      assert.ok(e instanceof NftError);
      assert.equal(e.code, 'NotFound');
      assert.equal(e.line, 3);
      assert.match(e.message, /rule in chain good-chain, line 3/);
      return true;
    });
    const listing = await exec.list();
    assert.ok(
      !listing.chains.some((c) => c.name === 'good-chain'),
      'nothing of the failed transaction applied',
    );
  });

  test('elements written on one line: an error names the element that failed, and nothing applies', async () => {
    const exec = new NftCommandExecutor(ref, commands);
    await resetTable(exec, true);
    const element = (ip: string, chain: string): NftOperation => ({
      verb: 'add',
      object: { kind: 'element', set: 'm', key: [ip, 'tcp', '80'], value: [`goto ${chain}`] },
    });
    const tx = new NftTransaction()
      .add('add', { kind: 'map', name: 'm', type: 'ipv4_addr . inet_proto . inet_service : verdict' })
      .add('add', { kind: 'chain', name: 'c' })
      .addValidated([
        element('198.18.0.1', 'c'),
        element('198.18.0.2', 'no-such-chain'),
        element('198.18.0.3', 'c'),
      ]);
    await assert.rejects(exec.run(tx), (e: unknown) => {
      assert.ok(e instanceof NftError);
      assert.equal(e.code, 'NotFound');
      assert.equal(e.line, 4);
      assert.deepEqual(e.operation, tx.operations[3]);
      return true;
    });
    assert.ok(
      !(await exec.list()).maps.some((m) => m.name === 'm'),
      'nothing of the failed transaction applied',
    );
  });

  test('element operations gathered per set: changed values, removals and a key added then deleted', async () => {
    const exec = new NftCommandExecutor(ref, commands);
    await resetTable(exec, true);
    const element = (verb: 'add' | 'delete', ip: string, chain?: string): NftOperation => ({
      verb,
      object: {
        kind: 'element',
        set: 'm',
        key: [ip, 'tcp', '80'],
        ...(chain !== undefined ? { value: [`goto ${chain}`] } : {}),
      },
    });
    await exec.run(
      new NftTransaction()
        .add('add', { kind: 'map', name: 'm', type: 'ipv4_addr . inet_proto . inet_service : verdict' })
        .add('add', { kind: 'chain', name: 'a' })
        .add('add', { kind: 'chain', name: 'b' })
        .addValidated(['198.18.0.1', '198.18.0.2', '198.18.0.3'].map((ip) => element('add', ip, 'a'))),
    );
    // As the planner writes them: a changed value is delete + add of its key, interleaved with other keys. The
    // key added and then deleted in the same run exists only between the two: if its delete were written first,
    // nft would refuse the whole transaction (no such element).
    await exec.run(
      new NftTransaction().addValidated([
        element('delete', '198.18.0.1'),
        element('add', '198.18.0.1', 'b'),
        element('delete', '198.18.0.2'),
        element('add', '198.18.0.2', 'b'),
        element('add', '198.18.0.5', 'a'),
        element('delete', '198.18.0.3'),
        element('delete', '198.18.0.5'),
        element('add', '198.18.0.4', 'b'),
      ]),
    );
    const held = (await exec.listElements('map', 'm'))
      .map((e) => `${e.key.join(' . ')} : ${(e.value ?? []).join(' . ')}`)
      .sort();
    assert.deepEqual(held, [
      '198.18.0.1 . tcp . 80 : goto b',
      '198.18.0.2 . tcp . 80 : goto b',
      '198.18.0.4 . tcp . 80 : goto b',
    ]);
  });

  test('hostile comments and malformed input still give a transaction nft accepts', async () => {
    const exec = new NftCommandExecutor(ref, commands);
    await resetTable(exec, true);
    await exec.run(new NftTransaction().add('add', { kind: 'chain', name: 'services' }));
    const hostile = [
      'a"b',
      'x\n}; delete table ip kube-proxy',
      'semi;colon {brace}',
      'back\\slash\\"',
      'ünïcödé ✓ 😀',
      '#hash',
      'z'.repeat(400),
    ];
    const tx = new NftTransaction().add('add', { kind: 'chain', name: 'hostile' });
    for (const c of hostile) tx.add('add', { kind: 'rule', chain: 'hostile', rule: 'counter', comment: c });
    await exec.check(tx);
    await exec.run(tx);
    const listing = await exec.list();
    assert.equal(listing.rules.filter((r) => r.chain === 'hostile').length, hostile.length);
    assert.ok(
      listing.chains.some((c) => c.name === 'services'),
      'the table is intact',
    );

    // BadIPs (non-canonical spellings) and a Service with 10,000 endpoints, through the model and renderer.
    const bad = loadVector('nft-v2-TestBadIPs');
    const cluster = new ModelCluster('IPv4', bad.proxierConfig.nodeName);
    for (const s of bad.services ?? []) cluster.upsertService(s);
    for (const s of bad.endpointSlices ?? []) cluster.upsertSlice(s);
    cluster.upsertService({
      metadata: { namespace: 'big', name: 'big' },
      spec: { clusterIP: '172.30.9.9', ports: [{ name: 'p', port: 80, protocol: 'TCP' }] },
    });
    for (let s = 0; s < 10; s++) {
      cluster.upsertSlice({
        metadata: { namespace: 'big', name: `big-${s}`, labels: { 'kubernetes.io/service-name': 'big' } },
        addressType: 'IPv4',
        endpoints: Array.from({ length: 1000 }, (_, i) => ({
          addresses: [`10.${100 + s}.${i >> 8}.${i & 255}`],
          nodeName: 'n',
        })),
        ports: [{ name: 'p', port: 8080, protocol: 'TCP' }],
      });
    }
    cluster.upsertService({
      metadata: { namespace: 'bad', name: 'ip' },
      spec: { clusterIP: '300.1.2.3', ports: [{ port: 80 }] },
    });
    const text = renderFullSyncTransaction(
      cluster.checkout().snapshot,
      nodeConfigFromVector(bad.proxierConfig),
    );
    assert.match(text, /mod 10000 map/);
    await exec.check(txFromText(text));
  });

  test('NftablesBackend: full, partial, and a restart that converges from the live table', async () => {
    const v = loadVector('nft-v2-TestSyncProxyRulesRepeated');
    const node = nodeConfigFromVector(v.proxierConfig);
    await resetTable(new NftCommandExecutor(ref, commands), false);
    const clock = new FakeClock(0);
    const backend = new NftablesBackend({ node, commands, clock });
    const cluster = new ModelCluster('IPv4', node.nodeName);
    const steps = v.steps ?? [];
    for (const action of steps[0]?.actions ?? []) {
      if ('addService' in action) cluster.upsertService(action.addService);
      if ('addEndpointSlice' in action) cluster.upsertSlice(action.addEndpointSlice);
    }
    const full = await cluster.sync(backend, true);
    // Setup (as below) plus, for svc1 and svc2 with one local endpoint each: cluster-ips, service-ips and hairpin
    // elements, and the service chain's add, flush and dnat rule (the 6 that upstream counts for svc3 next).
    assert.equal(full.operations, 1 + 8 + 32 + 14 + 22 + 2 + 2 * 6);
    for (const action of steps[1]?.actions ?? []) {
      if ('addService' in action) cluster.upsertService(action.addService);
      if ('addEndpointSlice' in action) cluster.upsertSlice(action.addEndpointSlice);
    }
    assert.equal((await cluster.sync(backend)).operations, 6);

    // A new process: full sync on the live table, reading no element: its seven containers flushed and refilled.
    const restarted = new NftablesBackend({ node, commands, clock });
    const again = await restarted.sync(cluster.checkout().snapshot, {
      full: true,
      changedServices: new Set(),
    });
    const exec = new NftCommandExecutor(ref, commands);
    const hairpin = await exec.listElements('set', 'hairpin-connections');
    assert.equal(hairpin.length, 3);
    // Setup (8 base chains × 4 on a first sync, …) plus 3 service chains × 3, the 7 flushes, and every element
    // again: cluster-ips, service-ips and hairpin for each of the 3 Services.
    assert.equal(again.operations, 1 + 8 + 32 + 14 + 22 + 2 + 9 + 7 + 3 * 3);
  });
});
