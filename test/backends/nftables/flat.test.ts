// The flat layout against the FakeNft: what one change costs in operations, how slots stay dense, that a restart
// or an hourly resync flushes and refills the table atomically (one transaction, or with an executor that writes
// elements itself three that each serve every Service), and that switching layout leaves none of the other
// layout's objects.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  NftablesBackend,
  renderFullSyncTransaction,
} from '../../../packages/agent/src/backends/nftables/backend.js';
import { FLAT_LAYOUT } from '../../../packages/agent/src/backends/nftables/flat/layout.js';
import { firewallSources } from '../../../packages/agent/src/backends/nftables/flat/render.js';
import { assignSlots } from '../../../packages/agent/src/backends/nftables/flat/slots.js';
import type { NftablesLayout } from '../../../packages/agent/src/backends/nftables/layout.js';
import { emptyKernel } from '../../../packages/agent/src/backends/nftables/layout.js';
import { UPSTREAM_LAYOUT } from '../../../packages/agent/src/backends/nftables/upstream-layout.js';
import type { CommandRunner } from '../../../packages/agent/src/netfilter/command.js';
import { NftError } from '../../../packages/agent/src/netfilter/nft/errors.js';
import type { NftExecutor } from '../../../packages/agent/src/netfilter/nft/executor.js';
import { FakeNft } from '../../../packages/agent/src/netfilter/nft/fake.js';
import type { NftOperation } from '../../../packages/agent/src/netfilter/nft/objects.js';
import { FakeClock } from '../../../packages/agent/src/util/clock.js';
import { ModelCluster } from '../../helpers/model-cluster.js';
import { clusterIP, loadVector, nodeConfigFromVector, podIP, service, slice } from './helpers.js';

const NO_COMMANDS: CommandRunner = { run: () => Promise.reject(new Error('no commands in unit tests')) };
const node = nodeConfigFromVector(loadVector('nft-v2-TestOverallNFTablesRules').proxierConfig);

function backendOn(
  fake: FakeNft,
  layout: NftablesLayout = FLAT_LAYOUT,
  clock = new FakeClock(0),
): NftablesBackend {
  return new NftablesBackend({ node, commands: NO_COMMANDS, clock, executor: fake, layout });
}

const lines = (ops: readonly NftOperation[]): string[] =>
  ops.map((op) => {
    const o = op.object;
    const what =
      o.kind === 'element'
        ? `${o.set} { ${o.key.join(' . ')}${o.value ? ' : ' + o.value.join(' . ') : ''} }`
        : '';
    return `${op.verb} ${o.kind} ${what}`.trim();
  });

/** 1,000 ClusterIP Services with two endpoints each (svc500 with three), synced in full once. */
async function thousand(): Promise<{ fake: FakeNft; backend: NftablesBackend; cluster: ModelCluster }> {
  const fake = new FakeNft();
  const backend = backendOn(fake);
  const cluster = new ModelCluster('IPv4', 'test-node');
  for (let i = 0; i < 1000; i++) {
    cluster.upsertService(service(i));
    const ips = [podIP(1, i), podIP(2, i)];
    cluster.upsertSlice(slice(i, i === 500 ? [...ips, podIP(3, i)] : ips));
  }
  await cluster.sync(backend, true);
  return { fake, backend, cluster };
}

