// A counter whose value lives outside the process (an nfacct object in the kernel) and is read at scrape time, like
// upstream's nfacctMetricCollector. When the read fails the metric has no sample at all, as upstream: a scrape must
// not invent a 0 that would look like a counter reset.
import { Counter } from 'prom-client';

export class ScrapedCounter extends Counter {
  readonly #read: () => Promise<number | undefined>;

  constructor(name: string, help: string, read: () => Promise<number | undefined>) {
    super({ name, help, registers: [] });
    this.#read = read;
  }

  override async get(): ReturnType<Counter['get']> {
    const base = await super.get();
    let value: number | undefined;
    try {
      value = await this.#read();
    } catch {
      value = undefined;
    }
    if (value === undefined || !Number.isFinite(value) || value < 0) return { ...base, values: [] };
    return { ...base, values: [{ value, labels: {} }] };
  }
}
