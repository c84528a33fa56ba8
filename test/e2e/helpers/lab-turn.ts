// One lab e2e suite at a time on this machine. The test runner runs two files at once, and two labs (each with
// its proxies, pods and kubectl traffic) on two cores make both slow and flaky; each lab suite takes this lock in
// its first hook and gives it back in its last. The lock is the lab's own (a PID file; a dead holder's is taken
// over), beside the per-prefix locks.
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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