describe('flat layout: one-endpoint changes at 1,000 Services', () => {
  test('removing the endpoint in slot 0 of 3 moves the last into the hole: 5 element operations', async () => {
    const { fake, backend, cluster } = await thousand();
    const vip = clusterIP(500);
    cluster.upsertSlice(slice(500, [podIP(2, 500), podIP(3, 500)]));
    const r = await cluster.sync(backend);
    assert.equal(r.full, false);
    // One transaction, so the order is only nft's (a key's delete before its add); the planner writes the endpoint
    // entries first (the leaves, as a cold start does), then the other keys in the order the port rendered them,
    // then the deletes.
    assert.deepEqual(lines(fake.lastTransaction?.operations ?? []), [
      // Slot 0 takes the endpoint of slot 2 (delete + add: nft refuses a new value for a key) ...
      `delete element endpoints-tcp { ${vip} . tcp . 80 . 0 }`,
      `add element endpoints-tcp { ${vip} . tcp . 80 . 0 : ${podIP(3, 500)} . 80 }`,
      // ... the frontend points at the two-endpoint chain (which the other 999 Services made already) ...
      `delete element service-ips { ${vip} . tcp . 80 }`,
      `add element service-ips { ${vip} . tcp . 80 : goto dispatch-tcp-2 }`,
      // ... and slot 2 goes; slot 1 is untouched.
      `delete element endpoints-tcp { ${vip} . tcp . 80 . 2 }`,
    ]);
    assert.equal(r.operations, 5);
    const dump = fake.dump();
    assert.match(
      dump,
      new RegExp(
        `endpoints-tcp \\{ ${vip.replaceAll('.', '\\.')} \\. tcp \\. 80 \\. 1 : ${podIP(2, 500).replaceAll('.', '\\.')} \\. 80 \\}`,
      ),
    );
    assert.doesNotMatch(dump, new RegExp(`${vip.replaceAll('.', '\\.')} \\. tcp \\. 80 \\. 2 :`));
  });

  test('replacing one endpoint rewrites its slot only: 2 operations; adding one appends a slot: 3', async () => {
    const { fake, backend, cluster } = await thousand();
    const vip = clusterIP(7);
    cluster.upsertSlice(slice(7, [podIP(1, 7), '10.9.9.9']));
    assert.equal((await cluster.sync(backend)).operations, 2);
    assert.deepEqual(lines(fake.lastTransaction?.operations ?? []), [
      `delete element endpoints-tcp { ${vip} . tcp . 80 . 1 }`,
      `add element endpoints-tcp { ${vip} . tcp . 80 . 1 : 10.9.9.9 . 80 }`,
    ]);

    cluster.upsertSlice(slice(7, [podIP(1, 7), '10.9.9.9', '10.9.9.10']));
    assert.equal((await cluster.sync(backend)).operations, 3);
    assert.deepEqual(lines(fake.lastTransaction?.operations ?? []), [
      `add element endpoints-tcp { ${vip} . tcp . 80 . 2 : 10.9.9.10 . 80 }`,
      `delete element service-ips { ${vip} . tcp . 80 }`,
      `add element service-ips { ${vip} . tcp . 80 : goto dispatch-tcp-3 }`,
    ]);

    // A count no Service had before makes its dispatch chain first (add, flush, its one rule).
    cluster.upsertSlice(slice(7, [podIP(1, 7), '10.9.9.9', '10.9.9.10', '10.9.9.11']));
    assert.equal((await cluster.sync(backend)).operations, 3 + 3);
    assert.ok(fake.hasChain('dispatch-tcp-4'));
    assert.equal((await cluster.sync(backend)).operations, 0, 'no change, no operation');
  });

  test('a restart (a new backend on the same table) and a forced full sync refill every container in one transaction', async () => {
    const { fake, backend, cluster } = await thousand();
    const before = fake.dump();
    const elements = countElements(before);
    for (const sync of [() => cluster.sync(backend, true), () => cluster.sync(backendOn(fake), true)]) {
      const n = fake.transactions.length;
      const r = await sync();
      assert.equal(r.full, true);
      assert.equal(fake.transactions.length, n + 1, 'one transaction');
      const ops = fake.lastTransaction?.operations ?? [];
      // Every container (and nodeport-ips, which the fixed setup always rewrites) is flushed and refilled.
      assert.deepEqual(
        flushedContainers(ops).sort(),
        [...FLAT_LAYOUT.elementContainers.map((c) => c.name), 'nodeport-ips'].sort(),
      );
      assert.equal(ops.filter((op) => op.object.kind === 'element').length, elements);
      assert.equal(fake.dump(), before);
    }
    // The planner's ledger is what was written: a change after the refill is the same delta as before it.
    cluster.upsertSlice(slice(7, [podIP(1, 7), '10.9.9.9']));
    assert.equal((await cluster.sync(backend)).operations, 2);
  });
});

