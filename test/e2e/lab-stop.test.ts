// Stopping `lab up` when nobody reads its output any more (issue 27): `bash scripts/lab.sh | tee lab.log` and
// Ctrl-C ends tee with the same SIGINT, so the lab's clean-up writes into a pipe without a reader; and under
// `npm start` the lab gets that SIGINT twice (the terminal's, and npm's forwarded copy). SIGTERM (a service
// manager) and SIGHUP (a terminal closed) come with the reader gone too. Each time every namespace, process and
// the state directory must go, as after Ctrl-C in a bare terminal; and Ctrl-C while the lab comes up removes what
// was built so far.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { labDown } from '../../packages/lab/src/cluster/down.js';
import { processAlive } from '../../packages/lab/src/cluster/state.js';
import { kernelOptions } from '../helpers/kernel.js';
import { mustRun } from './helpers.js';
import { labTurn, newLabPlace } from './helpers/lab-turn.js';
import { spawnLabUp, type LabUp } from './helpers/lab-up.js';

const gate = kernelOptions(['ip', 'nft', 'curl']);

/** `lab up` in a process group of its own, as a terminal's job, its stdout into a pipe this test reads. */
function startLabUp(prefix: string, stateDir: string): LabUp {
  return spawnLabUp({ prefix, stateDir }, ['--nodes', '1'], { detached: true });
}

/** The lab's network namespaces and the PIDs of every process in them (proxies, pod servers, relays). */
async function labProcesses(prefix: string): Promise<{ namespaces: string[]; pids: number[] }> {
  const namespaces = (await mustRun('ip', ['netns', 'list']))
    .split('\n')
    .map((l) => l.split(' ')[0] ?? '')
    .filter((n) => n.startsWith(`${prefix}-`));
  const pids: number[] = [];
  for (const n of namespaces)
    for (const p of (await mustRun('ip', ['netns', 'pids', n])).split('\n').filter(Boolean))
      pids.push(Number(p));
  return { namespaces, pids };
}

/** Nothing of the lab is left: no namespace, no process that ran in one, no link in this namespace, no state. */
async function assertNothingLeft(prefix: string, stateDir: string, pids: readonly number[]): Promise<void> {
  const left = await labProcesses(prefix);
  assert.deepEqual(left.namespaces, [], 'no network namespace left');
  assert.deepEqual(
    pids.filter(processAlive),
    [],
    "no process left of those that ran in the lab's namespaces",
  );
  const links = (await mustRun('ip', ['-o', 'link', 'show'])).split('\n').filter((l) => l.includes(prefix));
  assert.deepEqual(links, [], 'no link left');
  assert.equal(existsSync(stateDir), false, 'the state directory is gone');
}

describe(
  'lab up: stopped with nobody reading its output (issue 27)',
  { skip: gate.skip, timeout: 900_000 },
  () => {
    let releaseTurn: () => void = () => undefined;
    const made: { prefix: string; stateDir: string; lab?: LabUp }[] = [];
    // The turn can take another lab suite's whole run: longer than one test's 10 minutes on a busy machine.
    before(
      async () => {
        releaseTurn = await labTurn();
      },
      { timeout: 25 * 60_000 },
    );
    after(async () => {
      try {
        for (const m of made) {
          if (m.lab?.child.pid !== undefined && m.lab.child.exitCode === null) {
            process.kill(-m.lab.child.pid, 'SIGKILL');
            await m.lab.exited;
          }
          await labDown(m.stateDir, { prefix: m.prefix }).catch(() => undefined);
        }
      } finally {
        releaseTurn();
      }
    });

    const fresh = (): { prefix: string; stateDir: string } => {
      const { prefix, stateDir } = newLabPlace();
      const m = { prefix, stateDir };
      made.push(m);
      return m;
    };

    const cases: { name: string; stop: (pid: number) => void; exit: number }[] = [
      {
        name: "Ctrl-C under `npm start | tee`: SIGINT to the whole group, then npm's forwarded copy",
        stop: (pid) => {
          process.kill(-pid, 'SIGINT');
          process.kill(pid, 'SIGINT');
        },
        exit: 141,
      },
      { name: 'SIGTERM', stop: (pid) => process.kill(pid, 'SIGTERM'), exit: 141 },
      { name: 'SIGHUP (the terminal closed)', stop: (pid) => process.kill(-pid, 'SIGHUP'), exit: 141 },
    ];
    for (const c of cases)
      test(`${c.name}: every namespace, process and the state directory are removed`, async () => {
        const m = fresh();
        const lab = startLabUp(m.prefix, m.stateDir);
        Object.assign(m, { lab });
        await lab.shown('Walkthrough:', 240_000);
        const { namespaces, pids } = await labProcesses(m.prefix);
        assert.ok(
          namespaces.length >= 3 && pids.length >= 3,
          `the lab runs: ${namespaces.join(' ')}; ${pids.length} processes`,
        );
        lab.child.stdout?.destroy(); // the reader is gone: the lab's next line meets a closed pipe
        c.stop(lab.child.pid ?? 0);
        const code = await lab.exited;
        assert.equal(
          code,
          c.exit,
          `exit ${c.exit}, as a command whose reader left; output:\n${lab.output()}`,
        );
        await assertNothingLeft(m.prefix, m.stateDir, pids);
      });

    test('Ctrl-C while the lab comes up: what was built so far is removed', async () => {
      const m = fresh();
      const lab = startLabUp(m.prefix, m.stateDir);
      Object.assign(m, { lab });
      await lab.shown('starting the API server', 240_000);
      const { pids } = await labProcesses(m.prefix);
      process.kill(-(lab.child.pid ?? 0), 'SIGINT');
      const code = await lab.exited;
      assert.equal(code, 130, `exit 130, as a command ended by SIGINT; output:\n${lab.output()}`);
      assert.match(lab.output(), /stopped \(SIGINT\) before the lab was up/);
      await assertNothingLeft(m.prefix, m.stateDir, pids);
    });
  },
);
