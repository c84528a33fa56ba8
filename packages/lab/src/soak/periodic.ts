// A sampler's loop: `once` now, then again `everyMs` after each run ends (never two at a time), until stop(),
// which waits for a run in progress.
export class Periodic {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> = Promise.resolve();

  constructor(
    private readonly everyMs: number,
    private readonly once: () => Promise<void>,
  ) {}

  start(): void {
    const tick = (): void => {
      this.running = this.once().finally(() => {
        if (this.timer !== undefined) this.timer = setTimeout(tick, this.everyMs);
      });
    };
    this.timer = setTimeout(tick, 0);
  }

  async stop(): Promise<void> {
    const t = this.timer;
    this.timer = undefined;
    if (t) clearTimeout(t);
    await this.running;
  }
}