/** The sets and maps that `ops` flush, in order. */
function flushedContainers(ops: readonly NftOperation[]): string[] {
  return ops.flatMap((op) =>
    op.verb === 'flush' && (op.object.kind === 'set' || op.object.kind === 'map') ? [op.object.name] : [],
  );
}

/** The elements of a FakeNft dump (one `add element` line each). */
function countElements(dump: string): number {
  return dump.split('\n').filter((l) => l.startsWith('add element')).length;
}

/** Chains an element's verdict points at (`goto X` / `jump X`) that are missing or hold no rule. */
function emptyTargets(fake: FakeNft): string[] {
  const out = new Set<string>();
  for (const l of fake.dump().split('\n')) {
    if (!l.startsWith('add element')) continue;
    for (const m of l.matchAll(/(?:goto|jump) (\S+)/g)) {
      const chain = m[1] as string;
      if (!fake.hasChain(chain) || fake.rules(chain).length === 0) out.add(chain);
    }
  }
  return [...out].sort();
}

describe('flat layout: a refill with its elements apart', () => {
  test('an executor that writes elements itself: objects, then one element-only refill, then stale chains', async () => {
    const { fake, cluster } = await thousand();
    // While no agent ran: svc500, the only Service with three endpoints, lost one, so dispatch-tcp-3 is stale.
    cluster.upsertSlice(slice(500, [podIP(1, 500), podIP(2, 500)]));
    const seen: { ops: readonly NftOperation[]; emptyTargets: string[] }[] = [];
    const executor: NftExecutor = {
      ref: fake.ref,
      list: () => fake.list(),
      listElements: () => Promise.reject(new Error('a refill reads no element')),
      run: async (tx) => {
        const stats = await fake.run(tx);
        seen.push({ ops: tx.operations, emptyTargets: emptyTargets(fake) });
        return stats;
      },
      // As the netlink executor: every declared set but firewall-allow, an interval set, which stays with nft.
      writesElementsOf: (set) => set !== 'firewall-allow',
    };
    const clock = new FakeClock(0);
    const restarted = new NftablesBackend({
      node,
      commands: NO_COMMANDS,
      clock,
      executor,
      layout: FLAT_LAYOUT,
    });
    const r = await cluster.sync(restarted, true);
    assert.equal(r.full, true);
    assert.equal(seen.length, 3, 'objects, elements, stale chains');
    const [objects, elements, stale] = seen as [(typeof seen)[0], (typeof seen)[0], (typeof seen)[0]];
    const direct = FLAT_LAYOUT.elementContainers.map((c) => c.name).filter((n) => n !== 'firewall-allow');
    const containers = new Set(direct);
    // 1: no element or flush of a container the executor writes (nodeport-ips is the setup's own, firewall-allow
    // goes with nft), no chain flushed that is not written again in the same transaction.
    assert.deepEqual(flushedContainers(objects.ops), ['nodeport-ips', 'firewall-allow']);
    for (const op of objects.ops) {
      const o = op.object;
      assert.ok(!(o.kind === 'element' && containers.has(o.set)), `objects: ${lines([op]).join()}`);
      assert.ok(!((o.kind === 'set' || o.kind === 'map') && containers.has(o.name)) || op.verb === 'add');
    }
    assert.ok(
      !objects.ops.some(
        (op) => op.verb === 'flush' && op.object.kind === 'chain' && op.object.name === 'dispatch-tcp-3',
      ),
      'the stale chain is not flushed while elements point at it',
    );
    // 2: element-only, of the containers the executor writes: each flushed, then every element.
    assert.ok(elements.ops.every((op) => op.object.kind === 'element' || op.verb === 'flush'));
    assert.deepEqual(flushedContainers(elements.ops), direct);
    assert.ok(elements.ops.every((op) => op.object.kind !== 'element' || containers.has(op.object.set)));
    // 3: the stale chain, emptied only once no element points at it.
    assert.deepEqual(lines(stale.ops), ['flush chain']);
    assert.deepEqual(restarted.staleChains, ['dispatch-tcp-3']);
    // After every transaction, every verdict of every element leads to a chain with its rule.
    for (const s of seen) assert.deepEqual(s.emptyTargets, []);

    // A second later the stale chain goes, and the table is a fresh node's.
    clock.advance(1000);
    await cluster.sync(restarted);
    assert.equal(fake.hasChain('dispatch-tcp-3'), false);
    assert.equal(fake.dump(), await coldStartDump(cluster));
  });
});

