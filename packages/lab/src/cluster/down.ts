// `lab down`: from another terminal, or after the lab process crashed. A live lab is asked to stop (SIGTERM: it
// tears itself down); then whatever is still there under the recorded prefix is removed, so the result is the
// same whether the lab stopped cleanly, hung, or was killed.
import { existsSync } from 'node:fs';
import { hostCommandRunner, type CommandRunner } from 'kube-proxy-ts/netfilter/command.js';
import { sweepGuests } from '../vm/cleanup.js';
import { DEFAULT_PREFIX, labPaths, prefixLockFile } from './layout.js';
import { acquireLabLock, processAlive, readLabState, readLockHolder } from './state.js';
import { removeLabLeftovers, removeStateDir } from './teardown.js';

export interface DownReport {
  /** The lab process that was asked to stop, if one was running. */
  readonly stoppedPid?: number;
  readonly killed: boolean;
  readonly namespaces: readonly string[];
  /** Guests' state directories swept (their QEMU killed, their taps and files removed). */
  readonly guests: readonly string[];
  readonly errors: readonly string[];
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

async function waitForExit(pid: number, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (processAlive(pid)) {
    if (Date.now() > deadline) return false;
    await delay(100);
  }
  return true;
}

export async function labDown(
  stateDir: string,
  options: {
    readonly runner?: CommandRunner;
    readonly progress?: (line: string) => void;
    readonly prefix?: string;
  } = {},
): Promise<DownReport> {
  const runner = options.runner ?? hostCommandRunner;
  const progress = options.progress ?? ((): void => undefined);
  const paths = labPaths(stateDir);
  const state = readLabState(paths.stateFile);
  if (!state.ok && !state.missing) progress(`state file unreadable (${state.reason}); sweeping by prefix`);
  const prefix = state.ok ? state.state.prefix : (options.prefix ?? DEFAULT_PREFIX);
  const holder = readLockHolder(paths.lockFile) ?? (state.ok ? state.state.pid : 0);
  let stoppedPid: number | undefined;
  let killed = false;
  if (holder > 0 && holder !== process.pid && processAlive(holder)) {
    stoppedPid = holder;
    progress(`asking the lab (process ${holder}) to stop`);
    process.kill(holder, 'SIGTERM');
    if (!(await waitForExit(holder, 60_000))) {
      progress(`process ${holder} did not stop within 60 s; killing it`);
      process.kill(holder, 'SIGKILL');
      killed = true;
      await waitForExit(holder, 5_000);
    }
  }
  // Take the locks, so that no `lab up` starts while we sweep; a dead holder's lock is taken over. A prefix held
  // by a live lab with another state directory is that lab's: leave its namespaces alone.
  const ownsPrefix = acquireLabLock(prefixLockFile(prefix));
  if (!ownsPrefix.ok) {
    const why = `namespace prefix ${prefix} belongs to a running lab (process ${ownsPrefix.holder}); not sweeping it`;
    return {
      ...(stoppedPid !== undefined ? { stoppedPid } : {}),
      killed,
      namespaces: [],
      guests: [],
      errors: [why],
    };
  }
  const lock = existsSync(stateDir) ? acquireLabLock(paths.lockFile) : undefined;
  // Guests first: their QEMU holds a tap in a lab namespace. The lab is stopped and its lock is ours, so every
  // guest under it is a leftover, whether or not its recorded owner's pid is alive again (pids are reused).
  let guests: string[] = [];
  const guestErrors: string[] = [];
  try {
    guests = await sweepGuests(paths.guestsDir, { all: true });
  } catch (e) {
    guestErrors.push(`guests under ${paths.guestsDir}: ${e instanceof Error ? e.message : String(e)}`);
  }
  if (guests.length > 0) progress(`removed ${guests.length} guests (QEMU, taps, state)`);
  const r = await removeLabLeftovers(runner, prefix);
  if (r.namespaces.length > 0)
    progress(`removed ${r.namespaces.length} namespaces (and everything running in them)`);
  if (r.etcDirs.length > 0) progress(`removed ${r.etcDirs.length} /etc/netns directories`);
  removeStateDir(stateDir);
  if (lock?.ok) lock.release();
  ownsPrefix.release();
  return {
    ...(stoppedPid !== undefined ? { stoppedPid } : {}),
    killed,
    namespaces: r.namespaces,
    guests,
    errors: [...guestErrors, ...r.errors],
  };
}
