// Every subcommand reads its command line through cli/command-line.ts: help on stdout with exit 0, a refused flag
// or value as `NAME: what is wrong` plus the usage on stderr with the command's usage status, other errors left to
// the command. Checked on the module itself and through doctor and trace, whose refusals no other test covers.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { runCommand, runCommandSync, UsageError } from '../../packages/agent/src/cli/command-line.js';
import { doctorCommand } from '../../packages/agent/src/cli/doctor.js';
import { traceCommand } from '../../packages/agent/src/cli/trace.js';
import type { CommandRunner, StreamRunner } from '../../packages/agent/src/netfilter/command.js';

function recorder() {
  const out = { stdout: '', stderr: '' };
  return {
    out,
    io: { stdout: (t: string) => void (out.stdout += t), stderr: (t: string) => void (out.stderr += t) },
  };
}

const LINE = {
  name: 'thing',
  usage: 'Usage: thing [--size N]\n',
  options: { size: { type: 'string' }, quiet: { type: 'boolean', short: 'q' } },
} as const;

/** A runner that fails the test if a refused command line still reached the kernel. */
const untouchable: CommandRunner = {
  run: () => Promise.reject(new Error('a refused command line ran a command')),
};
const noStreams = {} as StreamRunner;

describe('command lines', () => {
  test('-h and --help print the usage on stdout, exit 0, and do not run the command', async () => {
    for (const flag of ['-h', '--help']) {
      const { out, io } = recorder();
      let ran = false;
      const code = await runCommand(LINE, [flag], io, () => ((ran = true), 0));
      assert.equal(code, 0);
      assert.equal(out.stdout, LINE.usage);
      assert.equal(out.stderr, '');
      assert.equal(ran, false, `${flag}: the command did not run`);
    }
  });

  test('the command gets its flags; positionals are refused unless the command takes them', async () => {
    const { out, io } = recorder();
    const code = runCommandSync(LINE, ['--size', '3', '-q'], io, ({ values }) => {
      assert.equal(values.size, '3');
      assert.equal(values.quiet, true);
      return 7;
    });
    assert.equal(code, 7, "the command's own status");

    const refused = await runCommand(LINE, ['extra'], io, () => 0);
    assert.equal(refused, 2);
    assert.match(out.stderr, /^thing: unexpected argument "extra"\n\nUsage: thing/);

    const taken = await runCommand({ ...LINE, positionals: true }, ['service', 'web'], io, (p) => {
      assert.deepEqual(p.positionals, ['service', 'web']);
      return 0;
    });
    assert.equal(taken, 0);
  });

  test("an unknown flag, a missing value and the command's UsageError are refused alike", async () => {
    const cases: [string[], RegExp][] = [
      [['--colour'], /^thing: Unknown option '--colour'/],
      [['--size'], /^thing: Option '--size <value>' argument missing/],
      [['--size', 'x'], /^thing: --size: expected a number\n\nUsage: thing/],
    ];
    for (const [argv, message] of cases) {
      const { out, io } = recorder();
      const code = await runCommand({ ...LINE, usageExit: 3 }, argv, io, ({ values }) => {
        if (!/^[0-9]+$/.test(values.size ?? '')) throw new UsageError('--size: expected a number');
        return 0;
      });
      assert.equal(code, 3, `${argv.join(' ')}: the command's usage status`);
      assert.match(out.stderr, message);
      assert.ok(out.stderr.endsWith(LINE.usage), 'the usage follows the message');
      assert.equal(out.stdout, '');
    }
  });

  test('any other error is the command’s to throw', async () => {
    const { io } = recorder();
    await assert.rejects(
      runCommand(LINE, [], io, () => Promise.reject(new RangeError('boom'))),
      /boom/,
    );
    assert.throws(() =>
      runCommandSync(LINE, [], io, () => {
        throw new Error('sync boom');
      }),
    );
  });

  test('doctor refuses a wrong choice or URL with status 3 (1 and 2 are findings)', async () => {
    const cases: [string[], RegExp][] = [
      [['-o', 'yaml'], /^doctor: -o: unknown output format "yaml" \(text or json\)/],
      [
        ['--proxy-mode', 'ipvsx'],
        /^doctor: --proxy-mode: unknown mode "ipvsx" \(iptables, nftables or ipvs\)/,
      ],
      [['--metrics-url', 'not a url'], /^doctor: --metrics-url\/--healthz-url: not a URL/],
      [['--bogus'], /^doctor: Unknown option '--bogus'/],
    ];
    for (const [argv, message] of cases) {
      const { out, io } = recorder();
      const code = await doctorCommand(argv, { ...io, runner: untouchable, env: {}, now: () => 0 });
      assert.equal(code, 3, argv.join(' '));
      assert.match(out.stderr, message);
      assert.match(out.stderr, /Usage: kube-proxy-ts doctor/);
    }
  });

  test('trace refuses a missing target, a bad count or a wrong choice with status 2', async () => {
    const cases: [string[], RegExp][] = [
      [[], /^trace: --to is required/],
      [['--to', '198.18.0.10:80', '--count', '0'], /^trace: --count 0: expected a positive integer/],
      [['--to', '198.18.0.10:80', '-o', 'yaml'], /^trace: -o: unknown output format "yaml" \(text or json\)/],
      [['--to', '198.18.0.10:80', '--proxy-mode', 'ipvs'], /^trace: --proxy-mode: unknown mode "ipvs"/],
    ];
    for (const [argv, message] of cases) {
      const { out, io } = recorder();
      const code = await traceCommand(argv, { ...io, runner: untouchable, streams: noStreams });
      assert.equal(code, 2, argv.join(' '));
      assert.match(out.stderr, message);
      assert.match(out.stderr, /Usage: kube-proxy-ts trace/);
    }
  });
});
