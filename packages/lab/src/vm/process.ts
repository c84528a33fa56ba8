// A long-running process in a guest (`guest.spawn`): started with SPAWN on the control channel, its output heard
// as the guest reads it (OUT), its stdin fed (IN, EOF) when it was spawned with one open, signalled (SIGNAL, KILL),
// its end reported (EXIT). Nothing here polls: every wait is on a message the channel delivers. What a lab node
// runs in its guest (pod servers, the kube-proxy agent, an exec's shell) is one.
import { StringDecoder } from 'node:string_decoder';
import type { ControlChannel, GuestStream, SpawnListener } from './channel.js';

export type { GuestStream } from './channel.js';

/** How a spawned process ended. */
export interface GuestExit {
  /** The status `sh` reported (128 + N when signal N ended it); null when the guest went away first. */
  readonly code: number | null;
  /** Why there is no status (the channel's reason), when code is null. */
  readonly reason?: string;
}

export interface GuestOutputChunk {
  readonly stream: GuestStream;
  readonly text: string;
}

export interface OutputWaitOptions {
  /** Which output to match (default: either). */
  readonly stream?: GuestStream;
  /** Reject after this long (default: wait until the process exits). */
  readonly timeoutMs?: number;
}

export interface GuestProcess {
  /** The channel's id for it. */
  readonly id: number;
  /** Its pid in the guest, once the guest has started it (never resolves if the guest goes away first). */
  readonly pid: Promise<number>;
  /**
   * Resolves (never rejects) when it has exited and its output has closed, after its last output was delivered; a
   * child it left running with its stdout or stderr open holds this back until that child ends too.
   */
  readonly exited: Promise<GuestExit>;
  /** What it wrote on stdout (and stderr) so far, as text: all of it, or its last `keepChars` characters. */
  stdout(): string;
  stderr(): string;
  /** Calls `listener` with each chunk from now on, as the guest reads it; returns a function that stops that. */
  onOutput(listener: (chunk: GuestOutputChunk) => void): () => void;
  /** The first match of `pattern` in its output (already there or still to come); rejects if it exits first. */
  waitForOutput(pattern: RegExp, options?: OutputWaitOptions): Promise<RegExpExecArray>;
  /** Sends a signal (a name: TERM, INT, HUP, KILL, …) to its process group; nothing once it has exited. */
  kill(signal?: string): void;
  /**
   * Sends bytes (a string as UTF-8) to its stdin, which must have been left open (`openStdin`); nothing once it has
   * exited. The guest holds what it has not read yet (there is no back-pressure). Throws after `end()`.
   */
  write(data: string | Buffer): void;
  /** Closes its stdin (after what was written); nothing once it has exited, or when its stdin was not left open. */
  end(): void;
}

/** Characters of each output a process keeps unless told otherwise (listeners see every chunk regardless). */
export const DEFAULT_KEEP_CHARS = 1 << 20;

/** A GuestProcess fed by the channel's SpawnListener calls. */
export class SpawnedProcess implements GuestProcess, SpawnListener {
  readonly pid: Promise<number>;
  readonly exited: Promise<GuestExit>;
  id = 0;
  private resolvePid!: (pid: number) => void;
  private resolveExit!: (exit: GuestExit) => void;
  private readonly text = { stdout: '', stderr: '' };
  private readonly decoders = { stdout: new StringDecoder('utf8'), stderr: new StringDecoder('utf8') };
  private readonly listeners = new Set<(chunk: GuestOutputChunk) => void>();
  private startedPid: number | undefined;
  private exit: GuestExit | undefined;
  /** Signals asked for before the guest said STARTED (its pid file may not exist yet). */
  private queued: string[] = [];
  private openStdin = false;
  private stdinEnded = false;

