import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  detectIptablesBackend,
  IptablesClient,
  IptablesError,
} from '../../../packages/agent/src/netfilter/iptables/client.js';
import { FakeIptables } from '../../../packages/agent/src/netfilter/iptables/fake.js';
import {
  commandWaitFlags,
  iptablesBinaries,
  parseIptablesVersion,
  restoreWaitFlags,
} from '../../../packages/agent/src/netfilter/iptables/variant.js';
import { FakeClock } from '../../../packages/agent/src/util/clock.js';

describe('versions and variants', () => {
  test('parses both back ends', () => {
    assert.deepEqual(parseIptablesVersion('iptables v1.8.9 (nf_tables)\n'), {
      major: 1,
      minor: 8,
      patch: 9,
      backend: 'nft',
      text: 'iptables v1.8.9 (nf_tables)',
    });
    assert.equal(parseIptablesVersion('iptables v1.8.9 (legacy)')?.backend, 'legacy');
    assert.equal(parseIptablesVersion('iptables v1.4.21')?.backend, 'legacy');
    assert.equal(parseIptablesVersion('command not found'), undefined);
  });

  test('wait flags follow upstream version thresholds (§2.6)', () => {
    const v = (s: string) => parseIptablesVersion(`iptables v${s}`)!;
    assert.deepEqual(commandWaitFlags(v('1.8.9'), 5), ['-w', '5', '-W', '100000']);
    assert.deepEqual(commandWaitFlags(v('1.6.1'), 5), ['-w', '5', '-W', '100000']);
    assert.deepEqual(commandWaitFlags(v('1.6.0'), 5), ['-w', '5']);
    assert.deepEqual(commandWaitFlags(v('1.4.22'), 5), ['-w', '5']);
    assert.deepEqual(commandWaitFlags(v('1.4.21'), 5), ['-w']);
    assert.deepEqual(commandWaitFlags(v('1.4.19'), 5), []);
    assert.deepEqual(restoreWaitFlags(v('1.6.2'), 5), ['-w', '5', '-W', '100000']);
    assert.deepEqual(restoreWaitFlags(v('1.6.1'), 5), []);
  });

  test('binary names per family and variant', () => {
    assert.deepEqual(iptablesBinaries('IPv4', 'auto'), {
      iptables: 'iptables',
      restore: 'iptables-restore',
      save: 'iptables-save',
    });
    assert.deepEqual(iptablesBinaries('IPv6', 'legacy'), {
      iptables: 'ip6tables-legacy',
      restore: 'ip6tables-legacy-restore',
      save: 'ip6tables-legacy-save',
    });
    assert.equal(iptablesBinaries('IPv4', 'nft').restore, 'iptables-nft-restore');
  });

  test('detectIptablesBackend reads `iptables --version`', async () => {
    assert.equal(await detectIptablesBackend(new FakeIptables({ backend: 'legacy' })), 'legacy');
    assert.equal(await detectIptablesBackend(new FakeIptables({ backend: 'nft' })), 'nft');
  });
});

