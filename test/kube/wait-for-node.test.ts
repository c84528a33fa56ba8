import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Node } from '../../packages/agent/src/api/objects.js';
import { waitForNode } from '../../packages/agent/src/kube/wait-for-node.js';
import type { WaitForNodeResult } from '../../packages/agent/src/kube/wait-for-node.js';
import { FakeClock } from '../../packages/agent/src/util/clock.js';
import { settle } from '../helpers/settle.js';

const node = (addresses: { type: string; address: string }[], spec: Node['spec'] = {}): Node => ({
  metadata: { name: 'node-a', resourceVersion: '1' },
  spec,
  status: { addresses },
});

test('waits, polling every pollMs, until the Node exists with node IPs', async () => {
  const clock = new FakeClock();
  let current: Node | undefined;
  const asked: number[] = [];
  const done = waitForNode('node-a', {
    clock,
    pollMs: 1_000,
    timeoutMs: 300_000,
    lookup: (name) => {
      assert.equal(name, 'node-a');
      asked.push(clock.now());
      return current;
    },
  });
  const box: { result?: WaitForNodeResult } = {};
  void done.then((r) => (box.result = r));
  clock.advance(2_000);
  current = node([{ type: 'Hostname', address: 'node-a' }]); // exists, no IPs yet
  clock.advance(1_000);
  await settle();
  assert.equal(box.result, undefined);
  current = node([{ type: 'InternalIP', address: '198.18.0.2' }]);
  clock.advance(1_000);
  const result = await done;
  assert.ok(result.ok);
  assert.deepEqual(result.nodeIPs, ['198.18.0.2']);
  assert.deepEqual(
    asked.map((t) => t - asked[0]!),
    [0, 1_000, 2_000, 3_000, 4_000],
  );
});

test('gives up after timeoutMs with the reason; NodeCIDR mode also needs podCIDRs', async () => {
  const clock = new FakeClock();
  const withoutCidr = node([{ type: 'InternalIP', address: '198.18.0.2' }]);
  const done = waitForNode('node-a', { clock, requirePodCIDRs: true, lookup: () => withoutCidr });
  let result: Awaited<typeof done> | undefined;
  void done.then((r) => (result = r));
  clock.advance(299_999);
  await settle();
  assert.equal(result, undefined, 'still waiting before five minutes');
  clock.advance(1);
  assert.deepEqual(await done, { ok: false, reason: 'node node-a has no podCIDRs after 300 s' });
  assert.equal(clock.pendingTimers, 0);

  const missing = await new Promise((resolve) => {
    void waitForNode('node-b', { clock, timeoutMs: 3_000, lookup: () => undefined }).then(resolve);
    clock.advance(3_000);
  });
  assert.deepEqual(missing, { ok: false, reason: 'node node-b not found after 3 s' });

  const ok = await waitForNode('node-a', {
    clock,
    requirePodCIDRs: true,
    lookup: () => node([{ type: 'InternalIP', address: '198.18.0.2' }], { podCIDRs: ['198.18.64.0/24'] }),
  });
  assert.ok(ok.ok);
});

test('an abort ends the wait', async () => {
  const clock = new FakeClock();
  const ac = new AbortController();
  const done = waitForNode('node-a', { clock, lookup: () => undefined, signal: ac.signal });
  ac.abort();
  assert.deepEqual(await done, { ok: false, reason: 'waiting for node node-a was cancelled' });
  assert.equal(clock.pendingTimers, 0);
});

test('a Node event ends the wait at once, not at the next poll; nothing looks after it ended', async () => {
  const clock = new FakeClock();
  const seen: { node?: Node } = {};
  let lookAgain: (() => void) | undefined;
  let lookups = 0;
  const done = waitForNode('node-a', {
    clock,
    lookup: () => (lookups++, seen.node),
    subscribe: (f) => ((lookAgain = f), () => (lookAgain = undefined)),
  });
  clock.advance(300); // between two polls
  seen.node = node([{ type: 'InternalIP', address: '198.18.0.2' }]);
  lookAgain!();
  const result = await done;
  assert.ok(result.ok);
  assert.deepEqual(result.nodeIPs, ['198.18.0.2']);
  assert.equal(clock.now(), 300, 'no time passed: the event, not a poll, ended it');
  assert.equal(lookAgain, undefined, 'unsubscribed once done');
  assert.equal(clock.pendingTimers, 0, 'the poll timer is gone');
  assert.equal(lookups, 2);
});
