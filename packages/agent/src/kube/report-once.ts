// "Log once": a bad object that comes back on every relist must not flood the log. Remembers what was reported,
// bounded so that a stream of distinct bad lines cannot grow memory without limit (oldest forgotten first).
export class ReportOnce {
  private readonly seen = new Set<string>();

  constructor(private readonly capacity = 1024) {}

  /** True the first time `id` is seen (the caller logs then); false for repeats. */
  first(id: string): boolean {
    if (this.seen.has(id)) return false;
    this.seen.add(id);
    if (this.seen.size > this.capacity) {
      const oldest = this.seen.values().next();
      if (!oldest.done) this.seen.delete(oldest.value);
    }
    return true;
  }
}
