// The foundations of a lab node in a guest (packages/lab/src/vm/README.md, "Guests as lab nodes"), on one guest:
// long-running processes (`guest.spawn`: output followed as it comes, a signal, the exit seen; stdin fed as it
// comes, and a process that never reads it stalls nothing), a host directory shared read-write at the same path
// (what the lab's pid files, logs and ready files need), and the guest as one more host on a lab-style underlay (a
// namespace holding the bridge, a namespace node plugged into it, the guest's tap a port of the same bridge), with
// TCP both ways: guest → a server in a host namespace (as the guest's kube-proxy reaches the API server) and host
// namespace → a server in the guest (as a pod on a namespace node reaches a pod in the guest). Everything is
// removed afterwards, also when a step fails.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { hostCommandRunner } from '../../packages/agent/src/netfilter/command.js';
import { listNamespaces } from '../../packages/netns/src/namespace.js';
import { buildUnderlay, buildUnderlayHost, UNDERLAY_BRIDGE } from '../../packages/netns/src/wiring.js';
import { sweepGuests } from '../../packages/lab/src/vm/cleanup.js';
import { startGuest, type Guest } from '../../packages/lab/src/vm/guest.js';
import { GUEST_TOOLS } from './guest-tools.js';
import {
  clientScript,
  serverScript,
  startHostServer,
  startUnderlayGuest,
  WAIT_MS,
  within,
} from './tcp-peers.js';
import { kernelOptions, runPrefix, sweepNamespaces } from '../helpers/kernel.js';

const options = kernelOptions([...GUEST_TOOLS, 'ip', '/bin/busybox']);

