import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Service } from '../../packages/agent/src/api/objects.js';
import type { ResourceSpec } from '../../packages/agent/src/kube/reflector.js';
import type { FakeObject } from './helpers/fake-apiserver.js';
import { harness, idOf, svc } from './helpers/setup.js';

const PATH = '/api/v1/services';
const SERVICES: ResourceSpec = { name: 'services', path: PATH, namespaced: true };

const keysAndRvs = (
  objs: readonly { metadata: { namespace?: string; name?: string; resourceVersion?: string } }[],
) => objs.map((o) => `${o.metadata.namespace}/${o.metadata.name} ${o.metadata.resourceVersion}`).sort();

describe('Reflector: list and watch', () => {
  test('delivers adds, updates and deletes in order; a bookmark advances the resourceVersion a reconnect resumes from', async (t) => {
    let a: FakeObject | undefined;
    let b: FakeObject | undefined;
    const h = await harness<Service>(t, SERVICES, {
      seed: (s) => {
        a = s.add(PATH, svc('a'));
        b = s.add(PATH, svc('b'));
      },
    });
    assert.ok(a && b);
    h.reflector.start();
    await h.rec.waitFor((e) => e.includes('synced'), 'synced');
    assert.deepEqual(h.rec.events, [`add ${idOf(a)}`, `add ${idOf(b)}`, 'synced']);

    await h.server.waitForWatchers(PATH, 1);
    const firstWatch = h.server.watchesOf(PATH)[0];
    assert.ok(firstWatch);
    assert.equal(
      firstWatch.query.resourceVersion,
      b.metadata.resourceVersion,
      'watch starts at the list resourceVersion',
    );
    assert.equal(firstWatch.query.allowWatchBookmarks, 'true');
    const timeout = Number(firstWatch.query.timeoutSeconds);
    assert.ok(timeout >= 300 && timeout < 600, `timeoutSeconds ${timeout} in [300, 600)`);

    const from = h.rec.events.length;
    const c = h.server.add(PATH, svc('c'));
    const a2 = h.server.update(PATH, svc('a', { spec: { clusterIP: '198.18.0.11' } }));
    const gone = h.server.remove(PATH, 'default/b');
    await h.rec.waitForCount(from, 3);
    assert.deepEqual(h.rec.since(from), [
      `add ${idOf(c)}`,
      `update ${idOf(a2)} from ${a.metadata.resourceVersion}`,
      `delete ${idOf(gone)}`,
    ]);

    // Another collection moves the global resourceVersion; only a bookmark tells our watch about it.
    h.server.add('/api/v1/namespaces', { metadata: { name: 'elsewhere' } });
    const bookmarked = h.server.bookmark(PATH);
    assert.notEqual(bookmarked, gone.metadata.resourceVersion);
    h.server.closeWatches();
    await h.server.waitForRequest(
      (r) => r.kind === 'watch' && r.query.resourceVersion === bookmarked,
      'rewatch from the bookmark',
    );
    assert.equal(h.server.listsOf(PATH).length, 1, 'a clean close rewatches; it does not relist');
    assert.equal(h.reflector.resourceVersion, bookmarked);
    assert.deepEqual(keysAndRvs(h.reflector.list()), keysAndRvs([a2, c]));
  });

  test('a cut watch connection resumes from the last resourceVersion, without a relist, losing nothing', async (t) => {
    let a: FakeObject | undefined;
    const h = await harness<Service>(t, SERVICES, { seed: (s) => void (a = s.add(PATH, svc('a'))) });
    h.reflector.start();
    await h.rec.waitFor((e) => e.includes('synced'), 'synced');
    await h.server.waitForWatchers(PATH, 1);
    const b = h.server.add(PATH, svc('b'));
    await h.rec.waitFor((e) => e.includes(`add ${idOf(b)}`), 'b added');

    // Refuse reconnects until the changes below are made, so they happen while the client is away.
    h.server.failNext = { count: 1_000, code: 503 };
    h.server.cutWatches();
    const from = h.rec.events.length;
    const c = h.server.add(PATH, svc('c'));
    const a2 = h.server.update(PATH, svc('a', { spec: { clusterIP: '198.18.0.12' } }));
    await h.server.waitForRequest(
      (r) => r.kind === 'watch' && h.server.failNext.count < 1_000,
      'a refused reconnect',
    );
    h.server.failNext = { count: 0, code: 503 };
    await h.rec.waitForCount(from, 2);
    assert.deepEqual(h.rec.since(from), [
      `add ${idOf(c)}`,
      `update ${idOf(a2)} from ${a?.metadata.resourceVersion}`,
    ]);
    assert.equal(h.server.listsOf(PATH).length, 1, 'no relist');
    const resumed = h.server.watchesOf(PATH).slice(1);
    assert.ok(resumed.length >= 1);
    assert.ok(
      resumed.every((r) => r.query.resourceVersion === b.metadata.resourceVersion),
      'every resume asks from the last seen resourceVersion',
    );
    assert.ok(h.reflector.health().consecutiveFailures === 0);
  });

  for (const goneMode of ['event', 'status'] as const) {
    test(`410 Gone (${goneMode === 'event' ? 'watch ERROR event' : 'HTTP status'}) → relist, with add/update/delete for what changed meanwhile`, async (t) => {
      const seeded: Record<string, FakeObject> = {};
      const h = await harness<Service>(t, SERVICES, {
        seed: (s) => {
          for (const n of ['a', 'b', 'c']) seeded[n] = s.add(PATH, svc(n));
        },
      });
      h.server.goneMode = goneMode;
      h.reflector.start();
      await h.rec.waitFor((e) => e.includes('synced'), 'synced');
      await h.server.waitForWatchers(PATH, 1);

      h.server.failNext = { count: 1_000, code: 503 };
      h.server.cutWatches();
      const from = h.rec.events.length;
      const a2 = h.server.update(PATH, svc('a', { spec: { clusterIP: '198.18.0.13' } }));
      const b = h.server.remove(PATH, 'default/b');
      const d = h.server.add(PATH, svc('d'));
      h.server.compact(); // the client's resourceVersion is now too old
      h.server.failNext = { count: 0, code: 503 };

      await h.rec.waitForCount(from, 3);
      // Adds and updates in list order (a, c, d), then deletes; c did not change, so no event for it.
      assert.deepEqual(h.rec.since(from), [
        `update ${idOf(a2)} from ${seeded.a?.metadata.resourceVersion}`,
        `add ${idOf(d)}`,
        // A delete seen only through a relist carries the last state we knew.
        `delete ${idOf(seeded.b as FakeObject)}`,
      ]);
      assert.notEqual(b.metadata.resourceVersion, seeded.b?.metadata.resourceVersion);
      await h.server.waitForWatchers(PATH, 1);
      assert.equal(h.server.listsOf(PATH).length, 2, 'exactly one relist');
      assert.deepEqual(keysAndRvs(h.reflector.list()), keysAndRvs([a2, seeded.c as FakeObject, d]));
      assert.equal(h.reflector.health().counters.relistsAfterGone, 1);
      assert.equal(h.rec.events.filter((e) => e === 'synced').length, 1, 'onSynced only once');
    });
  }

  test('a server that answers every watch with 410 gets backed-off relists, not a hot loop', async (t) => {
    const h = await harness<Service>(t, SERVICES, {
      timing: { backoff: { initialMs: 20, maxMs: 1_000, factor: 2, jitter: 0, resetAfterMs: 60_000 } },
      seed: (s) => void s.add(PATH, svc('a')),
    });
    h.server.watchAlwaysGone = true;
    h.reflector.start();
    await h.log.waitFor(
      (r) => r.filter((x) => x.msg === 'watch failed; retrying').length >= 3,
      'three backoffs',
    );
    const backoffs = h.log.matching('watch failed; retrying').map((r) => r.fields.retryInMs);
    // The first 410 relists at once; the ones after it wait, longer each time.
    assert.deepEqual(backoffs.slice(0, 3), [20, 40, 80]);
    assert.equal(h.log.matching('watch expired (410 Gone); relisting').length, 4);
    assert.equal(h.rec.events.filter((e) => e === 'synced').length, 1);
    assert.deepEqual(
      h.rec.events,
      ['add default/a 101', 'synced'],
      'relists of an unchanged store deliver nothing',
    );
  });

  test('a server that goes silent without closing is aborted by the watchdog, and the reflector recovers', async (t) => {
    const h = await harness<Service>(t, SERVICES, {
      timing: { watchdogMs: 300 },
      seed: (s) => void s.add(PATH, svc('a')),
    });
    h.reflector.start();
    await h.rec.waitFor((e) => e.includes('synced'), 'synced');
    await h.server.waitForWatchers(PATH, 1);
    const watchesBefore = h.server.watchesOf(PATH).length;
    h.server.silenceWatches();
    const b = h.server.add(PATH, svc('b')); // not sent: the open watch is silent
    await h.rec.waitFor((e) => e.includes(`add ${idOf(b)}`), 'b delivered after the watchdog reconnects');
    assert.ok(h.reflector.health().counters.watchdogAborts >= 1);
    assert.ok(h.log.matching(/silent/).length >= 1, 'the abort is logged');
    assert.ok(h.server.watchesOf(PATH).length > watchesBefore);
    assert.equal(h.server.listsOf(PATH).length, 1, 'the rewatch resumes; no relist needed');
  });

  for (const [label, base] of [
    ['higher', 100_000],
    ['lower', 3],
  ] as const) {
    test(`a server restarted with ${label} resourceVersions → the reflector converges to the new state`, async (t) => {
      const h = await harness<Service>(t, SERVICES, {
        seed: (s) => {
          for (const n of ['a', 'b', 'c']) s.add(PATH, svc(n));
        },
      });
      h.reflector.start();
      await h.rec.waitFor((e) => e.includes('synced'), 'synced');
      await h.server.waitForWatchers(PATH, 1);
      const from = h.rec.events.length;
      h.server.restart(base, (objects) => {
        const coll = objects.get(PATH);
        coll?.delete('default/b');
        coll?.set('default/e', svc('e'));
      });
      // The new history starts at base+1: every surviving object has a new resourceVersion.
      await h.rec.waitForCount(from, 4);
      const expected = [
        `update default/a ${base + 1} from`,
        `update default/c ${base + 2} from`,
        `add default/e ${base + 3}`,
        'delete default/b',
      ];
      assert.equal(h.rec.since(from).length, 4);
      h.rec
        .since(from)
        .forEach((e, i) =>
          assert.ok(e.startsWith(expected[i] ?? '\u0000'), `${e} starts with ${expected[i]}`),
        );
      assert.deepEqual(
        h.reflector
          .list()
          .map((o) => `${o.metadata.name} ${o.metadata.resourceVersion}`)
          .sort(),
        [`a ${base + 1}`, `c ${base + 2}`, `e ${base + 3}`],
      );
      assert.equal(h.reflector.resourceVersion, String(base + 3));
      // Older than the new history → 410; newer than it (history restarted lower) → "Too large resource version".
      const why = h.log.matching('watch expired (410 Gone); relisting').map((r) => String(r.fields.error));
      assert.ok(
        why.some((e) => (label === 'higher' ? /too old/ : /Too large resource version/).test(e)),
        why.join('; '),
      );
      await h.server.waitForWatchers(PATH, 1);
    });
  }

  test('a server down at start is retried with exponential backoff, and the reflector syncs when it comes up', async (t) => {
    const h = await harness<Service>(t, SERVICES, {
      timing: { backoff: { initialMs: 20, maxMs: 1_000, factor: 2, jitter: 0, resetAfterMs: 60_000 } },
      seed: (s) => void s.add(PATH, svc('a')),
    });
    await h.server.down();
    h.reflector.start();
    const retries = () => h.log.matching('list failed; retrying');
    await h.log.waitFor(() => retries().length >= 4, '4 failed lists');
    assert.equal(h.reflector.hasSynced, false);
    assert.deepEqual(
      retries()
        .slice(0, 4)
        .map((r) => r.fields.retryInMs),
      [20, 40, 80, 160],
    );
    const health = h.reflector.health();
    assert.ok(health.consecutiveFailures >= 4);
    assert.match(health.lastError ?? '', /ECONNREFUSED/);
    await h.server.up();
    await h.rec.waitFor((e) => e.includes('synced'), 'synced after the server came up');
    assert.deepEqual(h.rec.events, ['add default/a 101', 'synced']);
    assert.equal(h.reflector.health().consecutiveFailures, 0);
  });

  test('pages through a list (limit + continue) and restarts it when the continue token expires', async (t) => {
    const h = await harness<Service>(t, SERVICES, {
      limits: { pageSize: 2 },
      seed: (s) => {
        for (const n of ['a', 'b', 'c', 'd', 'e']) s.add(PATH, svc(n));
      },
    });
    h.server.expireNextContinue = 1;
    h.reflector.start();
    await h.rec.waitFor((e) => e.includes('synced'), 'synced');
    const lists = h.server.listsOf(PATH);
    assert.deepEqual(
      lists.map((r) => [r.query.limit, r.query.continue === undefined ? 'first' : 'next']),
      [
        ['2', 'first'],
        ['2', 'next'], // expired: 410
        ['2', 'first'],
        ['2', 'next'],
        ['2', 'next'],
      ],
    );
    assert.deepEqual(
      h.rec.events,
      ['a', 'b', 'c', 'd', 'e'].map((n, i) => `add default/${n} ${101 + i}`).concat('synced'),
    );
  });

  test('a first list restarted after its continue token expired delivers the delete of an object its first pages had', async (t) => {
    const h = await harness<Service>(t, SERVICES, {
      limits: { pageSize: 2 },
      seed: (s) => {
        for (const n of ['a', 'b', 'c', 'd', 'e']) s.add(PATH, svc(n));
      },
    });
    h.server.expireNextContinue = 1;
    // Page one (a, b) is handed on as it arrives; b is deleted before the list starts over.
    const { onAdd } = h.rec.handlers;
    h.rec.handlers.onAdd = (o: Service) => {
      onAdd?.(o);
      if (o.metadata.name === 'b' && h.server.listsOf(PATH).length === 1) h.server.remove(PATH, 'default/b');
    };
    h.reflector.start();
    await h.rec.waitFor((e) => e.includes('synced'), 'synced');
    const events = h.rec.events.filter(
      (e) => !e.startsWith('add default/c') && !e.startsWith('add default/d'),
    );
    assert.deepEqual(events.slice(0, 2), ['add default/a 101', 'add default/b 102']);
    assert.ok(
      h.rec.events.some((e) => e.startsWith('delete default/b')),
      `no delete of b: ${h.rec.events.join(', ')}`,
    );
    assert.equal(h.rec.events.at(-1), 'synced');
  });

  test('the first list hands each page on as it arrives; a list cut after a page resumes without repeats', async (t) => {
    const h = await harness<Service>(t, SERVICES, {
      limits: { pageSize: 2 },
      seed: (s) => {
        for (const n of ['a', 'b', 'c', 'd', 'e']) s.add(PATH, svc(n));
      },
    });
    // Each add notes how many list requests the server had answered when it came; after page one's second
    // object the next request fails, so the list is made again from its start.
    const { onAdd } = h.rec.handlers;
    h.rec.handlers.onAdd = (o: Service) => {
      onAdd?.(o);
      h.rec.push(`lists ${h.server.listsOf(PATH).length}`);
      if (o.metadata.name === 'b' && h.server.listsOf(PATH).length === 1)
        h.server.failNext = { count: 1, code: 500 };
    };
    h.reflector.start();
    await h.rec.waitFor((e) => e.includes('synced'), 'synced');
    assert.deepEqual(h.rec.events, [
      'add default/a 101',
      'lists 1',
      'add default/b 102',
      'lists 1',
      // the failed page 2 (500), then the list again: a and b are unchanged, so nothing for them
      'add default/c 103',
      'lists 4',
      'add default/d 104',
      'lists 4',
      'add default/e 105',
      'lists 5',
      'synced',
    ]);
  });

  test('a list page too large to hold is abandoned and asked for again in smaller pages', async (t) => {
    // One Service is ~140 bytes of JSON here: 2 per page fit in 450 bytes, 4 or 8 do not.
    const h = await harness<Service>(t, SERVICES, {
      limits: { pageSize: 8, maxPageBytes: 450 },
      seed: (s) => {
        for (const n of ['a', 'b', 'c', 'd', 'e']) s.add(PATH, svc(n));
      },
    });
    h.reflector.start();
    await h.reflector.waitForSync();
    assert.deepEqual(
      h.server.listsOf(PATH).map((r) => r.query.limit),
      ['8', '4', '2', '2', '2'],
    );
    assert.equal(h.rec.events.filter((e) => e.startsWith('add')).length, 5);
    assert.ok(
      h.log.matching('list failed; retrying').every((r) => /exceeds 450 bytes/.test(String(r.fields.error))),
    );
  });

  test('malformed objects in a list and on the stream are logged once, skipped, and the rest delivered', async (t) => {
    const h = await harness<Service>(t, SERVICES, {
      limits: { maxLineBytes: 4096 },
      seed: (s) => {
        s.add(PATH, svc('a'));
        s.extraListItems.set(PATH, [
          42,
          { metadata: {} },
          { metadata: { name: 'no-rv', namespace: 'default' } },
          { metadata: { name: 7, namespace: 'default', resourceVersion: '1' } },
          { metadata: { name: 'no-ns', resourceVersion: '1' } },
        ]);
      },
    });
    h.reflector.start();
    await h.rec.waitFor((e) => e.includes('synced'), 'synced');
    assert.deepEqual(h.rec.events, ['add default/a 101', 'synced']);
    const listSkips = () => h.log.matching('skipping malformed object').map((r) => r.fields.reason);
    assert.deepEqual(listSkips(), [
      'object is a number, not an object',
      'metadata.name is missing or not a string',
      'metadata.resourceVersion is missing or not a string',
      'metadata.name is missing or not a string',
      'metadata.namespace is missing or not a string',
    ]);

    await h.server.waitForWatchers(PATH, 1);
    const from = h.rec.events.length;
    h.server.sendRaw(PATH, 'this is not json\n');
    h.server.sendRaw(
      PATH,
      '{"type":"ADDED","object":{"metadata":{"namespace":"default","resourceVersion":"5"}}}\n',
    );
    h.server.sendRaw(PATH, '[1,2,3]\n');
    h.server.sendRaw(PATH, `{"type":"ADDED","object":{"metadata":{"name":"${'x'.repeat(8000)}"}}}\n`);
    h.server.sendRaw(PATH, '{"type":"SURPRISE","object":{}}\n');
    const b = h.server.add(PATH, svc('b'));
    await h.rec.waitFor((e) => e.includes(`add ${idOf(b)}`), 'b delivered after the bad lines');
    assert.deepEqual(h.rec.since(from), [`add ${idOf(b)}`]);
    const streamSkips = listSkips().slice(5);
    assert.equal(streamSkips.length, 5);
    assert.match(String(streamSkips[0]), /^line is not JSON/);
    assert.equal(streamSkips[1], 'ADDED event: metadata.name is missing or not a string');
    assert.equal(streamSkips[2], 'watch event is not an object');
    assert.match(String(streamSkips[3]), /^watch line longer than 4096 bytes/);
    assert.equal(streamSkips[4], 'unknown watch event type "SURPRISE"');

    // A relist meets the same bad list items again: counted, not logged again.
    h.server.failNext = { count: 1_000, code: 503 };
    h.server.cutWatches();
    h.server.add(PATH, svc('c'));
    h.server.compact();
    h.server.failNext = { count: 0, code: 503 };
    await h.server.waitForRequest(() => h.server.listsOf(PATH).length === 2, 'relist');
    await h.server.waitForWatchers(PATH, 1);
    assert.equal(h.log.matching('skipping malformed object').length, 10, 'each bad item logged once');
    assert.equal(h.reflector.health().counters.skippedObjects, 15);
  });

  test('a throwing handler is logged and does not stop later events', async (t) => {
    const h = await harness<Service>(t, SERVICES, { seed: (s) => void s.add(PATH, svc('a')) });
    const onAdd = h.rec.handlers.onAdd;
    Object.assign(h.rec.handlers, {
      onAdd: (obj: Service) => {
        onAdd?.(obj);
        if (obj.metadata.name === 'a') throw new Error('handler bug');
      },
    });
    h.reflector.start();
    await h.rec.waitFor((e) => e.includes('synced'), 'synced');
    await h.server.waitForWatchers(PATH, 1);
    const b = h.server.add(PATH, svc('b'));
    await h.rec.waitFor((e) => e.includes(`add ${idOf(b)}`), 'b');
    assert.equal(h.log.matching('event handler failed').length, 1);
  });

  test('resync redelivers every stored object as an update to itself', async (t) => {
    const h = await harness<Service>(t, SERVICES, {
      timing: { resyncPeriodMs: 50 },
      seed: (s) => {
        s.add(PATH, svc('a'));
        s.add(PATH, svc('b'));
      },
    });
    h.reflector.start();
    await h.rec.waitFor((e) => e.filter((x) => x.startsWith('update')).length >= 4, 'two resyncs');
    const updates = h.rec.events.filter((x) => x.startsWith('update'));
    assert.deepEqual(updates.slice(0, 4), [
      'update default/a 101 from 101',
      'update default/b 102 from 102',
      'update default/a 101 from 101',
      'update default/b 102 from 102',
    ]);
  });

  test('with keep: handlers get whole objects, the store and what it redelivers hold what keep made; no resync', async (t) => {
    // Keep a Service's name and version only, marking it so the test can tell a kept object from a whole one.
    const keep = (s: Service): Service => ({
      metadata: {
        name: s.metadata.name ?? '',
        namespace: s.metadata.namespace ?? '',
        resourceVersion: s.metadata.resourceVersion ?? '',
        labels: { kept: 'yes' },
      },
    });
    const seen: string[] = [];
    const describe = (s: Service): string =>
      `${s.metadata.name} ${s.metadata.labels?.kept === 'yes' ? 'kept' : `whole ${s.spec?.clusterIP}`}`;
    const h = await harness<Service>(t, SERVICES, {
      keep,
      timing: { resyncPeriodMs: 20 },
      seed: (s) => {
        s.add(PATH, svc('a'));
        s.add(PATH, svc('b'));
      },
    });
    const { onAdd, onUpdate, onDelete } = h.rec.handlers;
    Object.assign(h.rec.handlers, {
      onAdd: (o: Service) => (seen.push(`add ${describe(o)}`), onAdd?.(o)),
      onUpdate: (old: Service, o: Service) => (
        seen.push(`update ${describe(o)} from ${describe(old)}`),
        onUpdate?.(old, o)
      ),
      onDelete: (o: Service) => (seen.push(`delete ${describe(o)}`), onDelete?.(o)),
    });
    h.reflector.start();
    await h.rec.waitFor((e) => e.includes('synced'), 'synced');
    await h.server.waitForWatchers(PATH, 1);
    assert.equal(
      h.reflector.get('default/a')?.metadata.labels?.kept,
      'yes',
      'the store holds what keep made',
    );
    assert.equal(h.reflector.get('default/a')?.spec, undefined);

    h.server.update(PATH, svc('a', { spec: { clusterIP: '198.18.0.21' } }));
    await h.rec.waitFor((e) => e.some((x) => x.startsWith('update default/a')), 'a updated');
    // Cut off, b goes and c comes; the relist finds both.
    h.server.failNext = { count: 1_000, code: 503 };
    h.server.cutWatches();
    h.server.remove(PATH, 'default/b');
    h.server.add(PATH, svc('c', { spec: { clusterIP: '198.18.0.22' } }));
    h.server.compact();
    h.server.failNext = { count: 0, code: 503 };
    await h.rec.waitFor((e) => e.some((x) => x.startsWith('delete default/b')), 'b deleted by the relist');
    await h.server.waitForWatchers(PATH, 1);
    // An absence can only be waited out: five resync periods pass, and nothing is redelivered (a redelivery in
    // them fails the test; none could make it pass wrongly).
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.deepEqual(seen, [
      'add a whole 198.18.0.10',
      'add b whole 198.18.0.10',
      'update a whole 198.18.0.21 from a kept',
      'add c whole 198.18.0.22',
      'delete b kept',
    ]);
    assert.deepEqual(
      h.reflector.list().map((o) => describe(o)),
      ['a kept', 'c kept'],
    );
  });

  test('stop() ends the loop, closes the watch and makes no more requests', async (t) => {
    const h = await harness<Service>(t, SERVICES, { seed: (s) => void s.add(PATH, svc('a')) });
    h.reflector.start();
    await h.server.waitForWatchers(PATH, 1);
    await h.reflector.stop();
    const count = h.server.requests.length;
    await h.server.waitForRequest(() => h.server.openWatches === 0, 'watch closed');
    h.server.add(PATH, svc('b'));
    assert.equal(h.server.requests.length, count);
    assert.ok(!h.rec.events.some((e) => e.includes('default/b')));
  });
});
