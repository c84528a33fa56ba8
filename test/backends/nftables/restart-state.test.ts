// A restart that adopts the table the last agent left (backends/nftables/state.ts) against the FakeNft, whose
// generation moves with every transaction as the kernel's does: the stopped backend leaves its state, the new one
// writes no element when nothing changed (slots that churn moved away from the model's order included), and
// refills as before when anything it checks differs: the ruleset written meanwhile, the cluster changed, the
// carried slots lost, the file broken. After an adoption the ledger is what the table holds: a change is a delta.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { NftablesBackend } from '../../../packages/agent/src/backends/nftables/backend.js';
import { MultisetDigest } from '../../../packages/agent/src/backends/nftables/digest.js';
import { FLAT_LAYOUT } from '../../../packages/agent/src/backends/nftables/flat/layout.js';
import { stateFile } from '../../../packages/agent/src/backends/nftables/state.js';
import type { CommandRunner } from '../../../packages/agent/src/netfilter/command.js';
import { NftError } from '../../../packages/agent/src/netfilter/nft/errors.js';
import { FakeNft } from '../../../packages/agent/src/netfilter/nft/fake.js';
import type { NftOperation } from '../../../packages/agent/src/netfilter/nft/objects.js';
import { FakeClock } from '../../../packages/agent/src/util/clock.js';
import type { LogRecord } from '../../../packages/agent/src/util/logger.js';
import { recordingLogger } from '../../../packages/agent/src/util/logger.js';
import { ModelCluster } from '../../helpers/model-cluster.js';
import { clusterIP, loadVector, nodeConfigFromVector, podIP, service, slice } from './helpers.js';

const NO_COMMANDS: CommandRunner = { run: () => Promise.reject(new Error('no commands in unit tests')) };
const node = nodeConfigFromVector(loadVector('nft-v2-TestOverallNFTablesRules').proxierConfig);
const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

interface Node {
  readonly fake: FakeNft;
  readonly cluster: ModelCluster;
  readonly path: string;
  readonly records: LogRecord[];
  backend(): NftablesBackend;
}

/** 50 Services of 3 endpoints on a FakeNft, synced in full, then svc7 lost its slot-0 endpoint (slots moved). */
async function running(): Promise<{ node: Node; first: NftablesBackend }> {
  const dir = mkdtempSync(join(tmpdir(), 'kpts-state-'));
  dirs.push(dir);
  const fake = new FakeNft();
  const records: LogRecord[] = [];
  const logger = recordingLogger(records);
  const path = stateFile(dir, 'ip');
  const backend = (): NftablesBackend =>
    new NftablesBackend({
      node,
      commands: NO_COMMANDS,
      clock: new FakeClock(0),
      executor: fake,
      layout: FLAT_LAYOUT,
      statePath: path,
      logger,
    });
  const cluster = new ModelCluster('IPv4', 'test-node');
  for (let i = 0; i < 50; i++) {
    cluster.upsertService(service(i));
    cluster.upsertSlice(slice(i, [podIP(1, i), podIP(2, i), podIP(3, i)]));
  }
  const first = backend();
  await cluster.sync(first, true);
  cluster.upsertSlice(slice(7, [podIP(2, 7), podIP(3, 7)]));
  assert.equal((await cluster.sync(first)).full, false);
  return { node: { fake, cluster, path, records, backend }, first };
}

/** Element operations on the planner's containers (nodeport-ips is the fixed setup's, rewritten by every full sync). */
const elementOps = (ops: readonly NftOperation[]): NftOperation[] =>
  ops.filter((op) => op.object.kind === 'element' && op.object.set !== 'nodeport-ips');
const containerFlushes = (ops: readonly NftOperation[]): string[] =>
  ops.flatMap((op) =>
    op.verb === 'flush' && (op.object.kind === 'set' || op.object.kind === 'map') ? [op.object.name] : [],
  );

/** The restart's first (full) sync: its operations, and what the log said about the table. */
async function restart(n: Node): Promise<{ ops: NftOperation[]; said: string[] }> {
  const from = n.fake.transactions.length;
  const saidFrom = n.records.length;
  const r = await n.cluster.sync(n.backend(), true);
  assert.equal(r.full, true);
  return {
    ops: n.fake.transactions.slice(from).flatMap((t) => [...t.operations]),
    said: n.records
      .slice(saidFrom)
      .map((r) => `${r.msg}${r.fields.reason !== undefined ? `: ${String(r.fields.reason)}` : ''}`),
  };
}

