// The two foundations of a lab node in a guest (packages/lab/src/vm/README.md, "Guests as lab nodes"), on one
// guest: long-running processes (`guest.spawn`: output followed as it comes, a signal, the exit seen), and the
// guest as one more host on a lab-style underlay (a namespace holding the bridge, a namespace node plugged into
// it, the guest's tap a port of the same bridge), with TCP both ways: guest → a server in a host namespace (as the
// guest's kube-proxy reaches the API server) and host namespace → a server in the guest (as a pod on a namespace
// node reaches a pod in the guest). Everything is removed afterwards, also when a step fails.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { hostCommandRunner } from '../../packages/agent/src/netfilter/command.js';
import { listNamespaces } from '../../packages/netns/src/namespace.js';
import { buildUnderlay, buildUnderlayHost, UNDERLAY_BRIDGE } from '../../packages/netns/src/wiring.js';
import { sweepGuests } from '../../packages/lab/src/vm/cleanup.js';
import { startGuest, type Guest } from '../../packages/lab/src/vm/guest.js';
import { GUEST_TOOLS } from './guest-tools.js';
import { kernelOptions, runPrefix, sweepNamespaces } from '../helpers/kernel.js';

const options = kernelOptions([...GUEST_TOOLS, 'ip', '/bin/busybox']);

const GATEWAY = '198.18.0.1/24';
const NODE_ADDRESS = '198.18.0.10';
const GUEST_ADDRESS = '198.18.0.20';
const PORT = 8080;

/**
 * How long one step may wait for the guest (TCG on a busy 2-core machine starts Node.js in tens of seconds): a step
 * that hangs fails with its name, well inside the runner's 600 s for the whole test.
 */
const WAIT_MS = 120_000;

