// The host's end of the guest's control channel (the protocol is described in init-script.ts): a Unix socket QEMU
// connects to at start (`-chardev socket,path=…,server=off`), carrying the virtio-serial port kpts.ctl. Requests
// are lines (a spawned process's stdin too: IN lines of base64); answers are a line, then for DONE the command's
// stdout and stderr bytes and for OUT a spawned process's chunk of output, counted in that line.
import type { Socket } from 'node:net';

export interface GuestCommandResult {
  /** The exit status `sh` reported (128 + N when signal N ended it). */
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

interface Pending {
  resolve(result: GuestCommandResult): void;
  reject(error: Error): void;
}

/** Which of a spawned process's outputs a chunk came from. */
export type GuestStream = 'stdout' | 'stderr';

export type Answer =
  | { kind: 'ready'; release: string }
  | { kind: 'done'; id: number; result: GuestCommandResult }
  | { kind: 'started'; id: number; pid: number }
  | { kind: 'output'; id: number; stream: GuestStream; bytes: Buffer }
  | { kind: 'exit'; id: number; code: number };

/** Splits the guest's byte stream into answers. Pure: bytes in, answers out. */
export class AnswerParser {
  private buffer = Buffer.alloc(0);

  push(bytes: Buffer): Answer[] {
    this.buffer = Buffer.concat([this.buffer, bytes]);
    const answers: Answer[] = [];
    for (;;) {
      const eol = this.buffer.indexOf(0x0a);
      if (eol < 0) return answers;
      const words = this.buffer.subarray(0, eol).toString('utf8').trim().split(' ');
      const taken = this.answer(words, eol);
      if (taken === 'incomplete') return answers; // the rest of this answer's bytes are still on their way
      if (taken !== undefined) answers.push(taken.answer);
      this.buffer = this.buffer.subarray(taken?.end ?? eol + 1); // a stray line (not ours) is skipped
    }
  }

  /** The answer whose line ends at `eol`, and where its bytes end; 'incomplete' when they have not all come. */
  private answer(words: string[], eol: number): { answer: Answer; end: number } | 'incomplete' | undefined {
    const [verb, ...rest] = words;
    const lineEnd = eol + 1;
    if (verb === 'READY') return { answer: { kind: 'ready', release: rest[0] ?? '' }, end: lineEnd };
    const n = rest.map(Number);
    if (n.some((x) => !Number.isInteger(x) || x < 0)) return undefined;
    if (verb === 'STARTED' && n.length === 2) {
      return { answer: { kind: 'started', id: n[0]!, pid: n[1]! }, end: lineEnd };
    }
    if (verb === 'EXIT' && n.length === 2) {
      return { answer: { kind: 'exit', id: n[0]!, code: n[1]! }, end: lineEnd };
    }
    if (verb === 'OUT' && n.length === 3 && (n[1] === 1 || n[1] === 2)) {
      const end = lineEnd + n[2]!;
      if (this.buffer.length < end) return 'incomplete';
      const bytes = Buffer.from(this.buffer.subarray(lineEnd, end));
      const stream = n[1] === 1 ? 'stdout' : 'stderr';
      return { answer: { kind: 'output', id: n[0]!, stream, bytes }, end };
    }
    if (verb === 'DONE' && n.length === 4) {
      const [id, code, outBytes, errBytes] = n as [number, number, number, number];
      const end = lineEnd + outBytes + errBytes;
      if (this.buffer.length < end) return 'incomplete';
      const stdout = this.buffer.subarray(lineEnd, lineEnd + outBytes).toString('utf8');
      const stderr = this.buffer.subarray(lineEnd + outBytes, end).toString('utf8');
      return { answer: { kind: 'done', id, result: { code, stdout, stderr } }, end };
    }
    return undefined;
  }
}

/** What a spawned process's owner hears from the channel. */
export interface SpawnListener {
  started(pid: number): void;
  output(stream: GuestStream, bytes: Buffer): void;
  /** Its status; null when the channel closed first (the guest is gone, and the process with it). */
  ended(code: number | null, reason?: string): void;
}

const b64 = (s: string): string => Buffer.from(s, 'utf8').toString('base64');

/**
 * The most bytes one IN line carries (64 KiB of base64): the guest's shell reads a line a byte at a time into a
 * variable, so a write is cut into lines of a bounded size.
 */
export const STDIN_CHUNK_BYTES = 48 * 1024;

/** Requests over one connected socket, matched to their answers by id. */
export class ControlChannel {
  private readonly parser = new AnswerParser();
  private readonly pending = new Map<number, Pending>();
  private readonly spawned = new Map<number, SpawnListener>();
  private nextId = 1;
  private closedReason: string | undefined;
  /** Resolves with the guest's kernel release when its init says READY. */
  readonly ready: Promise<string>;
  private resolveReady!: (release: string) => void;

