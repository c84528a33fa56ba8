// The lab kubelet's preStop exec hook (containers.ts), as the kubelet's killContainer runs it: the hook first, in
// the container's namespace, and SIGTERM only once it has ended, so a server behind a `sleep` hook keeps serving
// while its Pod terminates (upstream's "should create endpoints for unready pods" relies on that). Processes are
// faked at the CommandRunner seam; every wait is for an observed call.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import type { CommandResult } from '../../../packages/agent/src/netfilter/command.js';
import { SILENT_LOGGER } from '../../../packages/agent/src/util/logger.js';
import { ContainerProcess, preStopOf } from '../../../packages/lab/src/cluster/containers.js';
import { DONE, FakeContainerRuntime } from './fake-runtime.js';
import { fileTempDir } from '../../helpers/temp-dir.js';

const dir = fileTempDir('kpts-prestop-');

/** One long-running process; the preStop hook ends when the test says so; every call is recorded in order. */
class HookRuntime extends FakeContainerRuntime {
  readonly calls: string[] = [];
  private endProcess: ((r: CommandResult) => void) | undefined;
  private endHook: ((r: CommandResult) => void) | undefined;
  private hookStarted: (() => void) | undefined;
  readonly hookRunning = new Promise<void>((resolve) => (this.hookStarted = resolve));

  protected onSignal(signal: string): void {
    this.calls.push(`kill ${signal}`);
    this.endProcess?.({ code: 143, stdout: '', stderr: '' });
  }

  protected onLaunch(
    cmd: string,
    args: readonly string[],
    env: Record<string, string>,
  ): Promise<CommandResult> {
    if (cmd === 'ip') {
      this.calls.push(args.join(' '));
      this.hookStarted?.();
      return new Promise((resolve) => (this.endHook = resolve));
    }
    this.writePid(env, 4242);
    return new Promise((resolve) => (this.endProcess = resolve));
  }

  finishHook(): void {
    this.endHook?.(DONE);
  }
}

test('preStopOf reads lifecycle.preStop.exec.command, and nothing else', () => {
  const spec = { lifecycle: { preStop: { exec: { command: ['/bin/sleep', '100'] } } } };
  assert.deepEqual(preStopOf(spec), ['/bin/sleep', '100']);
  assert.equal(preStopOf({}), undefined);
  assert.equal(preStopOf({ lifecycle: { preStop: { httpGet: { port: 80 } } } }), undefined);
});

test('a container with a preStop hook gets SIGTERM only after the hook ran in its namespace', async () => {
  const runtime = new HookRuntime(dir);
  const container = new ContainerProcess(
    runtime,
    'kpts-test-pod',
    { name: 'web', image: 'agnhost', argv: ['netexec'], env: {}, stdin: false, stdinOnce: false, tty: false },
    mkdtempSync(join(dir, 'pod-')),
    'Always',
    'p_default',
    { changed: () => undefined },
    SILENT_LOGGER,
    undefined,
    ['/bin/sleep', '100'],
  );
  container.start();
  const stopped = container.stop(100_000);
  await runtime.hookRunning;
  assert.deepEqual(
    runtime.calls,
    ['netns exec kpts-test-pod /bin/sleep 100'],
    'no SIGTERM while the hook runs',
  );
  runtime.finishHook();
  await stopped;
  assert.deepEqual(runtime.calls, ['netns exec kpts-test-pod /bin/sleep 100', 'kill TERM']);
});
