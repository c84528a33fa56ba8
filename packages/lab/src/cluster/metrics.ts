// Reading a proxy's /metrics from inside its node's namespace. The text format is read by the agent's own parser
// (kube-proxy-ts/inspect/prometheus.js), the one doctor uses.
import type { CommandRunner } from 'kube-proxy-ts/netfilter/command.js';
import { parseMetrics, sum } from 'kube-proxy-ts/inspect/prometheus.js';
import { settingsFromConfigz } from 'kube-proxy-ts/inspect/doctor/agent-endpoints.js';
import type { AgentSettings } from 'kube-proxy-ts/inspect/doctor/types.js';

/** The body of one of the proxy's HTTP paths on its metrics address, or undefined when it does not answer. */
async function fetchFromProxy(
  runner: CommandRunner,
  namespace: string,
  address: string,
  path: string,
): Promise<string | undefined> {
  const r = await runner.run(
    'ip',
    ['netns', 'exec', namespace, 'curl', '-sf', '--max-time', '3', `http://${address}${path}`],
    { timeoutMs: 5000 },
  );
  return r.code === 0 ? r.stdout : undefined;
}

/** The proxy's metrics text, or undefined when it does not answer (not started yet, restarting). */
export function fetchProxyMetrics(
  runner: CommandRunner,
  namespace: string,
  address = '127.0.0.1:10249',
): Promise<string | undefined> {
  return fetchFromProxy(runner, namespace, address, '/metrics');
}

/**
 * What the proxy runs, from its /configz (doctor's reading of it: mode, and that mode's sync periods), whatever its
 * ConfigMap says now; undefined when it does not answer or answers something else.
 */
export async function fetchProxySettings(
  runner: CommandRunner,
  namespace: string,
  address = '127.0.0.1:10249',
): Promise<AgentSettings | undefined> {
  const body = await fetchFromProxy(runner, namespace, address, '/configz');
  return body === undefined ? undefined : settingsFromConfigz(body);
}

/** The sum of every series named `name` whose labels include `match`; undefined when there is none. */
export function metricValue(
  text: string,
  name: string,
  match: Readonly<Record<string, string>> = {},
): number | undefined {
  return sum(parseMetrics(text), name, match);
}

/**
 * The change and sync counters every proxy exports, whichever its backend: what `lab watch` shows and the web
 * page charts. 0 for one the proxy does not export yet.
 */
export interface SyncCounters {
  readonly endpointPending: number;
  readonly endpointTotal: number;
  readonly servicePending: number;
  readonly serviceTotal: number;
  readonly syncs: number;
  readonly syncSecondsSum: number;
}

export function syncCountersFrom(text: string): SyncCounters {
  const v = (name: string): number => metricValue(text, name) ?? 0;
  return {
    endpointPending: v('kubeproxy_sync_proxy_rules_endpoint_changes_pending'),
    endpointTotal: v('kubeproxy_sync_proxy_rules_endpoint_changes_total'),
    servicePending: v('kubeproxy_sync_proxy_rules_service_changes_pending'),
    serviceTotal: v('kubeproxy_sync_proxy_rules_service_changes_total'),
    syncs: v('kubeproxy_sync_proxy_rules_duration_seconds_count'),
    syncSecondsSum: v('kubeproxy_sync_proxy_rules_duration_seconds_sum'),
  };
}
