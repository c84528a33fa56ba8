// Reads the Prometheus text format the agent's /metrics serves (src/server/metrics.ts): samples with labels (values
// unescaped, ±Inf and NaN kept), sums over label sets, and quantiles from a histogram's cumulative buckets (as
// histogram_quantile does). doctor's checks read it, and so does the lab (its status, watch view, web view and soak).
export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

export interface MetricSamples {
  readonly samples: readonly Sample[];
}

function parseLabels(text: string): Record<string, string> {
  const labels: Record<string, string> = {};
  const re = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    labels[m[1] ?? ''] = (m[2] ?? '').replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
  }
  return labels;
}

export function parseMetrics(text: string): MetricSamples {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)/.exec(line);
    if (!m) continue;
    const value = m[4] === '+Inf' ? Infinity : m[4] === '-Inf' ? -Infinity : Number(m[4]);
    if (Number.isNaN(value) && m[4] !== 'NaN') continue;
    samples.push({ name: m[1] ?? '', labels: m[3] ? parseLabels(m[3]) : {}, value });
  }
  return { samples };
}

function matches(s: Sample, labels: Readonly<Record<string, string>>): boolean {
  return Object.entries(labels).every(([k, v]) => s.labels[k] === v);
}

/** Sum of every sample of `name` whose labels include `labels`; undefined when there is none. */
export function sum(
  m: MetricSamples,
  name: string,
  labels: Readonly<Record<string, string>> = {},
): number | undefined {
  const xs = m.samples.filter((s) => s.name === name && matches(s, labels));
  return xs.length === 0 ? undefined : xs.reduce((a, s) => a + s.value, 0);
}

/** Largest value of `name` (e.g. the newest timestamp across families). */
export function max(m: MetricSamples, name: string): number | undefined {
  const xs = m.samples.filter((s) => s.name === name).map((s) => s.value);
  return xs.length === 0 ? undefined : Math.max(...xs);
}

export interface HistogramSummary {
  readonly count: number;
  readonly sum: number;
  readonly p50?: number;
  readonly p99?: number;
  /** The upper bound of the highest bucket with an observation (the slowest seen, to bucket precision). */
  readonly maxBucket?: number;
}

/** A histogram over every label set (families added): count, sum, p50/p99 by linear interpolation in buckets. */
export function histogram(m: MetricSamples, name: string): HistogramSummary | undefined {
  const buckets = new Map<number, number>();
  for (const s of m.samples) {
    if (s.name !== `${name}_bucket`) continue;
    const le = s.labels.le === '+Inf' ? Infinity : Number(s.labels.le);
    buckets.set(le, (buckets.get(le) ?? 0) + s.value);
  }
  const count = sum(m, `${name}_count`);
  if (count === undefined) return undefined;
  const total = sum(m, `${name}_sum`) ?? 0;
  const bounds = [...buckets.entries()].sort((a, b) => a[0] - b[0]);
  const quantile = (q: number): number | undefined => {
    if (count === 0) return undefined;
    const rank = q * count;
    let prevBound = 0;
    let prevCount = 0;
    for (const [le, c] of bounds) {
      if (c >= rank) {
        if (le === Infinity) return prevBound;
        return prevBound + ((le - prevBound) * (rank - prevCount)) / Math.max(1e-12, c - prevCount);
      }
      prevBound = le;
      prevCount = c;
    }
    return prevBound;
  };
  let maxBucket: number | undefined;
  let prev = 0;
  for (const [le, c] of bounds) {
    if (c > prev) maxBucket = le;
    prev = c;
  }
  return {
    count,
    sum: total,
    ...(quantile(0.5) !== undefined ? { p50: quantile(0.5) } : {}),
    ...(quantile(0.99) !== undefined ? { p99: quantile(0.99) } : {}),
    ...(maxBucket !== undefined ? { maxBucket } : {}),
  };
}
