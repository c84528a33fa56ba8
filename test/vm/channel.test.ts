// The control channel's host end (packages/lab/src/vm/channel.ts, process.ts) without a guest: the answer parser
// on byte streams cut anywhere, and spawned processes driven by a fake socket that plays the guest's part.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import type { Socket } from 'node:net';
import {
  AnswerParser,
  ControlChannel,
  STDIN_CHUNK_BYTES,
  type Answer,
} from '../../packages/lab/src/vm/channel.js';
import { SpawnedProcess } from '../../packages/lab/src/vm/process.js';

/** Every way of cutting `bytes` in two must give the same answers as the whole. */
function parseCutEverywhere(bytes: Buffer): Answer[] {
  const whole = new AnswerParser().push(bytes);
  for (let cut = 1; cut < bytes.length; cut++) {
    const p = new AnswerParser();
    const parts = [...p.push(bytes.subarray(0, cut)), ...p.push(bytes.subarray(cut))];
    assert.deepEqual(parts, whole, `cut at byte ${cut}`);
  }
  return whole;
}

describe('AnswerParser', () => {
  test('READY, DONE, STARTED, OUT and EXIT, wherever the stream is cut', () => {
    const binary = Buffer.from([0x00, 0x0a, 0xff, 0x0a]);
    const stream = Buffer.concat([
      Buffer.from('READY 6.1.0-57-amd64\nDONE 1 3 4 4\nout\nerr\nSTARTED 2 345\n'),
      Buffer.from(`OUT 2 1 ${binary.length}\n`),
      binary,
      Buffer.from('OUT 2 2 6\nline\n\nEXIT 2 143\n'),
    ]);
    assert.deepEqual(parseCutEverywhere(stream), [
      { kind: 'ready', release: '6.1.0-57-amd64' },
      { kind: 'done', id: 1, result: { code: 3, stdout: 'out\n', stderr: 'err\n' } },
      { kind: 'started', id: 2, pid: 345 },
      { kind: 'output', id: 2, stream: 'stdout', bytes: binary },
      { kind: 'output', id: 2, stream: 'stderr', bytes: Buffer.from('line\n\n') },
      { kind: 'exit', id: 2, code: 143 },
    ]);
  });

  test('an OUT waits for all its bytes; stray and malformed lines are skipped', () => {
    const p = new AnswerParser();
    assert.deepEqual(p.push(Buffer.from('kpts-guest: ready\nOUT 7 3 1\nx\nEXIT 7 -1\nOUT 7 1 5\nab')), []);
    assert.deepEqual(p.push(Buffer.from('c\nd')), [
      { kind: 'output', id: 7, stream: 'stdout', bytes: Buffer.from('abc\nd') },
    ]);
  });
});

/** A socket whose writes are recorded; the test speaks for the guest with `say`. */
class FakeSocket extends EventEmitter {
  readonly written: string[] = [];
  write(line: string): boolean {
    this.written.push(line);
    return true;
  }
  say(text: string | Buffer): void {
    this.emit('data', Buffer.isBuffer(text) ? text : Buffer.from(text));
  }
}

function channel(): { socket: FakeSocket; ch: ControlChannel } {
  const socket = new FakeSocket();
  return { socket, ch: new ControlChannel(socket as unknown as Socket) };
}

