// `lab down` sweeps the lab's guests (packages/lab/src/vm/) under <stateDir>/guests/: their QEMU is killed and their
// state directories go with the lab's. No root and no QEMU: a stand-in process whose command line names the guest's
// directory plays QEMU (the sweep kills only such a process), and a runner that sees no namespaces plays the host.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import type { CommandRunner } from '../../../packages/agent/src/netfilter/command.js';
import { labDown } from '../../../packages/lab/src/cluster/down.js';
import { labPaths } from '../../../packages/lab/src/cluster/layout.js';
import { processAlive, QEMU_PIDFILE, writeGuestRecord } from '../../../packages/lab/src/vm/cleanup.js';
import { waitFor } from '../../helpers/wait-for.js';

const noNamespaces: CommandRunner = { run: () => Promise.resolve({ code: 0, stdout: '', stderr: '' }) };

test('lab down kills the guests under <stateDir>/guests and removes their directories', async () => {
  const stateDir = mkdtempSync(join(tmpdir(), 'kpts-down-'));
  const guestDir = join(labPaths(stateDir).guestsDir, 'worker2');
  mkdirSync(guestDir, { recursive: true });
  // The owner is alive (this process): down sweeps anyway, since the lab it belongs to has been stopped.
  writeGuestRecord(guestDir, { version: 1, ownerPid: process.pid, ownsNamespace: false });
  const qemu = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1 << 30)', guestDir], {
    stdio: 'ignore',
  });
  const exited = new Promise<void>((resolve) => qemu.once('exit', () => resolve()));
  try {
    const pid = qemu.pid!;
    writeFileSync(join(guestDir, QEMU_PIDFILE), `${pid}\n`);
    const report = await labDown(stateDir, {
      runner: noNamespaces,
      prefix: `kptsdn${randomBytes(2).toString('hex')}`,
    });
    assert.deepEqual(report.guests, [guestDir]);
    assert.deepEqual(report.errors, []);
    await exited;
    await waitFor('the stand-in QEMU to be gone', () => (processAlive(pid) ? undefined : true));
    assert.equal(existsSync(stateDir), false, 'the state directory, guests included, is gone');
  } finally {
    qemu.kill('SIGKILL');
    rmSync(stateDir, { recursive: true, force: true });
  }
});
