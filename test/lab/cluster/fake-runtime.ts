// The container runtime at the CommandRunner seam, as the lab kubelet's tests fake it: ContainerProcess sends
// `kill -s SIGNAL PID` to signal a process and runs anything else as a launch (the container's process, or a hook
// in its namespace), then reads the launched process's pid from the file KPTS_PIDFILE names.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CommandResult, CommandRunner } from '../../../packages/agent/src/netfilter/command.js';

export const DONE: CommandResult = { code: 0, stdout: '', stderr: '' };

/** A fake runtime: each test's subclass says what a signal and a launch do. */
export abstract class FakeContainerRuntime implements CommandRunner {
  /** `scratch`: where a launch without KPTS_PIDFILE writes its pid. */
  constructor(private readonly scratch: string) {}

  run(
    cmd: string,
    args: readonly string[],
    options?: { env?: Record<string, string> },
  ): Promise<CommandResult> {
    if (cmd === 'kill') {
      this.onSignal(args[1] ?? '', args[2] ?? '');
      return Promise.resolve(DONE);
    }
    return this.onLaunch(cmd, args, options?.env ?? {});
  }

  /** A launch's pid, where ContainerProcess reads it. */
  protected writePid(env: Record<string, string>, pid: number): void {
    writeFileSync(env.KPTS_PIDFILE ?? join(this.scratch, 'pid'), `${pid}\n`);
  }

  protected abstract onSignal(signal: string, pid: string): void;
  protected abstract onLaunch(
    cmd: string,
    args: readonly string[],
    env: Record<string, string>,
  ): Promise<CommandResult>;
}
