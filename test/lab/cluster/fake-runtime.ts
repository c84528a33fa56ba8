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

/**
 * A runtime whose launches run until a signal ends them (exit 143): it records each launch's working directory (its
 * writable layer) and each signal's name; `firstPid` numbers the launches.
 */
export class HeldLaunchRuntime extends FakeContainerRuntime {
  readonly workDirs: string[] = [];
  readonly signals: string[] = [];
  private readonly running = new Map<string, (r: CommandResult) => void>();

  constructor(
    scratch: string,
    private nextPid = 3000,
  ) {
    super(scratch);
  }

  protected onSignal(signal: string, pid: string): void {
    this.signals.push(signal);
    this.running.get(pid)?.({ code: 143, stdout: '', stderr: '' });
  }

  protected onLaunch(
    _cmd: string,
    _args: readonly string[],
    env: Record<string, string>,
  ): Promise<CommandResult> {
    const pid = this.nextPid++;
    this.workDirs.push(env.KPTS_WORKDIR ?? '');
    this.writePid(env, pid);
    return new Promise((resolve) => this.running.set(String(pid), resolve));
  }
}