  constructor(private readonly socket: Socket) {
    this.ready = new Promise((resolve) => (this.resolveReady = resolve));
    socket.on('data', (bytes: Buffer) => {
      for (const answer of this.parser.push(bytes)) this.dispatch(answer);
    });
    socket.on('error', () => {}); // 'close' follows, and says it
    socket.on('close', () => this.fail('the guest closed its control channel'));
  }

  private dispatch(answer: Answer): void {
    if (answer.kind === 'ready') return this.resolveReady(answer.release);
    if (answer.kind === 'done') {
      this.pending.get(answer.id)?.resolve(answer.result);
      this.pending.delete(answer.id);
      return;
    }
    const listener = this.spawned.get(answer.id);
    if (answer.kind === 'started') listener?.started(answer.pid);
    else if (answer.kind === 'output') listener?.output(answer.stream, answer.bytes);
    else {
      this.spawned.delete(answer.id);
      listener?.ended(answer.code);
    }
  }

  /** Rejects every command still waiting, and ends every spawned process's wait (the guest is gone). */
  fail(reason: string): void {
    this.closedReason ??= reason;
    for (const p of this.pending.values()) p.reject(new Error(reason));
    this.pending.clear();
    for (const l of this.spawned.values()) l.ended(null, reason);
    this.spawned.clear();
  }

  /**
   * Starts `script` as `sh -c` in the guest, its output and exit reported to `listener` as they happen. Its stdin is
   * `stdin` then end of file; with `openStdin`, `stdin` then what `writeStdin` sends, until `endStdin`.
   */
  spawn(script: string, stdin: string, listener: SpawnListener, openStdin = false): number {
    const id = this.nextId++;
    if (this.closedReason !== undefined) {
      listener.ended(null, this.closedReason);
      return id;
    }
    this.spawned.set(id, listener);
    const input = openStdin ? ' -' : stdin === '' ? '' : ` ${b64(stdin)}`;
    this.socket.write(`SPAWN ${id} ${b64(script)}${input}\n`);
    if (openStdin) this.writeStdin(id, Buffer.from(stdin, 'utf8'));
    return id;
  }

  /**
   * Sends `bytes` to the open stdin of spawned process `id` (IN lines of at most STDIN_CHUNK_BYTES); nothing once it
   * has ended (its EXIT came) or the channel closed. The guest keeps what its process has not read yet.
   */
  writeStdin(id: number, bytes: Buffer): void {
    if (this.closedReason !== undefined || !this.spawned.has(id)) return;
    for (let at = 0; at < bytes.length; at += STDIN_CHUNK_BYTES) {
      const chunk = bytes.subarray(at, at + STDIN_CHUNK_BYTES);
      this.socket.write(`IN ${id} ${chunk.toString('base64')}\n`);
    }
  }

  /** Closes the open stdin of spawned process `id` once the bytes sent before have been written; the same no-ops. */
  endStdin(id: number): void {
    if (this.closedReason === undefined && this.spawned.has(id)) this.socket.write(`EOF ${id}\n`);
  }

  /** Sends `signal` (a name: TERM, INT, KILL, …) to a command's process group; nothing once it has ended. */
  signal(id: number, signal: string): void {
    if (!/^[A-Z0-9]+$/.test(signal)) throw new Error(`not a signal name: ${signal}`);
    if (this.closedReason === undefined) this.socket.write(`SIGNAL ${id} ${signal}\n`);
  }

  /** Sends `script` to run as `sh -c` in the guest; resolves with its status and output. */
  run(script: string, stdin = ''): { id: number; result: Promise<GuestCommandResult> } {
    const id = this.nextId++;
    const result = new Promise<GuestCommandResult>((resolve, reject) => {
      if (this.closedReason !== undefined) return reject(new Error(this.closedReason));
      this.pending.set(id, { resolve, reject });
      this.socket.write(`RUN ${id} ${b64(script)}${stdin === '' ? '' : ` ${b64(stdin)}`}\n`);
    });
    return { id, result };
  }

  kill(id: number): void {
    if (this.closedReason === undefined) this.socket.write(`KILL ${id}\n`);
  }

  poweroff(): void {
    if (this.closedReason === undefined) this.socket.write('POWEROFF\n');
  }
}
