// The flat layout against the real `nft` in a network namespace the test makes, IPv4 and IPv6: every kind of
// frontend (ClusterIP, NodePort, external IP, load-balancer VIP with source ranges), both traffic policies, ClientIP
// affinity and TCP, UDP and SCTP, through a full sync, partial syncs that make new dispatch chains (nft reading the
// maps back from the kernel), a restart that reads no element and refills every container in one transaction,
// and a switch to the upstream layout and back.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  NftablesBackend,
  renderFullSyncTransaction,
} from '../../../packages/agent/src/backends/nftables/backend.js';
import { FLAT_LAYOUT } from '../../../packages/agent/src/backends/nftables/flat/layout.js';
import { UPSTREAM_LAYOUT } from '../../../packages/agent/src/backends/nftables/upstream-layout.js';
import { netnsCommandRunner } from '../../../packages/agent/src/netfilter/command.js';
import type { CommandRunner } from '../../../packages/agent/src/netfilter/command.js';
import { NftCommandExecutor } from '../../../packages/agent/src/netfilter/nft/executor.js';
import { FakeNft } from '../../../packages/agent/src/netfilter/nft/fake.js';
import { FakeClock } from '../../../packages/agent/src/util/clock.js';
import { kernelNamespaces } from '../../helpers/kernel.js';
import { flatCluster, nodeFor } from './flat-objects.js';

const suite = kernelNamespaces(['flat']);
const [ns] = suite.names;

describe('flat layout in a network namespace', suite.options, () => {
  const inNamespace = netnsCommandRunner(ns);
  /** What each `nft -f -` was given, to count what a sync wrote. */
  const written: string[] = [];
  const commands: CommandRunner = {
    run: (cmd, args, opts) => {
      if (opts?.stdin !== undefined) written.push(opts.stdin);
      return inNamespace.run(cmd, args, opts);
    },
  };
  suite.hooks();

  for (const family of ['IPv4', 'IPv6'] as const) {
    test(`${family}: full, partial with new dispatch chains, restart, switch and back`, async () => {
      const node = nodeFor(family);
      const nftFamily = family === 'IPv6' ? 'ip6' : 'ip';
      const exec = new NftCommandExecutor({ family: nftFamily, table: 'kube-proxy' }, commands);
      const clock = new FakeClock(0);
      const { cluster, load } = flatCluster(family);
      load(3);
      assert.deepEqual(cluster.skipped, []);
      const text = renderFullSyncTransaction(cluster.checkout().snapshot, node, undefined, FLAT_LAYOUT);
      await exec.runText(text, [], true);

      const backend = new NftablesBackend({ node, commands, clock, layout: FLAT_LAYOUT });
      assert.equal((await cluster.sync(backend, true)).full, true);
      // 3 → 5 → 2 endpoints: dispatch chains made by later transactions, the maps read back by nft each time.
      for (const n of [5, 2]) {
        load(n);
        const r = await cluster.sync(backend);
        assert.equal(r.full, false);
      }

      // The kernel holds what the fake holds for the same transactions (every element read back as written).
      const fake = new FakeNft({ family: nftFamily, table: 'kube-proxy' });
      fake.load(renderFullSyncTransaction(cluster.checkout().snapshot, node, undefined, FLAT_LAYOUT));
      const containers = [...(await fake.list()).sets, ...(await fake.list()).maps];
      const key = (e: { key: readonly string[]; value?: readonly string[] }): string =>
        `${e.key.join(' . ')} : ${(e.value ?? []).join(' . ')}`;
      const readAll = async (): Promise<Record<string, string[]>> => {
        const out: Record<string, string[]> = {};
        for (const c of containers) out[c.name] = (await exec.listElements(c.kind, c.name)).map(key).sort();
        return out;
      };
      for (const c of containers) {
        const expected = (await fake.listElements(c.kind, c.name)).map(key).sort();
        assert.deepEqual((await readAll())[c.name], expected, c.name);
      }

      // A restart reads no element back: one nft run flushes every container and writes it anew, and the kernel
      // then holds exactly what it held before.
      const before = await readAll();
      const restarted = new NftablesBackend({ node, commands, clock, layout: FLAT_LAYOUT });
      written.length = 0;
      const again = await restarted.sync(cluster.checkout().snapshot, {
        full: true,
        changedServices: new Set(),
      });
      assert.equal(again.full, true);
      assert.equal(written.length, 1, 'one transaction');
      const flushed = (written[0] ?? '')
        .split('\n')
        .filter((l) => /^flush (set|map) /.test(l))
        .map((l) => l.split(' ').pop())
        .filter((name) => name !== 'nodeport-ips');
      assert.deepEqual(flushed.sort(), FLAT_LAYOUT.elementContainers.map((c) => c.name).sort());
      assert.deepEqual(await readAll(), before, 'the refilled table holds what it held');

      // Switch to upstream's layout and back: each time the other layout's objects are gone.
      const upstream = new NftablesBackend({ node, commands, clock, layout: UPSTREAM_LAYOUT });
      await upstream.sync(cluster.checkout().snapshot, { full: true, changedServices: new Set() });
      let listing = await exec.list();
      assert.ok(!listing.maps.some((m) => m.name.startsWith('endpoints-') || m.name === 'cluster-dispatch'));
      assert.ok(listing.maps.some((m) => m.name === 'firewall-ips'));
      const flatAgain = new NftablesBackend({ node, commands, clock, layout: FLAT_LAYOUT });
      await flatAgain.sync(cluster.checkout().snapshot, { full: true, changedServices: new Set() });
      listing = await exec.list();
      assert.ok(!listing.maps.some((m) => m.name === 'firewall-ips'));
      assert.deepEqual(
        listing.chains
          .map((c) => c.name)
          .filter((c) => c.includes('/') && !/^(service|local|endpoint)-/.test(c)),
        [],
        'no upstream per-port chain is left (affinity ports keep theirs)',
      );
    });
  }
});
