// A Deployment's rollout: the arithmetic as upstream's controller does it (rounding of maxSurge and maxUnavailable,
// the new ReplicaSet's growth, the old ones' shrinking), then the controllers in process on a FakeClock with Pods
// whose readiness the test releases one by one: a maxSurge 1 / maxUnavailable 0 rollout never has more than
// replicas + 1 Pods nor fewer than replicas ready, and ends with the new ReplicaSet at full size and revision 2.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { ApiServer } from '../../../packages/lab/src/apiserver/index.js';
import type { JsonObject } from '../../../packages/lab/src/apiserver/json.js';
import { resourceByKind } from '../../../packages/lab/src/apiserver/resources.js';
import type { PodLifecycle } from '../../../packages/lab/src/controllers/pod-lifecycle.js';
import {
  newReplicaSetSize,
  oldReplicaSetSizes,
  rollingBounds,
  scaledValue,
  type ReplicaSetCount,
} from '../../../packages/lab/src/controllers/rollout.js';
import { DEPLOY, webDeployment, withControlPlane } from './fixtures.js';

const RS = resourceByKind('ReplicaSet');
const POD = resourceByKind('Pod');

describe('rollout arithmetic', () => {
  test('maxSurge rounds up, maxUnavailable down; 25% each by default; never both zero', () => {
    assert.deepEqual(rollingBounds({}, 10), { maxSurge: 3, maxUnavailable: 2 });
    assert.deepEqual(rollingBounds({}, 1), { maxSurge: 1, maxUnavailable: 0 });
    assert.deepEqual(rollingBounds({ maxSurge: '0%', maxUnavailable: 0 }, 4), {
      maxSurge: 0,
      maxUnavailable: 1,
    });
    assert.deepEqual(rollingBounds({ maxSurge: 1, maxUnavailable: 0 }, 3), {
      maxSurge: 1,
      maxUnavailable: 0,
    });
    assert.deepEqual(rollingBounds({ maxSurge: '50%', maxUnavailable: 5 }, 3), {
      maxSurge: 2,
      maxUnavailable: 3,
    });
    assert.equal(scaledValue('33%', 10, true), 4);
    assert.equal(scaledValue('33%', 10, false), 3);
    assert.equal(scaledValue('2', 10, false), 2);
    assert.equal(scaledValue('x%', 10, false), undefined);
  });

  test('maxSurge 1 / maxUnavailable 0: one new Pod at a time, one old one as each becomes available', () => {
    const replicas = 3;
    const bounds = rollingBounds({ maxSurge: 1, maxUnavailable: 0 }, replicas);
    let newRS: ReplicaSetCount = { name: 'new', replicas: 0, available: 0 };
    let oldRS: ReplicaSetCount = { name: 'old', replicas: 3, available: 3 };
    const steps: string[] = [];
    for (let i = 0; i < 10 && !(newRS.replicas === 3 && oldRS.replicas === 0); i++) {
      const grown = newReplicaSetSize(replicas, bounds, newRS, [newRS, oldRS]);
      if (grown !== newRS.replicas) {
        newRS = { ...newRS, replicas: grown };
        steps.push(`new ${grown}`);
      } else {
        const shrunk = oldReplicaSetSizes(replicas, bounds, newRS, [oldRS]).get('old');
        if (shrunk !== undefined) {
          oldRS = { ...oldRS, replicas: shrunk, available: Math.min(oldRS.available, shrunk) };
          steps.push(`old ${shrunk}`);
        }
      }
      assert.ok(newRS.replicas + oldRS.replicas <= replicas + 1, steps.join(', '));
      assert.ok(newRS.available + oldRS.available >= replicas, steps.join(', '));
      // Nothing moves until the new Pods are available.
      assert.equal(oldReplicaSetSizes(replicas, bounds, newRS, [oldRS]).size, 0);
      newRS = { ...newRS, available: newRS.replicas };
    }
    assert.deepEqual(steps, ['new 1', 'old 2', 'new 2', 'old 1', 'new 3', 'old 0']);
  });

  test('old Pods that are not available go first, within what the budget leaves', () => {
    const bounds = rollingBounds({ maxSurge: 1, maxUnavailable: 1 }, 3);
    const sizes = oldReplicaSetSizes(3, bounds, { name: 'new', replicas: 1, available: 0 }, [
      { name: 'old', replicas: 3, available: 1 },
    ]);
    // 4 Pods, at least 2 available, 1 new one unavailable: one unhealthy old Pod may go; no available one.
    assert.deepEqual([...sizes], [['old', 2]]);
    // The oldest ReplicaSet is emptied first.
    const two = oldReplicaSetSizes(
      4,
      rollingBounds({ maxSurge: 0, maxUnavailable: 2 }, 4),
      { name: 'n', replicas: 0, available: 0 },
      [
        { name: 'a', replicas: 1, available: 1 },
        { name: 'b', replicas: 3, available: 3 },
      ],
    );
    assert.deepEqual(
      [...two],
      [
        ['a', 0],
        ['b', 2],
      ],
    );
    // A larger new ReplicaSet shrinks to the Deployment's size.
    assert.equal(newReplicaSetSize(2, bounds, { name: 'new', replicas: 5, available: 5 }, []), 2);
  });
});

