// The reconciler fits the seam the proxier calls (src/sync/proxier.ts ConntrackSink); a mismatch fails type-checking.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ConntrackSink } from '../../../packages/agent/src/sync/proxier.js';
import { ConntrackReconciler } from '../../../packages/agent/src/netfilter/conntrack/executor.js';
import { FakeConntrack } from '../../../packages/agent/src/netfilter/conntrack/fake.js';
import { SILENT_LOGGER } from '../../../packages/agent/src/util/logger.js';
import { FakeClock } from '../../../packages/agent/src/util/clock.js';
import { endpoint, servicePort } from './fixtures.js';

test('ConntrackReconciler is a ConntrackSink and keeps the last pass', async () => {
  const fake = new FakeConntrack();
  const reconciler = new ConntrackReconciler({ runner: fake, clock: new FakeClock(), logger: SILENT_LOGGER });
  const sink: ConntrackSink = reconciler;

  await sink.reconcile('IPv6', new Map(), new Map(), []);
  assert.equal(reconciler.lastResult?.family, 'IPv6');
  assert.equal(reconciler.lastResult?.deleted, 0);

  const dns = servicePort('kube-system', 'dns', { clusterIP: '198.18.100.10', port: 53 });
  fake.addUdpFlow({
    origSrc: '198.18.0.1',
    origDst: '198.18.100.10',
    origSport: 40000,
    origDport: 53,
    replySrc: '198.18.1.7',
    replySport: 5353,
  });
  await sink.reconcile(
    'IPv4',
    new Map([[dns.key, dns]]),
    new Map([[dns.key, [endpoint('198.18.1.2', 5353)]]]),
    [],
  );
  assert.equal(reconciler.lastResult?.family, 'IPv4');
  assert.equal(reconciler.lastResult?.deleted, 1);
  assert.deepEqual(fake.flows(), []);
});
