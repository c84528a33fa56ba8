// Switching proxy modes without a gap. A node restarted in another mode still holds the old mode's rules; they
// keep answering Service traffic until this mode has laid down its own. So the other mode's rules are removed only
// after every family's first successful full sync, never at start (upstream cleans up first, which leaves the
// node without Service rules for as long as that first sync takes, and forever if the API server cannot be
// reached: the first sync waits for the caches).
//
// Both rule sets side by side are safe: each was built from the cluster's state by the same decisions, both
// DNAT in the same hook priority (dstnat), and whichever runs first rewrites the destination to an endpoint, which
// the other then no longer matches as a frontend; conntrack keeps every established flow on the endpoint it was
// given. Both mark with the same masquerade bit, so masquerading is decided alike.
import type { IPFamily } from '../model/ip.js';

export interface SyncOutcome {
  readonly family: IPFamily;
  readonly ok: boolean;
  readonly full: boolean;
}

export class OtherModeCleanup {
  private readonly waiting: Set<IPFamily>;
  private started = false;
  readonly #done: Promise<void>;
  #resolve: () => void = () => undefined;

  constructor(
    families: readonly IPFamily[],
    private readonly cleanup: () => Promise<void>,
  ) {
    this.waiting = new Set(families);
    this.#done = new Promise((resolve) => (this.#resolve = resolve));
  }

  /** Resolves when the cleanup has run (never, if no family ever syncs). */
  get done(): Promise<void> {
    return this.#done;
  }

  /** Whether the cleanup has been started. */
  get cleaned(): boolean {
    return this.started;
  }

  /** Feed every sync here; the cleanup runs once, after each family's first successful full sync. */
  onSync(outcome: SyncOutcome): void {
    if (!outcome.ok || !outcome.full || this.started) return;
    this.waiting.delete(outcome.family);
    if (this.waiting.size > 0) return;
    this.started = true;
    // The cleanup logs its own failures; a rejection must not escape as an unhandled one.
    void this.cleanup().then(
      () => this.#resolve(),
      () => this.#resolve(),
    );
  }
}
