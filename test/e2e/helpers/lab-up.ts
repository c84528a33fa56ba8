// `lab up` as a child process, as a user starts it in a terminal, and the lab's other commands beside it: for the
// suites that test the command line itself (its flags, its banner, how it stops) rather than startLab in-process.
import { spawn, type ChildProcess } from 'node:child_process';
import { LAB_MAIN, SOURCE_FLAGS } from '../../helpers/cli.js';
import { mustRun, run, type Run } from '../helpers.js';
import type { LabPlace } from './lab-turn.js';

export interface LabUpOptions {
  /** The command line up to and including `up`; by default the lab's CLI run from the sources. */
  readonly command?: readonly string[];
  /** A process group of its own, as a terminal's job: stop() signals the whole group, as Ctrl-C does. */
  readonly detached?: boolean;
}

export interface LabUp {
  readonly child: ChildProcess;
  readonly exited: Promise<number | null>;
  /** stdout alone: the banner, without the log lines stderr may interleave. */
  stdout(): string;
  /** stdout and stderr as they came. */
  output(): string;
  /** Resolves once the output shows `text`; rejects when lab up exits first or after `timeoutMs`. */
  shown(text: string, timeoutMs: number): Promise<void>;
  /** Ctrl-C (SIGINT), and SIGKILL if it has not ended within a minute. */
  stop(): Promise<void>;
}

const LAB_UP: readonly string[] = [process.execPath, ...SOURCE_FLAGS, LAB_MAIN, 'up'];
/** How long stop() lets the lab clean up after SIGINT before it kills it. */
const STOP_DEADLINE_MS = 60_000;

/** Starts `lab up FLAGS --state-dir DIR --prefix PREFIX` and returns at once. */
export function spawnLabUp(place: LabPlace, flags: readonly string[], options: LabUpOptions = {}): LabUp {
  const [cmd = '', ...args] = options.command ?? LAB_UP;
  const child = spawn(cmd, [...args, ...flags, '--state-dir', place.stateDir, '--prefix', place.prefix], {
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: options.detached === true,
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  let stdout = '';
  let output = '';
  const readers = new Set<() => void>();
  const read = (b: Buffer): void => {
    output += b.toString();
    for (const r of [...readers]) r();
  };
  child.stdout?.on('data', (b: Buffer) => {
    stdout += b.toString();
    read(b);
  });
  child.stderr?.on('data', read);
  const signal = (name: NodeJS.Signals): void => {
    if (options.detached === true && child.pid !== undefined) process.kill(-child.pid, name);
    else child.kill(name);
  };
  return {
    child,
    exited,
    stdout: () => stdout,
    output: () => output,
    shown: (text, timeoutMs) => shownIn(() => output, text, timeoutMs, readers, exited),
    stop: () => stopLab(child, exited, signal),
  };
}

/** `lab up FLAGS`, resolved once it says the lab is up (rejected if it exits first). */
export async function startLabUp(
  place: LabPlace,
  flags: readonly string[],
  timeoutMs: number,
  options: LabUpOptions = {},
): Promise<LabUp> {
  const lab = spawnLabUp(place, flags, options);
  await lab.shown('The lab is up', timeoutMs);
  return lab;
}

/** Resolves when `output()` contains `text`, checked on each chunk `readers` are told of. */
function shownIn(
  output: () => string,
  text: string,
  timeoutMs: number,
  readers: Set<() => void>,
  exited: Promise<number | null>,
): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const done = (): void => {
      clearTimeout(timer);
      readers.delete(check);
    };
    const check = (): void => {
      if (!output().includes(text)) return;
      done();
      resolve();
    };
    // A deadline for a clear failure; the wait itself ends on the output.
    const timer = setTimeout(() => {
      done();
      reject(new Error(`no "${text}" from lab up in ${timeoutMs / 1000} s:\n${output()}`));
    }, timeoutMs);
    readers.add(check);
    void exited.then((code) => {
      done();
      reject(new Error(`lab up exited (${code}) before "${text}":\n${output()}`));
    });
    check();
  });
}

async function stopLab(
  child: ChildProcess,
  exited: Promise<number | null>,
  signal: (name: NodeJS.Signals) => void,
): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  signal('SIGINT');
  let timer: NodeJS.Timeout | undefined;
  // Ends on the exit; the deadline is for SIGKILL, not a wait.
  const deadline = new Promise<void>((resolve) => (timer = setTimeout(resolve, STOP_DEADLINE_MS)));
  await Promise.race([exited, deadline]);
  clearTimeout(timer);
  if (child.exitCode === null && child.signalCode === null) signal('SIGKILL');
}

/** `kube-proxy-ts-lab COMMAND --state-dir DIR ARGS…` from the sources, as a user runs it beside `lab up`. */
const labArgv = (stateDir: string, command: string, args: readonly string[]): string[] => [
  ...SOURCE_FLAGS,
  LAB_MAIN,
  command,
  '--state-dir',
  stateDir,
  ...args,
];

export function runLab(stateDir: string, command: string, ...args: string[]): Promise<Run> {
  return run(process.execPath, labArgv(stateDir, command, args));
}

/** runLab, failing on a non-zero exit; its stdout. */
export function mustRunLab(stateDir: string, command: string, ...args: string[]): Promise<string> {
  return mustRun(process.execPath, labArgv(stateDir, command, args));
}

/** `lab exec TARGET -- CMD`: a command inside a node's (or pod's) namespaces, what a user would ssh for. */
export function labExec(stateDir: string, target: string, cmd: readonly string[]): Promise<string> {
  return mustRunLab(stateDir, 'exec', target, '--', ...cmd);
}
