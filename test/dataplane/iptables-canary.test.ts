// The canary on a real kernel, for both iptables back ends: an external `iptables -t nat -F` and `-t filter -F`
// inside the test namespace is detected by checkCanary(), and the next sync (requested as partial) is a full one
// that puts every rule back, with no restart. And a full sync reads the real iptables-save output well enough to
// find every jump it made before: nothing is created twice and no per-rule command runs.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { IptablesBackend } from '../../packages/agent/src/backends/iptables/backend.js';
import type { CommandRunner } from '../../packages/agent/src/netfilter/command.js';
import { iptablesBinaries } from '../../packages/agent/src/netfilter/iptables/variant.js';
import { kernelOptions } from '../helpers/kernel.js';
import { ModelCluster } from '../helpers/model-cluster.js';
import { testNode } from '../backends/iptables/helpers.js';
import { systemClock } from '../../packages/agent/src/util/clock.js';
import { modeOptions, withSandbox } from '../backends/iptables/kernel-fixture.js';

for (const variant of ['legacy', 'nft'] as const) {
  const bins = iptablesBinaries('IPv4', variant);
  describe(`iptables canary (${variant})`, () => {
    test(
      'a flush is detected and repaired by the next sync',
      kernelOptions(['ip', bins.iptables, bins.restore, bins.save]),
      async () => {
        await withSandbox(async ({ commands, lockFile }) => {
          const backend = new IptablesBackend({
            node: testNode(),
            commands,
            clock: systemClock,
            iptables: modeOptions(variant, lockFile),
          });
          const model = new ModelCluster('IPv4', 'node-a');
          model.upsertService({
            metadata: { namespace: 'ns', name: 'web' },
            spec: { clusterIP: '198.18.100.10', ports: [{ name: 'http', port: 80, protocol: 'TCP' }] },
          });
          model.upsertSlice({
            metadata: { namespace: 'ns', name: 'web-1', labels: { 'kubernetes.io/service-name': 'web' } },
            addressType: 'IPv4',
            endpoints: [{ addresses: ['198.19.0.10'] }, { addresses: ['198.19.0.11'] }],
            ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
          });
          const sync = (full: boolean) => {
            const { snapshot, changedServices } = model.checkout();
            return backend.sync(snapshot, { full, changedServices });
          };
          const env = { XTABLES_LOCKFILE: lockFile };
          const save = async (table: string) => {
            const r = await commands.run(bins.save, ['-t', table], { env });
            assert.equal(r.code, 0, r.stderr);
            return r.stdout;
          };
          const shape = (text: string) =>
            text
              .split('\n')
              .filter(
                (l) =>
                  l.startsWith('-A ') ||
                  (l.startsWith(':') && !/^:(PREROUTING|INPUT|OUTPUT|FORWARD|POSTROUTING) /.test(l)),
              )
              .sort();

          await sync(true);
          assert.equal(await backend.checkCanary(), true);
          const nat = await save('nat');
          const filter = await save('filter');
          assert.match(
            nat,
            /-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES/,
          );
          assert.match(nat, /--to-destination 198\.19\.0\.11:8080/);
          assert.match(
            filter,
            /-A FORWARD -m comment --comment "kubernetes forwarding rules" -j KUBE-FORWARD/,
          );

          for (const table of ['nat', 'filter']) {
            const r = await commands.run(bins.iptables, ['-t', table, '-F'], { env });
            assert.equal(r.code, 0, r.stderr);
          }
          assert.doesNotMatch(await save('nat'), /-A /, 'the flush emptied nat');
          assert.equal(await backend.checkCanary(), false);

          await sync(false);
          assert.equal(backend.lastSyncStats?.full, true);
          assert.deepEqual(shape(await save('nat')), shape(nat));
          assert.deepEqual(shape(await save('filter')), shape(filter));
          assert.equal(await backend.checkCanary(), true);
        });
      },
    );

    test(
      'a second full sync finds every jump in iptables-save: one restore, no -C, nothing duplicated',
      kernelOptions(['ip', bins.iptables, bins.restore, bins.save]),
      async () => {
        await withSandbox(async ({ commands, lockFile }) => {
          const calls: string[][] = [];
          const recorded: CommandRunner = {
            run: (cmd, args, options) => {
              calls.push([cmd, ...args]);
              return commands.run(cmd, args, options);
            },
          };
          const backend = new IptablesBackend({
            node: testNode(),
            commands: recorded,
            clock: systemClock,
            // Localhost NodePorts add kubelet's comment-less KUBE-FIREWALL jumps to the ones checked.
            iptables: { ...modeOptions(variant, lockFile), localhostNodePorts: true },
          });
          const model = new ModelCluster('IPv4', 'node-a');
          model.upsertService({
            metadata: { namespace: 'ns', name: 'web' },
            spec: { clusterIP: '198.18.100.10', ports: [{ name: 'http', port: 80, protocol: 'TCP' }] },
          });
          const sync = (full: boolean) => {
            const { snapshot, changedServices } = model.checkout();
            return backend.sync(snapshot, { full, changedServices });
          };
          const env = { XTABLES_LOCKFILE: lockFile };
          const saveAll = async () => {
            const r = await commands.run(bins.save, [], { env });
            assert.equal(r.code, 0, r.stderr);
            return r.stdout.replace(/^#.*\n/gm, '').replace(/\[\d+:\d+\]/g, '');
          };

          await sync(true);
          assert.equal(await backend.checkCanary(), true);
          const before = await saveAll();
          assert.match(before, /-A INPUT -j KUBE-FIREWALL/);
          calls.length = 0;
          await sync(true);
          const restores = calls.filter((c) => c[0] === bins.restore);
          assert.equal(restores.length, 1, 'only the rules restore; no base-chain restore');
          assert.ok(!calls.some((c) => c.includes('-C') || c.includes('-N') || c.includes('-I')));
          assert.equal(await saveAll(), before);
        });
      },
    );
  });
}
