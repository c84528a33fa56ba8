// One lab e2e suite at a time on this machine. The test runner runs two files at once, and two labs (each with
// its proxies, pods and kubectl traffic) on two cores make both slow and flaky; each lab suite takes this lock in
// its first hook and gives it back in its last. The lock is the lab's own (a PID file; a dead holder's is taken
// over), beside the per-prefix locks.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { labDown } from '../../../packages/lab/src/cluster/down.js';
import { acquireLabLock } from '../../../packages/lab/src/cluster/state.js';
import { runPrefix } from '../../helpers/kernel.js';

const TURN_FILE = join(tmpdir(), 'kube-proxy-ts-lab-e2e.lock');

/** Waits (up to `timeoutMs`) until no other lab suite runs; the result releases the turn. */
export async function labTurn(timeoutMs = 20 * 60_000): Promise<() => void> {
  const deadline = Date.now() + timeoutMs;
  let said = false;
  for (;;) {
    const lock = acquireLabLock(TURN_FILE);
    if (lock.ok) return () => lock.release();
    if (!said) {
      console.log(`# waiting for the lab suite in process ${lock.holder} to finish (one lab at a time)`);
      said = true;
    }
    if (Date.now() > deadline)
      throw new Error(
        `the lab suite in process ${lock.holder} still holds ${TURN_FILE} after ${timeoutMs / 1000} s`,
      );
    await new Promise((resolve) => setTimeout(resolve, 1000)); // polling a PID file's lock: its pace, not a wait
  }
}

/** Where one lab lives: its state directory and the prefix of its namespaces. */
export interface LabPlace {
  readonly stateDir: string;
  readonly prefix: string;
}

/** A new place for a suite's lab: a fresh prefix, and a work directory of its own that holds the state directory. */
export function newLabPlace(): LabPlace & { readonly work: string; readonly kubeconfig: string } {
  const prefix = runPrefix();
  const work = mkdtempSync(join(tmpdir(), `${prefix}-`));
  const stateDir = join(work, 'state');
  return { prefix, work, stateDir, kubeconfig: join(stateDir, 'kubeconfig') };
}

/**
 * A lab suite's last hook: stops its lab, removes whatever a failed stop left (`lab down`), and gives the turn back
 * whatever happened, so the next lab suite never waits on a dead one.
 */
export async function endLabSuite(
  lab: { stop(): Promise<void> } | undefined,
  place: LabPlace,
  releaseTurn: () => void,
): Promise<void> {
  try {
    await lab?.stop();
    await labDown(place.stateDir, { prefix: place.prefix }).catch(() => undefined);
  } finally {
    releaseTurn();
  }
}
