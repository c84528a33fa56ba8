// A kube-proxy-ts process started as an operator starts it, inside a test's network namespace
// (`ip netns exec NS node --import tsx src/cli/main.ts FLAGS`), with --logging-format=json so that the test can
// read its log as records. `ip netns exec` execs the command, so the PID is the proxy's own and kill() reaches it.
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { until } from './agent-wait.js';
import { AGENT_MAIN, SOURCE_FLAGS } from '../../helpers/cli.js';

export const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));

/** One line of the proxy's JSON log (src/cli/logging.ts); lines that are not JSON keep their text in msg. */
export interface AgentLogRecord {
  readonly msg: string;
  readonly level: 'info' | 'warning' | 'error';
  readonly [field: string]: unknown;
}

export interface AgentExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

function parseLine(line: string): AgentLogRecord {
  try {
    const parsed: unknown = JSON.parse(line);
    if (
      typeof parsed === 'object' &&
      parsed !== null &&
      typeof (parsed as { msg?: unknown }).msg === 'string'
    ) {
      const r = parsed as Record<string, unknown>;
      const level = r.level === 'error' || r.level === 'warning' ? r.level : 'info';
      return { ...r, msg: r.msg as string, level };
    }
  } catch {
    // not JSON: a warning printed before the logger exists, or a crash trace
  }
  return { msg: line, level: 'info' };
}

export class AgentProcess {
  readonly records: AgentLogRecord[] = [];
  /** Everything written to stderr, as text (refusals at start are printed before the JSON logger exists). */
  stderr = '';
  stdout = '';
  exit: AgentExit | undefined;
  readonly exited: Promise<AgentExit>;
  private readonly child: ChildProcess;
  private partial = '';

  constructor(namespace: string, args: readonly string[], env: Readonly<Record<string, string>> = {}) {
    this.child = spawn(
      'ip',
      ['netns', 'exec', namespace, process.execPath, ...SOURCE_FLAGS, AGENT_MAIN, ...args],
      { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } },
    );
    this.child.stdout?.on('data', (b: Buffer) => (this.stdout += b.toString('utf8')));
    this.child.stderr?.on('data', (b: Buffer) => this.onStderr(b.toString('utf8')));
    this.exited = new Promise((resolve) => {
      this.child.on('exit', (code, signal) => {
        this.exit = { code, signal };
        resolve(this.exit);
      });
      this.child.on('error', (e) => {
        this.stderr += `spawn failed: ${e.message}\n`;
        this.exit = { code: 127, signal: null };
        resolve(this.exit);
      });
    });
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  get running(): boolean {
    return this.exit === undefined;
  }

  private onStderr(text: string): void {
    this.stderr += text;
    const lines = (this.partial + text).split('\n');
    this.partial = lines.pop() ?? '';
    for (const line of lines) if (line.trim() !== '') this.records.push(parseLine(line));
  }

  matching(test: (r: AgentLogRecord) => boolean): AgentLogRecord[] {
    return this.records.filter(test);
  }

  /** Waits for a log record; fails early, with the log's tail, if the process exits first. */
  async waitForLog(
    test: (r: AgentLogRecord) => boolean,
    what: string,
    timeoutMs = 30_000,
  ): Promise<AgentLogRecord> {
    let found: AgentLogRecord | undefined;
    await until(
      () => {
        if (!this.running)
          throw new Error(
            `proxy exited (${JSON.stringify(this.exit)}) while waiting for ${what}\n${this.tail()}`,
          );
        found = this.records.find(test);
        return found !== undefined;
      },
      what,
      timeoutMs,
      () => this.tail(),
    );
    return found as AgentLogRecord;
  }

  /** Waits for an outcome of the proxy's work (a rule, a sysctl); a timeout shows its last log lines. */
  async waitUntil(check: () => Promise<boolean>, what: string, timeoutMs = 60_000): Promise<void> {
    await until(check, what, timeoutMs, () => this.tail(20));
  }

  /** Waits for the process to exit by itself; rejects (it keeps running) after `timeoutMs`. */
  async exitWithin(timeoutMs: number): Promise<AgentExit> {
    await until(
      () => !this.running,
      'the proxy to exit',
      timeoutMs,
      () => this.tail(),
    );
    return this.exit as AgentExit;
  }

  /** The last lines of stderr, for failure messages. */
  tail(lines = 40): string {
    return this.stderr.split('\n').slice(-lines).join('\n');
  }

  /** SIGKILL (cleanup) or SIGTERM (a graceful stop); resolves when the process is gone. */
  async kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<AgentExit> {
    if (this.running) this.child.kill(signal);
    return this.exited;
  }
}
