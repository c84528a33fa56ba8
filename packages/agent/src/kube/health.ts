// The state of one reflector's connection to the API server, as data: the agent logs it, exposes it, and may
// treat a long-unsynced or long-failing watch as unhealthy.

export interface ReflectorHealth {
  /** The resource and its selectors, e.g. "services (label !service.kubernetes.io/service-proxy-name, …)". */
  readonly resource: string;
  /** True once the first complete list has been delivered (and forever after). */
  readonly synced: boolean;
  /** The last resourceVersion seen (from a list, an event or a bookmark); "" before the first list. */
  readonly resourceVersion: string;
  readonly objects: number;
  /** Times (ms since the epoch, from the injected clock) of the last complete list and the last watch event. */
  readonly lastListAt: number | undefined;
  readonly lastWatchEventAt: number | undefined;
  /** The last time the API server answered usefully: a list completed, a watch opened or delivered an event. */
  readonly lastSuccessAt: number | undefined;
  /** Failed list or watch attempts since the last success. */
  readonly consecutiveFailures: number;
  readonly lastError: string | undefined;
  readonly counters: {
    readonly lists: number;
    readonly relistsAfterGone: number;
    readonly watches: number;
    readonly watchdogAborts: number;
    readonly skippedObjects: number;
  };
}

export interface ConnectionSummary {
  readonly healthy: boolean;
  /** One line per unhealthy reflector, naming it and why. */
  readonly problems: readonly string[];
}

/** Unhealthy: not synced yet, or failing for longer than `failingForMs` with no success since. */
export function summarizeHealth(
  all: readonly ReflectorHealth[],
  now: number,
  failingForMs: number,
): ConnectionSummary {
  const problems: string[] = [];
  for (const h of all) {
    if (!h.synced)
      problems.push(`${h.resource}: not synced (${h.lastError ?? 'waiting for the first list'})`);
    else if (h.consecutiveFailures > 0 && now - (h.lastSuccessAt ?? 0) > failingForMs)
      problems.push(
        `${h.resource}: ${h.consecutiveFailures} failures since ${new Date(h.lastSuccessAt ?? 0).toISOString()} (${h.lastError ?? ''})`,
      );
  }
  return { healthy: problems.length === 0, problems };
}
