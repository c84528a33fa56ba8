// Which Service port a frontend belongs to, read from the node's live kube-proxy table: the verdict maps keyed by
// frontend (service-ips, service-nodeports, the no-endpoint maps, and the flat layout's dispatch maps). The
// renderers give each element either a comment with the port's name ("ns/name:port", sp.nameString) or a chain
// whose name carries it (servicePortChainBase: "service-HASH-ns/name/tcp/port"), so either says whose it is.
import {
  CLUSTER_DISPATCH_MAP,
  FIREWALL_IPS_MAP,
  LOCAL_DISPATCH_MAP,
  NO_ENDPOINT_NODEPORTS_MAP,
  NO_ENDPOINT_SERVICES_MAP,
  NODEPORT_CLUSTER_DISPATCH_MAP,
  NODEPORT_LOCAL_DISPATCH_MAP,
  SERVICE_IPS_MAP,
  SERVICE_NODEPORTS_MAP,
  TABLE_NAME,
} from '../../backends/nftables/naming.js';
import type { ServicePort } from '../../model/service-port.js';
import type { CommandRunner } from '../../netfilter/command.js';
import { tokenizeLine } from '../../netfilter/iptables/parse.js';
import { parseElementsJson } from '../../netfilter/nft/json.js';
import type { NftFamily } from './table.js';

export const FRONTEND_MAPS = [
  SERVICE_IPS_MAP,
  SERVICE_NODEPORTS_MAP,
  NO_ENDPOINT_SERVICES_MAP,
  NO_ENDPOINT_NODEPORTS_MAP,
  FIREWALL_IPS_MAP,
  CLUSTER_DISPATCH_MAP,
  LOCAL_DISPATCH_MAP,
  NODEPORT_CLUSTER_DISPATCH_MAP,
  NODEPORT_LOCAL_DISPATCH_MAP,
] as const;

export interface FrontendEntry {
  /** The map it is in. */
  readonly map: string;
  /** Key fields as nft lists them: [ip, proto, port] or [proto, port]. */
  readonly key: readonly string[];
  /** The element's verdict ("goto service-…", "drop", "goto reject-chain"). */
  readonly value: string;
  /** "ns/name:port" when known. */
  readonly servicePort?: string;
  /** iptables mode: the rule's comment ("ns/name:port has no endpoints"). */
  readonly comment?: string;
}

/** Frontend entries by key text ("198.19.0.10 . tcp . 80", "tcp . 30080"). */
export type FrontendIndex = ReadonlyMap<string, readonly FrontendEntry[]>;

/** A per-service chain name of upstream's layout → "ns/name:port" (the name is hashed, not encoded, so parse). */
export function servicePortOfChain(chain: string): string | undefined {
  const m =
    /^(?:service|external|local|firewall|endpoint)-[A-Z2-7]{8}-([^/]+)\/([^/]+)\/[a-z]+\/([^_]*)(?:__.*)?$/.exec(
      chain,
    );
  return m ? `${m[1]}/${m[2]}:${m[3]}` : undefined;
}

/** The "ns/name:port" a kube-proxy comment starts with ("dataplane/web:http cluster IP", "ns/svc:p80"). */
export function servicePortOfComment(comment: string): string | undefined {
  const m = /^([a-z0-9][-a-z0-9.]*\/[a-z0-9][-a-z0-9.]*:[^\s]*)/.exec(comment);
  return m ? m[1] : undefined;
}

export function frontendKey(fields: readonly (string | number)[]): string {
  return fields.map(String).join(' . ');
}

export async function readFrontendIndex(runner: CommandRunner, family: NftFamily): Promise<FrontendIndex> {
  const index = new Map<string, FrontendEntry[]>();
  for (const map of FRONTEND_MAPS) {
    const r = await runner.run('nft', ['-j', 'list', 'map', family, TABLE_NAME, map]);
    if (r.code !== 0) continue; // not in this layout, or no table at all
    const elements = parseElementsJson(r.stdout, map);
    if (typeof elements === 'string') continue;
    for (const el of elements) {
      const value = (el.value ?? []).join(' . ');
      const target = /^(?:goto|jump) (\S+)$/.exec(value)?.[1];
      const servicePort =
        (el.comment !== undefined ? servicePortOfComment(el.comment) : undefined) ??
        (target !== undefined ? servicePortOfChain(target) : undefined);
      const key = frontendKey(el.key);
      const list = index.get(key) ?? [];
      list.push({ map, key: el.key, value, ...(servicePort !== undefined ? { servicePort } : {}) });
      index.set(key, list);
    }
  }
  return index;
}

