// For the server tests: a server made by create*Server run while a test talks to it, and a port held busy.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { CreateServerResult } from '../../packages/agent/src/server/retrying-server.js';

/**
 * Starts the server `created` holds (it must have been made, and must listen at the first attempt), runs `body`
 * with its base URL (http://127.0.0.1:PORT), and stops it, also when `body` fails.
 */
export async function whileListening(
  created: CreateServerResult,
  body: (base: string) => Promise<void>,
): Promise<void> {
  assert.ok(created.ok);
  const server = created.server;
  try {
    assert.equal(await server.start(), 'listening');
    await body(`http://127.0.0.1:${server.address!.port}`);
  } finally {
    await server.stop();
  }
}

/** Holds a port on 127.0.0.1 so that another bind to it fails with EADDRINUSE, until release() (which may repeat). */
export async function occupyPort(): Promise<{ port: number; release: () => Promise<void> }> {
  const blocker = createServer();
  await new Promise<void>((resolve) => blocker.listen({ host: '127.0.0.1', port: 0 }, resolve));
  const port = (blocker.address() as AddressInfo).port;
  const release = async (): Promise<void> => {
    if (blocker.listening) await new Promise<void>((resolve) => blocker.close(() => resolve()));
  };
  return { port, release };
}
