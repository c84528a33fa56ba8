// Live processes for kubectl exec, attach and run -i: the CommandRunner seam resolves once a command has ended,
// with its output buffered, so streaming needs pipes of its own; this file is the lab's one place that spawns
// with them. A command runs as `ip netns exec NS …`, in the pod's network namespace with the host's filesystem
// (and the namespace's /etc/netns hosts file). A TTY is util-linux `script`'s pseudo-terminal, sized from the
// client's first resize message: there is no native pty binding in Node, and `script -e` passes the exit code on.
import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, closeSync, openSync, readSync, statSync } from 'node:fs';
import type { StreamSession } from '../controllers/pod-lifecycle.js';
import { checkNamespaceName } from '@kube-proxy-ts/netns/index.js';

/** How long a TTY session waits for the client's terminal size before starting with 80x24. */
const FIRST_RESIZE_WAIT_MS = 300;
/** Output a container with stdin writes before anyone attaches is kept for the first attach (kubectl run -i). */
const REPLAY_LIMIT_BYTES = 4 * 1024 * 1024;

/** POSIX shell quoting of one word. */
export function shellQuote(word: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
}

/** argv for `command` in `netns`; with a TTY, under `script`, the terminal first sized to `size`. */
export function namespaceArgv(
  netns: string,
  command: readonly string[],
  tty: { readonly width: number; readonly height: number } | undefined,
): string[] {
  const base = ['ip', 'netns', 'exec', checkNamespaceName(netns)];
  if (!tty) return [...base, ...command];
  const inner = `stty rows ${tty.height} cols ${tty.width} 2>/dev/null; exec ${command.map(shellQuote).join(' ')}`;
  return [...base, 'script', '-qfec', inner, '/dev/null'];
}

function signalExitCode(signal: NodeJS.Signals | null): number {
  const numbers: Partial<Record<NodeJS.Signals, number>> = { SIGHUP: 1, SIGINT: 2, SIGKILL: 9, SIGTERM: 15 };
  return signal ? 128 + (numbers[signal] ?? 0) : 1;
}

/** Waits for the client's first terminal size (kubectl sends it right away), or gives up after a moment. */
function firstSize(session: StreamSession): Promise<{ width: number; height: number }> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve({ width: 80, height: 24 }), FIRST_RESIZE_WAIT_MS);
    session.onResize((s) => {
      clearTimeout(timer);
      resolve({ width: s.width, height: s.height });
    });
  });
}

