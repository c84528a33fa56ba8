// Reading a proxy's /metrics from inside its node's namespace, and picking samples out of the text format.
import type { CommandRunner } from 'kube-proxy-ts/netfilter/command.js';

/** The proxy's metrics text, or undefined when it does not answer (not started yet, restarting). */
export async function fetchProxyMetrics(
  runner: CommandRunner,
  namespace: string,
  address = '127.0.0.1:10249',
): Promise<string | undefined> {
  const r = await runner.run(
    'ip',
    ['netns', 'exec', namespace, 'curl', '-sf', '--max-time', '3', `http://${address}/metrics`],
    { timeoutMs: 5000 },
  );
  return r.code === 0 ? r.stdout : undefined;
}

export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

/** Every sample of the Prometheus text format (comments skipped; label values unescaped). */
export function parseSamples(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!m || m[1] === undefined || m[3] === undefined) continue;
    const labels: Record<string, string> = {};
    const body = m[2] ?? '';
    for (const lm of body.matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
      if (lm[1] !== undefined && lm[2] !== undefined)
        labels[lm[1]] = lm[2].replace(/\\n/g, '\n').replace(/\\"/g, '"').replace(/\\\\/g, '\\');
    }
    const value = Number(m[3]);
    if (!Number.isNaN(value) || m[3] === 'NaN') out.push({ name: m[1], labels, value });
  }
  return out;
}

/** The sum of every series named `name` whose labels include `match`; undefined when there is none. */
export function metricValue(
  text: string,
  name: string,
  match: Readonly<Record<string, string>> = {},
): number | undefined {
  let total: number | undefined;
  for (const s of parseSamples(text)) {
    if (s.name !== name) continue;
    if (!Object.entries(match).every(([k, v]) => s.labels[k] === v)) continue;
    total = (total ?? 0) + s.value;
  }
  return total;
}
