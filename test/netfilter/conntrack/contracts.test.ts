// The reconciler fits the seam the proxier calls (src/sync/proxier.ts ConntrackSink); a mismatch fails type-checking.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ConntrackSink } from '../../../packages/agent/src/sync/proxier.js';
import { ConntrackReconciler } from '../../../packages/agent/src/netfilter/conntrack/executor.js';
import { SILENT_LOGGER } from '../../../packages/agent/src/util/logger.js';
import { FakeClock } from '../../../packages/agent/src/util/clock.js';

test('ConntrackReconciler is a ConntrackSink and keeps the last pass', async () => {
  const reconciler = new ConntrackReconciler({
    runner: { run: async () => ({ code: 0, stdout: '', stderr: '' }) },
    clock: new FakeClock(),
    logger: SILENT_LOGGER,
  });
  const sink: ConntrackSink = reconciler;
  await sink.reconcile('IPv6', new Map(), new Map());
  assert.equal(reconciler.lastResult?.family, 'IPv6');
  assert.equal(reconciler.lastResult?.deleted, 0);
});
