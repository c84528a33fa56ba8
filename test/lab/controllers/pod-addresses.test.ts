// A Pod's address stays taken until its sandbox is gone, not just its API object: a Pod deleted with grace 0
// leaves the store at once while the lab's kubelet still tears its namespace down, and a new Pod given the same
// address meanwhile would share the node's bridge with it (each answering the other's traffic). Found by the
// soak, whose fresh workload got the addresses of the last one's pods still being removed.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { defaultNodes, startApiServer, type ApiServer } from '../../../packages/lab/src/apiserver/index.js';
import { child, str } from '../../../packages/lab/src/apiserver/json.js';
import { resourceByKind } from '../../../packages/lab/src/apiserver/resources.js';
import type { PodLifecycle } from '../../../packages/lab/src/controllers/pod-lifecycle.js';

const POD = resourceByKind('Pod');

function pod(name: string): object {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default' },
    spec: { containers: [{ name: 'c', image: 'x' }] },
  };
}

/** f()'s first defined value: checked now and after each change to the server's store (10 s at most). */
function until<T>(server: ApiServer, what: string, f: () => T | undefined): Promise<T> {
  return new Promise((resolve, reject) => {
    const check = (): boolean => {
      const v = f();
      if (v === undefined) return false;
      done();
      resolve(v);
      return true;
    };
    const timer = setTimeout(() => {
      done();
      reject(new Error(`${what}: not within 10 s`));
    }, 10_000); // a deadline for a clear failure, not a wait
    const unsubscribe = server.store.subscribe(() => void check());
    const done = (): void => {
      clearTimeout(timer);
      unsubscribe();
    };
    check();
  });
}

describe('pod addresses', () => {
  let server: ApiServer | undefined;
  after(async () => server?.stop());

  test('an address is reused only after the deleted Pod has stopped', async () => {
    const pendingStops: (() => void)[] = [];
    let stopAsked: () => void = () => undefined;
    const asked = new Promise<void>((resolve) => (stopAsked = resolve));
    let firstStarted: () => void = () => undefined;
    const started = new Promise<void>((resolve) => (firstStarted = resolve));
    const lifecycle: PodLifecycle = {
      start: async () => firstStarted(),
      // The sandbox teardown takes as long as the test says.
      stop: () =>
        new Promise<void>((resolve) => {
          pendingStops.push(resolve);
          stopAsked();
        }),
    };
    server = await startApiServer({ nodes: defaultNodes(1), podLifecycle: lifecycle, tls: false });
    const s = server;
    const ipOf = (name: string): string | undefined =>
      str(child(s.store.get(POD, 'default', name), 'status'), 'podIP');
    assert.ok(s.registry.create(POD, 'default', pod('first')).ok);
    const first = await until(s, 'first pod address', () => ipOf('first'));
    await started; // the kubelet runs it: its deletion is a stop to wait for

    assert.ok(s.registry.delete(POD, 'default', 'first', { gracePeriodSeconds: 0 }).ok);
    await until(s, 'first pod gone from the store', () =>
      s.store.get(POD, 'default', 'first') ? undefined : true,
    );
    await asked;
    await s.idle();
    assert.equal(pendingStops.length, 1, 'the lab kubelet was asked to stop it, and that is still running');

    assert.ok(s.registry.create(POD, 'default', pod('second')).ok);
    const second = await until(s, 'second pod address', () => ipOf('second'));
    assert.notEqual(second, first, 'the address of a Pod still stopping is not given out');

    pendingStops[0]?.();
    await s.idle();
    assert.ok(s.registry.create(POD, 'default', pod('third')).ok);
    const third = await until(s, 'third pod address', () => ipOf('third'));
    assert.notEqual(third, first, 'even once stopped, a freed address is not handed out again at once');
  });

  test('addresses go round robin, as host-local IPAM: a freed one comes back only when the range wraps', async () => {
    const lifecycle: PodLifecycle = { start: async () => undefined, stop: async () => undefined };
    const s = await startApiServer({ nodes: defaultNodes(1), podLifecycle: lifecycle, tls: false });
    try {
      const ipOf = (name: string): string | undefined =>
        str(child(s.store.get(POD, 'default', name), 'status'), 'podIP');
      const last = (ip: string): number => Number(ip.split('.').at(-1));
      const started = async (name: string): Promise<number> => {
        assert.ok(s.registry.create(POD, 'default', pod(name)).ok);
        return last(await until(s, name, () => ipOf(name)));
      };
      const gone = async (name: string): Promise<void> => {
        assert.ok(s.registry.delete(POD, 'default', name, { gracePeriodSeconds: 0 }).ok);
        await until(s, `${name} gone`, () => (s.store.get(POD, 'default', name) ? undefined : true));
        await s.idle();
      };
      assert.equal(await started('a'), 2, "the first pod of the node's /24 gets .2 (.1 is the gateway)");
      await gone('a');
      // A rollout's replacement, started once the old pod is gone: the proxies may still route to the old
      // address until their next sync, so the new pod must not be there.
      assert.equal(await started('b'), 3, 'the next address, not the one just freed');
      const seen: number[] = [];
      for (let i = 4; i <= 254; i++) {
        seen.push(await started(`p${i}`));
        await gone(`p${i}`);
      }
      assert.deepEqual(
        seen,
        Array.from({ length: 251 }, (_, k) => k + 4),
        '.4 … .254, in turn',
      );
      assert.equal(await started('wrapped'), 2, 'past .254 the range wraps to .2');
      assert.equal(await started('skips'), 4, ".3 is b's, still in use: skipped");
    } finally {
      await s.stop();
    }
  });
});
