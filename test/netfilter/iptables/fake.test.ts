import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { FakeIptables } from '../../../packages/agent/src/netfilter/iptables/fake.js';
import { chainsInSave } from '../../../packages/agent/src/netfilter/iptables/parse.js';

const restore = (fake: FakeIptables, input: string, extra: string[] = []) =>
  fake.run('iptables-restore', ['--noflush', '--counters', ...extra], { stdin: input });

describe('FakeIptables behaves like the kernel where kube-proxy depends on it', () => {
  test('a chain line creates or flushes; rules append; save prints them back', async () => {
    const fake = new FakeIptables();
    assert.equal((await restore(fake, '*nat\n:KUBE-A - [0:0]\n-A KUBE-A -j RETURN\nCOMMIT\n')).code, 0);
    assert.equal((await restore(fake, '*nat\n:KUBE-A - [0:0]\n-A KUBE-A -j ACCEPT\nCOMMIT\n')).code, 0);
    assert.deepEqual(fake.chains('IPv4', 'nat').get('KUBE-A'), [['-j', 'ACCEPT']]);
    const saved = (await fake.run('iptables-save', ['-t', 'nat'])).stdout;
    assert.ok(saved.includes(':KUBE-A - [0:0]\n'));
    assert.ok(saved.includes('-A KUBE-A -j ACCEPT\n'));
    assert.ok(chainsInSave(saved, 'nat').has('PREROUTING'));
  });

  test('a jump to a missing chain fails and the table is left as it was', async () => {
    const fake = new FakeIptables();
    const r = await restore(fake, '*nat\n:KUBE-A - [0:0]\n-A KUBE-A -j KUBE-NOPE\nCOMMIT\n');
    assert.equal(r.code, 1);
    assert.match(r.stderr, /line 3 failed/);
    assert.equal(fake.chains('IPv4', 'nat').has('KUBE-A'), false);
  });

  test('-X of a chain still jumped to fails; earlier tables stay committed (per-table commit)', async () => {
    const fake = new FakeIptables();
    await restore(fake, '*nat\n:KUBE-B - [0:0]\n:KUBE-A - [0:0]\n-A KUBE-A -j KUBE-B\nCOMMIT\n');
    const r = await restore(
      fake,
      '*filter\n:KUBE-F - [0:0]\nCOMMIT\n*nat\n:KUBE-B - [0:0]\n-X KUBE-B\nCOMMIT\n',
    );
    assert.equal(r.code, 1);
    assert.ok(fake.chains('IPv4', 'filter').has('KUBE-F'));
    assert.ok(fake.chains('IPv4', 'nat').has('KUBE-B'));
  });

  test('--test checks without committing; families are separate', async () => {
    const fake = new FakeIptables();
    assert.equal((await restore(fake, '*nat\n:KUBE-A - [0:0]\nCOMMIT\n', ['--test'])).code, 0);
    assert.equal(fake.chains('IPv4', 'nat').has('KUBE-A'), false);
    await fake.run('ip6tables-restore', ['--noflush'], { stdin: '*nat\n:KUBE-6 - [0:0]\nCOMMIT\n' });
    assert.equal(fake.chains('IPv6', 'nat').has('KUBE-6'), true);
    assert.equal(fake.chains('IPv4', 'nat').has('KUBE-6'), false);
  });

  test('commands: -C exit 1 for a missing rule, -F flushes every chain, -S of a missing chain fails', async () => {
    const fake = new FakeIptables();
    fake.inject('IPv4', '-t nat -N KUBE-A');
    fake.inject('IPv4', '-t nat -I PREROUTING -j KUBE-A');
    assert.equal(
      (await fake.run('iptables', ['-w', '5', '-C', 'PREROUTING', '-t', 'nat', '-j', 'KUBE-A'])).code,
      0,
    );
    fake.inject('IPv4', '-t nat -F');
    assert.equal((await fake.run('iptables', ['-C', 'PREROUTING', '-t', 'nat', '-j', 'KUBE-A'])).code, 1);
    assert.equal((await fake.run('iptables', ['-S', 'KUBE-A', '-t', 'nat'])).code, 0);
    assert.equal((await fake.run('iptables', ['-S', 'KUBE-B', '-t', 'nat'])).code, 1);
  });
});
