// Polling for an outcome the test cannot be told of (a server listening, traffic having moved on, a client's
// callbacks having run): the probe is the condition, the interval only its pace. The timeout is a generous upper
// bound on waiting, never an assertion about speed. KPTS_TIMEOUT_SCALE multiplies every such bound: the in-guest
// harness (test/vm/in-guest.ts) sets it, since a Node.js process under emulation starts ~10 s late.
const TIMEOUT_SCALE = Math.max(1, Number(process.env.KPTS_TIMEOUT_SCALE ?? '1') || 1);

/** A generous upper bound on waiting, scaled by KPTS_TIMEOUT_SCALE (for bounds passed to code that waits itself). */
export function scaledTimeout(ms: number): number {
  return ms * TIMEOUT_SCALE;
}

export async function waitFor<T>(
  what: string,
  probe: () => T | undefined | Promise<T | undefined>,
  { timeoutMs = 20_000, intervalMs = 50 }: { timeoutMs?: number; intervalMs?: number } = {},
): Promise<T> {
  timeoutMs *= TIMEOUT_SCALE;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs)); // the polling pace, not a wait
  }
}
