// A deduplicating work queue. Store subscribers only enqueue keys (never write from inside a commit, which would
// reorder events for the other subscribers); the queue drains on a later turn of the event loop, one key at a
// time, so a burst of events for one object costs one reconcile.
import type { Logger } from 'kube-proxy-ts/util/logger.js';

export class WorkQueue {
  private readonly pending = new Set<string>();
  private running = false;
  private stopped = false;
  private waiters: (() => void)[] = [];

  constructor(
    private readonly name: string,
    private readonly process: (key: string) => void | Promise<void>,
    private readonly logger: Logger,
  ) {}

  add(key: string): void {
    if (this.stopped) return;
    this.pending.add(key);
    if (!this.running) {
      this.running = true;
      setImmediate(() => void this.drain());
    }
  }

  private async drain(): Promise<void> {
    while (this.pending.size > 0 && !this.stopped) {
      const key = this.pending.values().next().value as string;
      this.pending.delete(key);
      try {
        await this.process(key);
      } catch (e) {
        // A controller bug must not stop the queue; the object is skipped and retried on its next event.
        this.logger.error('reconcile failed', { controller: this.name, key, error: String(e) });
      }
    }
    this.running = false;
    const w = this.waiters;
    this.waiters = [];
    for (const fn of w) fn();
  }

  /** Resolves when nothing is queued or running. */
  idle(): Promise<void> {
    if (!this.running && this.pending.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  get busy(): boolean {
    return this.running || this.pending.size > 0;
  }

  stop(): void {
    this.stopped = true;
    this.pending.clear();
  }
}
