// One lab e2e suite at a time on this machine. The test runner runs two files at once, and two labs (each with
// its proxies, pods and kubectl traffic) on two cores make both slow and flaky; each lab suite takes this lock in
// its first hook and gives it back in its last. The lock is the lab's own (a PID file; a dead holder's is taken
// over), beside the per-prefix locks.
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { labDown } from '../../../packages/lab/src/cluster/down.js';
import { acquireLabLock } from '../../../packages/lab/src/cluster/state.js';

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

/**
 * A lab suite's last hook: stops its lab, removes whatever a failed stop left (`lab down`), and gives the turn back
 * whatever happened, so the next lab suite never waits on a dead one.
 */
export async function endLabSuite(
  lab: { stop(): Promise<void> } | undefined,
  place: { readonly stateDir: string; readonly prefix: string },
  releaseTurn: () => void,
): Promise<void> {
  try {
    await lab?.stop();
    await labDown(place.stateDir, { prefix: place.prefix }).catch(() => undefined);
  } finally {
    releaseTurn();
  }
}
