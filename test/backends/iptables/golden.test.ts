// Upstream's whole-ruleset iptables tests (vectors in reference/vectors/ipt-*.json): the vector's objects go
// through the real model (change trackers + categorizeEndpoints) into IptablesBackend on the fake iptables; the
// restore input it sends must equal upstream's expected text under upstream's canonical ordering.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { IptablesBackend } from '../../../packages/agent/src/backends/iptables/backend.js';
import { renderIptablesRestore } from '../../../packages/agent/src/backends/iptables/render-cache.js';
import { FakeIptables } from '../../../packages/agent/src/netfilter/iptables/fake.js';
import type { ProxyMetrics } from '../../../packages/agent/src/sync/metrics.js';
import { NO_PROXY_METRICS } from '../../../packages/agent/src/sync/metrics.js';
import { FakeClock } from '../../../packages/agent/src/util/clock.js';
import { canonicalRestore, loadVector, natConsistencyProblems, vectorExtras, vectorNode } from './helpers.js';
import { ModelCluster } from '../../helpers/model-cluster.js';

function countingMetrics(): ProxyMetrics & { restoreFailures: number; partialFailures: number } {
  const m = {
    ...NO_PROXY_METRICS,
    restoreFailures: 0,
    partialFailures: 0,
    iptablesRestoreFailure: () => void m.restoreFailures++,
    iptablesPartialRestoreFailure: () => void m.partialFailures++,
  };
  return m;
}

for (const file of ['ipt-TestOverallIPTablesRules.json', 'ipt-TestBadIPs.json']) {
  describe(file, () => {
    const v = loadVector(file);
    const node = vectorNode(v.proxierConfig);
    const extras = vectorExtras(v.proxierConfig);

    test('the expected text is already canonical (checks the sort helper)', () => {
      assert.equal(canonicalRestore(v.expected ?? ''), v.expected);
    });

    test('first sync through the model and the backend sends exactly the expected restore input', async () => {
      const model = new ModelCluster(v.proxierConfig.ipFamily, v.proxierConfig.nodeName);
      for (const s of v.services ?? []) model.upsertService(s);
      for (const e of v.endpointSlices ?? []) model.upsertSlice(e);
      const fake = new FakeIptables();
      const backend = new IptablesBackend({
        node,
        commands: fake,
        clock: new FakeClock(),
        iptables: { ...extras, variant: 'auto' },
      });
      const { snapshot, changedServices } = model.checkout();
      assert.deepEqual(model.skipped, []);
      await backend.sync(snapshot, { full: true, changedServices });
      assert.equal(canonicalRestore(fake.lastRestore ?? ''), v.expected);
      assert.deepEqual(natConsistencyProblems(fake.chains('IPv4', 'nat')), []);
    });

    test('renderIptablesRestore (pure) gives the same text', () => {
      const model = new ModelCluster(v.proxierConfig.ipFamily, v.proxierConfig.nodeName);
      for (const s of v.services ?? []) model.upsertService(s);
      for (const e of v.endpointSlices ?? []) model.upsertSlice(e);
      const text = renderIptablesRestore(model.checkout().snapshot, node, extras);
      assert.equal(canonicalRestore(text), v.expected);
    });
  });
}

describe('ipt-TestSyncProxyRulesRepeated.json', () => {
  const v = loadVector('ipt-TestSyncProxyRulesRepeated.json');
  const node = vectorNode(v.proxierConfig);
  const extras = vectorExtras(v.proxierConfig);

  test('every step sends the expected restore input (partial syncs, stale chains, failed partial restore)', async () => {
    const model = new ModelCluster(v.proxierConfig.ipFamily, v.proxierConfig.nodeName);
    const fake = new FakeIptables();
    const metrics = countingMetrics();
    const backend = new IptablesBackend({
      node,
      commands: fake,
      clock: new FakeClock(),
      iptables: { ...extras, variant: 'auto' },
      metrics,
    });
    let first = true;
    for (const [i, step] of (v.steps ?? []).entries()) {
      const label = `step ${i + 1}: ${step.description}`;
      for (const action of step.actions) {
        if ('addService' in action) model.upsertService(action.addService);
        else if ('deleteService' in action) model.deleteService(action.deleteService);
        else if ('addEndpointSlice' in action) model.upsertSlice(action.addEndpointSlice);
        else if ('updateEndpointSlice' in action) model.upsertSlice(action.updateEndpointSlice);
        else if ('externalRule' in action) fake.inject('IPv4', action.externalRule);
        else if ('sync' in action) {
          const { snapshot, changedServices } = model.checkout();
          const run = backend.sync(snapshot, { full: first, changedServices });
          first = false;
          if (action.expectFailure) {
            const before = { ...metrics };
            await assert.rejects(run, /partial sync/, label);
            assert.equal(metrics.restoreFailures, before.restoreFailures + 1, label);
            assert.equal(metrics.partialFailures, before.partialFailures + 1, label);
          } else {
            await run;
          }
        }
      }
      assert.equal(canonicalRestore(fake.lastRestore ?? ''), step.expected, label);
      if (step.consistencyCheck)
        assert.deepEqual(natConsistencyProblems(fake.chains('IPv4', 'nat')), [], label);
    }
    assert.equal(metrics.restoreFailures, 1);
    assert.equal(metrics.partialFailures, 1);
    // After the repair, the kernel holds no stale chain and every jump resolves.
    assert.deepEqual(natConsistencyProblems(fake.chains('IPv4', 'nat')), []);
  });
});
