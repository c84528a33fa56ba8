// diffClusterStates: what each backend sends to go from one cluster state to another, computed by the real
// trackers and backends on their fakes. Every count is derived from what the backend must write, not read off a
// run: the seed experiment "add one endpoint to one Service among 1,000", a deleted Service, an edit the proxy
// ignores, a new zone.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Node } from '../../packages/agent/src/api/objects.js';
import type { DiffTarget, ClusterState, DiffResult } from '../../packages/agent/src/inspect/diff.js';
import { diffClusterStates } from '../../packages/agent/src/inspect/diff.js';
import { testNode } from '../helpers/model-values.js';
import { snapshotFromObjects } from '../../packages/agent/src/sync/snapshot.js';
import { renderIptablesRestore } from '../../packages/agent/src/backends/iptables/render-cache.js';
import { renderFullSyncTransaction } from '../../packages/agent/src/backends/nftables/backend.js';
import { nftOperationLines } from '../backends/nftables/helpers.js';
import type { NodeNetworkConfig } from '../../packages/agent/src/sync/backend.js';
import {
  CLUSTER_CIDR,
  NODE,
  NODE_IP,
  SERVICE_CIDR,
  node,
  workload,
} from '../helpers/one-endpoint-workload.js';

function config(nodePortAddresses: string[]): NodeNetworkConfig {
  return testNode({
    nodeName: NODE,
    nodeIPs: [NODE_IP],
    clusterCIDRs: [CLUSTER_CIDR],
    nodePortAddresses,
    serviceCIDRs: [SERVICE_CIDR],
  });
}

// Each mode's default NodePort addresses, as the CLI gives them: nftables the primary IP, iptables all.
const TARGETS: readonly DiffTarget[] = [
  { mode: 'nftables', node: config(['primary']) },
  {
    mode: 'iptables',
    node: config([]),
    iptables: {
      localhostNodePorts: true,
      randomFully: true,
      nfacctCounters: [],
      conntrackTCPBeLiberal: false,
    },
  },
];

async function diff(before: ClusterState, after: ClusterState): Promise<DiffResult> {
  return diffClusterStates({ before, after, family: 'IPv4', nodeName: NODE, targets: TARGETS });
}

function modes(r: DiffResult) {
  const [nft, ipt] = r.backends;
  assert.equal(nft?.mode, 'nftables');
  assert.equal(ipt?.mode, 'iptables');
  return { nft, ipt };
}

function lines(text: string): string[] {
  return text === '' ? [] : text.replace(/\n$/, '').split('\n');
}

const EMPTY: ClusterState = { services: [], endpointSlices: [] };

// The whole ruleset of an empty cluster is the node's fixed part, which every count below builds on.
// nftables: the first full sync's setup, as test/backends/nftables counts it: 1 table; 3 sets + 5 maps; 7 regular
// chains × (add, flush); 22 fixed rules (the drop of unallocated ClusterIPs among them: --service-cidrs is set); nodeport-ips flush + its one element (the primary IP); 8 base chains ×
// (add, delete, add, flush) on a backend's first sync.
const NFT_SETUP = 1 + 8 + 7 * 2 + 22 + 2 + 8 * 4;
// iptables: *filter and COMMIT; the chains KUBE-NODEPORTS, KUBE-SERVICES, KUBE-EXTERNAL-SERVICES, KUBE-FORWARD,
// KUBE-PROXY-FIREWALL and KUBE-FIREWALL (IPv4 with localhost NodePorts); KUBE-FIREWALL's localnet rule and
// KUBE-FORWARD's three (INVALID drop, the mark accept, the conntrack accept); then *nat and COMMIT; KUBE-NODEPORTS,
// KUBE-SERVICES, KUBE-MARK-MASQ, KUBE-POSTROUTING; the NodePorts jump (all addresses: one rule), KUBE-MARK-MASQ's
// mark and KUBE-POSTROUTING's three. Every iptables sync, partial or not, rewrites all of this.
const IPT_FIXED = 2 + 6 + 4 + (2 + 4 + 5);

