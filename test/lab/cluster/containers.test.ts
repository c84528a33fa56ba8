// The lab kubelet's readiness probe of a container process (containers.ts) while its Pod terminates: as the
// kubelet's, it keeps probing until the process has ended, so a server that answers its probe "not ready" after
// SIGTERM (agnhost netexec --delay-shutdown: /readyz 503) makes its container, and so its Pod, unready while it
// drains. Processes and probes are faked at the CommandRunner seam; every wait is for a change event.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CommandResult, CommandRunner } from '../../../packages/agent/src/netfilter/command.js';
import { SILENT_LOGGER } from '../../../packages/agent/src/util/logger.js';
import { ContainerProcess, readinessProbeOf } from '../../../packages/lab/src/cluster/containers.js';
import { fileTempDir } from '../../helpers/temp-dir.js';

const dir = fileTempDir('kpts-containers-');

/** One process that ignores SIGTERM (it drains) until the test ends it; probes answer `status`. */
function drainingRuntime() {
  const state = {
    status: '200',
    signals: [] as string[],
    exit: (): void => undefined,
  };
  const runner: CommandRunner = {
    run: (cmd, args, options) => {
      if (cmd === 'kill') {
        state.signals.push(args[1] ?? '');
        return Promise.resolve({ code: 0, stdout: '', stderr: '' });
      }
      if (cmd === 'ip') return Promise.resolve({ code: 0, stdout: state.status, stderr: '' }); // the probe's curl
      writeFileSync(options?.env?.KPTS_PIDFILE ?? join(dir, 'pid'), '4242\n');
      return new Promise<CommandResult>((resolve) => {
        state.exit = () => resolve({ code: 0, stdout: '', stderr: '' });
      });
    },
  };
  return { state, runner };
}

test('a terminating container keeps its readiness probe: /readyz 503 after SIGTERM makes it unready', async () => {
  const { state: runtime, runner } = drainingRuntime();
  const waiters = new Set<() => void>();
  const probe = readinessProbeOf({
    readinessProbe: { httpGet: { path: '/readyz', port: 80 }, periodSeconds: 0.01 },
  });
  const container = new ContainerProcess(
    runner,
    'kpts-test-pod',
    {
      name: 'agnhost',
      image: 'agnhost',
      argv: ['netexec'],
      env: {},
      stdin: false,
      stdinOnce: false,
      tty: false,
    },
    mkdtempSync(join(dir, 'pod-')),
    'Always',
    'p_default',
    { changed: () => [...waiters].forEach((w) => w()) },
    SILENT_LOGGER,
    probe,
  );
  const until = (what: string, pred: () => boolean): Promise<void> =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        waiters.delete(check);
        reject(new Error(`${what}: not within 5 s`));
      }, 5_000); // a deadline for a clear failure, not a wait
      const check = (): void => {
        if (!pred()) return;
        clearTimeout(timer);
        waiters.delete(check);
        resolve();
      };
      waiters.add(check);
      check();
    });

  container.start();
  await until('ready once the probe passes', () => container.ready);
  const stopped = container.stop(60_000);
  runtime.status = '503'; // what netexec's /readyz answers once SIGTERM arrived
  await until('unready while terminating', () => !container.ready);
  assert.deepEqual(runtime.signals, ['TERM']);
  assert.equal(container.running, true, 'the process still drains');
  runtime.exit();
  await stopped;
  assert.equal(container.ready, false);
});
