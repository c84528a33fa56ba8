// Waiting for an outcome of a real process (a rule in the kernel, an HTTP answer): poll a condition until it holds
// or a generous deadline passes. This waits for outcomes, it measures nothing; timing targets live in bench/.
import { setTimeout as delay } from 'node:timers/promises';

/**
 * Polls `check` (sync or async) every `everyMs` until it returns true; rejects after `timeoutMs` with `what` and
 * `detail()`. An exception thrown by `check` ends the wait at once (e.g. "the process exited").
 */
export async function until(
  check: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs: number,
  detail: () => string | Promise<string> = () => '',
  everyMs = 200,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() >= deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}\n${await detail()}`);
    }
    await delay(everyMs); // the polling pace, not a wait
  }
}
