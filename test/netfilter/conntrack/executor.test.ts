import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import type {
  CommandOptions,
  CommandResult,
  CommandRunner,
} from '../../../packages/agent/src/netfilter/command.js';
import { reconcileConntrack } from '../../../packages/agent/src/netfilter/conntrack/executor.js';
import { recordingLogger } from '../../../packages/agent/src/util/logger.js';
import { FakeClock } from '../../../packages/agent/src/util/clock.js';
import { endpoint, servicePort } from './fixtures.js';

interface Call {
  readonly cmd: string;
  readonly args: readonly string[];
  /** For `-R <file>`: the batch file's content, read while the command runs. */
  readonly batch?: string;
}

function fakeRunner(answers: CommandResult[]): CommandRunner & { calls: Call[] } {
  const calls: Call[] = [];
  return {
    calls,
    run: async (cmd: string, args: readonly string[], options?: CommandOptions) => {
      void options;
      const batch = args[0] === '-R' && args[1] ? readFileSync(args[1], 'utf8') : undefined;
      calls.push({ cmd, args, ...(batch !== undefined ? { batch } : {}) });
      const a = answers.shift();
      if (!a) throw new Error('unexpected command');
      return a;
    },
  };
}

const SP = servicePort('kube-system', 'dns', { clusterIP: '198.18.100.10', port: 53 });
const SERVICES = new Map([[SP.key, SP]]);
const ENDPOINTS = new Map([[SP.key, [endpoint('198.18.1.2', 5353)]]]);
const LISTING = [
  'ipv4     2 udp      17 29 src=198.18.0.1 dst=198.18.100.10 sport=40000 dport=53 src=198.18.1.2 dst=198.18.0.1 sport=5353 dport=40000 [ASSURED] mark=0 use=1',
  'ipv4     2 udp      17 29 src=198.18.0.1 dst=198.18.100.10 sport=40001 dport=53 src=198.18.1.7 dst=198.18.0.1 sport=5353 dport=40001 mark=0 use=1',
  '',
].join('\n');

describe('reconcileConntrack', () => {
  test('lists one family, deletes the stale filter in one -R batch, reports the pass', async () => {
    const runner = fakeRunner([
      {
        code: 0,
        stdout: LISTING,
        stderr: 'conntrack v1.4.7 (conntrack-tools): 2 flow entries have been shown.\n',
      },
      {
        code: 0,
        stdout:
          'udp      17 28 src=198.18.0.1 dst=198.18.100.10 sport=40001 dport=53 src=198.18.1.7 dst=198.18.0.1 sport=5353 dport=40001 mark=0 use=1\n',
        stderr: '',
      },
    ]);
    const reports: [string, number, number][] = [];
    const r = await reconcileConntrack(
      {
        runner,
        clock: new FakeClock(),
        logger: recordingLogger(),
        metrics: { conntrackReconcile: (f, s, d) => reports.push([f, s, d]) },
      },
      'IPv4',
      SERVICES,
      ENDPOINTS,
    );
    assert.deepEqual(runner.calls[0], {
      cmd: 'conntrack',
      args: ['-L', '-p', 'udp', '-f', 'ipv4', '-o', 'extended'],
    });
    const del = runner.calls[1]!;
    assert.equal(del.args[0], '-R');
    assert.equal(
      del.batch,
      '-D -p udp -f ipv4 --orig-dst 198.18.100.10 --orig-port-dst 53 --reply-src 198.18.1.7 --reply-port-src 5353\n',
    );
    assert.equal(existsSync(del.args[1]!), false, 'the batch file is removed afterwards');
    assert.equal(r.listed, 2);
    assert.equal(r.deleted, 1);
    assert.equal(r.error, undefined);
    assert.deepEqual(reports, [['IPv4', 0, 1]]);
  });

  test('a failed batch falls back to one conntrack -D per filter; an already-gone flow is no error', async () => {
    const runner = fakeRunner([
      { code: 0, stdout: LISTING, stderr: '' },
      { code: 2, stdout: '', stderr: "conntrack v1.4.5 (conntrack-tools): invalid option -- 'R'\n" },
      {
        code: 1,
        stdout: '',
        stderr: 'conntrack v1.4.5 (conntrack-tools): 0 flow entries have been deleted.\n',
      },
    ]);
    const r = await reconcileConntrack(
      { runner, clock: new FakeClock(), logger: recordingLogger() },
      'IPv4',
      SERVICES,
      ENDPOINTS,
    );
    assert.deepEqual(runner.calls[2]!.args, [
      '-D',
      '-p',
      'udp',
      '-f',
      'ipv4',
      '--orig-dst',
      '198.18.100.10',
      '--orig-port-dst',
      '53',
      '--reply-src',
      '198.18.1.7',
      '--reply-port-src',
      '5353',
    ]);
    assert.equal(r.error, undefined);
    assert.equal(r.deleted, 0);
  });

  test('nothing stale: no delete command, the pass is still reported', async () => {
    const runner = fakeRunner([{ code: 0, stdout: LISTING.split('\n')[0]!, stderr: '' }]);
    const reports: number[] = [];
    const r = await reconcileConntrack(
      {
        runner,
        clock: new FakeClock(),
        logger: recordingLogger(),
        metrics: { conntrackReconcile: (_f, _s, d) => reports.push(d) },
      },
      'IPv4',
      SERVICES,
      ENDPOINTS,
    );
    assert.equal(runner.calls.length, 1);
    assert.equal(r.deleted, 0);
    assert.deepEqual(reports, [0]);
  });

  test('a failed listing aborts the pass with the tool’s words, deleting nothing', async () => {
    const runner = fakeRunner([
      { code: 1, stdout: '', stderr: 'conntrack v1.4.7 (conntrack-tools): Operation not permitted\n' },
    ]);
    const logger = recordingLogger();
    const r = await reconcileConntrack(
      { runner, clock: new FakeClock(), logger },
      'IPv6',
      SERVICES,
      ENDPOINTS,
    );
    assert.equal(runner.calls.length, 1);
    assert.match(r.error ?? '', /conntrack -L -f ipv6 failed \(exit 1\): .*Operation not permitted/);
    assert.ok(logger.records.some((l) => l.level === 'error'));
  });
});