/** What a fresh node's table is for the cluster's current state (a cold start on a new FakeNft). */
async function coldStartDump(cluster: ModelCluster): Promise<string> {
  const fresh = new FakeNft();
  const { snapshot } = cluster.checkout();
  await backendOn(fresh).sync(snapshot, { full: true, changedServices: new Set() });
  return fresh.dump();
}

describe('flat layout: what the planner believes the kernel holds', () => {
  test('after a run of partial syncs, and after a refill, the table is what a fresh node would write', async () => {
    const { fake, backend, cluster } = await thousand();
    // Each change is one partial sync; FakeNft refuses a delete of a missing element and a re-add with another
    // value, so a wrong belief about the kernel fails here, and a missed or extra write shows against a fresh
    // node's table below.
    const changes: (() => void)[] = [
      () => cluster.upsertSlice(slice(3, [podIP(1, 3)])),
      () => cluster.upsertSlice(slice(3, [podIP(1, 3), podIP(2, 3), '10.9.9.1'])),
      () => cluster.upsertSlice(slice(3, [podIP(1, 3), podIP(2, 3)])),
      () => cluster.deleteService('ns/svc4'),
      () => cluster.upsertService(service(4)),
      () => cluster.upsertSlice(slice(5, [])),
      () => cluster.upsertSlice(slice(5, [podIP(1, 5), podIP(2, 5)])),
      () => {
        cluster.upsertSlice(slice(6, ['10.9.9.2']));
        cluster.upsertSlice(slice(8, ['10.9.9.3', podIP(1, 8)]));
      },
    ];
    const run = async (): Promise<void> => {
      for (const change of changes) {
        change();
        const r = await cluster.sync(backend);
        assert.equal(r.full, false);
      }
    };
    await run();
    const dump = fake.dump();
    assert.equal(dump, await coldStartDump(cluster), 'the partial syncs left the table unlike a fresh one');
    await cluster.sync(backend, true);
    assert.equal(fake.dump(), dump, 'a forced full sync changed the table');
    // The same changes again after the refill: the ledger the refill left must be the table it wrote.
    await run();
    assert.equal(fake.dump(), await coldStartDump(cluster), 'after the refill, partial syncs went wrong');
    assert.equal((await cluster.sync(backend)).operations, 0, 'no change, no operation');
  });
});

describe('flat layout: slots', () => {
  test('survivors keep their slot, the last moves into a hole, new endpoints fill holes then append', () => {
    assert.deepEqual(assignSlots([], ['a', 'b', 'c']), ['a', 'b', 'c']);
    assert.deepEqual(assignSlots(['a', 'b', 'c'], ['b', 'c']), ['c', 'b']);
    assert.deepEqual(assignSlots(['a', 'b', 'c', 'd'], ['a', 'c']), ['a', 'c']);
    assert.deepEqual(assignSlots(['a', 'b', 'c', 'd'], ['b', 'd']), ['d', 'b']);
    assert.deepEqual(assignSlots(['a', 'b', 'c'], ['a', 'x', 'c']), ['a', 'x', 'c']);
    assert.deepEqual(assignSlots(['a', 'b'], ['b', 'a', 'y', 'x']), ['a', 'b', 'y', 'x']);
    assert.deepEqual(assignSlots(['a', 'b', 'c'], []), []);
  });

  test('firewall sources are disjoint prefixes, hosts written bare', () => {
    assert.deepEqual(firewallSources(['10.0.0.0/8', '10.1.0.0/16', '192.0.2.7/32'], []), [
      '10.0.0.0/8',
      '192.0.2.7',
    ]);
    assert.deepEqual(firewallSources(['203.0.113.0/25'], ['203.0.113.5', '198.51.100.1']), [
      '203.0.113.0/25',
      '198.51.100.1',
    ]);
    assert.deepEqual(firewallSources(['2001:db8::/32', '2001:db8::/32'], ['2001:db8::1']), ['2001:db8::/32']);
  });
});

