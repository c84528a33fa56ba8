// The xtables lock on a real kernel (legacy iptables, which is the variant that takes it), with a test-owned lock
// file: another process holds the lock for 3 s and the sync waits, succeeds and reports the wait through
// iptablesLockWait; held past the 5 s wait limit, the sync fails, iptablesRestoreFailure is counted, and the next
// attempt (full) succeeds once the lock is free. The wait is measured by taking the lock with flock before the
// restore (see src/netfilter/iptables/client.ts).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { IptablesBackend } from '../../packages/agent/src/backends/iptables/backend.js';
import type { ProxyMetrics } from '../../packages/agent/src/sync/metrics.js';
import { NO_PROXY_METRICS } from '../../packages/agent/src/sync/metrics.js';
import { kernelOptions } from '../helpers/kernel.js';
import { ModelCluster } from '../helpers/model-cluster.js';
import { testNode } from '../backends/iptables/helpers.js';
import { systemClock } from '../../packages/agent/src/util/clock.js';
import { modeOptions, withSandbox } from '../backends/iptables/kernel-fixture.js';
import { holdXtablesLock } from '../helpers/xtables-lock-holder.js';

const TOOLS = ['ip', 'flock', 'iptables-legacy', 'iptables-legacy-restore', 'iptables-legacy-save'];

test(
  'legacy iptables: sync waits for the xtables lock, then fails past the limit and recovers',
  kernelOptions(TOOLS),
  async () => {
    await withSandbox(async ({ commands, lockFile }) => {
      const waits: number[] = [];
      let failures = 0;
      let partialFailures = 0;
      const metrics: ProxyMetrics = {
        ...NO_PROXY_METRICS,
        iptablesLockWait: (_f, s) => void waits.push(s),
        iptablesRestoreFailure: () => void failures++,
        iptablesPartialRestoreFailure: () => void partialFailures++,
      };
      const backend = new IptablesBackend({
        node: testNode(),
        commands,
        clock: systemClock,
        metrics,
        iptables: modeOptions('legacy', lockFile),
      });
      const model = new ModelCluster('IPv4', 'node-a');
      const slice = (ips: string[]) => ({
        metadata: { namespace: 'ns', name: 'web-1', labels: { 'kubernetes.io/service-name': 'web' } },
        addressType: 'IPv4',
        endpoints: ips.map((ip) => ({ addresses: [ip] })),
        ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
      });
      model.upsertService({
        metadata: { namespace: 'ns', name: 'web' },
        spec: { clusterIP: '198.18.100.10', ports: [{ name: 'http', port: 80, protocol: 'TCP' }] },
      });
      model.upsertSlice(slice(['198.19.0.10']));
      const sync = (full: boolean) => {
        const { snapshot, changedServices } = model.checkout();
        return backend.sync(snapshot, { full, changedServices });
      };
      const saveNat = async () => (await commands.run('iptables-legacy-save', ['-t', 'nat'])).stdout;

      // 1. Held for 3 s: the sync waits, then succeeds; the wait is reported.
      const holder = await holdXtablesLock(lockFile, 3);
      try {
        await sync(true);
      } finally {
        await holder.release();
      }
      assert.equal(waits.length, 1);
      assert.ok((waits[0] ?? 0) > 1, `reported lock wait ${waits[0]} s while the lock was held ~3 s`);
      assert.match(await saveNat(), /--to-destination 198\.19\.0\.10:8080/);

      // 2. Held past the 5 s limit: the (partial) sync fails and is counted.
      model.upsertSlice(slice(['198.19.0.11']));
      const blocker = await holdXtablesLock(lockFile, 60);
      try {
        await assert.rejects(sync(false), /lock/);
      } finally {
        await blocker.release();
      }
      assert.equal(failures, 1);
      assert.equal(partialFailures, 1);
      assert.doesNotMatch(await saveNat(), /198\.19\.0\.11/);

      // 3. Lock free: the next attempt is a full sync and succeeds.
      await sync(false);
      assert.equal(backend.lastSyncStats?.full, true);
      assert.equal(failures, 1);
      const nat = await saveNat();
      assert.match(nat, /--to-destination 198\.19\.0\.11:8080/);
      assert.doesNotMatch(nat, /198\.19\.0\.10:8080/);
    });
  },
);
