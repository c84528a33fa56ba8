// What each lab namespace reads under /etc: `ip netns exec NAME` bind-mounts every file of /etc/netns/NAME/ over
// the one of that name in /etc, so /etc/netns/NAME/hosts and /etc/netns/NAME/resolv.conf are that namespace's.
//
// Pods resolve as on a real cluster: their hosts file is the kubelet's (localhost and the pod's own name, nothing
// else), and their resolv.conf is the kubelet's for the pod's dnsPolicy: ClusterFirst (the default) names the
// cluster DNS (Service kube-system/kube-dns, cluster-dns.ts) with the search path
// `<ns>.svc.cluster.local svc.cluster.local cluster.local` and `ndots:5`, so `curl http://web.svc/` asks the DNS
// server; Default keeps the host's resolv.conf (no file written); None has only the pod's dnsConfig; a dnsConfig
// with ClusterFirst is merged in as the kubelet merges it.
//
// Nodes and the client namespace are hosts, not pods: like a real node (whose own resolv.conf knows nothing of
// cluster.local) they keep the host's resolv.conf, and, so that walkthrough commands run on a node or the client
// (`curl http://web.svc/`) still find Services, their hosts file lists each Service's ClusterIP as <svc>.<ns>,
// <svc>.<ns>.svc and <svc>.<ns>.svc.cluster.local (headless Services and those without a ClusterIP are left out:
// their names resolve to pods, which a hosts file cannot follow).
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { arr, child, isObject, str } from '../apiserver/json.js';
import { CLUSTER_DOMAIN } from '../dns/records.js';
import { etcNetnsDir } from './layout.js';

export { CLUSTER_DOMAIN };

export interface ServiceName {
  readonly namespace: string;
  readonly name: string;
  readonly clusterIP: string;
}

export interface HostsTarget {
  /** The network namespace whose files these are. */
  readonly netns: string;
  /** The Kubernetes namespace of the pod it belongs to (undefined for nodes and the client). */
  readonly podNamespace?: string;
  /** The pod's own name and address (a pod resolves its own hostname), and its FQDN when it has a subdomain. */
  readonly self?: { readonly name: string; readonly ip: string; readonly fqdn?: string };
  /** The pod's resolv.conf; undefined keeps the host's (nodes, the client, dnsPolicy Default). */
  readonly resolvConf?: ResolvConf;
}

