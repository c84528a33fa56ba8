// What the doctor reads from the agent over HTTP, on the node: /metrics and /configz on the metrics address
// (default 127.0.0.1:10249), /healthz on the health address (default :10256). Answers are plain values; a
// connection that fails is an error value naming the URL, never an exception.
import { parseGoDuration } from '../../config/duration.js';
import { CONFIGZ_KEY } from '../../server/metrics-server.js';
import { parseMetrics } from '../prometheus.js';
import type { MetricSamples } from '../prometheus.js';
import type { AgentSettings, Fetched } from './types.js';
import { errorMessage } from '../../util/error-message.js';

export const DEFAULT_METRICS_URL = 'http://127.0.0.1:10249/metrics';
export const DEFAULT_HEALTHZ_URL = 'http://127.0.0.1:10256/healthz';

export async function fetchText(url: string, timeoutMs = 5000): Promise<Fetched> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
    return { status: res.status, body: await res.text() };
  } catch (e) {
    const cause = e instanceof Error && e.cause instanceof Error ? `: ${e.cause.message}` : '';
    return { error: `${errorMessage(e)}${cause}` };
  }
}

export async function fetchMetrics(url: string): Promise<MetricSamples | { error: string }> {
  const r = await fetchText(url);
  if ('error' in r) return r;
  if (r.status !== 200) return { error: `HTTP ${r.status}` };
  return parseMetrics(r.body);
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function durationSeconds(v: unknown): number | undefined {
  if (typeof v !== 'string') return undefined;
  const d = parseGoDuration(v);
  return d.ok ? d.ms / 1000 : undefined;
}

/** The settings the checks need, from /configz's document (upstream's internal field names). */
export function settingsFromConfigz(body: string): AgentSettings | undefined {
  let doc: unknown;
  try {
    doc = JSON.parse(body);
  } catch {
    return undefined;
  }
  const cfg = isRecord(doc) ? doc[CONFIGZ_KEY] : undefined;
  if (!isRecord(cfg)) return undefined;
  // "" is iptables on Linux, as upstream; each mode's periods live in its own block.
  const mode = cfg.Mode === 'nftables' || cfg.Mode === 'ipvs' ? cfg.Mode : 'iptables';
  const block = cfg[{ nftables: 'NFTables', ipvs: 'IPVS', iptables: 'IPTables' }[mode]];
  const ipt = cfg.IPTables;
  if (!isRecord(block)) return undefined;
  const client = cfg.ClientConnection;
  const kubeconfig = isRecord(client) && typeof client.Kubeconfig === 'string' ? client.Kubeconfig : '';
  return {
    mode,
    syncPeriodSeconds: durationSeconds(block.SyncPeriod) ?? 30,
    minSyncPeriodSeconds: durationSeconds(block.MinSyncPeriod) ?? 1,
    localhostNodePorts: isRecord(ipt) ? ipt.LocalhostNodePorts !== false : true,
    ...(mode === 'ipvs' ? { strictARP: block.StrictARP === true } : {}),
    ...(kubeconfig !== '' ? { kubeconfig } : {}),
  };
}

/** /configz beside the metrics URL (same server). */
export async function fetchSettings(metricsURL: string): Promise<AgentSettings | undefined> {
  const url = new URL('/configz', metricsURL).toString();
  const r = await fetchText(url);
  return 'error' in r || r.status !== 200 ? undefined : settingsFromConfigz(r.body);
}
