// inNetworkNamespace: the thread is inside the named namespace while fn runs (it sees that namespace's links, and a
// socket made there stays there), and back in its own afterwards, also when fn throws.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { inNetworkNamespace } from '../../packages/agent/src/netfilter/in-namespace.js';
import { kernelNamespaces } from '../helpers/kernel.js';

const suite = kernelNamespaces(['a'], ['ip']);
const [NS] = suite.names;

/** The links this thread's namespace has, from /proc/thread-self/net/dev. */
function links(): string[] {
  return readFileSync('/proc/thread-self/net/dev', 'utf8')
    .split('\n')
    .slice(2)
    .map((l) => l.split(':')[0]?.trim() ?? '')
    .filter((l) => l !== '');
}

describe('inNetworkNamespace', suite.options, () => {
  suite.hooks();

  test('runs fn inside the namespace and returns to this one, also after a throw', () => {
    execFileSync('ip', [
      'netns',
      'exec',
      NS,
      'ip',
      'link',
      'add',
      'kptsprobe0',
      'type',
      'veth',
      'peer',
      'kptsprobe1',
    ]);
    const home = links();
    assert.ok(!home.includes('kptsprobe0'), 'the test runs outside the namespace');
    const inside = inNetworkNamespace(`/run/netns/${NS}`, links);
    assert.deepEqual(inside.sort(), ['kptsprobe0', 'kptsprobe1', 'lo']);
    assert.deepEqual(links(), home, 'back home after fn');
    assert.throws(
      () =>
        inNetworkNamespace(`/run/netns/${NS}`, () => {
          throw new Error('inside');
        }),
      /inside/,
    );
    assert.deepEqual(links(), home, 'back home after a throw');
    assert.throws(() => inNetworkNamespace('/run/netns/kpts-no-such-namespace', links), /ENOENT/);
  });
});
