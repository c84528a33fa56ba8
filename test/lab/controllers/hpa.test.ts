// The HorizontalPodAutoscaler: the recommendation as upstream's controller computes it (tolerance, unready Pods,
// stabilization windows, rate policies), then the controller in process on a FakeClock with usage from a test
// metrics source: a 60 s scale-down window keeps a Deployment from shrinking within the window and lets it
// shrink after; a Pods policy of 1 per 60 s holds a scale-up to one Pod a minute.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { ApiServer } from '../../../packages/lab/src/apiserver/index.js';
import type { JsonObject } from '../../../packages/lab/src/apiserver/json.js';
import { resourceByKind } from '../../../packages/lab/src/apiserver/resources.js';
import {
  behaviorOf,
  limitRate,
  recordScale,
  resourceReplicas,
  ScalingHistory,
  scaleUpLimit,
  stabilize,
  type PodSample,
} from '../../../packages/lab/src/controllers/hpa-recommendation.js';
import { DEPLOY, webDeployment, withControlPlane } from './fixtures.js';

const HPA = resourceByKind('HorizontalPodAutoscaler');

const pod = (name: string, usage: number | undefined, extra: Partial<PodSample> = {}): PodSample => ({
  name,
  ignored: false,
  unready: false,
  usage,
  request: 100,
  ...extra,
});
const UTIL_50 = { type: 'Utilization', averageUtilization: 50 } as const;

describe('the replica calculator', () => {
  test('ceil(pods × usage / target), nothing within the 10% tolerance', () => {
    const r = resourceReplicas(3, [pod('a', 100), pod('b', 100), pod('c', 100)], UTIL_50);
    assert.deepEqual(r, { ok: true, value: { replicas: 6, utilization: 100, averageValue: 100 } });
    const near = resourceReplicas(3, [pod('a', 52), pod('b', 54), pod('c', 50)], UTIL_50);
    assert.equal(near.ok && near.value.replicas, 3);
    const down = resourceReplicas(4, [pod('a', 10), pod('b', 10), pod('c', 10), pod('d', 10)], UTIL_50);
    assert.equal(down.ok && down.value.replicas, 1);
  });

  test('on a scale-up unready Pods count as idle; terminating ones not at all; no request is an error', () => {
    // 2 ready at 100%: ratio 2; with the unready one at 0%, 200/300 of requests → 66% / 50% = 1.32 → ceil(3.96).
    const r = resourceReplicas(3, [pod('a', 100), pod('b', 100), pod('c', 90, { unready: true })], UTIL_50);
    assert.equal(r.ok && r.value.replicas, 4);
    const gone = resourceReplicas(3, [pod('a', 100), pod('b', 100), pod('c', 0, { ignored: true })], UTIL_50);
    assert.equal(gone.ok && gone.value.replicas, 4);
    assert.equal(resourceReplicas(1, [pod('a', 10, { request: undefined })], UTIL_50).ok, false);
    assert.equal(resourceReplicas(1, [], UTIL_50).ok, false);
    const avg = resourceReplicas(2, [pod('a', 300), pod('b', 300)], {
      type: 'AverageValue',
      averageValue: 200,
    });
    assert.equal(avg.ok && avg.value.replicas, 3);
  });
});