describe('a spawned process over the channel', () => {
  test('sends SPAWN, follows output (a character split across chunks), signals once started, sees its exit', async () => {
    const { socket, ch } = channel();
    const proc = new SpawnedProcess(ch).start('exec server', '');
    assert.equal(
      socket.written.at(-1),
      `SPAWN ${proc.id} ${Buffer.from('exec server').toString('base64')}\n`,
    );
    const chunks: string[] = [];
    proc.onOutput((c) => chunks.push(`${c.stream}:${c.text}`));
    proc.kill('TERM'); // before STARTED: held back, the guest has no pid file yet
    assert.equal(socket.written.length, 1);
    const listening = proc.waitForOutput(/listening on (\d+)/, { stream: 'stdout' });
    const euro = Buffer.from('€');
    socket.say(
      Buffer.concat([Buffer.from(`STARTED ${proc.id} 42\nOUT ${proc.id} 1 2\n`), euro.subarray(0, 2)]),
    );
    assert.equal(await proc.pid, 42);
    assert.equal(socket.written.at(-1), `SIGNAL ${proc.id} TERM\n`);
    const rest = Buffer.concat([euro.subarray(2), Buffer.from(' listening on 80\n')]);
    socket.say(Buffer.concat([Buffer.from(`OUT ${proc.id} 1 ${rest.length}\n`), rest]));
    assert.equal((await listening)[1], '80');
    socket.say(`OUT ${proc.id} 2 4\nbye\nEXIT ${proc.id} 143\n`);
    assert.deepEqual(await proc.exited, { code: 143 });
    assert.equal(proc.stdout(), '€ listening on 80\n');
    assert.equal(proc.stderr(), 'bye\n');
    assert.deepEqual(chunks, ['stdout:€ listening on 80\n', 'stderr:bye\n']);
    proc.kill('KILL'); // after its exit: nothing sent
    assert.equal(socket.written.at(-1), `SIGNAL ${proc.id} TERM\n`);
  });

  test('a wait for output that never comes rejects at the exit; the guest going away ends every process', async () => {
    const { socket, ch } = channel();
    const a = new SpawnedProcess(ch).start('a', 'input');
    const b = new SpawnedProcess(ch).start('b', '');
    assert.match(socket.written[0] ?? '', / aW5wdXQ=\n$/, 'stdin sent base64');
    const never = a.waitForOutput(/ready/);
    socket.say(`STARTED ${a.id} 1\nOUT ${a.id} 1 4\nnot\nEXIT ${a.id} 1\n`);
    await assert.rejects(never, /no \/ready\/ before it exited[\s\S]*not/);
    assert.deepEqual(await a.exited, { code: 1 });
    socket.emit('close');
    assert.deepEqual(await b.exited, { code: null, reason: 'the guest closed its control channel' });
    const late = new SpawnedProcess(ch).start('c', '');
    assert.equal((await late.exited).code, null);
    assert.throws(() => ch.signal(b.id, 'TERM; reboot'), /not a signal name/);
  });

  test('keeps the last keepChars characters of each output; listeners see every chunk', async () => {
    const { socket, ch } = channel();
    const proc = new SpawnedProcess(ch, 8).start('logger', '');
    let heard = '';
    proc.onOutput((c) => (heard += c.text));
    socket.say(
      `STARTED ${proc.id} 5\nOUT ${proc.id} 1 10\n0123456789OUT ${proc.id} 1 3\nabcEXIT ${proc.id} 0\n`,
    );
    assert.deepEqual(await proc.exited, { code: 0 });
    assert.equal(proc.stdout(), '6789abc'.padStart(8, '5'));
    assert.equal(heard, '0123456789abc');
  });

  test('an open stdin: SPAWN says so, write() sends IN lines (cut, base64), end() one EOF, nothing after the exit', async () => {
    const { socket, ch } = channel();
    const proc = new SpawnedProcess(ch).start('exec cat', 'first ', true);
    assert.deepEqual(socket.written, [
      `SPAWN ${proc.id} ${Buffer.from('exec cat').toString('base64')} -\n`,
      `IN ${proc.id} ${Buffer.from('first ').toString('base64')}\n`,
    ]);
    socket.written.length = 0;
    // Before STARTED already: the guest made the stdin's directory when it read SPAWN, and keeps the bytes.
    const big = Buffer.alloc(2 * STDIN_CHUNK_BYTES + 5, 'ab€');
    proc.write(big);
    proc.write("€ and a quote ' and\na line");
    proc.write('');
    const lines = socket.written.map((l) => /^IN (\d+) ([A-Za-z0-9+/=]+)\n$/.exec(l));
    assert.ok(
      lines.every((m) => m !== null && Number(m[1]) === proc.id),
      socket.written.join(''),
    );
    const chunks = lines.map((m) => Buffer.from(m![2]!, 'base64'));
    assert.deepEqual(
      chunks.map((c) => c.length),
      [STDIN_CHUNK_BYTES, STDIN_CHUNK_BYTES, 5, Buffer.byteLength("€ and a quote ' and\na line")],
    );
    assert.deepEqual(Buffer.concat(chunks), Buffer.concat([big, Buffer.from("€ and a quote ' and\na line")]));

    socket.written.length = 0;
    proc.end();
    proc.end(); // once only
    assert.deepEqual(socket.written, [`EOF ${proc.id}\n`]);
    assert.throws(() => proc.write('late'), /write after end/);
    assert.equal(socket.written.length, 1);

    socket.say(`STARTED ${proc.id} 9\nOUT ${proc.id} 1 4\nabc\nEXIT ${proc.id} 0\n`);
    assert.deepEqual(await proc.exited, { code: 0 });
    const other = new SpawnedProcess(ch).start('exec cat', '', true);
    socket.say(`STARTED ${other.id} 10\nEXIT ${other.id} 141\n`);
    await other.exited;
    socket.written.length = 0;
    other.write('after its exit'); // no-ops, no throw: the exit may cross a write on the wire
    other.end();
    ch.writeStdin(proc.id, Buffer.from('x'));
    ch.endStdin(proc.id);
    ch.writeStdin(999, Buffer.from('x')); // an id never spawned
    assert.deepEqual(socket.written, []);
  });

  test('a fixed stdin is sent with SPAWN; write() then throws, end() does nothing; a closed channel sends nothing', async () => {
    const { socket, ch } = channel();
    const fixed = new SpawnedProcess(ch).start('exec cat', 'all of it');
    assert.equal(
      socket.written.at(-1),
      `SPAWN ${fixed.id} ${Buffer.from('exec cat').toString('base64')} ${Buffer.from('all of it').toString('base64')}\n`,
    );
    assert.throws(() => fixed.write('more'), /stdin is not open/);
    fixed.end();
    const open = new SpawnedProcess(ch).start('exec cat', '', true);
    assert.equal(socket.written.length, 2, 'an open stdin without first bytes: no IN yet');
    socket.emit('close');
    assert.equal((await open.exited).code, null);
    open.write('x');
    open.end();
    ch.writeStdin(open.id, Buffer.from('x'));
    ch.endStdin(open.id);
    assert.equal(socket.written.length, 2);
  });
});
