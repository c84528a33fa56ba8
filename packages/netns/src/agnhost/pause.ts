// agnhost pause: prints "Paused" and waits for a signal; SIGINT exits 1 and SIGTERM 2, as agnhost's do (a test
// that deletes such a pod sees those exit codes in the container's status).
export const PAUSE_EXIT_CODES = { SIGINT: 1, SIGTERM: 2 } as const;

export function runPause(
  argv: readonly string[],
  exit: (code: number) => void = (c) => process.exit(c),
): void {
  if (argv.length > 0) throw new Error(`accepts at most 0 arg(s), received ${argv.length}`);
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      process.stdout.write(`exiting ${PAUSE_EXIT_CODES[signal]}\n`);
      exit(PAUSE_EXIT_CODES[signal]);
    });
  }
  process.stdout.write('Paused\n');
  // Nothing else keeps the event loop busy: a timer that never fires holds the process until a signal.
  setInterval(() => undefined, 1 << 30);
}