// One Service of the workload, in each backend. nftables: its cluster-ips and service-ips elements, its service
// chain's add, flush and one dnat rule, and a hairpin-connections element per endpoint on this node (one).
const NFT_PER_SERVICE = 2 + 3 + 1;
// iptables: one KUBE-SERVICES rule (its ClusterIP) in the top-level chains, written on every sync; its own chains
// KUBE-SVC and one KUBE-SEP per endpoint declared, the SVC chain's masquerade rule and one jump per endpoint, and
// each SEP chain's two rules (hairpin masquerade, DNAT).
const IPT_TOP_PER_SERVICE = 1;
const iptOwnChains = (endpoints: number): number => 1 + endpoints + (1 + endpoints) + 2 * endpoints;

describe('diff: add one endpoint to one Service among 1,000', () => {
  const SERVICES = 1000;
  const GROWN = 500;

  test('nftables sends that Service only; iptables its chains and every top-level rule', async () => {
    const base = await diff(EMPTY, EMPTY);
    assert.deepEqual(
      base.backends.map((b) => b.total),
      [NFT_SETUP, IPT_FIXED],
    );

    const r = await diff({ ...workload(SERVICES), node }, { ...workload(SERVICES, GROWN), node });
    assert.deepEqual(r.events, {
      Service: { added: 0, updated: 0, deleted: 0 },
      EndpointSlice: { added: 0, updated: 1, deleted: 0 },
    });
    const { nft, ipt } = modes(r);

    // nftables: svc500's service chain is rewritten (add, flush, its dnat rule, now over three endpoints) and the
    // new endpoint, which is on this node, gets its hairpin-connections element. Its cluster-ips and service-ips
    // elements did not change, and no other Service is touched: 4 operations.
    assert.deepEqual(
      { synced: nft.synced, full: nft.full, size: nft.size },
      { synced: true, full: false, size: 4 },
    );
    const chain = nft.text.match(/^add chain ip kube-proxy (service-\S+-ns\/svc500\/tcp\/http)$/m)?.[1] ?? '';
    assert.notEqual(chain, '', nft.text);
    assert.deepEqual(lines(nft.text), [
      `add chain ip kube-proxy ${chain}`,
      `flush chain ip kube-proxy ${chain}`,
      `add rule ip kube-proxy ${chain} meta l4proto tcp dnat ip addr . port to numgen random mod 3 map ` +
        '{ 0 : 198.19.7.208 . 8080 , 1 : 198.19.7.209 . 8080 , 2 : 198.19.7.210 . 8080 }',
      'add element ip kube-proxy hairpin-connections { 198.19.7.210 . 198.19.7.210 . tcp . 8080 }',
    ]);
    // The whole ruleset of AFTER: setup, six operations per Service, and svc500's second hairpin element.
    assert.equal(nft.total, NFT_SETUP + SERVICES * NFT_PER_SERVICE + 1);
    assert.equal(nft.total, 6_080);

    // iptables: the fixed part, the 1,000 Services' KUBE-SERVICES rules, and svc500's own chains with three
    // endpoints; no other Service's chains.
    const partial = IPT_FIXED + SERVICES * IPT_TOP_PER_SERVICE + iptOwnChains(3);
    assert.equal(partial, 1_037);
    assert.deepEqual(
      { synced: ipt.synced, full: ipt.full, size: ipt.size },
      { synced: true, full: false, size: partial },
    );
    assert.equal(lines(ipt.text).length, ipt.size);
    assert.equal(lines(ipt.text).filter((l) => /^:KUBE-(SVC|SEP)-/.test(l)).length, 4);
    assert.equal(lines(ipt.text).filter((l) => l.startsWith('-A KUBE-SERVICES ')).length, SERVICES + 1);
    // The whole ruleset: every Service's chains, svc500's with one endpoint more (a SEP chain and three rules).
    assert.equal(ipt.total, IPT_FIXED + SERVICES * (IPT_TOP_PER_SERVICE + iptOwnChains(2)) + 4);
    assert.equal(ipt.total, 11_027);
  });

  test('deleting a Service: nftables deletes its elements and flushes its chain; iptables deletes its chains', async () => {
    const before = { ...workload(SERVICES), node };
    const after = {
      services: before.services.filter((s) => s.metadata.name !== `svc${GROWN}`),
      endpointSlices: before.endpointSlices.filter((s) => s.metadata.name !== `svc${GROWN}-1`),
      node,
    };
    const r = await diff(before, after);
    assert.deepEqual(r.events, {
      Service: { added: 0, updated: 0, deleted: 1 },
      EndpointSlice: { added: 0, updated: 0, deleted: 1 },
    });
    const { nft, ipt } = modes(r);
    // Its three elements (cluster-ips, service-ips, hairpin-connections) deleted and its chain flushed; the chain
    // itself is deleted a second later, in a transaction of its own (kernels before 6.2 see its last use late).
    assert.equal(nft.size, 3 + 1);
    const [flush, ...elements] = [...lines(nft.text)].reverse();
    assert.deepEqual(elements.reverse(), [
      'delete element ip kube-proxy cluster-ips { 198.18.129.244 }',
      'delete element ip kube-proxy service-ips { 198.18.129.244 . tcp . 80 }',
      'delete element ip kube-proxy hairpin-connections { 198.19.7.208 . 198.19.7.208 . tcp . 8080 }',
    ]);
    assert.match(flush ?? '', /^flush chain ip kube-proxy service-\S+-ns\/svc500\/tcp\/http$/);
    // 999 KUBE-SERVICES rules, and its three chains (SVC, two SEP) declared, which flushes them, and deleted
    // (-X): two lines each. With 2,000 endpoints this is a large cluster, whose stale-chain scan runs at most once
    // per syncPeriod; the diff takes the change to come later than that, as on a running node.
    assert.equal(ipt.size, IPT_FIXED + (SERVICES - 1) * IPT_TOP_PER_SERVICE + 2 * 3);
    assert.equal(lines(ipt.text).filter((l) => /^-X KUBE-(SVC|SEP)-/.test(l)).length, 3);
  });
});

