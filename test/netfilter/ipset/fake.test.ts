// The shared cases (cases.ts) against FakeIPSet, which kernel.test.ts also runs against the real tool; and what
// only the fake shows (its calls and state).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { FakeIPSet } from '../../../packages/agent/src/netfilter/ipset/fake.js';
import { IPSET_CASES } from './cases.js';

describe('IPSetClient over FakeIPSet (cases shared with kernel.test.ts)', () => {
  for (const c of IPSET_CASES) test(c.name, async () => void (await c.run(new FakeIPSet())));
});

describe('FakeIPSet', () => {
  test('single commands: create, add, a duplicate add fails without -exist, save prints the kernel’s header', async () => {
    const fake = new FakeIPSet();
    const run = (...args: string[]) => fake.run('ipset', args);
    assert.equal((await run('create', 'S', 'hash:ip,port', 'family', 'inet6')).code, 0);
    assert.equal((await run('add', 'S', '2001:db8::1,udp:53')).code, 0);
    const again = await run('add', 'S', '2001:db8::1,udp:53');
    assert.deepEqual(
      [again.code, again.stderr],
      [1, "ipset v7.17: Element cannot be added to the set: it's already added\n"],
    );
    assert.equal((await run('add', 'S', '2001:db8::1,udp:53', '-exist')).code, 0);
    assert.equal(
      (await run('save')).stdout,
      'create S hash:ip,port family inet6 hashsize 1024 maxelem 65536 bucketsize 12 initval 0x00000000\n' +
        'add S 2001:db8::1,udp:53\n',
    );
    assert.deepEqual(fake.state().get('S'), {
      type: 'hash:ip,port',
      family: 'IPv6',
      entries: ['2001:db8::1,udp:53'],
    });
  });

  test('usage errors exit 2 without a line number, as the tool does', async () => {
    const fake = new FakeIPSet();
    const r = await fake.run('ipset', ['restore', '-exist'], { stdin: 'create P bitmap:port family inet\n' });
    assert.equal(r.code, 2);
    assert.equal(
      r.stderr,
      "ipset v7.17: Unknown argument: `family'\nTry `ipset help' for more information.\n",
    );
    const save = await fake.run('ipset', ['save', 'A', 'B']);
    assert.equal(save.code, 2);
  });

  test('a restore records its input; only `ipset` is known', async () => {
    const fake = new FakeIPSet();
    await fake.run('ipset', ['restore', '-exist'], { stdin: 'create P bitmap:port range 0-65535\n' });
    assert.deepEqual(fake.calls, [
      { args: ['restore', '-exist'], stdin: 'create P bitmap:port range 0-65535\n' },
    ]);
    assert.equal((await fake.run('ipvsadm', ['-Ln'])).code, 127);
  });
});