/** `kubectl exec`: runs `command` in `netns` for this session, and ends the session with its exit code. */
export async function execInNamespace(
  netns: string,
  command: readonly string[],
  session: StreamSession,
  env: Readonly<Record<string, string>> = {},
): Promise<void> {
  const size = session.tty ? await firstSize(session) : undefined;
  const [cmd = 'ip', ...args] = namespaceArgv(netns, command, size);
  let child: ChildProcess;
  try {
    child = spawn(cmd, args, { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  } catch (e) {
    session.finish({
      error: `cannot run ${command.join(' ')}: ${e instanceof Error ? e.message : String(e)}`,
    });
    return;
  }
  child.stdout?.on('data', (d: Buffer) => session.writeStdout(d));
  child.stderr?.on('data', (d: Buffer) => (session.tty ? session.writeStdout(d) : session.writeStderr(d)));
  child.stdin?.on('error', () => undefined);
  if (session.stdin) session.onStdin((d) => (d === null ? child.stdin?.end() : child.stdin?.write(d)));
  else child.stdin?.end();
  // The client went away: as a runtime closes an exec's streams, the command gets a hangup.
  session.onClose(() => {
    if (child.exitCode === null) child.kill('SIGHUP');
  });
  child.on('error', (e) => session.finish({ error: `cannot run ${command.join(' ')}: ${e.message}` }));
  child.on('close', (code, signal) => session.finish({ exitCode: code ?? signalExitCode(signal) }));
}

/** A container's live process with pipes (stdin: true), and the attach sessions that share it. */
export class InteractiveProcess {
  readonly exited: Promise<{ code: number; stderr: string }>;
  readonly pid: number | undefined;
  private readonly sessions = new Set<StreamSession>();
  private replay: Buffer[] | undefined = [];
  private replayBytes = 0;
  private exitCode: number | undefined;
  private readonly child: ChildProcess;

  constructor(
    netns: string,
    argv: readonly string[],
    env: Readonly<Record<string, string>>,
    private readonly log: string,
    private readonly opts: { readonly tty: boolean; readonly stdinOnce: boolean },
  ) {
    const [cmd = 'ip', ...args] = namespaceArgv(
      netns,
      argv,
      opts.tty ? { width: 80, height: 24 } : undefined,
    );
    this.child = spawn(cmd, args, { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, ...env } });
    this.pid = this.child.pid;
    this.child.stdin?.on('error', () => undefined);
    const out = (stream: 'stdout' | 'stderr') => (d: Buffer) => this.output(stream, d);
    this.child.stdout?.on('data', out('stdout'));
    this.child.stderr?.on('data', out('stderr'));
    this.exited = new Promise((resolve) => {
      this.child.on('error', (e) => {
        this.output('stderr', Buffer.from(`${e.message}\n`));
        resolve({ code: 127, stderr: e.message });
      });
      this.child.on('close', (code, signal) => {
        this.exitCode = code ?? signalExitCode(signal);
        for (const s of this.sessions) s.finish({ exitCode: this.exitCode });
        this.sessions.clear();
        resolve({ code: this.exitCode, stderr: signal ? `killed by ${signal}` : '' });
      });
    });
  }

  private output(stream: 'stdout' | 'stderr', d: Buffer): void {
    try {
      appendFileSync(this.log, d);
    } catch {
      // The log is a convenience; the attached client still gets the bytes.
    }
    if (this.replay) {
      if (this.replayBytes + d.length <= REPLAY_LIMIT_BYTES) {
        this.replay.push(Buffer.concat([Buffer.from([stream === 'stdout' ? 1 : 2]), d]));
        this.replayBytes += d.length;
      }
    }
    for (const s of this.sessions) {
      if (stream === 'stdout' || s.tty) s.writeStdout(d);
      else s.writeStderr(d);
    }
  }

  /**
   * `kubectl attach` / `run -i`: the first session also gets what was written before it came (the process
   * started before kubectl could attach); stdin goes to the process, and with stdinOnce its end closes it.
   */
  attach(session: StreamSession): void {
    if (this.exitCode !== undefined) return session.finish({ exitCode: this.exitCode });
    if (this.replay) {
      for (const chunk of this.replay) {
        const data = chunk.subarray(1);
        if (chunk[0] === 1 || session.tty) session.writeStdout(data);
        else session.writeStderr(data);
      }
      this.replay = undefined;
    }
    this.sessions.add(session);
    session.onClose(() => this.sessions.delete(session));
    if (session.stdin)
      session.onStdin((d) => {
        if (d !== null) this.child.stdin?.write(d);
        else if (this.opts.stdinOnce) this.child.stdin?.end();
      });
  }

  kill(signal: NodeJS.Signals): void {
    if (this.exitCode === undefined) this.child.kill(signal);
  }
}

/**
 * Attach to a container without stdin: what it writes from now on, read from its log file, until its run ends
 * (then the session ends with the run's exit code).
 */
export function followLog(path: string, session: StreamSession, ended: Promise<number>): void {
  let offset = 0;
  try {
    offset = statSync(path).size;
  } catch {
    offset = 0;
  }
  const drain = (): void => {
    let fd: number | undefined;
    try {
      fd = openSync(path, 'r');
      const size = statSync(path).size;
      if (size > offset) {
        const buf = Buffer.alloc(size - offset);
        const n = readSync(fd, buf, 0, buf.length, offset);
        offset += n;
        session.writeStdout(buf.subarray(0, n));
      }
    } catch {
      // Not written yet.
    } finally {
      if (fd !== undefined) closeSync(fd);
    }
  };
  const timer = setInterval(drain, 200);
  session.onClose(() => clearInterval(timer));
  void ended.then((exitCode) => {
    clearInterval(timer);
    drain();
    session.finish({ exitCode });
  });
}
