// The lab's byte pipes (packages/lab/src/cluster/relay.ts): a relay to a Unix socket (a namespace node's) and one
// to a TCP address (a guest node's, across the underlay), chained as a guest node's API connection goes:
// client → TCP relay → socket relay → server. Bytes arrive both ways unchanged, and closing a relay cuts what it
// carries. Loopback only, in this process.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { parseHostPort, startRelay } from '../../../packages/lab/src/cluster/relay.js';

/** A server on a Unix socket that answers each line with "echo: LINE". */
async function echoServer(path: string): Promise<Server> {
  const server = createServer((c) => {
    c.setEncoding('utf8');
    c.on('data', (s: string) => c.write(`echo: ${s}`));
  });
  await new Promise<void>((resolve) => server.listen(path, resolve));
  return server;
}

/** Connects, sends `text`, and resolves with the first answer. */
function ask(port: number, text: string): Promise<{ answer: string; socket: Socket }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(text));
    socket.setEncoding('utf8');
    socket.once('data', (answer: string) => resolve({ answer, socket }));
    socket.once('error', reject);
  });
}

test('a TCP relay into a socket relay carries bytes both ways; closing it cuts its connections', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'kpts-relay-'));
  const socketPath = join(dir, 'apiserver.sock');
  const server = await echoServer(socketPath);
  const toSocket = await startRelay({ host: '127.0.0.1', port: 0 }, socketPath);
  const toTcp = await startRelay({ host: '127.0.0.1', port: 0 }, { host: '127.0.0.1', port: toSocket.port });
  try {
    assert.ok(toSocket.port > 0 && toTcp.port > 0 && toSocket.port !== toTcp.port);
    const { answer, socket } = await ask(toTcp.port, 'hello\n');
    assert.equal(answer, 'echo: hello\n');
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    await toTcp.close();
    await closed;
    await assert.rejects(ask(toTcp.port, 'again\n'), /ECONNREFUSED/, 'a closed relay accepts nothing');
  } finally {
    await toSocket.close();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    rmSync(dir, { recursive: true, force: true });
  }
});

test('parseHostPort takes HOST:PORT only', () => {
  assert.deepEqual(parseHostPort('198.18.0.1:6443'), { host: '198.18.0.1', port: 6443 });
  assert.equal(parseHostPort('198.18.0.1'), undefined);
  assert.equal(parseHostPort('198.18.0.1:0'), undefined);
  assert.equal(parseHostPort('198.18.0.1:70000'), undefined);
});
