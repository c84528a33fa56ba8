// A QEMU guest on Debian's kernel (packages/lab/src/vm/): it boots, runs the host's programs on its own kernel,
// reaches its namespace over its tap, and leaves nothing behind, when stopped and when the process that started it
// is killed. Also prints what later work sets timeouts from: boot time, QEMU's memory, and how much slower a
// CPU-bound Node.js run is in the guest (TCG emulation) than on the host.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { hostCommandRunner } from '../../packages/agent/src/netfilter/command.js';
import { listNamespaces } from '../../packages/netns/src/namespace.js';
import { processAlive, sweepGuests } from '../../packages/lab/src/vm/cleanup.js';
import { startGuest, type Guest } from '../../packages/lab/src/vm/guest.js';
import { GUEST_TOOLS } from './guest-tools.js';
import { kernelOptions, runPrefix, sweepNamespaces } from '../helpers/kernel.js';
import { waitFor } from '../helpers/wait-for.js';

const TOOLS = [...GUEST_TOOLS, 'ip', 'nft', '/bin/busybox'];
const options = kernelOptions(TOOLS);

// A fixed amount of work, timed inside the process (its startup is measured apart).
const CPU_LOOP =
  'const t = performance.now(); let s = 0; for (let i = 0; i < 3e7; i++) s += i % 7; ' +
  'console.log(JSON.stringify({ ms: performance.now() - t, s }))';

async function nodeRun(
  run: (argv: string[]) => Promise<string>,
): Promise<{ loopMs: number; wallMs: number }> {
  const started = Date.now();
  const out = await run([process.execPath, '-e', CPU_LOOP]);
  const wallMs = Date.now() - started;
  return { loopMs: (JSON.parse(out.trim()) as { ms: number }).ms, wallMs };
}

async function tapsIn(namespace: string): Promise<string[]> {
  const r = await hostCommandRunner.run('ip', ['-n', namespace, '-o', 'link', 'show', 'type', 'tun']);
  return r.stdout.split('\n').filter((l) => l.trim() !== '');
}

describe('a guest on Debian kernel', options, () => {
  const prefix = runPrefix();
  // Short: the control socket's path must fit a Unix socket address.
  const stateRoot = mkdtempSync('/tmp/kpts-vm-');
  after(async () => {
    await sweepGuests(stateRoot, { all: true });
    sweepNamespaces(prefix);
    rmSync(stateRoot, { recursive: true, force: true });
  });

  test('boots, runs uname and nft on its own kernel, reaches its namespace, stops leaving nothing', async () => {
    const namespace = `${prefix}-vm1`;
    const stateDir = join(stateRoot, 'g1');
    const network = { namespace, createNamespace: true, tap: `${prefix}t1` };
    let guest: Guest | undefined;
    try {
      guest = await startGuest({
        stateDir,
        network: { ...network, guestAddress: '198.18.0.2/30', hostAddress: '198.18.0.1/30' },
      });
      const uname = await guest.run(['uname', '-r']);
      assert.equal(uname.code, 0, uname.stderr);
      assert.match(uname.stdout.trim(), /^6\.1\.\d+-\d+-amd64$/, 'Debian 12 kernel (6.1) in the guest');
      assert.equal(uname.stdout.trim(), guest.release);
      const nft = await guest.run(['nft', '--version']);
      assert.equal(nft.code, 0, nft.stderr);
      assert.match(nft.stdout, /^nftables v\d/);
      const fails = await guest.run('echo out; echo err >&2; exit 3');
      assert.deepEqual(fails, { code: 3, stdout: 'out\n', stderr: 'err\n' });
      // The guest runs the host's busybox-static (its initramfs's own is not on the overlaid root's PATH).
      const ping = await guest.run(['busybox', 'ping', '-c1', '-W5', '198.18.0.1']);
      assert.equal(
        ping.code,
        0,
        `the guest reaches its namespace over the tap: ${ping.stdout}${ping.stderr}`,
      );

      const host = await nodeRun(
        async (argv) => (await hostCommandRunner.run(argv[0]!, argv.slice(1))).stdout,
      );
      const inGuest = await nodeRun(async (argv) => {
        const r = await guest!.run(argv);
        assert.equal(r.code, 0, r.stderr);
        return r.stdout;
      });
      console.log(
        `# vm: boot to ready ${guest.bootMs} ms; QEMU RSS ${Math.round(guest.rssKiB() / 1024)} MiB (-m 512); ` +
          `node CPU loop host ${host.loopMs.toFixed(0)} ms, guest ${inGuest.loopMs.toFixed(0)} ms ` +
          `(x${(inGuest.loopMs / host.loopMs).toFixed(1)}); node -e wall host ${host.wallMs} ms, ` +
          `guest ${inGuest.wallMs} ms (x${(inGuest.wallMs / host.wallMs).toFixed(1)})`,
      );
    } finally {
      const pid = guest?.pid;
      const stopped = Date.now();
      await guest?.stop();
      if (guest) console.log(`# vm: stop (poweroff and sweep) ${Date.now() - stopped} ms`);
      if (pid !== undefined) assert.equal(processAlive(pid), false, 'no QEMU after stop');
    }
    assert.equal(
      (await listNamespaces(hostCommandRunner)).includes(namespace),
      false,
      'no namespace after stop',
    );
    assert.equal(existsSync(stateDir), false, 'no state directory after stop');
  });

  test('when the host process dies, QEMU dies with it and the sweep removes the rest', async () => {
    const namespace = `${prefix}-vm2`;
    const stateDir = join(stateRoot, 'g2');
    const tap = `${prefix}t2`;
    const fixture = new URL('./start-guest.ts', import.meta.url).pathname;
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', '--conditions=kpts-source', fixture, stateDir, namespace, tap],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const closed = new Promise<void>((resolve) => child.once('close', () => resolve()));
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (s: string) => (out += s));
    child.stderr.setEncoding('utf8').on('data', (s: string) => (err += s));
    const ready = new Promise<number>((resolve, reject) => {
      child.stdout.on('data', () => {
        const line = out.split('\n').find((l) => l.startsWith('{'));
        if (line) resolve((JSON.parse(line) as { pid: number }).pid);
      });
      void closed.then(() =>
        reject(new Error(`start-guest.ts exited before the guest was ready: ${out}${err}`)),
      );
    });
    const qemuPid = await ready;
    assert.equal(processAlive(qemuPid), true);
    assert.equal((await tapsIn(namespace)).length, 1, 'the guest has its tap');

    child.kill('SIGKILL');
    await closed;
    // QEMU runs under setpriv --pdeathsig KILL: the kernel kills it when its parent dies. It is not our child, so
    // there is no exit event to wait for; /proc says when it is gone.
    await waitFor('QEMU to die with its parent', () => (processAlive(qemuPid) ? undefined : true));
    assert.equal(existsSync(stateDir), true, 'the state directory names what is left');
    assert.equal(
      (await listNamespaces(hostCommandRunner)).includes(namespace),
      true,
      'the namespace is left',
    );

    const swept = await sweepGuests(stateRoot);
    assert.deepEqual(swept, [stateDir], 'the sweep takes the guest whose owner is dead');
    assert.equal(
      (await listNamespaces(hostCommandRunner)).includes(namespace),
      false,
      'no namespace, so no tap',
    );
    assert.equal(existsSync(stateDir), false, 'no state directory');
  });
});
