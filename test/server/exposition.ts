// A small reader of the Prometheus text format, for tests: metric families with their HELP, TYPE and samples.

export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  /** Label names in the order they were printed. */
  readonly labelOrder: readonly string[];
  readonly value: number;
}

export interface Family {
  readonly name: string;
  help?: string;
  type?: string;
  readonly samples: Sample[];
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

function familyOf(sampleName: string, families: Map<string, Family>): Family | undefined {
  if (families.has(sampleName)) return families.get(sampleName);
  for (const suffix of ['_bucket', '_sum', '_count']) {
    if (sampleName.endsWith(suffix)) {
      const f = families.get(sampleName.slice(0, -suffix.length));
      if (f) return f;
    }
  }
  return undefined;
}

export function parseExposition(text: string): Map<string, Family> {
  const families = new Map<string, Family>();
  const get = (name: string): Family => {
    let f = families.get(name);
    if (!f) {
      f = { name, samples: [] };
      families.set(name, f);
    }
    return f;
  };
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    const meta = /^# (HELP|TYPE) (\S+) ?(.*)$/.exec(line);
    if (meta) {
      const f = get(meta[2]!);
      if (meta[1] === 'HELP') f.help = meta[3];
      else f.type = meta[3];
      continue;
    }
    const m = SAMPLE.exec(line);
    if (!m) throw new Error(`unparsable exposition line: ${line}`);
    const labels: Record<string, string> = {};
    const labelOrder: string[] = [];
    for (const l of (m[2] ?? '').matchAll(LABEL)) {
      labels[l[1]!] = l[2]!;
      labelOrder.push(l[1]!);
    }
    const fam = familyOf(m[1]!, families);
    if (!fam) throw new Error(`sample without a family: ${line}`);
    fam.samples.push({ name: m[1]!, labels, labelOrder, value: Number(m[3]) });
  }
  return families;
}

/** The `le` bounds of a histogram's buckets for one label set (without +Inf), as numbers in printed order. */
export function bucketBounds(f: Family, labels: Readonly<Record<string, string>>): number[] {
  return f.samples
    .filter((s) => s.name === `${f.name}_bucket`)
    .filter((s) => Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    .map((s) => s.labels.le!)
    .filter((le) => le !== '+Inf')
    .map(Number);
}