describe('flat layout: switching layouts', () => {
  async function filled(layout: NftablesLayout): Promise<{ fake: FakeNft; cluster: ModelCluster }> {
    const fake = new FakeNft();
    const cluster = new ModelCluster('IPv4', 'test-node');
    for (let i = 0; i < 20; i++) {
      cluster.upsertService(service(i));
      cluster.upsertSlice(slice(i, [podIP(1, i), podIP(2, i)]));
    }
    await cluster.sync(backendOn(fake, layout), true);
    return { fake, cluster };
  }

  /** What a fresh node would hold with `layout` for the cluster's current state. */
  function freshDump(cluster: ModelCluster, layout: NftablesLayout): string {
    const fresh = new FakeNft();
    fresh.load(renderFullSyncTransaction(cluster.checkout().snapshot, node, undefined, layout));
    return fresh.dump();
  }

  for (const [from, to] of [
    [UPSTREAM_LAYOUT, FLAT_LAYOUT],
    [FLAT_LAYOUT, UPSTREAM_LAYOUT],
  ] as const) {
    test(`${from.name} → ${to.name}: the first sync replaces the table in one transaction`, async () => {
      const { fake, cluster } = await filled(from);
      assert.equal(fake.transactions.length, 1);
      const r = await cluster.sync(backendOn(fake, to), false);
      assert.equal(r.full, true, 'a new backend starts with a full sync');
      assert.equal(fake.transactions.length, 2, 'one transaction');
      const first = fake.lastTransaction?.operations[0];
      assert.deepEqual(first, { verb: 'delete', object: { kind: 'table' } });
      assert.equal(fake.dump(), freshDump(cluster, to));
    });
  }
});

/** 300 Services of two endpoints each, not yet synced, and the flat layout cut into chunks of 500 operations. */
function chunkedColdStart(): { fake: FakeNft; chunked: NftablesLayout; cluster: ModelCluster } {
  const cluster = new ModelCluster('IPv4', 'test-node');
  for (let i = 0; i < 300; i++) {
    cluster.upsertService(service(i));
    cluster.upsertSlice(slice(i, [podIP(1, i), podIP(2, i)]));
  }
  return { fake: new FakeNft(), chunked: { ...FLAT_LAYOUT, coldStartChunk: 500 }, cluster };
}

