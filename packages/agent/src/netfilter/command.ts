// The only place that starts processes for the kernel's tools (nft, iptables-restore, ip, conntrack). Everything
// else talks to a CommandRunner, so unit tests substitute a fake and kernel tests wrap it into a network namespace.
import { spawn } from 'node:child_process';

export interface CommandOptions {
  readonly stdin?: string;
  readonly env?: Readonly<Record<string, string>>;
  /** Kill the process after this many ms (default: no limit). */
  readonly timeoutMs?: number;
}

export interface CommandResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

export interface CommandRunner {
  run(cmd: string, args: readonly string[], options?: CommandOptions): Promise<CommandResult>;
}

/** Runs commands on this host. A command that cannot start resolves with code 127 and the reason in stderr. */
export const hostCommandRunner: CommandRunner = {
  run(cmd, args, options = {}) {
    return new Promise((resolve) => {
      const child = spawn(cmd, [...args], {
        stdio: ['pipe', 'pipe', 'pipe'],
        env: options.env ? { ...process.env, ...options.env } : process.env,
      });
      const out: Buffer[] = [];
      const err: Buffer[] = [];
      let timer: NodeJS.Timeout | undefined;
      if (options.timeoutMs !== undefined) {
        timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs);
      }
      child.stdout.on('data', (b: Buffer) => out.push(b));
      child.stderr.on('data', (b: Buffer) => err.push(b));
      child.on('error', (e) => {
        if (timer) clearTimeout(timer);
        resolve({ code: 127, stdout: '', stderr: `${cmd}: ${e.message}` });
      });
      child.on('close', (code, signal) => {
        if (timer) clearTimeout(timer);
        const stderr = Buffer.concat(err).toString('utf8');
        resolve({
          code: code ?? 128,
          stdout: Buffer.concat(out).toString('utf8'),
          stderr: signal ? `${stderr}${cmd}: killed by ${signal}` : stderr,
        });
      });
      // A child that exits before reading all of stdin raises EPIPE on the stream; the exit code tells the story.
      child.stdin.on('error', () => {});
      child.stdin.end(options.stdin ?? '');
    });
  },
};

/** Runs every command inside network namespace `netns` (`ip netns exec`), for kernel tests and the lab. */
export function netnsCommandRunner(netns: string, base: CommandRunner = hostCommandRunner): CommandRunner {
  return {
    run: (cmd, args, options) => base.run('ip', ['netns', 'exec', netns, cmd, ...args], options),
  };
}

/** A long-running command whose stdout is read line by line (`nft monitor trace`), stopped by the caller. */
export interface StreamHandle {
  /** Ends the command (SIGTERM, then SIGKILL after 2 s); resolves with its exit once it is gone. */
  stop(): Promise<CommandResult>;
  /** Resolves when the command exits by itself or is stopped; stdout holds what was not a whole line. */
  readonly exited: Promise<CommandResult>;
}

export interface StreamRunner {
  stream(cmd: string, args: readonly string[], onLine: (line: string) => void): StreamHandle;
}

export const hostStreamRunner: StreamRunner = {
  stream(cmd, args, onLine) {
    const child = spawn(cmd, [...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let partial = '';
    const err: Buffer[] = [];
    child.stdout.on('data', (b: Buffer) => {
      const lines = (partial + b.toString('utf8')).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) onLine(line);
    });
    child.stderr.on('data', (b: Buffer) => err.push(b));
    const exited = new Promise<CommandResult>((resolve) => {
      child.on('error', (e) => resolve({ code: 127, stdout: '', stderr: `${cmd}: ${e.message}` }));
      child.on('close', (code, signal) => {
        const stderr = Buffer.concat(err).toString('utf8');
        resolve({
          code: code ?? 128,
          stdout: partial,
          stderr: signal && signal !== 'SIGTERM' ? `${stderr}${cmd}: killed by ${signal}` : stderr,
        });
      });
    });
    return {
      exited,
      stop: async () => {
        if (child.exitCode === null && child.signalCode === null) {
          child.kill('SIGTERM');
          const timer = setTimeout(() => child.kill('SIGKILL'), 2000);
          const r = await exited;
          clearTimeout(timer);
          return r;
        }
        return exited;
      },
    };
  },
};

/** The stream runner inside network namespace `netns` (`ip netns exec` execs, so signals reach the command). */
export function netnsStreamRunner(netns: string, base: StreamRunner = hostStreamRunner): StreamRunner {
  return { stream: (cmd, args, onLine) => base.stream('ip', ['netns', 'exec', netns, cmd, ...args], onLine) };
}
