// Records what a reflector delivers as short strings ("add ns/a 101", "update ns/a 101->102", "delete ns/a 101",
// "synced") and lets a test await a condition on them, event-driven, with a generous failure deadline.
import type { ReflectorHandlers } from '../../../packages/agent/src/kube/reflector.js';
import type { KubeObject } from '../../../packages/agent/src/kube/object-identity.js';

function id(obj: KubeObject): string {
  const { namespace, name, resourceVersion } = obj.metadata;
  return `${namespace ? `${namespace}/` : ''}${name ?? '?'} ${resourceVersion ?? '?'}`;
}

export class Recorder<T extends KubeObject> {
  readonly events: string[] = [];
  private readonly waiters = new Waiters();

  readonly handlers: ReflectorHandlers<T> = {
    onAdd: (obj) => this.push(`add ${id(obj)}`),
    onUpdate: (old, obj) => this.push(`update ${id(obj)} from ${old.metadata.resourceVersion ?? '?'}`),
    onDelete: (obj) => this.push(`delete ${id(obj)}`),
    onSynced: () => this.push('synced'),
  };

  push(event: string): void {
    this.events.push(event);
    this.waiters.notify();
  }

  /** Events since index `from`. */
  since(from: number): string[] {
    return this.events.slice(from);
  }

  waitFor(
    predicate: (events: readonly string[]) => boolean,
    what: string,
    timeoutMs = 10_000,
  ): Promise<void> {
    return this.waiters.until(predicate.bind(null, this.events), what, timeoutMs, () =>
      JSON.stringify(this.events),
    );
  }

  /** Waits until `count` events have arrived after index `from`. */
  waitForCount(from: number, count: number, timeoutMs = 10_000): Promise<void> {
    return this.waitFor((e) => e.length >= from + count, `${count} events after #${from}`, timeoutMs);
  }
}

/**
 * Shared by the recorder, the watched log and the fake server: waits on what they record, each ended by the change
 * that makes its check hold (the owner calls notify() after every change).
 */
export class Waiters {
  private waiting: { check: () => boolean; resolve: () => void }[] = [];

  /** Re-checks every wait, ending those whose check now holds. */
  notify(): void {
    this.waiting = this.waiting.filter((w) => {
      if (!w.check()) return true;
      w.resolve();
      return false;
    });
  }

  /** Resolves when `check` holds; after `timeoutMs`, rejects naming `what` and the state `dump` gives. */
  until(check: () => boolean, what: string, timeoutMs: number, dump: () => string): Promise<void> {
    if (check()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      // A deadline for a clear failure; the wait itself ends on the recorded event.
      const timer = setTimeout(
        () => reject(new Error(`timed out waiting for ${what}; state: ${dump()}`)),
        timeoutMs,
      );
      this.waiting.push({
        check,
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
      });
    });
  }
}