describe('behavior: stabilization and rate', () => {
  const behavior = behaviorOf({ behavior: { scaleDown: { stabilizationWindowSeconds: 60 } } });
  assert.ok(behavior);

  test('defaults: scale-up window 0 with Pods 4 / Percent 100 per 15 s, scale-down the controller window', () => {
    assert.deepEqual(behaviorOf({}), undefined);
    const b = behaviorOf({ behavior: {} }, 300);
    assert.equal(b?.scaleUp.stabilizationWindowSeconds, 0);
    assert.equal(b?.scaleDown.stabilizationWindowSeconds, 300);
    assert.deepEqual(
      b?.scaleUp.policies.map((p) => `${p.type} ${p.value}/${p.periodSeconds}s`),
      ['Pods 4/15s', 'Percent 100/15s'],
    );
  });

  test('a 60 s scale-down window holds the highest recent recommendation, and lets go after it', () => {
    const h = new ScalingHistory();
    assert.equal(stabilize(h, 0, 4, 4, behavior).replicas, 4);
    for (const t of [15, 30, 45, 59]) {
      const s = stabilize(h, t * 1000, 4, 1, behavior);
      assert.equal(s.replicas, 4, `at ${t} s`);
      assert.equal(s.reason, 'ScaleDownStabilized');
    }
    // The 4 of t=0 is now 60 s old: out of the window (upstream keeps only those strictly after the cutoff).
    assert.equal(stabilize(h, 60_000, 4, 1, behavior).replicas, 1);
  });

  test('Pods 1 per 60 s: one more Pod a minute, counted from the scale events of the period', () => {
    const slow = behaviorOf({
      behavior: { scaleUp: { policies: [{ type: 'Pods', value: 1, periodSeconds: 60 }] } },
    });
    assert.ok(slow);
    const h = new ScalingHistory();
    const bounds = { min: 1, max: 10 };
    const first = limitRate(h, 0, 2, 8, bounds, slow);
    assert.deepEqual([first.replicas, first.reason], [3, 'ScaleUpLimit']);
    recordScale(h, slow, 0, 2, 3);
    assert.equal(scaleUpLimit(h, 30_000, 3, slow.scaleUp), 3);
    assert.equal(limitRate(h, 30_000, 3, 8, bounds, slow).replicas, 3);
    assert.equal(limitRate(h, 61_000, 3, 8, bounds, slow).replicas, 4);
    // Within the rate, maxReplicas still bounds it.
    assert.deepEqual(limitRate(new ScalingHistory(), 0, 9, 20, bounds, slow).reason, 'TooManyReplicas');
  });

  test('selectPolicy Min takes the smaller change, Disabled none', () => {
    const rules = (selectPolicy: string): ReturnType<typeof behaviorOf> =>
      behaviorOf({
        behavior: {
          scaleUp: {
            selectPolicy,
            policies: [
              { type: 'Pods', value: 1, periodSeconds: 60 },
              { type: 'Percent', value: 100, periodSeconds: 60 },
            ],
          },
        },
      });
    const h = new ScalingHistory();
    assert.equal(scaleUpLimit(h, 0, 4, rules('Max')?.scaleUp ?? assert.fail()), 8);
    assert.equal(scaleUpLimit(h, 0, 4, rules('Min')?.scaleUp ?? assert.fail()), 5);
    assert.equal(scaleUpLimit(h, 0, 4, rules('Disabled')?.scaleUp ?? assert.fail()), 4);
  });
});

// --- the controller against a Deployment ---

/** The HPA's target: Pods that request 100m of CPU, so that usage reads as utilization. */
const web = (replicas: number): JsonObject =>
  webDeployment(replicas, { container: { resources: { requests: { cpu: '100m' } } } });

function hpa(behavior: JsonObject): JsonObject {
  return {
    metadata: { name: 'web' },
    spec: {
      scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'web' },
      minReplicas: 1,
      maxReplicas: 10,
      metrics: [
        {
          type: 'Resource',
          resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 50 } },
        },
      ],
      behavior,
    },
  };
}

function withLab(
  fn: (s: ApiServer, tick: () => Promise<number>, setCpu: (m: number) => void) => Promise<void>,
): Promise<void> {
  let cpu = 0;
  const options = { podMetrics: () => ({ c: { cpu, memory: 0 } }), hpaSyncPeriodMs: 15_000 };
  return withControlPlane(options, (s, clock) => {
    // One sync period: the HPA evaluates, the Deployment and its Pods follow; its size after.
    const tick = async (): Promise<number> => {
      clock.advance(15_000);
      await s.idle();
      return ((s.store.get(DEPLOY, 'default', 'web') as JsonObject).spec as JsonObject).replicas as number;
    };
    return fn(s, tick, (m) => (cpu = m));
  });
}

