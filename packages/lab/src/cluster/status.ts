// `lab status`: nodes, their proxies (pid, mode, last sync from their own metrics) and pods, read from the lab's
// records, the node namespaces and the API server; works from any terminal while the lab runs.
import { request } from 'node:https';
import { hostCommandRunner, type CommandRunner } from 'kube-proxy-ts/netfilter/command.js';
import { readFileSync } from 'node:fs';
import { arr, child, isObject, str } from '../apiserver/json.js';
import { labPaths } from './layout.js';
import { fetchProxyMetrics, metricValue } from './metrics.js';
import { readPidFile } from './processes.js';
import { modeOfConfig } from './proxy-config.js';
import { layoutOf, processAlive, readLabState, type LabState } from './state.js';

export interface ProxyStatus {
  readonly node: string;
  readonly namespace: string;
  readonly pid?: number;
  readonly mode?: string;
  /** Seconds since the proxy's last successful sync (kubeproxy_sync_proxy_rules_last_timestamp_seconds). */
  readonly lastSyncAgoSeconds?: number;
  readonly syncs?: number;
}

export interface PodStatusLine {
  readonly namespace: string;
  readonly name: string;
  readonly node: string;
  readonly ip: string;
  readonly phase: string;
  readonly terminating: boolean;
}

export interface LabStatus {
  readonly state: LabState;
  readonly labAlive: boolean;
  readonly proxies: readonly ProxyStatus[];
  readonly pods: readonly PodStatusLine[];
}

function getJson(state: LabState, path: string): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${state.apiserverURL}${path}`,
      { headers: { authorization: `Bearer ${state.token}` }, ca: state.caPem, timeout: 5000 },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (b: Buffer) => chunks.push(b));
        res.on('end', () => {
          try {
            resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')));
          } catch (e) {
            reject(e instanceof Error ? e : new Error(String(e)));
          }
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', reject);
    req.end();
  });
}

export async function labStatus(
  stateDir: string,
  runner: CommandRunner = hostCommandRunner,
): Promise<LabStatus | string> {
  const paths = labPaths(stateDir);
  const read = readLabState(paths.stateFile);
  if (!read.ok) return read.missing ? 'no lab is up (run `kube-proxy-ts lab up`)' : read.reason;
  const state = read.state;
  const layout = layoutOf(state);
  const proxies = await Promise.all(
    layout.nodes.map(async (n): Promise<ProxyStatus> => {
      const pid = readPidFile(paths.proxyPidFile(n.name));
      let mode: string | undefined;
      try {
        mode = modeOfConfig(readFileSync(paths.nodeConfig(n.name), 'utf8'));
      } catch {
        mode = undefined;
      }
      const text = await fetchProxyMetrics(runner, n.namespace);
      const last = text ? metricValue(text, 'kubeproxy_sync_proxy_rules_last_timestamp_seconds') : undefined;
      const syncs = text ? metricValue(text, 'kubeproxy_sync_proxy_rules_duration_seconds_count') : undefined;
      return {
        node: n.name,
        namespace: n.namespace,
        ...(pid !== undefined && processAlive(pid) ? { pid } : {}),
        ...(mode !== undefined ? { mode } : {}),
        ...(last !== undefined && last > 0
          ? { lastSyncAgoSeconds: Math.max(0, Date.now() / 1000 - last) }
          : {}),
        ...(syncs !== undefined ? { syncs } : {}),
      };
    }),
  );
  let pods: PodStatusLine[] = [];
  try {
    const list = await getJson(state, '/api/v1/pods');
    pods = (isObject(list) ? arr(list, 'items') : []).map((p) => ({
      namespace: str(child(p, 'metadata'), 'namespace') ?? '',
      name: str(child(p, 'metadata'), 'name') ?? '',
      node: str(child(p, 'spec'), 'nodeName') ?? '',
      // Every family's address (status.podIPs), primary first, as `kubectl get pods -o wide` shows the first.
      ip:
        arr(child(p, 'status'), 'podIPs')
          .map((x) => str(x, 'ip') ?? '')
          .filter((ip) => ip !== '')
          .join(',') ||
        (str(child(p, 'status'), 'podIP') ?? ''),
      phase: str(child(p, 'status'), 'phase') ?? '',
      terminating: str(child(p, 'metadata'), 'deletionTimestamp') !== undefined,
    }));
  } catch {
    pods = [];
  }
  return { state, labAlive: processAlive(state.pid), proxies, pods };
}

/** `lab up --ip-family` as status shows it. */
function ipFamilyLine(state: LabState): string {
  const family = state.ipFamily ?? 'ipv4';
  return family === 'dual'
    ? 'dual-stack (IPv4 primary, IPv6)'
    : `${family === 'ipv4' ? 'IPv4' : 'IPv6'} only`;
}

function table(rows: readonly (readonly string[])[]): string {
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length))) ?? [];
  return rows
    .map((r) =>
      r
        .map((c, i) => c.padEnd(widths[i] ?? 0))
        .join('   ')
        .trimEnd(),
    )
    .join('\n');
}

export function formatStatus(s: LabStatus): string {
  const out: string[] = [];
  out.push(
    `lab: process ${s.state.pid} ${s.labAlive ? 'running' : 'NOT RUNNING (run `kube-proxy-ts lab down`)'}, since ${s.state.startedAt}`,
  );
  out.push(`API server: ${s.state.apiserverURL}`);
  out.push(`IP families: ${ipFamilyLine(s.state)}`);
  out.push('');
  out.push(
    table([
      ['NODE', 'NAMESPACE', 'KUBE-PROXY PID', 'MODE', 'LAST SYNC', 'SYNCS'],
      ...s.proxies.map((p) => [
        p.node,
        p.namespace,
        p.pid !== undefined ? String(p.pid) : '-',
        p.mode ?? '?',
        p.lastSyncAgoSeconds !== undefined ? `${p.lastSyncAgoSeconds.toFixed(1)}s ago` : '-',
        p.syncs !== undefined ? String(p.syncs) : '-',
      ]),
    ]),
  );
  out.push('');
  out.push(
    table([
      ['NAMESPACE', 'POD', 'NODE', 'IP', 'STATUS'],
      ...s.pods.map((p) => [p.namespace, p.name, p.node, p.ip, p.terminating ? 'Terminating' : p.phase]),
    ]),
  );
  return `${out.join('\n')}\n`;
}
