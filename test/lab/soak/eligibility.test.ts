// The soak's ground truth: which pods may answer for a Service at each moment, from EndpointSlice events.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { EligibilityTimeline, sliceView } from '../../../packages/lab/src/soak/eligibility.js';

function slice(
  name: string,
  service: string,
  endpoints: { pod: string; ready?: boolean; serving?: boolean; terminating?: boolean }[],
  triggeredAt?: number,
): object {
  return {
    metadata: {
      name,
      namespace: 'soak',
      labels: { 'kubernetes.io/service-name': service },
      ...(triggeredAt !== undefined
        ? {
            annotations: {
              'endpoints.kubernetes.io/last-change-trigger-time': new Date(triggeredAt).toISOString(),
            },
          }
        : {}),
    },
    endpoints: endpoints.map((e) => ({
      addresses: ['198.18.10.2'],
      targetRef: { kind: 'Pod', name: e.pod },
      conditions: {
        ...(e.ready !== undefined ? { ready: e.ready } : {}),
        ...(e.serving !== undefined ? { serving: e.serving } : {}),
        ...(e.terminating !== undefined ? { terminating: e.terminating } : {}),
      },
    })),
  };
}

/** Endpoints for `pods`, each ready. */
function ready(...pods: string[]): { pod: string; ready: boolean }[] {
  return pods.map((pod) => ({ pod, ready: true }));
}

describe('soak eligibility', () => {
  test('ready or serving pods are eligible; ready counts exclude terminating ones', () => {
    const v = sliceView(
      slice('s1', 'web', [
        ...ready('a'),
        { pod: 'b', ready: false, serving: true, terminating: true },
        { pod: 'c', ready: false, serving: false },
        { pod: 'd' }, // conditions absent: ready (discovery/v1)
      ]),
    );
    assert.deepEqual(v, { service: 'web', eligible: ['a', 'b', 'd'], ready: ['a', 'd'] });
    assert.equal(
      sliceView({ metadata: { name: 'x' } }),
      undefined,
      'no service-name label: not a slice of ours',
    );
  });

  test('a pod answering while it was eligible at some moment of the request is right, else wrong', () => {
    const t = new EligibilityTimeline();
    t.observe('ADDED', slice('s1', 'web', ready('a', 'b')), 1000);
    t.observe('MODIFIED', slice('s1', 'web', [...ready('a'), { pod: 'b', ready: false }]), 2000);
    t.observe('MODIFIED', slice('s1', 'web', ready('a', 'b')), 4000);
    assert.equal(t.eligibleDuring('web', 'b', 1500, 1600), true);
    assert.equal(t.eligibleDuring('web', 'b', 2500, 3000), false, 'unready all through the request');
    assert.equal(t.eligibleDuring('web', 'b', 1900, 2100), true, 'still eligible when the request began');
    assert.equal(t.eligibleDuring('web', 'b', 3900, 4100), true, 'eligible again before it ended');
    assert.equal(t.eligibleDuring('web', 'z', 1500, 1600), false, 'never an endpoint');
    assert.equal(t.eligibleDuring('other', 'a', 1500, 1600), false, 'another Service');
    assert.equal(t.ineligibleFor('web', 'b', 2700), 700, 'out of the endpoints since 2000');
    assert.equal(t.ineligibleFor('web', 'a', 2700), undefined, 'still eligible');
    assert.equal(t.ineligibleFor('web', 'z', 2700), undefined, 'never was');
  });

  test('Services are the union of their slices; a deleted slice takes its pods away', () => {
    const t = new EligibilityTimeline();
    t.observe('ADDED', slice('s1', 'web', ready('a')), 1000);
    t.observe('ADDED', slice('s2', 'web', ready('b')), 1100);
    assert.deepEqual([...t.eligibleNow('web')].sort(), ['a', 'b']);
    t.observe('DELETED', slice('s2', 'web', []), 1200);
    assert.deepEqual([...t.eligibleNow('web')], ['a']);
  });

  test('alwaysReady: at least one ready endpoint all through the window', () => {
    const t = new EligibilityTimeline();
    t.observe('ADDED', slice('s1', 'web', ready('a')), 1000);
    t.observe(
      'MODIFIED',
      slice('s1', 'web', [{ pod: 'a', ready: false, serving: true, terminating: true }]),
      3000,
    );
    t.observe('MODIFIED', slice('s1', 'web', ready('b')), 3500);
    assert.equal(t.alwaysReady('web', 1500, 2500), true);
    assert.equal(t.alwaysReady('web', 1500, 4000), false, 'only a terminating endpoint from 3000 to 3500');
    assert.equal(t.alwaysReady('web', 3600, 5000), true);
    assert.equal(t.alwaysReady('web', 500, 900), false, 'nothing known before the first slice');
  });

  test("a pod is eligible from the slice's trigger time when the soak's watch delivered the change later", () => {
    // The soak's event loop was busy: the write adding c (triggered at 5.2 s) reached it at 6.5 s, and removed b
    // in the same write. A proxy had c by 5.6 s: c answering at 5.8 s was right. b stays eligible until 6.5 s.
    const base = Date.UTC(2026, 11, 2);
    const t = new EligibilityTimeline();
    t.observe('ADDED', slice('s1', 'web', ready('a', 'b')), base + 1000);
    t.observe('MODIFIED', slice('s1', 'web', ready('a', 'c'), base + 5200), base + 6500);
    assert.equal(t.eligibleDuring('web', 'c', base + 5700, base + 5800), true, 'c, after its trigger');
    assert.equal(t.eligibleDuring('web', 'c', base + 5000, base + 5100), false, 'c, before it');
    assert.equal(t.eligibleDuring('web', 'b', base + 6000, base + 6100), true, 'b, until the soak saw it go');
    assert.equal(t.eligibleDuring('web', 'b', base + 6600, base + 6700), false);
    assert.equal(t.eligibleAfter('web', 'c', base + 5100), 100, 'c became eligible 100 ms after 5.1 s');
    assert.equal(t.alwaysReady('web', base + 2000, base + 7000), true);
    // A trigger time before the previous state (a slow controller) never reorders the history.
    t.observe('MODIFIED', slice('s1', 'web', ready('a', 'c', 'd'), base), base + 8000);
    assert.equal(t.eligibleDuring('web', 'd', base + 6000, base + 6400), false, 'd, before the last state');
    assert.equal(t.eligibleDuring('web', 'd', base + 6600, base + 6700), true, 'd, from the last state on');
  });
});