export interface ResolvConf {
  readonly nameservers: readonly string[];
  readonly searches: readonly string[];
  /** "ndots:5", "edns0", … as resolv.conf(5) writes them. */
  readonly options: readonly string[];
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

const LOCALHOST_LINES = ['127.0.0.1\tlocalhost', '::1\tlocalhost ip6-localhost ip6-loopback'];

/**
 * The hosts file text for one namespace: a pod's is the kubelet's (localhost and itself); a node's or the
 * client's lists Services, sorted so that unchanged input gives byte-identical output.
 */
export function renderHosts(target: HostsTarget, services: readonly ServiceName[]): string {
  if (target.podNamespace !== undefined) {
    const lines = ['# Kubernetes-managed hosts file (kube-proxy-ts lab).', ...LOCALHOST_LINES];
    const self = target.self;
    if (self) lines.push(`${self.ip}\t${self.fqdn ? `${self.fqdn}\t` : ''}${self.name}`);
    return `${lines.join('\n')}\n`;
  }
  const lines = ['# written by kube-proxy-ts lab: Service names → ClusterIPs', ...LOCALHOST_LINES];
  const sorted = [...services].sort((a, b) =>
    a.namespace === b.namespace ? a.name.localeCompare(b.name) : a.namespace.localeCompare(b.namespace),
  );
  for (const s of sorted)
    lines.push(
      `${s.clusterIP}\t${s.name}.${s.namespace} ${s.name}.${s.namespace}.svc ${s.name}.${s.namespace}.svc.${CLUSTER_DOMAIN}`,
    );
  return `${lines.join('\n')}\n`;
}

export function renderResolvConf(conf: ResolvConf): string {
  const lines: string[] = [];
  if (conf.searches.length > 0) lines.push(`search ${conf.searches.join(' ')}`);
  for (const ns of conf.nameservers) lines.push(`nameserver ${ns}`);
  if (conf.options.length > 0) lines.push(`options ${conf.options.join(' ')}`);
  return `${lines.join('\n')}\n`;
}

function strings(obj: unknown, key: string): string[] {
  return arr(obj, key).filter((v): v is string => typeof v === 'string' && v !== '');
}

/** Options by name, later ones winning (the kubelet's mergeDNSOptions): "ndots:5" then "ndots:2" → "ndots:2". */
function mergeOptions(base: readonly string[], extra: readonly unknown[]): string[] {
  const byName = new Map<string, string>();
  for (const o of base) byName.set(o.split(':')[0] ?? o, o);
  for (const o of extra) {
    const name = str(o, 'name');
    if (!name) continue;
    const value = str(o, 'value');
    byName.set(name, value === undefined ? name : `${name}:${value}`);
  }
  return [...byName.values()];
}

/**
 * A pod's resolv.conf as the kubelet writes it for its dnsPolicy (pkg/kubelet/network/dns: GetPodDNS), or
 * undefined when the pod keeps the host's: dnsPolicy Default, or ClusterFirst with no cluster DNS known (the
 * kubelet's fallback). Host-network pods never come here: they share their node's files.
 */
export function podResolvConf(pod: unknown, clusterDnsIP: string | undefined): ResolvConf | undefined {
  const spec = child(pod, 'spec');
  const policy = str(spec, 'dnsPolicy') ?? 'ClusterFirst';
  const ns = str(child(pod, 'metadata'), 'namespace') ?? 'default';
  const dnsConfig = child(spec, 'dnsConfig');
  let base: ResolvConf;
  if (policy === 'None') base = { nameservers: [], searches: [], options: [] };
  else if (policy === 'Default' || clusterDnsIP === undefined) return undefined;
  else
    base = {
      nameservers: [clusterDnsIP],
      searches: [`${ns}.svc.${CLUSTER_DOMAIN}`, `svc.${CLUSTER_DOMAIN}`, CLUSTER_DOMAIN],
      options: ['ndots:5'],
    };
  const unique = (xs: readonly string[]): string[] => [...new Set(xs)];
  return {
    nameservers: unique([...base.nameservers, ...strings(dnsConfig, 'nameservers')]),
    searches: unique([...base.searches, ...strings(dnsConfig, 'searches')]),
    options: mergeOptions(base.options, arr(dnsConfig, 'options')),
  };
}

/** Writes each namespace's hosts (and resolv.conf) when its text changes, and removes them with the namespace. */
export class HostsFiles {
  private readonly written = new Map<string, string>();

  constructor(private readonly etcRoot: (netns: string) => string = etcNetnsDir) {}

  write(target: HostsTarget, services: readonly ServiceName[]): void {
    this.writeFile(target.netns, 'hosts', renderHosts(target, services));
    if (target.resolvConf) this.writeFile(target.netns, 'resolv.conf', renderResolvConf(target.resolvConf));
  }

  remove(netns: string): void {
    for (const file of ['hosts', 'resolv.conf']) this.written.delete(join(netns, file));
    rmSync(this.etcRoot(netns), { recursive: true, force: true });
  }

  read(netns: string, file: 'hosts' | 'resolv.conf' = 'hosts'): string | undefined {
    try {
      return readFileSync(join(this.etcRoot(netns), file), 'utf8');
    } catch {
      return undefined;
    }
  }

  private writeFile(netns: string, file: string, text: string): void {
    const key = join(netns, file);
    if (this.written.get(key) === text) return;
    const dir = this.etcRoot(netns);
    mkdirSync(dir, { recursive: true });
    // A new file renamed into place: a command already running keeps the old one, each new `ip netns exec` sees
    // the new one.
    const tmp = join(dir, `.${file}.${process.pid}.tmp`);
    writeFileSync(tmp, text);
    renameSync(tmp, join(dir, file));
    this.written.set(key, text);
  }
}