/** iptables mode: which Service port each KUBE-SVC/SEP/EXT/SVL/FW chain belongs to, by the rules' comments. */
export type ChainOwners = ReadonlyMap<string, string>;

function optionValue(words: readonly string[], ...names: string[]): string | undefined {
  for (let i = 0; i + 1 < words.length; i++) if (names.includes(words[i] ?? '')) return words[i + 1];
  return undefined;
}

/**
 * iptables mode: iptables-save's comments say whose each rule is (nft's trace printer shows no xtables
 * comments), so the chains' owners and the frontends of the KUBE-SERVICES / KUBE-NODEPORTS /
 * KUBE-EXTERNAL-SERVICES rules come from there.
 */
export function iptablesIndexFromSave(text: string): { index: FrontendIndex; owners: ChainOwners } {
  const index = new Map<string, FrontendEntry[]>();
  const owners = new Map<string, string>();
  let table = '';
  for (const line of text.split('\n')) {
    if (line.startsWith('*')) table = line.slice(1).trim();
    if (!line.startsWith('-A ')) continue;
    const words = tokenizeLine(line);
    const chain = words[1] ?? '';
    const comment = optionValue(words, '--comment');
    const servicePort = comment !== undefined ? servicePortOfComment(comment) : undefined;
    if (servicePort === undefined) continue;
    const target = optionValue(words, '-j', '--jump', '-g', '--goto');
    for (const c of [chain, target]) {
      if (c !== undefined && /^KUBE-(SVC|SVL|SEP|EXT|FW)-/.test(c) && !owners.has(c))
        owners.set(c, servicePort);
    }
    const proto = optionValue(words, '-p', '--protocol');
    const dport = optionValue(words, '--dport', '--destination-port');
    if (proto === undefined || dport === undefined) continue;
    const dest = optionValue(words, '-d', '--destination')?.replace(/\/(32|128)$/, '');
    const key = dest !== undefined ? [dest, proto, dport] : [proto, dport];
    const list = index.get(frontendKey(key)) ?? [];
    list.push({ map: `${table} ${chain}`, key, value: target ?? '', servicePort, comment: comment ?? '' });
    index.set(frontendKey(key), list);
  }
  return { index, owners };
}

export async function readIptablesIndex(
  runner: CommandRunner,
  family: NftFamily,
): Promise<{ index: FrontendIndex; owners: ChainOwners }> {
  const r = await runner.run(family === 'ip6' ? 'ip6tables-save' : 'iptables-save', []);
  return r.code === 0 ? iptablesIndexFromSave(r.stdout) : { index: new Map(), owners: new Map() };
}

/**
 * Frontends from the cluster's own Services (the model's service ports, as the agent reads them), for when the
 * table does not name them (the flat layout's shared dispatch chains): ClusterIP, external and load-balancer
 * IPs by (IP, protocol, port), NodePorts by (protocol, port).
 */
export function frontendsFromServicePorts(ports: Iterable<ServicePort>): FrontendIndex {
  const index = new Map<string, FrontendEntry[]>();
  const add = (key: string[], sp: ServicePort): void => {
    const list = index.get(frontendKey(key)) ?? [];
    list.push({ map: 'cluster Services', key, value: '', servicePort: sp.nameString });
    index.set(frontendKey(key), list);
  };
  for (const sp of ports) {
    const proto = sp.protocol.toLowerCase();
    for (const ip of [sp.clusterIP, ...sp.externalIPs, ...sp.loadBalancerVIPs])
      if (ip !== '') add([ip, proto, String(sp.port)], sp);
    if (sp.nodePort > 0) add([proto, String(sp.nodePort)], sp);
  }
  return index;
}

/** The table's entries first (they say what is programmed), then the cluster's for keys the table left unnamed. */
export function mergeFrontendIndexes(table: FrontendIndex, cluster: FrontendIndex): FrontendIndex {
  const out = new Map<string, readonly FrontendEntry[]>(table);
  for (const [key, entries] of cluster) out.set(key, [...(out.get(key) ?? []), ...entries]);
  return out;
}