describe('nftables restart: adopting the table the last agent left', () => {
  test('unchanged: the new agent writes no element and flushes no container', async () => {
    const { node: n, first } = await running();
    const table = n.fake.dump();
    await first.stop();
    assert.ok(existsSync(n.path), 'the stopped backend left its state');
    const state = JSON.parse(readFileSync(n.path, 'utf8')) as { memos: [string, unknown][] };
    assert.deepEqual(
      state.memos.map(([key]) => key),
      ['["ns","svc7","p80","TCP"]'],
      'only the port whose slots moved carries them',
    );

    const { ops, said } = await restart(n);
    assert.deepEqual(elementOps(ops), []);
    assert.deepEqual(containerFlushes(ops), ['nodeport-ips'], 'only the set the fixed setup always rewrites');
    assert.ok(
      said.some((s) => s.startsWith('adopting the nftables table')),
      said.join('\n'),
    );
    assert.equal(n.fake.dump(), table);
    assert.ok(!existsSync(n.path), 'the state is taken once');
  });

  test('after an adoption a one-endpoint change is the same delta as on the agent that wrote the table', async () => {
    const { node: n, first } = await running();
    await first.stop();
    const adopter = n.backend();
    const r = await n.cluster.sync(adopter, true);
    assert.equal(r.full, true);
    n.cluster.upsertSlice(slice(9, [podIP(1, 9), podIP(2, 9), '10.9.9.9']));
    const change = await n.cluster.sync(adopter);
    assert.equal(change.full, false);
    // The last slot re-pointed: delete + add.
    assert.equal(change.operations, 2);
    assert.match(n.fake.dump(), /10\.9\.9\.9/);
  });

  test('the ruleset written while no agent ran: refilled', async () => {
    const { node: n, first } = await running();
    await first.stop();
    n.fake.load('add table ip kube-proxy\n');
    const { ops, said } = await restart(n);
    assert.ok(elementOps(ops).length > 150, 'every element written again');
    assert.ok(
      said.some((s) => s.includes('the ruleset was written since the last agent stopped')),
      said.join('\n'),
    );
  });

  test('the cluster changed while no agent ran: refilled, and the table is the new cluster', async () => {
    const { node: n, first } = await running();
    await first.stop();
    n.cluster.upsertSlice(slice(3, [podIP(1, 3)]));
    const { ops, said } = await restart(n);
    assert.ok(elementOps(ops).length > 150);
    assert.ok(
      said.some((s) => s.includes("the cluster's elements changed")),
      said.join('\n'),
    );
    assert.doesNotMatch(n.fake.dump(), new RegExp(`${clusterIP(3)} \\. tcp \\. 80 \\. 1 `));
  });

  test('the moved slots lost from the state: the digest tells, and the table is refilled', async () => {
    const { node: n, first } = await running();
    await first.stop();
    const state = JSON.parse(readFileSync(n.path, 'utf8')) as Record<string, unknown>;
    writeFileSync(n.path, JSON.stringify({ ...state, memos: [] }));
    const { ops, said } = await restart(n);
    assert.ok(elementOps(ops).length > 150);
    assert.ok(
      said.some((s) => s.includes("the cluster's elements changed")),
      said.join('\n'),
    );
  });

  test('a broken state file is named and ignored', async () => {
    const { node: n, first } = await running();
    await first.stop();
    writeFileSync(n.path, '{"format": 1, "family": "ip"');
    const { ops, said } = await restart(n);
    assert.ok(elementOps(ops).length > 150);
    assert.ok(
      said.some((s) => s.startsWith('ignoring the saved nftables state') && s.includes('not JSON')),
      said.join('\n'),
    );
  });

  test('a backend whose last sync failed leaves no state', async () => {
    const { node: n, first } = await running();
    n.fake.failOperation = () => new NftError('injected', { code: 'Failed' });
    n.cluster.upsertSlice(slice(11, [podIP(1, 11)]));
    await assert.rejects(n.cluster.sync(first));
    n.fake.failOperation = undefined;
    await first.stop();
    assert.ok(!existsSync(n.path));
  });
});

describe('MultisetDigest', () => {
  const digestOf = (entries: readonly [string, string][], seed = 7): string => {
    const d = new MultisetDigest(seed);
    for (const [a, b] of entries) d.add(a, b);
    return d.value;
  };
  const entries: [string, string][] = [
    ['service-ips', '172.30.0.1 . tcp . 80'],
    ['endpoints-tcp', '10.1.0.1 . 80'],
    ['cluster-ips', '172.30.0.1'],
  ];

  test('the same entries in any order give the same digest', () => {
    assert.equal(digestOf(entries), digestOf([...entries].reverse()));
  });

  test('a changed, missing or moved entry, or another seed, gives another', () => {
    const base = digestOf(entries);
    assert.notEqual(digestOf([...entries.slice(0, 2), ['cluster-ips', '172.30.0.2']]), base);
    assert.notEqual(digestOf(entries.slice(1)), base);
    assert.notEqual(digestOf([...entries.slice(0, 2), ['cluster-ip', 's172.30.0.1']]), base);
    assert.notEqual(digestOf(entries, 8), base);
  });
});