describe('the HorizontalPodAutoscaler controller', () => {
  test('a 60 s scale-down stabilization window keeps a Deployment from shrinking within the window', () =>
    withLab(async (s, tick, setCpu) => {
      assert.ok(s.registry.create(DEPLOY, 'default', web(2)).ok);
      assert.ok(s.registry.create(HPA, 'default', hpa({ scaleDown: { stabilizationWindowSeconds: 60 } })).ok);
      await s.idle();
      setCpu(100); // 200% of the target
      assert.equal(await tick(), 4); // t=15 s
      setCpu(10); // 20%: one Pod would do
      for (const t of [30, 45, 60])
        assert.equal(await tick(), 4, `still 4 at ${t} s: 4 was recommended at 15 s`);
      assert.equal(await tick(), 1, 'at 75 s the 4 of 15 s has left the window');
      const status = (s.store.get(HPA, 'default', 'web') as JsonObject).status as JsonObject;
      assert.deepEqual([status.currentReplicas, status.desiredReplicas], [4, 1]);
      assert.equal(typeof status.lastScaleTime, 'string');
      assert.deepEqual(status.currentMetrics, [
        {
          type: 'Resource',
          resource: { name: 'cpu', current: { averageUtilization: 10, averageValue: '10m' } },
        },
      ]);
    }));

  test('a new HPA counts the current size as its first recommendation: no shrinking before a window has passed', () =>
    withLab(async (s, tick, setCpu) => {
      assert.ok(s.registry.create(DEPLOY, 'default', web(4)).ok);
      setCpu(10); // 20% from the start: one Pod would do
      assert.ok(s.registry.create(HPA, 'default', hpa({ scaleDown: { stabilizationWindowSeconds: 60 } })).ok);
      await s.idle();
      for (const t of [15, 30, 45]) assert.equal(await tick(), 4, `still 4 at ${t} s`);
      const able = (
        ((s.store.get(HPA, 'default', 'web') as JsonObject).status as JsonObject).conditions as JsonObject[]
      ).find((c) => c.type === 'AbleToScale');
      assert.equal(able?.reason, 'ScaleDownStabilized');
      assert.equal(
        await tick(),
        4,
        'at 60 s the creation-time 4 is still in the window (strictly after the cutoff)',
      );
      assert.equal(await tick(), 1, 'at 75 s it has left');
    }));

  test('without the window (0 s) the same Deployment shrinks at the next sync', () =>
    withLab(async (s, tick, setCpu) => {
      assert.ok(s.registry.create(DEPLOY, 'default', web(2)).ok);
      assert.ok(s.registry.create(HPA, 'default', hpa({ scaleDown: { stabilizationWindowSeconds: 0 } })).ok);
      await s.idle();
      setCpu(100);
      assert.equal(await tick(), 4);
      setCpu(10);
      assert.equal(await tick(), 1);
    }));

  test('a scale-up policy of 1 Pod per 60 s adds one Pod a minute', () =>
    withLab(async (s, tick, setCpu) => {
      assert.ok(s.registry.create(DEPLOY, 'default', web(2)).ok);
      const up = { scaleUp: { policies: [{ type: 'Pods', value: 1, periodSeconds: 60 }] } };
      assert.ok(s.registry.create(HPA, 'default', hpa(up)).ok);
      await s.idle();
      setCpu(200); // 400%: far more wanted
      const sizes: number[] = [];
      for (let i = 0; i < 9; i++) sizes.push(await tick());
      // 15 s: 3; the next scale-up waits until the first has left the 60 s period (75 s), and so on.
      assert.deepEqual(sizes, [3, 3, 3, 3, 4, 4, 4, 4, 5]);
      const limited = ((s.store.get(HPA, 'default', 'web') as JsonObject).status as JsonObject)
        .conditions as JsonObject[];
      assert.equal(limited.find((c) => c.type === 'ScalingLimited')?.reason, 'ScaleUpLimit');
    }));
});
