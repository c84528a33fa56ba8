// The plug that decides when a Pod is running and when it is gone. The default makes Pods ready at once; the
// lab backs each Pod with a network namespace and resolves start() when its servers listen.
import type { Pod } from '../apiserver/types.js';

export interface PodLifecycle {
  /** Starts the Pod (it already has spec.nodeName and status.podIP); resolves when it is ready. */
  start(pod: Pod): Promise<void>;
  /**
   * Stops the Pod after its deletion was requested; resolves when it is gone. The Pod stays terminating until
   * then, or until its grace period ends, whichever comes first.
   */
  stop(pod: Pod): Promise<void>;
}

export interface ReadyPodLifecycleOptions {
  /** Keep deleted Pods terminating this long (ms, on the real clock) before reporting them gone; default 0. */
  readonly terminationDelayMs?: number;
}

/** Pods are ready as soon as they start and gone as soon as they are stopped (after an optional delay). */
export function readyPodLifecycle(options: ReadyPodLifecycleOptions = {}): PodLifecycle {
  const delay = options.terminationDelayMs ?? 0;
  return {
    start: () => Promise.resolve(),
    stop: () => (delay > 0 ? new Promise((resolve) => setTimeout(resolve, delay)) : Promise.resolve()),
  };
}

/** Pods never exit on their own: deleted Pods stay terminating for their whole grace period. */
export const lingeringPodLifecycle: PodLifecycle = {
  start: () => Promise.resolve(),
  stop: () => new Promise<void>(() => undefined),
};
