import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { CommandResult, CommandRunner } from '../../../packages/agent/src/netfilter/command.js';
import {
  checkMinVersion,
  IPSetClient,
  IPSetError,
  parseIPSetVersion,
} from '../../../packages/agent/src/netfilter/ipset/client.js';
import { FakeIPSet } from '../../../packages/agent/src/netfilter/ipset/fake.js';

/** A runner that answers every command with `result` and records what it was asked. */
function answering(result: Partial<CommandResult>): CommandRunner & { asked: string[][] } {
  const asked: string[][] = [];
  return {
    asked,
    run: async (cmd, args) => {
      asked.push([cmd, ...args]);
      return { code: 0, stdout: '', stderr: '', ...result };
    },
  };
}

describe('versions', () => {
  test('parseIPSetVersion reads `ipset version`', () => {
    assert.deepEqual(parseIPSetVersion('ipset v7.17, protocol version: 7\n'), {
      major: 7,
      minor: 17,
      text: '7.17',
    });
    assert.deepEqual(parseIPSetVersion('ipset v6.38, protocol version: 6'), {
      major: 6,
      minor: 38,
      text: '6.38',
    });
    assert.equal(parseIPSetVersion('ipset: command not found'), undefined);
  });

  // Upstream's TestCheckIPSetVersion cases.
  const cases: [string, boolean][] = [
    ['4.0', false],
    ['5.1', false],
    ['5.1.2', false],
    ['7', false],
    ['6.0', true],
    ['6.1', true],
    ['6.19', true],
    ['7.0', true],
    ['8.1.2', true],
    ['9.3.4.0', true],
    ['total junk', false],
    ['v7.17', true],
  ];
  for (const [version, ok] of cases) {
    test(`checkMinVersion(${JSON.stringify(version)}) is ${ok}`, () =>
      assert.equal(checkMinVersion(version), ok));
  }

  test('version() fails with a typed error when the tool is missing', async () => {
    const client = new IPSetClient({ commands: answering({ code: 127, stderr: 'ipset: not found' }) });
    await assert.rejects(client.version(), (e: unknown) => e instanceof IPSetError && e.kind === 'version');
  });
});

describe('IPSetClient', () => {
  test('restore: one `ipset restore -exist` with the text on stdin', async () => {
    const fake = new FakeIPSet();
    const client = new IPSetClient({ commands: fake });
    await client.restore('create P bitmap:port range 0-65535\nadd P 30001\n');
    assert.deepEqual(fake.calls, [
      { args: ['restore', '-exist'], stdin: 'create P bitmap:port range 0-65535\nadd P 30001\n' },
    ]);
    assert.deepEqual(fake.state().get('P')?.entries, ['30001']);
  });

  test('a failed restore names the line and its text', async () => {
    const client = new IPSetClient({ commands: new FakeIPSet() });
    const text = 'create S hash:ip family inet\nadd S 198.18.0.1\nadd S 2001:db8::1\n';
    await assert.rejects(client.restore(text), (e: unknown) => {
      assert.ok(e instanceof IPSetError);
      assert.equal(e.kind, 'restore');
      assert.equal(e.failedLine, 3);
      assert.equal(e.failedText, 'add S 2001:db8::1');
      assert.equal(
        e.message,
        'ipset restore -exist: line 3 ("add S 2001:db8::1") Syntax error: cannot parse 2001:db8::1: ' +
          'resolving to IPv4 address failed (exit 1)',
      );
      return true;
    });
  });

  test('an error ipset reports without a line keeps all it said, on one line', async () => {
    const client = new IPSetClient({ commands: new FakeIPSet() });
    await assert.rejects(
      client.restore('create P bitmap:port range 0-65535\nadd P 70000\n'),
      (e: unknown) => {
        assert.ok(e instanceof IPSetError);
        assert.equal(e.failedLine, undefined);
        assert.match(
          e.message,
          /^ipset restore -exist: Syntax error: '70000' is out of range 0-65535; Syntax error: 'tcp' is invalid as number; cannot parse '70000' as a tcp port \(exit 1\)$/,
        );
        return true;
      },
    );
  });

  test('save keeps the sets asked for (the catalogue’s by default) and skips others unread, whatever their type', async () => {
    const saved = [
      'create cali40all-hosts-net hash:net family inet hashsize 1024 maxelem 1048576',
      'add cali40all-hosts-net 192.168.0.0/16',
      'create KUBE-6-IPVS-IPS hash:ip family inet6 hashsize 1024 maxelem 65536 bucketsize 12 initval 0x1',
      'add KUBE-6-IPVS-IPS 2001:db8::1',
      '',
    ].join('\n');
    const client = new IPSetClient({ commands: answering({ stdout: saved }) });
    const sets = await client.save();
    assert.deepEqual([...sets.keys()], ['KUBE-6-IPVS-IPS']);
    assert.deepEqual(sets.get('KUBE-6-IPVS-IPS')?.entries, new Set(['2001:db8::1']));
    assert.deepEqual(
      [...(await client.save(['KUBE-6-IPVS-IPS', 'KUBE-NOT-THERE'])).keys()],
      ['KUBE-6-IPVS-IPS'],
    );
  });

  test('save refuses output it cannot read for a set it keeps', async () => {
    const client = new IPSetClient({ commands: answering({ stdout: 'add KUBE-IPVS-IPS 198.18.0.1\n' }) });
    await assert.rejects(client.save(), /cannot read line 1 .*before its create line/);
  });

  test('destroy: a missing set is false; a set in use is an error', async () => {
    const missing = answering({
      code: 1,
      stderr: 'ipset v7.17: The set with the given name does not exist\n',
    });
    assert.equal(await new IPSetClient({ commands: missing }).destroy('KUBE-IPVS-IPS'), false);
    assert.deepEqual(missing.asked, [['ipset', 'destroy', 'KUBE-IPVS-IPS']]);
    const inUse = answering({
      code: 1,
      stderr: 'ipset v7.17: Set cannot be destroyed: it is in use by a kernel component\n',
    });
    await assert.rejects(
      new IPSetClient({ commands: inUse }).destroy('KUBE-IPVS-IPS'),
      (e: unknown) =>
        e instanceof IPSetError && e.kind === 'destroy' && /in use by a kernel component/.test(e.message),
    );
  });

  test('listNames reads `ipset list -n`; a custom binary is used as given', async () => {
    const runner = answering({ stdout: 'A\nKUBE-IPVS-IPS\n' });
    assert.deepEqual(await new IPSetClient({ commands: runner, binary: '/usr/sbin/ipset' }).listNames(), [
      'A',
      'KUBE-IPVS-IPS',
    ]);
    assert.deepEqual(runner.asked, [['/usr/sbin/ipset', 'list', '-n']]);
  });
});
