import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { EndpointSlice, Service } from '../../../packages/agent/src/api/objects.js';
import {
  NftablesBackend,
  renderFullSyncTransaction,
} from '../../../packages/agent/src/backends/nftables/backend.js';
import { hashAndTruncate } from '../../../packages/agent/src/backends/nftables/naming.js';
import { NftError } from '../../../packages/agent/src/netfilter/nft/errors.js';
import { BackendSyncError } from '../../../packages/agent/src/sync/backend.js';
import { FakeNft } from '../../../packages/agent/src/netfilter/nft/fake.js';
import type { CommandRunner } from '../../../packages/agent/src/netfilter/command.js';
import { FakeClock } from '../../../packages/agent/src/util/clock.js';
import { NO_PROXY_METRICS } from '../../../packages/agent/src/sync/metrics.js';
import type { ProxyMetrics } from '../../../packages/agent/src/sync/metrics.js';
import { loadVector, nodeConfigFromVector } from './helpers.js';
import { ModelCluster } from '../../helpers/model-cluster.js';

const NO_COMMANDS: CommandRunner = { run: () => Promise.reject(new Error('no commands in unit tests')) };
const node = nodeConfigFromVector(loadVector('nft-v2-TestOverallNFTablesRules').proxierConfig);

function service(i: number, extra: Partial<Service['spec']> = {}, name = `svc${i}`): Service {
  return {
    metadata: { namespace: 'ns', name },
    spec: {
      type: 'ClusterIP',
      clusterIP: `172.30.${Math.floor(i / 250)}.${(i % 250) + 1}`,
      ports: [{ name: 'p80', port: 80, protocol: 'TCP' }],
      ...extra,
    },
  };
}

function slice(i: number, ips: readonly string[], name = `svc${i}`): EndpointSlice {
  return {
    metadata: { namespace: 'ns', name: `${name}-1`, labels: { 'kubernetes.io/service-name': name } },
    addressType: 'IPv4',
    endpoints: ips.map((ip) => ({ addresses: [ip], nodeName: 'other-node' })),
    ports: [{ name: 'p80', port: 80, protocol: 'TCP' }],
  };
}

function backendOn(fake: FakeNft, metrics: ProxyMetrics = NO_PROXY_METRICS): NftablesBackend {
  return new NftablesBackend({
    node,
    commands: NO_COMMANDS,
    clock: new FakeClock(0),
    executor: fake,
    metrics,
  });
}

// The fixed operations of a full sync on this node, counted from upstream-backends.md §1.2–1.4 as golden.test.ts
// counts them: 1 table; 3 sets + 5 maps; 7 regular chains × (add, flush); 22 fixed rules; nodeport-ips flush + its
// one element; 8 base chains × (add, flush), or × (add, delete, add, flush) on the backend's first full sync.
const setupOps = (firstSync: boolean): number => 1 + 8 + 8 * (firstSync ? 4 : 2) + 7 * 2 + 22 + 2;
// One new ClusterIP port whose endpoints are all on other nodes: its cluster-ips and service-ips elements, and its
// service chain's add, flush and one dnat rule.
const NEW_CLUSTER_IP_PORT_OPS = 2 + 3;

describe('naming', () => {
  test('the verified examples of upstream-backends.md §1.5', () => {
    assert.equal(hashAndTruncate('ns1/svc1/tcp/p80'), 'ULMVA6XW-ns1/svc1/tcp/p80');
    assert.equal(hashAndTruncate('ns5/svc5/tcp/p80__10.180.0.3/80').slice(0, 8), 'GTK6MW7G');
    assert.equal(hashAndTruncate('ns1/svc1/tcp/p80__10.180.0.1/80').slice(0, 8), '5OJB2KTY');
    assert.equal(hashAndTruncate('testing/service/tcp/http'), 'P4ZYZVCF-testing/service/tcp/http');
  });

  test('long names are cut to 240 characters ending in "..."', () => {
    const long = 'ns/' + 'x'.repeat(300) + '/tcp/p';
    const h = hashAndTruncate(long);
    assert.equal(h.length, 240);
    assert.ok(h.endsWith('...'));
    assert.equal(h.slice(9, 237), long.slice(0, 228));
  });
});