/** Pods start when the test says: each start waits in line until released. */
function gatedLifecycle(): { lifecycle: PodLifecycle; release(): boolean; waiting(): number } {
  const queue: (() => void)[] = [];
  return {
    lifecycle: {
      start: () => new Promise<void>((resolve) => queue.push(resolve)),
      stop: () => Promise.resolve(),
    },
    release: () => {
      const next = queue.shift();
      next?.();
      return next !== undefined;
    },
    waiting: () => queue.length,
  };
}

const RECREATE: JsonObject = { type: 'Recreate' };
const ROLLING: JsonObject = { type: 'RollingUpdate', rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } };
const deployment = (annotations: Record<string, string> = {}, strategy = ROLLING): JsonObject =>
  webDeployment(3, { strategy, annotations });

/** The revision the Deployment controller wrote on a Deployment or ReplicaSet. */
const revisionOf = (o: JsonObject): string | undefined =>
  ((o.metadata as JsonObject).annotations as Record<string, string>)['deployment.kubernetes.io/revision'];

const isReady = (p: JsonObject): boolean =>
  ((p.status as JsonObject | undefined)?.conditions as JsonObject[] | undefined)?.some(
    (c) => c.type === 'Ready' && c.status === 'True',
  ) ?? false;

/** The controllers quiet, after a released start's promise callbacks have run. */
async function settle(s: ApiServer): Promise<void> {
  await s.idle();
  await new Promise((resolve) => setImmediate(resolve));
  await s.idle();
}

/** An API server whose Pods start only when the test releases them, with Deployment `web` created and all up. */
async function withRunningDeployment(
  created: JsonObject,
  fn: (s: ApiServer, gate: ReturnType<typeof gatedLifecycle>) => Promise<void>,
): Promise<void> {
  const gate = gatedLifecycle();
  await withControlPlane({ podLifecycle: gate.lifecycle }, async (s) => {
    assert.ok(s.registry.create(DEPLOY, 'default', created).ok);
    await settle(s);
    while (gate.release()) await settle(s);
    await fn(s, gate);
  });
}

/** Deployment `web` given a new spec (a new template starts a rollout), the controllers settled after. */
async function updateSpec(s: ApiServer, next: JsonObject): Promise<void> {
  const current = s.store.get(DEPLOY, 'default', 'web') as JsonObject;
  assert.ok(s.registry.update(DEPLOY, 'default', 'web', { ...current, spec: next.spec }).ok);
  await settle(s);
}

describe('the Deployment and ReplicaSet controllers', () => {
  test('a maxSurge 1 / maxUnavailable 0 rollout keeps every Pod it needs and ends at revision 2', () =>
    withRunningDeployment(deployment(), async (s, gate) => {
      const pods = (): JsonObject[] =>
        s.store.list(POD, 'default').filter((p) => !(p.metadata as JsonObject).deletionTimestamp);
      assert.equal(pods().filter(isReady).length, 3);
      const first = s.store.list(RS, 'default');
      assert.equal(first.length, 1);

      // `kubectl rollout restart`: a new template annotation.
      await updateSpec(s, deployment({ 'kubectl.kubernetes.io/restartedAt': '2025-03-01T12:01:00Z' }));
      let released = 0;
      for (;;) {
        assert.ok(pods().length <= 4, `at most replicas + maxSurge Pods, got ${pods().length}`);
        assert.ok(pods().filter(isReady).length >= 3, 'never fewer than replicas - maxUnavailable ready');
        if (!gate.release()) break;
        released++;
        await settle(s);
      }
      assert.equal(released, 3);
      const sets = s.store.list(RS, 'default');
      assert.equal(sets.length, 2);
      const byRevision = new Map(sets.map((rs) => [revisionOf(rs), rs]));
      assert.equal((byRevision.get('1')?.spec as JsonObject).replicas, 0);
      assert.equal((byRevision.get('2')?.spec as JsonObject).replicas, 3);
      const d = s.store.get(DEPLOY, 'default', 'web') as JsonObject;
      assert.equal(revisionOf(d), '2');
      const status = d.status as JsonObject;
      assert.deepEqual([status.replicas, status.updatedReplicas, status.availableReplicas], [3, 3, 3]);
      const progressing = (status.conditions as JsonObject[]).find((c) => c.type === 'Progressing');
      assert.equal(progressing?.reason, 'NewReplicaSetAvailable');
      // Every Pod is the new ReplicaSet's, and carries its hash.
      const newName = (byRevision.get('2')?.metadata as JsonObject).name as string;
      for (const p of pods()) {
        const meta = p.metadata as JsonObject;
        assert.equal((meta.ownerReferences as JsonObject[])[0]?.name, newName);
        assert.equal(`web-${(meta.labels as Record<string, string>)['pod-template-hash']}`, newName);
      }
    }));

  test('Recreate: the old Pods go before the new ReplicaSet grows', () =>
    withRunningDeployment(deployment({}, RECREATE), async (s, gate) => {
      await updateSpec(s, deployment({ v: '2' }, RECREATE));
      const sets = s.store.list(RS, 'default').map((rs) => (rs.spec as JsonObject).replicas);
      assert.deepEqual(sets.sort(), [0, 3]);
      // The old Pods went at once (stop resolves), and the new ones wait to start: none is ready in between.
      assert.equal(s.store.list(POD, 'default').filter(isReady).length, 0);
      assert.equal(gate.waiting(), 3);
    }));
});
