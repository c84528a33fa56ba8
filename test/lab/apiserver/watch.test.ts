// startWatch on a fake sink: a reader that stops reading is cut off at the buffer bound without holding up the
// store or other watchers; a version older than the history gets an ERROR 410 event; bookmarks come on the clock.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '../../../packages/agent/src/util/clock.js';
import { ObjectStore } from '../../../packages/lab/src/apiserver/store.js';
import { resourceByKind } from '../../../packages/lab/src/apiserver/resources.js';
import { startWatch, type WatchSink } from '../../../packages/lab/src/apiserver/watch.js';

const CM = resourceByKind('ConfigMap');

function sink(drains: boolean): WatchSink & { lines: string[]; state: string; buffered: number } {
  const s = {
    lines: [] as string[],
    state: 'open',
    buffered: 0,
    write(line: string) {
      s.lines.push(line);
      if (!drains) s.buffered += line.length;
    },
    bufferedBytes: () => s.buffered,
    end: () => void (s.state = 'ended'),
    destroy: () => void (s.state = 'destroyed'),
  };
  return s;
}

const put = (store: ObjectStore, name: string): void =>
  void store.commit('ADDED', CM, { metadata: { name, namespace: 'default' }, data: { x: 'y'.repeat(100) } });

test('a watcher that does not read is cut off; the others get everything', () => {
  const store = new ObjectStore();
  const clock = new FakeClock(0);
  const slow = sink(false);
  const fast = sink(true);
  const opts = { clock, bookmarkIntervalMs: 1000, maxBufferedBytes: 2000 };
  startWatch(store, { resource: CM, resourceVersion: '0' }, slow, opts);
  startWatch(store, { resource: CM, resourceVersion: '0' }, fast, opts);
  for (let i = 0; i < 100; i++) put(store, `cm${i}`);
  assert.equal(slow.state, 'destroyed');
  // Both got the same lines while open; the slow one up to and including the write that took its unread bytes
  // past maxBufferedBytes, then nothing more.
  let cut = 0;
  for (let unread = 0; unread <= opts.maxBufferedBytes; cut++) unread += fast.lines[cut]?.length ?? Infinity;
  assert.deepEqual(slow.lines, fast.lines.slice(0, cut));
  assert.equal(fast.state, 'open');
  assert.equal(fast.lines.length, 100);
});

test('a too old resourceVersion gets ERROR 410 and the stream ends', () => {
  const store = new ObjectStore({ historyLimit: 5 });
  for (let i = 0; i < 20; i++) put(store, `cm${i}`);
  const s = sink(true);
  startWatch(store, { resource: CM, resourceVersion: '3' }, s, {
    clock: new FakeClock(0),
    bookmarkIntervalMs: 1000,
    maxBufferedBytes: 1e6,
  });
  assert.equal(s.lines.length, 1);
  const ev = JSON.parse(s.lines[0] ?? '') as { type: string; object: { code: number; reason: string } };
  assert.equal(ev.type, 'ERROR');
  assert.equal(ev.object.code, 410);
  assert.equal(ev.object.reason, 'Expired');
  assert.equal(s.state, 'ended');
  // From a version still in the history, the watch replays what followed it.
  const r = sink(true);
  startWatch(store, { resource: CM, resourceVersion: '17' }, r, {
    clock: new FakeClock(0),
    bookmarkIntervalMs: 1000,
    maxBufferedBytes: 1e6,
  });
  assert.deepEqual(
    r.lines.map(
      (l) =>
        (JSON.parse(l) as { object: { metadata: { resourceVersion: string } } }).object.metadata
          .resourceVersion,
    ),
    ['18', '19', '20'],
  );
});

test('bookmarks carry the current resourceVersion; timeoutSeconds ends the stream', () => {
  const store = new ObjectStore();
  const clock = new FakeClock(0);
  const s = sink(true);
  startWatch(store, { resource: CM, resourceVersion: '0', allowWatchBookmarks: true, timeoutSeconds: 5 }, s, {
    clock,
    bookmarkIntervalMs: 1000,
    maxBufferedBytes: 1e6,
  });
  store.commit('ADDED', resourceByKind('Namespace'), { metadata: { name: 'x' } });
  clock.advance(1000);
  const bm = JSON.parse(s.lines.at(-1) ?? '') as {
    type: string;
    object: { metadata: { resourceVersion: string } };
  };
  assert.equal(bm.type, 'BOOKMARK');
  assert.equal(bm.object.metadata.resourceVersion, '1');
  clock.advance(4000);
  assert.equal(s.state, 'ended');
});
