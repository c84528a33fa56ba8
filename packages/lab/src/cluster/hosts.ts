// Service names inside the lab, without a DNS server: every lab namespace gets an /etc/hosts of its own
// (/etc/netns/NAME/hosts, which `ip netns exec NAME` bind-mounts over /etc/hosts), listing each Service's
// ClusterIP as <svc>.<ns>, <svc>.<ns>.svc and <svc>.<ns>.svc.cluster.local, and, in a pod, also as plain <svc>
// for Services of the pod's own namespace (what the pod's DNS search path would give). Headless Services and
// Services without a ClusterIP are left out: their names would resolve to pods, which /etc/hosts cannot follow.
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { child, isObject, str } from '../apiserver/json.js';
import { etcNetnsDir } from './layout.js';

export const CLUSTER_DOMAIN = 'cluster.local';

export interface ServiceName {
  readonly namespace: string;
  readonly name: string;
  readonly clusterIP: string;
}

export interface HostsTarget {
  /** The network namespace whose hosts file this is. */
  readonly netns: string;
  /** The Kubernetes namespace of the pod it belongs to (undefined for nodes and the client). */
  readonly podNamespace?: string;
  /** The pod's own name and address (a pod resolves its own hostname). */
  readonly self?: { readonly name: string; readonly ip: string };
}

/** A Service's name and ClusterIP, or undefined when it has no single ClusterIP to resolve to. */
export function serviceName(obj: unknown): ServiceName | undefined {
  if (!isObject(obj)) return undefined;
  const meta = child(obj, 'metadata');
  const name = str(meta, 'name');
  const namespace = str(meta, 'namespace');
  const clusterIP = str(child(obj, 'spec'), 'clusterIP');
  if (!name || !namespace || !clusterIP || clusterIP === 'None') return undefined;
  return { namespace, name, clusterIP };
}

/** The hosts file text for one namespace: sorted, so that unchanged input gives byte-identical output. */
export function renderHosts(target: HostsTarget, services: readonly ServiceName[]): string {
  const lines = ['# written by kube-proxy-ts lab: Service names → ClusterIPs', '127.0.0.1\tlocalhost'];
  lines.push('::1\tlocalhost ip6-localhost ip6-loopback');
  if (target.self) lines.push(`${target.self.ip}\t${target.self.name}`);
  const sorted = [...services].sort((a, b) =>
    a.namespace === b.namespace ? a.name.localeCompare(b.name) : a.namespace.localeCompare(b.namespace),
  );
  for (const s of sorted) {
    const names = [
      `${s.name}.${s.namespace}`,
      `${s.name}.${s.namespace}.svc`,
      `${s.name}.${s.namespace}.svc.${CLUSTER_DOMAIN}`,
    ];
    if (target.podNamespace === s.namespace) names.unshift(s.name);
    lines.push(`${s.clusterIP}\t${names.join(' ')}`);
  }
  return `${lines.join('\n')}\n`;
}

/** Writes hosts files when their text changes, and removes them with their namespace. */
export class HostsFiles {
  private readonly written = new Map<string, string>();

  constructor(private readonly etcRoot: (netns: string) => string = etcNetnsDir) {}

  write(target: HostsTarget, services: readonly ServiceName[]): void {
    const text = renderHosts(target, services);
    if (this.written.get(target.netns) === text) return;
    const dir = this.etcRoot(target.netns);
    mkdirSync(dir, { recursive: true });
    // A new file renamed into place: a command already running keeps the old one, each new `ip netns exec` sees
    // the new one.
    const tmp = join(dir, `.hosts.${process.pid}.tmp`);
    writeFileSync(tmp, text);
    renameSync(tmp, join(dir, 'hosts'));
    this.written.set(target.netns, text);
  }

  remove(netns: string): void {
    this.written.delete(netns);
    rmSync(this.etcRoot(netns), { recursive: true, force: true });
  }

  read(netns: string): string | undefined {
    try {
      return readFileSync(join(this.etcRoot(netns), 'hosts'), 'utf8');
    } catch {
      return undefined;
    }
  }
}
