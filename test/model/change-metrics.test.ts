import { test } from 'node:test';
import assert from 'node:assert/strict';
import { NO_CHANGE_METRICS, recordingChangeMetrics } from '../../packages/agent/src/model/change-metrics.js';

test('recordingChangeMetrics counts totals and keeps the last pending values', () => {
  const m = recordingChangeMetrics();
  m.serviceChange();
  m.serviceChange();
  m.servicesPending(3);
  m.servicesPending(1);
  m.endpointChange();
  m.endpointsPending(7);
  assert.equal(m.serviceChangesTotal, 2);
  assert.equal(m.serviceChangesPending, 1);
  assert.equal(m.endpointChangesTotal, 1);
  assert.equal(m.endpointChangesPending, 7);
});

test('NO_CHANGE_METRICS accepts every call', () => {
  NO_CHANGE_METRICS.serviceChange();
  NO_CHANGE_METRICS.servicesPending(1);
  NO_CHANGE_METRICS.endpointChange();
  NO_CHANGE_METRICS.endpointsPending(1);
  assert.ok(Object.isFrozen(NO_CHANGE_METRICS));
});