describe('NftablesBackend', () => {
  test('a one-endpoint change among 1,000 Services is a delta of that Service only', async () => {
    const fake = new FakeNft();
    const backend = backendOn(fake);
    const cluster = new ModelCluster('IPv4', 'test-node');
    for (let i = 0; i < 1000; i++) {
      cluster.upsertService(service(i));
      cluster.upsertSlice(
        slice(i, [
          `10.1.${Math.floor(i / 250)}.${(i % 250) + 1}`,
          `10.2.${Math.floor(i / 250)}.${(i % 250) + 1}`,
        ]),
      );
    }
    const full = await cluster.sync(backend, true);
    assert.equal(full.operations, setupOps(true) + 1000 * NEW_CLUSTER_IP_PORT_OPS);
    const before = fake.dump();

    cluster.upsertSlice(slice(500, ['10.1.2.1', '10.9.9.9']));
    const delta = await cluster.sync(backend);
    // Only svc500's chain is rewritten: add chain, flush chain, one dnat rule. Its elements did not change
    // (endpoints are on another node, so no hairpin elements): 3 operations, nothing else.
    assert.equal(delta.operations, 3);
    const ops = fake.lastTransaction?.operations ?? [];
    const base = hashAndTruncate('ns/svc500/tcp/p80');
    for (const op of ops) {
      const o = op.object;
      assert.ok(
        o.kind === 'chain' ? o.name.endsWith(base) : o.kind === 'rule' && o.chain.endsWith(base),
        JSON.stringify(op),
      );
    }
    const after = fake.dump();
    assert.notEqual(after, before);
    assert.match(after, /numgen random mod 2 map \{ 0 : 10\.1\.2\.1 \. 80 , 1 : 10\.9\.9\.9 \. 80 \}/);

    // No change at all: no operations.
    assert.equal((await cluster.sync(backend)).operations, 0);
  });

  test('a failed transaction counts a failure, names the object, and the next sync is full', async () => {
    const fake = new FakeNft();
    let failures = 0;
    const backend = backendOn(fake, { ...NO_PROXY_METRICS, nftablesSyncFailure: () => void failures++ });
    const cluster = new ModelCluster('IPv4', 'test-node');
    cluster.upsertService(service(1));
    cluster.upsertSlice(slice(1, ['10.1.0.1']));
    await cluster.sync(backend, true);

    fake.failOperation = (op) =>
      op.object.kind === 'rule' && op.object.chain.includes('svc2')
        ? new NftError('injected', { code: 'Failed', operation: op })
        : undefined;
    cluster.upsertService(service(2));
    cluster.upsertSlice(slice(2, ['10.1.0.2']));
    await assert.rejects(
      cluster.sync(backend),
      (e) =>
        e instanceof BackendSyncError &&
        e.full === false &&
        e.cause instanceof NftError &&
        /^nftables IPv4 partial sync: .*svc2/.test(e.message),
    );
    assert.equal(failures, 1);

    fake.failOperation = undefined;
    const next = await cluster.sync(backend); // asked for partial, but the backend must do a full sync
    assert.equal(next.full, true, 'the result says the backend did a full sync');
    // A full sync: the setup again, both service chains rewritten (add, flush, rule), the seven shared containers
    // flushed and refilled with both Services' elements (two each); a partial one would have been svc2's 5
    // operations alone.
    assert.equal(
      next.operations,
      setupOps(false) + 2 * 3 + 7 + 2 * 2,
      `expected a full sync, got ${next.operations}`,
    );
    assert.match(
      fake.dump(),
      /service-ips \{ 172\.30\.0\.3 \. tcp \. 80 : goto service-\S+-ns\/svc2\/tcp\/p80 \}/,
    );
  });

  test('hostile names are skipped with a reason; everything else is programmed', async () => {
    const fake = new FakeNft();
    const backend = backendOn(fake);
    const cluster = new ModelCluster('IPv4', 'test-node');
    const evil = service(
      7,
      { ports: [{ name: 'p"; flush ruleset;\n{', port: 80, protocol: 'TCP' }] },
      'evil',
    );
    cluster.upsertService(evil);
    cluster.upsertSlice({
      ...slice(7, ['10.1.0.7'], 'evil'),
      ports: [{ name: 'p"; flush ruleset;\n{', port: 80, protocol: 'TCP' }],
    });
    cluster.upsertService(service(8));
    cluster.upsertSlice(slice(8, ['10.1.0.8']));
    const r = await cluster.sync(backend, true);
    assert.equal(
      r.operations,
      setupOps(true) + NEW_CLUSTER_IP_PORT_OPS,
      'svc8 only: the hostile port sends nothing',
    );
    const dump = fake.dump();
    assert.match(dump, /ns\/svc8\/tcp\/p80/);
    assert.doesNotMatch(dump, /flush ruleset/);
  });

  test('renderFullSyncTransaction renders IPv6 with ip6 selectors and ipv6_addr', () => {
    const v6 = {
      ...node,
      family: 'IPv6' as const,
      nodeIPs: ['2001:db8::1'],
      localDetector: { mode: 'ClusterCIDR' as const, cidr: 'fd00::/48' },
      nodePortAddresses: {
        ...node.nodePortAddresses,
        family: 'IPv6' as const,
        cidrs: ['::/0'],
        matchAll: true,
      },
      serviceCIDRs: ['fd00:30::/112'],
    };
    const cluster = new ModelCluster('IPv6', 'test-node');
    cluster.upsertService({
      metadata: { namespace: 'ns', name: 's' },
      spec: { clusterIP: 'fd00:30::1', ports: [{ port: 80 }] },
    });
    cluster.upsertSlice({
      metadata: { namespace: 'ns', name: 's-1', labels: { 'kubernetes.io/service-name': 's' } },
      addressType: 'IPv6',
      endpoints: [{ addresses: ['fd00::5'], nodeName: 'test-node' }],
      ports: [{ name: '', port: 8080, protocol: 'TCP' }],
    });
    const text = renderFullSyncTransaction(cluster.checkout().snapshot, v6);
    assert.match(text, /^add table ip6 kube-proxy /);
    assert.match(text, /add set ip6 kube-proxy cluster-ips \{ type ipv6_addr ;/);
    assert.match(text, /dnat ip6 addr \. port to numgen random mod 1 map \{ 0 : fd00::5 \. 8080 \}/);
    assert.match(text, /fib daddr type local ip6 daddr != ::1 meta l4proto/);
    assert.match(
      text,
      /add element ip6 kube-proxy hairpin-connections \{ fd00::5 \. fd00::5 \. tcp \. 8080 \}/,
    );
    assert.doesNotMatch(text, / ip daddr /);
  });
});

describe('service CIDRs from the cluster', () => {
  test('a change in the snapshot’s service ranges makes the sync full and rewrites the drop of unallocated ClusterIPs', async () => {
    const fake = new FakeNft();
    const backend = backendOn(fake);
    const cluster = new ModelCluster('IPv4', 'test-node');
    cluster.upsertService(service(1));
    cluster.upsertSlice(slice(1, ['10.1.0.1']));
    const withCIDRs = async (cidrs: readonly string[] | undefined) => {
      const { snapshot, changedServices } = cluster.checkout();
      return backend.sync(cidrs === undefined ? snapshot : { ...snapshot, serviceCIDRs: cidrs }, {
        changedServices,
      });
    };
    assert.equal((await withCIDRs(undefined)).full, true, 'the first sync');
    // This node's config (from the vector, as from --service-cidrs) says 172.30.0.0/16 until the cluster says more.
    assert.match(
      fake.dump(),
      /ip daddr \{ 172\.30\.0\.0\/16 \} drop comment "Drop traffic to unallocated ClusterIPs"/,
    );
    assert.equal((await withCIDRs(undefined)).full, false);
    assert.equal(
      (await withCIDRs(['172.30.0.0/16'])).full,
      false,
      'the same ranges from the cluster: partial',
    );

    const changed = await withCIDRs(['172.30.0.0/16', '172.31.0.0/16']);
    assert.equal(changed.full, true, 'new ranges: a full sync');
    assert.match(fake.dump(), /ip daddr \{ 172\.30\.0\.0\/16,172\.31\.0\.0\/16 \} drop/);
    assert.doesNotMatch(fake.dump(), /ip daddr \{ 172\.30\.0\.0\/16 \} drop/, 'the old rule is gone');
    assert.equal((await withCIDRs(['172.30.0.0/16', '172.31.0.0/16'])).full, false);
    assert.equal((await withCIDRs([])).full, true, 'no ranges at all');
    assert.doesNotMatch(fake.dump(), /Drop traffic to unallocated ClusterIPs/);
  });
});
