// Waiting in the foreground for the operator's Ctrl-C (or a service manager's SIGTERM).

/**
 * Resolves on the first SIGINT or SIGTERM, or when `done` settles, then removes both listeners: a second signal
 * during the caller's shutdown gets the default action (the process ends), so a stuck shutdown can be cut short.
 */
export function untilSignal(done?: Promise<unknown>): Promise<void> {
  return new Promise<void>((resolve) => {
    const onSignal = (): void => {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      resolve();
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
    if (done) void done.then(onSignal, onSignal);
  });
}
