// Polling for an outcome the test cannot be told of (a server listening, traffic having moved on, a client's
// callbacks having run): the probe is the condition, the interval only its pace. The timeout is a generous upper
// bound on waiting, never an assertion about speed.
export async function waitFor<T>(
  what: string,
  probe: () => T | undefined | Promise<T | undefined>,
  { timeoutMs = 20_000, intervalMs = 50 }: { timeoutMs?: number; intervalMs?: number } = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs)); // the polling pace, not a wait
  }
}
