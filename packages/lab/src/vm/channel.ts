// The host's end of the guest's control channel (the protocol is described in init-script.ts): a Unix socket QEMU
// connects to at start (`-chardev socket,path=…,server=off`), carrying the virtio-serial port kpts.ctl. Requests
// are lines; answers are a line, then for DONE the command's stdout and stderr bytes, counted in that line.
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

type Answer = { kind: 'ready'; release: string } | { kind: 'done'; id: number; result: GuestCommandResult };

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
      if (words[0] === 'READY') {
        answers.push({ kind: 'ready', release: words[1] ?? '' });
        this.buffer = this.buffer.subarray(eol + 1);
      } else if (words[0] === 'DONE') {
        const [id, code, outBytes, errBytes] = words.slice(1).map(Number) as [number, number, number, number];
        const end = eol + 1 + outBytes + errBytes;
        if (this.buffer.length < end) return answers; // the rest of this answer's bytes are still on their way
        const stdout = this.buffer.subarray(eol + 1, eol + 1 + outBytes).toString('utf8');
        const stderr = this.buffer.subarray(eol + 1 + outBytes, end).toString('utf8');
        answers.push({ kind: 'done', id, result: { code, stdout, stderr } });
        this.buffer = this.buffer.subarray(end);
      } else {
        this.buffer = this.buffer.subarray(eol + 1); // not ours (a stray line): skip it
      }
    }
  }
}

/** Requests over one connected socket, matched to their answers by id. */
export class ControlChannel {
  private readonly parser = new AnswerParser();
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private closedReason: string | undefined;
  /** Resolves with the guest's kernel release when its init says READY. */
  readonly ready: Promise<string>;
  private resolveReady!: (release: string) => void;

  constructor(private readonly socket: Socket) {
    this.ready = new Promise((resolve) => (this.resolveReady = resolve));
    socket.on('data', (bytes: Buffer) => {
      for (const answer of this.parser.push(bytes)) {
        if (answer.kind === 'ready') this.resolveReady(answer.release);
        else {
          this.pending.get(answer.id)?.resolve(answer.result);
          this.pending.delete(answer.id);
        }
      }
    });
    socket.on('error', () => {}); // 'close' follows, and says it
    socket.on('close', () => this.fail('the guest closed its control channel'));
  }

  /** Rejects every command still waiting (the guest is gone). */
  fail(reason: string): void {
    this.closedReason ??= reason;
    for (const p of this.pending.values()) p.reject(new Error(reason));
    this.pending.clear();
  }

  /** Sends `script` to run as `sh -c` in the guest; resolves with its status and output. */
  run(script: string, stdin = ''): { id: number; result: Promise<GuestCommandResult> } {
    const id = this.nextId++;
    const result = new Promise<GuestCommandResult>((resolve, reject) => {
      if (this.closedReason !== undefined) return reject(new Error(this.closedReason));
      this.pending.set(id, { resolve, reject });
      const b64 = (s: string): string => Buffer.from(s, 'utf8').toString('base64');
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
