// A process that holds an xtables lock file, as a competing iptables user would: `flock` on a test-owned file, so
// the tests that need lock contention never touch the host's /run/xtables.lock.
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';

export interface LockHolder {
  readonly process: ChildProcess;
  /** Kills the holder and resolves once it has exited (so the lock is free). */
  release(): Promise<void>;
}

/** Holds `lockFile` in another process for up to `seconds`; resolves once the lock is held. */
export function holdXtablesLock(lockFile: string, seconds = 120): Promise<LockHolder> {
  const child = spawn('flock', ['--no-fork', lockFile, '-c', `echo held; exec sleep ${seconds}`], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const holder: LockHolder = {
    process: child,
    release: () => {
      if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
      const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.kill();
      return gone;
    },
  };
  return new Promise((resolve, reject) => {
    // A deadline for a clear failure, not a wait.
    const timer = setTimeout(() => reject(new Error(`flock did not take ${lockFile} within 10 s`)), 10_000);
    child.stdout?.once('data', () => {
      clearTimeout(timer);
      resolve(holder);
    });
    child.once('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
  });
}
