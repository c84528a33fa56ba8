// Reading a proxy's /metrics from inside its node's namespace. The text format is read by the agent's own parser
// (kube-proxy-ts/inspect/prometheus.js), the one doctor uses.
import type { CommandRunner } from 'kube-proxy-ts/netfilter/command.js';
import { parseMetrics, sum } from 'kube-proxy-ts/inspect/prometheus.js';

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

/** The sum of every series named `name` whose labels include `match`; undefined when there is none. */
export function metricValue(
  text: string,
  name: string,
  match: Readonly<Record<string, string>> = {},
): number | undefined {
  return sum(parseMetrics(text), name, match);
}