describe('IptablesClient over the fake', () => {
  test('restore: wait flags first, then --noflush --counters, lock file in the environment', async () => {
    const fake = new FakeIptables();
    const client = new IptablesClient({
      family: 'IPv4',
      commands: fake,
      clock: new FakeClock(),
      variant: 'nft',
      lockFile: '/tmp/test.lock',
    });
    await client.restore('*nat\n:KUBE-SERVICES - [0:0]\nCOMMIT\n');
    assert.ok(fake.chains('IPv4', 'nat').has('KUBE-SERVICES'), 'the restore was applied');
    const call = fake.calls.find((c) => c.cmd === 'iptables-nft-restore');
    assert.deepEqual(call?.args, ['-w', '5', '-W', '100000', '--noflush', '--counters']);
    assert.deepEqual(call?.env, { XTABLES_LOCKFILE: '/tmp/test.lock' });
    // iptables-nft takes no xtables lock, so none is waited for.
    assert.equal(
      fake.calls.some((c) => c.cmd === 'flock'),
      false,
    );
  });

  test('legacy: the lock wait is measured with flock on the lock file', async () => {
    const clock = new FakeClock();
    const fake = new FakeIptables({ backend: 'legacy', clock });
    const client = new IptablesClient({
      family: 'IPv4',
      commands: fake,
      clock,
      variant: 'legacy',
      lockFile: '/tmp/x.lock',
    });
    fake.holdLock(3000);
    const outcome = await client.restore('*filter\nCOMMIT\n');
    assert.equal(outcome.lockWaitMs, 3000);
    assert.deepEqual(fake.calls.find((c) => c.cmd === 'flock')?.args, ['-w', '5', '/tmp/x.lock', 'true']);

    fake.holdLock(8000);
    await assert.rejects(
      client.restore('*filter\nCOMMIT\n'),
      (e: unknown) => e instanceof IptablesError && e.kind === 'lock-timeout',
    );
    // The restore was not attempted while the lock was held.
    assert.equal(fake.restores.length, 1);
  });

  test('ensureChain and ensureRule are idempotent; prepend goes to the top, append to the bottom', async () => {
    const fake = new FakeIptables();
    const client = new IptablesClient({ family: 'IPv4', commands: fake, clock: new FakeClock() });
    assert.equal(await client.chainExists('nat', 'KUBE-SERVICES'), false);
    assert.equal(await client.ensureChain('nat', 'KUBE-SERVICES'), false);
    assert.equal(await client.ensureChain('nat', 'KUBE-SERVICES'), true);
    assert.equal(await client.chainExists('nat', 'KUBE-SERVICES'), true);
    fake.inject('IPv4', '-t nat -A PREROUTING -j ACCEPT');
    const jump = ['-m', 'comment', '--comment', 'kubernetes service portals', '-j', 'KUBE-SERVICES'];
    const last = ['-m', 'comment', '--comment', 'last', '-j', 'RETURN'];
    assert.equal(await client.ensureRule('prepend', 'nat', 'PREROUTING', jump), false);
    assert.equal(await client.ensureRule('prepend', 'nat', 'PREROUTING', jump), true);
    assert.equal(await client.ensureRule('append', 'nat', 'PREROUTING', last), false);
    assert.equal(await client.ensureRule('append', 'nat', 'PREROUTING', last), true);
    assert.deepEqual(fake.chains('IPv4', 'nat').get('PREROUTING'), [jump, ['-j', 'ACCEPT'], last]);
  });

  test('deleteRule deletes what is there and reports what it did', async () => {
    const fake = new FakeIptables();
    const client = new IptablesClient({ family: 'IPv6', commands: fake, clock: new FakeClock() });
    const rule = ['-m', 'comment', '--comment', 'x', '-j', 'ACCEPT'];
    fake.inject('IPv6', `-t filter -A INPUT ${rule.join(' ')}`);
    assert.equal(await client.deleteRule('filter', 'INPUT', rule), true);
    assert.equal(await client.deleteRule('filter', 'INPUT', rule), false);
    assert.deepEqual(fake.chains('IPv6', 'filter').get('INPUT'), []);
    // `-C` in a missing chain exits 1, read as "no such rule"; the `-A` that follows fails, and that is an error.
    await assert.rejects(
      client.ensureRule('append', 'filter', 'KUBE-MISSING', rule),
      (e: unknown) => e instanceof IptablesError && e.kind === 'command',
    );
  });

  test('commands carry the wait flags first, then the operation, chain and table', async () => {
    const client = new IptablesClient({
      family: 'IPv4',
      commands: new FakeIptables(),
      clock: new FakeClock(),
    });
    const { argv } = await client.run('-C', 'nat', 'PREROUTING', ['-j', 'KUBE-SERVICES']);
    assert.deepEqual(argv, [
      '-w',
      '5',
      '-W',
      '100000',
      '-C',
      'PREROUTING',
      '-t',
      'nat',
      '-j',
      'KUBE-SERVICES',
    ]);
  });

  test('a failed restore names the failing line', async () => {
    const fake = new FakeIptables();
    const client = new IptablesClient({ family: 'IPv6', commands: fake, clock: new FakeClock() });
    await assert.rejects(
      client.restore('*nat\n:KUBE-A - [0:0]\n-A KUBE-A -j KUBE-MISSING\nCOMMIT\n'),
      (e: unknown) => e instanceof IptablesError && e.kind === 'restore' && e.failedLine === 3,
    );
    assert.equal(fake.restores[0]?.family, 'IPv6');
  });
});
