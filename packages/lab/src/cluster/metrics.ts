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

/**
 * The proxy's /configz (upstream's shape: `Mode`, `IPTables.MinSyncPeriod`, …), or undefined when it does not
 * answer or answers something that is not a JSON object: what the proxy runs, whatever its ConfigMap says now.
 */
export async function fetchProxyConfigz(
  runner: CommandRunner,
  namespace: string,
  address = '127.0.0.1:10249',
): Promise<Record<string, unknown> | undefined> {
  const r = await runner.run(
    'ip',
    ['netns', 'exec', namespace, 'curl', '-sf', '--max-time', '3', `http://${address}/configz`],
    { timeoutMs: 5000 },
  );
  if (r.code !== 0) return undefined;
  try {
    const doc: unknown = JSON.parse(r.stdout);
    return typeof doc === 'object' && doc !== null && !Array.isArray(doc)
      ? (doc as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

/** The sync periods of the mode a proxy's /configz says it runs. */
export interface ProxySyncSettings {
  readonly mode: string;
  readonly minSyncPeriod?: string;
  readonly syncPeriod?: string;
}

const CONFIGZ_SECTION: Readonly<Record<string, string>> = {
  iptables: 'IPTables',
  ipvs: 'IPVS',
  nftables: 'NFTables',
};

export function syncSettingsOfConfigz(
  configz: Readonly<Record<string, unknown>>,
): ProxySyncSettings | undefined {
  const mode = configz.Mode;
  if (typeof mode !== 'string') return undefined;
  const effective = mode === '' ? 'iptables' : mode;
  const section = configz[CONFIGZ_SECTION[effective] ?? ''];
  const field = (name: string): string | undefined => {
    if (typeof section !== 'object' || section === null) return undefined;
    const v = (section as Record<string, unknown>)[name];
    return typeof v === 'string' ? v : undefined;
  };
  const minSyncPeriod = field('MinSyncPeriod');
  const syncPeriod = field('SyncPeriod');
  return {
    mode: effective,
    ...(minSyncPeriod !== undefined ? { minSyncPeriod } : {}),
    ...(syncPeriod !== undefined ? { syncPeriod } : {}),
  };
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
