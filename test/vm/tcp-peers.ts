// What the guest-node tests (guest-node.test.ts, guest-lab-node.test.ts) share: their guest, one more host on a
// lab-style underlay; a server and a client as `node -e` scripts, run in a guest or in a host namespace; a server
// started in a host namespace; and a bound for every wait on the guest.
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { UNDERLAY_BRIDGE } from '../../packages/netns/src/wiring.js';
import { startGuest, type Guest, type GuestOptions } from '../../packages/lab/src/vm/guest.js';

export const PORT = 8080;

/**
 * How long one step may wait for the guest (TCG on a busy 2-core machine starts Node.js in tens of seconds): a step
 * that hangs fails with its name, well inside the runner's 600 s for the whole test.
 */
export const WAIT_MS = 120_000;

/** `promise`, or a failure naming `what` once WAIT_MS passed. */
export async function within<T>(promise: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: nothing after ${WAIT_MS} ms`)), WAIT_MS);
  });
  try {
    return await Promise.race([promise, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

/** A TCP server (node -e): answers each connection with who it is and who called, then closes it. */
export const serverScript = (name: string, address: string): string =>
  `require('net').createServer((c) => c.end('hello from ${name} to ' + c.remoteAddress + '\\n'))` +
  `.listen(${PORT}, '${address}', () => console.log('listening'))`;

/** A TCP client (node -e): prints what the server said; fails on an error or after 60 s. */
export const clientScript = (address: string): string =>
  `const c = require('net').connect(${PORT}, '${address}'); let d = ''; c.on('data', (b) => (d += b));` +
  `c.on('end', () => process.stdout.write(d)); c.on('error', (e) => { console.error(e.message); process.exit(1); });` +
  `setTimeout(() => { console.error('no answer in 60 s'); process.exit(2); }, 60000).unref();`;

/** serverScript in host namespace `namespace`, once it listens; the caller kills it. */
export async function startHostServer(
  namespace: string,
  name: string,
  address: string,
): Promise<ChildProcess> {
  const server = spawn(
    'ip',
    ['netns', 'exec', namespace, process.execPath, '-e', serverScript(name, address)],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  try {
    await within(
      new Promise<void>((resolve, reject) => {
        server.stdout.setEncoding('utf8').on('data', (s: string) => s.includes('listening') && resolve());
        server.once('close', (code) => reject(new Error(`the server in ${namespace} exited (${code})`)));
      }),
      `the server in ${namespace}`,
    );
  } catch (e) {
    server.kill('SIGKILL');
    throw e;
  }
  return server;
}

/** A guest named vm-node-1 whose tap (vm1) is a port of `underlay`'s bridge, at `address`/24 behind `gateway`. */
export async function startUnderlayGuest(
  stateRoot: string,
  underlay: string,
  address: string,
  gateway: string,
  more: Partial<GuestOptions> = {},
): Promise<Guest> {
  const guest = await startGuest({
    stateDir: join(stateRoot, 'g1'),
    hostname: 'vm-node-1',
    network: {
      namespace: underlay,
      createNamespace: false,
      tap: 'vm1',
      bridge: UNDERLAY_BRIDGE,
      guestAddress: `${address}/24`,
      gateway,
    },
    ...more,
  });
  console.log(`# vm: boot to ready ${guest.bootMs} ms`);
  return guest;
}