describe('flat layout: cold start in chunks', () => {
  test('a table that did not exist is filled in transactions of at most the chunk, to the same state', async () => {
    const { fake, chunked, cluster } = chunkedColdStart();
    const r = await cluster.sync(backendOn(fake, chunked), true);
    // 300 Services × (cluster-ips, service-ips, two endpoint slots) = 1,200 operations after the setup and the
    // one dispatch chain's three: three chunks, after the setup's own transaction.
    assert.equal(fake.transactions.length, 4);
    for (const tx of fake.transactions.slice(1)) assert.ok(tx.size <= 500, String(tx.size));
    // The dispatch chain went with the setup: every later chunk is elements only (what netlink/ may write).
    assert.ok(fake.transactions[0]?.operations.some((op) => op.object.kind === 'chain'));
    for (const tx of fake.transactions.slice(1))
      assert.ok(tx.operations.every((op) => op.object.kind === 'element'));
    assert.equal(
      fake.dump(),
      (() => {
        const one = new FakeNft();
        one.load(renderFullSyncTransaction(cluster.checkout().snapshot, node, undefined, FLAT_LAYOUT));
        return one.dump();
      })(),
    );
    assert.equal(
      r.operations,
      fake.transactions.reduce((n, tx) => n + tx.size, 0),
    );
  });

  test("an executor's own chunk size cuts smaller pieces; a larger one leaves the layout's", async () => {
    for (const [asked, largest] of [
      [200, 200],
      [5000, 500],
    ] as const) {
      const { fake, chunked, cluster } = chunkedColdStart();
      const executor: NftExecutor = {
        ref: fake.ref,
        list: () => fake.list(),
        listElements: (kind, name) => fake.listElements(kind, name),
        run: (tx) => fake.run(tx),
        coldStartChunk: asked,
      };
      const backend = new NftablesBackend({
        node,
        commands: NO_COMMANDS,
        clock: new FakeClock(0),
        executor,
        layout: chunked,
      });
      await cluster.sync(backend, true);
      const pieces = fake.transactions.slice(1).map((tx) => tx.size);
      // 1,200 element operations (see above) in pieces of the smaller of the two sizes, all full but the last.
      assert.equal(pieces.length, Math.ceil(1200 / largest), `asked ${asked}: ${pieces.join(',')}`);
      assert.ok(
        pieces.slice(0, -1).every((n) => n === largest),
        `asked ${asked}: ${pieces.join(',')}`,
      );
      assert.equal(
        pieces.reduce((a, b) => a + b, 0),
        1200,
      );
    }
  });

  test('each chunk is applied only after the one before it succeeded, and a failed one stops the rest', async () => {
    const { fake, chunked, cluster } = chunkedColdStart();
    // nft as slow as a real one: each run finishes a few turns of the event loop after it was started, and the
    // third (the second chunk) fails.
    const events: string[] = [];
    let runs = 0;
    const slow: NftExecutor = {
      ref: fake.ref,
      list: () => fake.list(),
      listElements: (kind, name) => fake.listElements(kind, name),
      run: async (tx) => {
        const n = ++runs;
        events.push(`start ${n}`);
        for (let i = 0; i < 3; i++) await new Promise((r) => setImmediate(r));
        events.push(`end ${n}`);
        if (n === 3) throw new NftError('nft: chunk refused', { code: 'Failed' });
        return fake.run(tx);
      },
    };
    const backend = new NftablesBackend({
      node,
      commands: NO_COMMANDS,
      clock: new FakeClock(0),
      executor: slow,
      layout: chunked,
    });
    await assert.rejects(cluster.sync(backend, true), /chunk refused/);
    assert.deepEqual(events, ['start 1', 'end 1', 'start 2', 'end 2', 'start 3', 'end 3']);
    // The next sync is a full one again (the table now exists, so it is one transaction).
    assert.equal((await cluster.sync(backend)).full, true);
    assert.equal(runs, 4);
  });
});

describe('layout declarations', () => {
  test("each layout's declarations are exactly the sets and maps its setup adds, per family", () => {
    for (const layout of [UPSTREAM_LAYOUT, FLAT_LAYOUT]) {
      for (const family of ['IPv4', 'IPv6'] as const) {
        const n = { ...node, family };
        const snapshot = new ModelCluster(family, 'test-node').checkout().snapshot;
        const setup = layout
          .createPlanner(n, () => [], undefined)
          .planFull(snapshot, emptyKernel(), 0, true).setupOps;
        const added = setup
          .filter((op) => op.verb === 'add' && (op.object.kind === 'set' || op.object.kind === 'map'))
          .map((op) => op.object);
        assert.ok(added.length > 5, `${layout.name} ${family}: ${added.length}`);
        assert.deepEqual(layout.declarations(n), added, `${layout.name} ${family}`);
      }
    }
  });
});