const GATEWAY = '198.18.0.1/24';
const NODE_ADDRESS = '198.18.0.10';
const GUEST_ADDRESS = '198.18.0.20';
describe('a guest as a lab node: processes that keep running, and the underlay', options, () => {
  const prefix = runPrefix();
  const underlay = `${prefix}-ul`;
  const node = `${prefix}-n1`;
  const stateRoot = mkdtempSync('/tmp/kpts-vm-');
  // Shared at the same path in the guest; its name has what a shell or QEMU's option parser would trip on.
  const shareDir = mkdtempSync(`/tmp/kpts share 'q" ,x-`);
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
    guest = await startUnderlayGuest(stateRoot, underlay, GUEST_ADDRESS, GATEWAY.split('/')[0]!, {
      shares: [{ hostPath: shareDir }],
    });
  });

  after(async () => {
    await guest?.stop();
    await sweepGuests(stateRoot, { all: true });
    sweepNamespaces(prefix);
    rmSync(stateRoot, { recursive: true, force: true });
    rmSync(shareDir, { recursive: true, force: true });
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

  test('stdin: fed as it is written, closed by end(); a fixed stdin, or none, as before', async () => {
    const g = guest!;
    const cat = g.spawn(['cat'], { openStdin: true });
    const first = 'first chunk\n';
    // Over one IN line's worth, with what a shell would mangle.
    const second = Array.from({ length: 4000 }, (_, i) => `${i} ' " \\ $HOME € \t;\n`).join('');
    cat.write(first);
    await cat.waitForOutput(/^first chunk$/m, { stream: 'stdout', timeoutMs: WAIT_MS });
    cat.write(Buffer.from(second, 'utf8'));
    cat.end();
    assert.deepEqual(await within(cat.exited, 'the exit of cat after end()'), { code: 0 });
    assert.equal(cat.stdout(), first + second);

    const fixed = g.spawn(['cat'], { stdin: 'fixed\n' });
    assert.deepEqual(await within(fixed.exited, 'the exit of cat with a fixed stdin'), { code: 0 });
    assert.equal(fixed.stdout(), 'fixed\n');
    const none = g.spawn(['cat']);
    assert.deepEqual(await within(none.exited, 'the exit of cat without stdin'), { code: 0 });
    assert.equal(none.stdout(), '');
    const both = g.spawn(['cat'], { stdin: 'given, ', openStdin: true });
    both.write('then written');
    both.end();
    assert.deepEqual(await within(both.exited, 'the exit of cat with a given then written stdin'), {
      code: 0,
    });
    assert.equal(both.stdout(), 'given, then written');
  });

  test('stdin: a process that never reads it stalls nothing; one that exits with bytes pending is seen', async () => {
    const g = guest!;
    const idle = g.spawn('echo started; exec sleep 600', { openStdin: true });
    await idle.waitForOutput(/started/, { stream: 'stdout', timeoutMs: WAIT_MS });
    // 256 KiB: four times a pipe's buffer, so the writer in the guest is blocked while the rest waits unread.
    idle.write(Buffer.alloc(256 * 1024, 'x'));
    // Sent after every IN line on the one channel: its answer means the control loop went past all of them.
    const ok = await within(g.run('echo ok'), 'a command while 256 KiB wait unread');
    assert.deepEqual(ok, { code: 0, stdout: 'ok\n', stderr: '' });
    idle.kill('KILL');
    assert.deepEqual(await within(idle.exited, 'the exit of the killed sleep'), { code: 137 });
    idle.write('after its exit');
    idle.end();

    // Never written to nor ended: it ends by itself, or is killed, and its stdin's writer in the guest holds nothing
    // that would keep its output, so its exit, open.
    const quick = g.spawn(['true'], { openStdin: true });
    assert.deepEqual(await within(quick.exited, 'the exit of true, its stdin open'), { code: 0 });
    const quiet = g.spawn(['sleep', '600'], { openStdin: true });
    await within(quiet.pid, 'the start of sleep, its stdin open');
    quiet.kill('KILL');
    assert.deepEqual(await within(quiet.exited, 'the exit of a killed sleep, its stdin open'), {
      code: 137,
    });

    const head = g.spawn(['head', '-c', '5'], { openStdin: true });
    head.write(Buffer.alloc(256 * 1024, 'y'));
    assert.deepEqual(await within(head.exited, 'the exit of head -c 5'), { code: 0 });
    assert.equal(head.stdout(), 'yyyyy');
    const again = await within(g.run('echo still ok'), 'a command after both');
    assert.deepEqual(again, { code: 0, stdout: 'still ok\n', stderr: '' });
  });

  test("a share: at the host's path in the guest, read-write, the host's writes seen at once", async () => {
    const g = guest!;
    const mount = await within(
      g.run(['findmnt', '-rn', '-o', 'FSTYPE,SOURCE', '--mountpoint', shareDir]),
      'findmnt of the share',
    );
    assert.deepEqual(mount, { code: 0, stdout: '9p share0\n', stderr: '' }, 'a 9p mount at the same path');
    const fromGuest = join(shareDir, 'from-guest');
    const wrote = await within(
      g.run(['sh', '-c', 'echo "written in $(hostname)" >"$1"', 'sh', fromGuest]),
      'the guest writing a file',
    );
    assert.equal(wrote.code, 0, wrote.stderr);
    assert.equal(readFileSync(fromGuest, 'utf8'), 'written in vm-node-1\n');
    const fromHost = join(shareDir, 'from-host');
    writeFileSync(fromHost, 'one\n');
    const one = await within(g.run(['cat', fromHost]), "the guest reading the host's file");
    assert.deepEqual(one, { code: 0, stdout: 'one\n', stderr: '' });
    // Rewritten after the guest read it: a cache in the guest would show the old content (or its old size).
    writeFileSync(fromHost, 'two, and longer\n');
    const two = await within(g.run(['cat', fromHost]), 'the guest reading it again');
    assert.deepEqual(two, { code: 0, stdout: 'two, and longer\n', stderr: '' });
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
    const hostServer = await startHostServer(node, node, NODE_ADDRESS);
    try {
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

describe('guest shares: paths that cannot be passed whole fail before anything starts', () => {
  test('each error names the path', async () => {
    const dir = mkdtempSync('/tmp/kpts-vm-');
    try {
      const start = (shares: { hostPath: string; guestPath?: string }[]): Promise<Guest> =>
        startGuest({ stateDir: join(dir, 'g'), shares });
      await assert.rejects(
        start([{ hostPath: 'relative/dir' }]),
        /host path "relative\/dir" is not absolute/,
      );
      await assert.rejects(
        start([{ hostPath: dir, guestPath: '/a/../etc' }]),
        /guest path "\/a\/\.\.\/etc" is not normalised \(\/etc\)/,
      );
      await assert.rejects(start([{ hostPath: `${dir}/` }]), /host path ".*\/" is not normalised/);
      await assert.rejects(
        start([{ hostPath: dir, guestPath: '/x\ny' }]),
        /guest path "\/x\\ny" has a line break/,
      );
      await assert.rejects(start([{ hostPath: dir, guestPath: '/' }]), /cannot hide the guest's root/);
      await assert.rejects(
        start([{ hostPath: dir }, { hostPath: '/tmp', guestPath: dir }]),
        /two shares at ".*kpts-vm-.*" in the guest/,
      );
      await assert.rejects(
        start([{ hostPath: join(dir, 'missing') }]),
        /"\/tmp\/kpts-vm-.*\/missing" is not a directory/,
      );
      const long = `/${'d'.repeat(200)}`;
      await assert.rejects(
        start(Array.from({ length: 10 }, (_, i) => ({ hostPath: dir, guestPath: `${long}/${i}` }))),
        /kernel command line \d+ bytes, over Linux's 2047/,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
