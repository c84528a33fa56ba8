// How a foreground lab command (`lab up`, the lab's API server) learns it must stop, and why its clean-up is never
// cut short by the same request arriving twice.
import { stopWhenReaderGone } from 'kube-proxy-ts/cli/process-main.js';

/** Ctrl-C, a service manager's stop, and a terminal that closed. */
const STOP_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

export type StopReason = (typeof STOP_SIGNALS)[number] | 'reader gone';

/** What a shell reports for a command ended by `signal` (128 + its number). */
export const SIGNAL_EXIT: Readonly<Record<StopReason, number>> = {
  SIGHUP: 129,
  SIGINT: 130,
  SIGTERM: 143,
  'reader gone': 141,
};

export interface StopRequests {
  /** Settles on the first request to stop: a stop signal, or the reader of our output gone. */
  readonly requested: Promise<StopReason>;
  /** Call once the clean-up is over: the stop signals get their default action again. */
  release(): void;
}

/**
 * Listens for requests to stop: a stop signal, or the reader of the command's output gone (`lab up | tee lab.log`
 * and Ctrl-C: the same SIGINT ends tee, and the next progress line has no reader). Requests after the first, until
 * `release()`, are told to `note` and otherwise ignored: under `npm start` one Ctrl-C arrives twice (the terminal's
 * SIGINT to the whole process group, and npm's forwarded copy), and a clean-up cut short leaves namespaces and
 * processes behind. A clean-up that hangs is ended with SIGKILL; `lab down` removes what it left.
 */
export function stopRequests(note: (line: string) => void = () => undefined): StopRequests {
  let first: StopReason | undefined;
  let resolveRequested: (reason: StopReason) => void = () => undefined;
  const requested = new Promise<StopReason>((resolve) => (resolveRequested = resolve));
  const onRequest = (reason: StopReason): void => {
    if (first !== undefined) {
      if (reason !== 'reader gone')
        note(`${reason} received while stopping (${first}): the clean-up goes on`);
      return;
    }
    first = reason;
    resolveRequested(reason);
  };
  const listeners = STOP_SIGNALS.map((s) => [s, () => onRequest(s)] as const);
  for (const [s, l] of listeners) process.on(s, l);
  const undoReaderGone = stopWhenReaderGone(() => onRequest('reader gone'));
  return {
    requested,
    release(): void {
      for (const [s, l] of listeners) process.off(s, l);
      undoReaderGone();
    },
  };
}
