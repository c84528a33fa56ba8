// A small reader of the Prometheus text format (what /metrics serves), enough to assert metric names, types,
// labels and values the way a dashboard would read them.

export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

export interface Exposition {
  /** metric family name → type from its # TYPE line */
  readonly types: ReadonlyMap<string, string>;
  readonly samples: readonly Sample[];
}

function parseLabels(text: string): Record<string, string> {
  const labels: Record<string, string> = {};
  const re = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;
  for (let m = re.exec(text); m !== null; m = re.exec(text)) {
    labels[m[1] as string] = (m[2] as string).replace(/\\(.)/g, (_s, c: string) => (c === 'n' ? '\n' : c));
  }
  return labels;
}

export function parseExposition(text: string): Exposition {
  const types = new Map<string, string>();
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line.startsWith('# TYPE ')) {
      const [, , name, type] = line.split(' ');
      if (name !== undefined && type !== undefined) types.set(name, type);
      continue;
    }
    if (line.startsWith('#') || line.trim() === '') continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})?\s+(\S+)/.exec(line);
    if (!m) continue;
    const raw = m[3] as string;
    const value = raw === '+Inf' ? Infinity : raw === '-Inf' ? -Infinity : Number(raw);
    samples.push({ name: m[1] as string, labels: parseLabels(m[2] ?? ''), value });
  }
  return { types, samples };
}

/** Samples of `name` whose labels include every pair in `labels`. */
export function samplesOf(e: Exposition, name: string, labels: Record<string, string> = {}): Sample[] {
  return e.samples.filter(
    (s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v),
  );
}

/** The one sample of `name` with `labels`; throws when there is none or more than one. */
export function valueOf(e: Exposition, name: string, labels: Record<string, string> = {}): number {
  const found = samplesOf(e, name, labels);
  if (found.length !== 1) {
    throw new Error(`expected one sample of ${name}${JSON.stringify(labels)}, found ${found.length}`);
  }
  return (found[0] as Sample).value;
}