  constructor(
    private readonly channel: ControlChannel,
    /** How much of each output to keep for stdout()/stderr() and waitForOutput (a long-lived process's log grows). */
    private readonly keepChars = DEFAULT_KEEP_CHARS,
  ) {
    this.pid = new Promise((resolve) => (this.resolvePid = resolve));
    this.exited = new Promise((resolve) => (this.resolveExit = resolve));
  }

  /** Sends SPAWN; the id is known from then on. With `openStdin`, `stdin` is only its first bytes (see write). */
  start(script: string, stdin: string, openStdin = false): this {
    this.openStdin = openStdin;
    this.id = this.channel.spawn(script, stdin, this, openStdin);
    return this;
  }

  started(pid: number): void {
    this.startedPid = pid;
    this.resolvePid(pid);
    for (const signal of this.queued) this.channel.signal(this.id, signal);
    this.queued = [];
  }

  output(stream: GuestStream, bytes: Buffer): void {
    this.deliver(stream, this.decoders[stream].write(bytes));
  }

  ended(code: number | null, reason?: string): void {
    if (this.exit) return;
    for (const stream of ['stdout', 'stderr'] as const) this.deliver(stream, this.decoders[stream].end());
    this.exit = code === null ? { code, reason: reason ?? 'the guest went away' } : { code };
    this.resolveExit(this.exit);
  }

  stdout(): string {
    return this.text.stdout;
  }

  stderr(): string {
    return this.text.stderr;
  }

  onOutput(listener: (chunk: GuestOutputChunk) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  waitForOutput(pattern: RegExp, options: OutputWaitOptions = {}): Promise<RegExpExecArray> {
    const re = new RegExp(pattern.source, pattern.flags.replace('g', '').replace('y', ''));
    const search = (): RegExpExecArray | null =>
      options.stream
        ? re.exec(this.text[options.stream])
        : (re.exec(this.text.stdout) ?? re.exec(this.text.stderr));
    const found = search();
    if (found) return Promise.resolve(found);
    if (this.exit) return Promise.reject(this.noMatch(pattern, 'it exited'));
    return new Promise((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      const done = (): void => {
        clearTimeout(timer);
        stop();
      };
      const stop = this.onOutput(() => {
        const m = search();
        if (!m) return;
        done();
        resolve(m);
      });
      void this.exited.then(() => (done(), reject(this.noMatch(pattern, 'it exited'))));
      if (options.timeoutMs !== undefined) {
        const ms = options.timeoutMs;
        timer = setTimeout(() => (stop(), reject(this.noMatch(pattern, `${ms} ms passed`))), ms);
      }
    });
  }

  kill(signal = 'TERM'): void {
    if (this.exit) return;
    if (this.startedPid === undefined) this.queued.push(signal);
    else this.channel.signal(this.id, signal);
  }

  write(data: string | Buffer): void {
    if (this.exit) return;
    if (!this.openStdin)
      throw new Error(`guest process ${this.id}: its stdin is not open (spawn it with openStdin)`);
    if (this.stdinEnded) throw new Error(`guest process ${this.id}: write after end()`);
    this.channel.writeStdin(this.id, Buffer.isBuffer(data) ? data : Buffer.from(data, 'utf8'));
  }

  end(): void {
    if (this.exit || !this.openStdin || this.stdinEnded) return;
    this.stdinEnded = true;
    this.channel.endStdin(this.id);
  }

  private deliver(stream: GuestStream, text: string): void {
    if (text === '') return;
    this.text[stream] += text;
    if (this.text[stream].length > this.keepChars)
      this.text[stream] = this.text[stream].slice(-this.keepChars);
    for (const l of [...this.listeners]) l({ stream, text });
  }

  private noMatch(pattern: RegExp, why: string): Error {
    const tail = (s: string): string => s.split('\n').slice(-20).join('\n');
    return new Error(
      `guest process ${this.id}: no ${String(pattern)} before ${why}\n--- stdout ---\n${tail(this.text.stdout)}` +
        `\n--- stderr ---\n${tail(this.text.stderr)}`,
    );
  }
}
