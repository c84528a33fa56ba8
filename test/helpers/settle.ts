// Waiting in tests: await what you expect to happen (a runner's nextRun(), a proxier's nextSync(), the promise the
// code returns). settle() is for what has nothing to await: showing that something did NOT happen, or letting work
// already queued reach its next wait before the fake clock moves.

/**
 * Resolves after one turn of the event loop, by which time every promise continuation queued before the call, and
 * every one those queue in turn, has run. That is all the work there is for code that waits only on promises and
 * FakeClock timers; it says nothing about real I/O or real timers.
 */
export function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