/** `promise`, or a failure naming `what` once WAIT_MS passed. */
async function within<T>(promise: Promise<T>, what: string): Promise<T> {
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
const serverScript = (name: string, address: string): string =>
  `require('net').createServer((c) => c.end('hello from ${name} to ' + c.remoteAddress + '\\n'))` +
  `.listen(${PORT}, '${address}', () => console.log('listening'))`;

/** A TCP client (node -e): prints what the server said; fails on an error or after 60 s. */
const clientScript = (address: string): string =>
  `const c = require('net').connect(${PORT}, '${address}'); let d = ''; c.on('data', (b) => (d += b));` +
  `c.on('end', () => process.stdout.write(d)); c.on('error', (e) => { console.error(e.message); process.exit(1); });` +
  `setTimeout(() => { console.error('no answer in 60 s'); process.exit(2); }, 60000).unref();`;

describe('a guest as a lab node: processes that keep running, and the underlay', options, () => {
  const prefix = runPrefix();
  const underlay = `${prefix}-ul`;
  const node = `${prefix}-n1`;
  const stateRoot = mkdtempSync('/tmp/kpts-vm-');
  let guest: Guest | undefined;

  before(async () => {
    await buildUnderlay(hostCommandRunner, { namespace: underlay, gatewayAddresses: [GATEWAY] });
    await buildUnderlayHost(hostCommandRunner, {
      namespace: node,
      underlayNamespace: underlay,
      underlayLink: 'n1',
      addresses: [`${NODE_ADDRESS}/24`],
      routes: [],
    });
    guest = await startGuest({
      stateDir: join(stateRoot, 'g1'),
      hostname: 'vm-node-1',
      network: {
        namespace: underlay,
        createNamespace: false,
        tap: 'vm1',
        bridge: UNDERLAY_BRIDGE,
        guestAddress: `${GUEST_ADDRESS}/24`,
        gateway: GATEWAY.split('/')[0]!,
      },
    });
    console.log(`# vm: boot to ready ${guest.bootMs} ms`);
  });

  after(async () => {
    await guest?.stop();
    await sweepGuests(stateRoot, { all: true });
    sweepNamespaces(prefix);
    rmSync(stateRoot, { recursive: true, force: true });
    const left = (await listNamespaces(hostCommandRunner)).filter((n) => n.startsWith(prefix));
    assert.deepEqual(left, [], 'no namespace left');
  });

  test('spawn: output follows as it comes, a signal reaches the process, its exit is seen', async () => {
    const g = guest!;
    // dash: `wait` returns when a trapped signal arrives; the trap says so on stdout and exits 7. "ready" comes
    // after the trap is set and the sleep is forked: a TERM that came between the two would leave a sleep holding
    // stdout, and the exit (reported once both outputs close) would wait for the sleep's 600 s.
    const proc = g.spawn("trap 'echo got TERM; exit 7' TERM; sleep 600 & echo ready; echo warming >&2; wait");
    await proc.waitForOutput(/^ready$/m, { stream: 'stdout', timeoutMs: WAIT_MS });
    await proc.waitForOutput(/warming/, { stream: 'stderr', timeoutMs: WAIT_MS });
    const pid = await proc.pid;
    assert.equal((await g.run(`kill -0 ${pid}`)).code, 0, 'running while its output is followed');
    const seen: string[] = [];
    proc.onOutput((c) => seen.push(c.text));
    proc.kill('TERM');
    assert.deepEqual(await within(proc.exited, 'the exit after TERM'), { code: 7 });
    assert.equal(seen.join(''), 'got TERM\n', 'the last output arrives before the exit');
    assert.notEqual((await g.run(`kill -0 ${pid}`)).code, 0, 'gone after its exit');

    const killed = g.spawn(['sleep', '600']);
    await killed.pid;
    killed.kill('KILL');
    assert.deepEqual(await within(killed.exited, 'the exit of a killed sleep'), { code: 137 });

    // A signal asked for at once goes out the moment the guest says STARTED, which can be before the process has
    // run its own redirections: it must still find the process group, and its death must still close the output.
    for (let i = 0; i < 10; i++) {
      const early = g.spawn(['sleep', '600']);
      early.kill('KILL');
      assert.deepEqual(await within(early.exited, `the exit of sleep ${i}, killed at once`), { code: 137 });
    }

    // Many chunks, in order and whole: ~110 KB through the fifo, the pump and the channel.
    const long = g.spawn(['seq', '1', '20000']);
    const expected = Array.from({ length: 20000 }, (_, i) => `${i + 1}\n`).join('');
    assert.deepEqual(await within(long.exited, 'the exit of seq'), { code: 0 });
    assert.equal(long.stdout(), expected);
  });

  test('underlay: the guest is a host on the bridge; TCP both ways with a namespace node', async () => {
    const g = guest!;
    const eth0 = await g.run(['ip', '-4', '-o', 'addr', 'show', 'dev', 'eth0']);
    assert.match(eth0.stdout, new RegExp(`inet ${GUEST_ADDRESS.replace(/\./g, '\\.')}/24 `));
    const ports = await hostCommandRunner.run('ip', [
      '-n',
      underlay,
      '-o',
      'link',
      'show',
      'master',
      UNDERLAY_BRIDGE,
    ]);
    assert.match(ports.stdout, /\bvm1\b/, 'the tap is a port of the underlay bridge');

    // guest → host namespace (the guest's agent → the API server on the lab's side).
    const hostServer = spawn(
      'ip',
      ['netns', 'exec', node, process.execPath, '-e', serverScript(node, NODE_ADDRESS)],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    try {
      await new Promise<void>((resolve, reject) => {
        hostServer.stdout.setEncoding('utf8').on('data', (s: string) => s.includes('listening') && resolve());
        hostServer.once('close', (code) => reject(new Error(`the server in ${node} exited (${code})`)));
      });
      const fromGuest = await within(
        g.run([process.execPath, '-e', clientScript(NODE_ADDRESS)]),
        'the client in the guest',
      );
      assert.equal(fromGuest.code, 0, fromGuest.stderr);
      assert.equal(fromGuest.stdout, `hello from ${node} to ${GUEST_ADDRESS}\n`);
    } finally {
      hostServer.kill('SIGKILL');
    }

    // host namespace → guest (a pod on a namespace node → a pod in the guest).
    const guestServer = g.spawn([process.execPath, '-e', serverScript('vm-node-1', GUEST_ADDRESS)]);
    try {
      await guestServer.waitForOutput(/listening/, { stream: 'stdout', timeoutMs: WAIT_MS });
      const fromNode = await hostCommandRunner.run('ip', [
        'netns',
        'exec',
        node,
        process.execPath,
        '-e',
        clientScript(GUEST_ADDRESS),
      ]);
      assert.equal(fromNode.stdout, `hello from vm-node-1 to ${NODE_ADDRESS}\n`, fromNode.stderr);
    } finally {
      guestServer.kill('KILL');
    }
    assert.equal((await within(guestServer.exited, 'the exit of the killed server')).code, 137);
  });
});