describe('diff: changes the proxy does not sync, and a new zone', () => {
  test('an edit the model ignores makes no sync at all, so nothing is sent by either backend', async () => {
    const before = workload(3);
    const labelled = before.services.map((s, i) =>
      i === 1 ? { ...s, metadata: { ...s.metadata, labels: { team: 'web' } } } : s,
    );
    const r = await diff(before, { ...before, services: labelled });
    assert.deepEqual(r.events.Service, { added: 0, updated: 1, deleted: 0 });
    for (const b of r.backends) {
      assert.deepEqual(
        { synced: b.synced, size: b.size, text: b.text },
        { synced: false, size: 0, text: '' },
      );
    }
    // The whole rulesets are still there to compare with.
    assert.deepEqual(
      r.backends.map((b) => b.total),
      [NFT_SETUP + 3 * NFT_PER_SERVICE, IPT_FIXED + 3 * (IPT_TOP_PER_SERVICE + iptOwnChains(2))],
    );
  });

  test('a new zone on the Node makes the next sync full', async () => {
    const inZone = (zone: string): Node => ({
      ...node,
      metadata: { ...node.metadata, labels: { 'topology.kubernetes.io/zone': zone } },
    });
    const w = workload(2);
    const { nft, ipt } = modes(await diff({ ...w, node: inZone('a') }, { ...w, node: inZone('b') }));
    assert.equal(nft.full, true);
    assert.equal(ipt.full, true);
    // iptables rewrites everything, exactly the whole ruleset.
    assert.equal(ipt.size, ipt.total);
    // nftables re-sends the setup (without the first sync's delete and re-add of the 8 base chains) and every
    // service chain, and, as upstream's full sync does, flushes each of its 7 sets and maps and refills them:
    // every element again, with nothing read back from the kernel.
    assert.equal(nft.size, nft.total - 8 * 2 + 7);
  });
});

describe('diff: the whole ruleset', () => {
  test("is what render prints for AFTER: a fresh node's first sync", async () => {
    const after = workload(5, 2);
    const r = await diff(EMPTY, { ...after, node });
    const { snapshot } = snapshotFromObjects({ family: 'IPv4', nodeName: NODE, ...after, node });
    const [nftTarget, iptTarget] = TARGETS;
    assert.ok(nftTarget?.mode === 'nftables' && iptTarget?.mode === 'iptables');
    assert.deepEqual(
      r.backends.map((b) => b.total),
      [
        nftOperationLines(renderFullSyncTransaction(snapshot, nftTarget.node)).length,
        lines(renderIptablesRestore(snapshot, iptTarget.node, iptTarget.iptables)).length,
      ],
    );
    // From an empty cluster, the second sync adds every Service: all of it but the setup (nftables) and exactly
    // the whole ruleset (iptables, which rewrites its top-level chains anyway).
    const { nft, ipt } = modes(r);
    assert.equal(nft.size, nft.total - NFT_SETUP);
    assert.equal(ipt.size, ipt.total);
  });
});
