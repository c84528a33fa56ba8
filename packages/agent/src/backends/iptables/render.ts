// Pure rendering of iptables mode's rules (upstream pkg/proxy/iptables/proxier.go syncProxyRules): one service
// port at a time from its policy (renderServicePort, cached between syncs by render-cache.ts), and the fixed
// top-level rules. No I/O; every function is a function of its arguments.
import { nodePortIPs } from '../../model/nodeport-addresses.js';
import type { ServicePort } from '../../model/service-port.js';
import type { IptablesRule } from '../../netfilter/iptables/types.js';
import { commentMatch } from '../../netfilter/iptables/types.js';
import type { NodeNetworkConfig, ProxySnapshot } from '../../sync/backend.js';
import {
  KUBE_EXTERNAL_SERVICES,
  KUBE_FORWARD,
  KUBE_MARK_MASQ,
  KUBE_NODEPORTS,
  KUBE_POSTROUTING,
  KUBE_PROXY_FIREWALL,
  KUBE_SERVICES,
  KUBELET_FIREWALL,
} from './naming.js';

/** Host facts beyond NodeNetworkConfig that only iptables mode uses. */
export interface IptablesExtras {
  /** Accept NodePorts on 127.0.0.1 (IPv4 only; kube-proxy sets route_localnet=1). Upstream default true. */
  readonly localhostNodePorts: boolean;
  /** nfacct counters that exist on the host (ct_state_invalid_dropped_pkts, localhost_nps_accepted_pkts). */
  readonly nfacctCounters: readonly string[];
  /** MASQUERADE --random-fully (iptables ≥ 1.6.2 with kernel support). */
  readonly randomFully: boolean;
  /** net.netfilter.nf_conntrack_tcp_be_liberal = 1: no INVALID drop rule is needed. */
  readonly conntrackTCPBeLiberal: boolean;
}

export const DEFAULT_IPTABLES_EXTRAS: IptablesExtras = Object.freeze({
  localhostNodePorts: true,
  nfacctCounters: [],
  randomFully: false,
  conntrackTCPBeLiberal: false,
});

/** Upstream's largeClusterEndpointsThreshold: above this many endpoints, per-endpoint comments are dropped. */
export const LARGE_CLUSTER_ENDPOINTS_THRESHOLD = 1000;

export const NFACCT_CT_STATE_INVALID = 'ct_state_invalid_dropped_pkts';
export const NFACCT_LOCALHOST_NODEPORTS = 'localhost_nps_accepted_pkts';

export const FILTER_TOP_CHAINS = [
  KUBE_NODEPORTS,
  KUBE_SERVICES,
  KUBE_EXTERNAL_SERVICES,
  KUBE_FORWARD,
  KUBE_PROXY_FIREWALL,
] as const;
export const NAT_TOP_CHAINS = [KUBE_NODEPORTS, KUBE_SERVICES, KUBE_MARK_MASQ, KUBE_POSTROUTING] as const;

const NODEPORTS_LAST_COMMENT = 'kubernetes service nodeports; NOTE: this must be the last rule in this chain';

export interface RenderContext {
  readonly node: NodeNetworkConfig;
  readonly extras: IptablesExtras;
  readonly largeClusterMode: boolean;
}

/** What one service port contributes: rules in shared top-level chains, and its own chains. */
export interface ServicePortRules {
  /** Rules for the filter table's top-level chains (KUBE-SERVICES, KUBE-EXTERNAL-SERVICES, …). */
  readonly filterRules: readonly IptablesRule[];
  /** Rules for nat KUBE-SERVICES and KUBE-NODEPORTS. */
  readonly natTopRules: readonly IptablesRule[];
  /** The port's own nat chains (SVC, SVL, EXT, FW, SEP), in creation order; all are in use. */
  readonly chains: readonly string[];
  /** The rules of those chains. */
  readonly chainRules: readonly IptablesRule[];
  readonly noLocalEndpointsInternal: boolean;
  readonly noLocalEndpointsExternal: boolean;
}

export function hasCounter(extras: IptablesExtras, name: string): boolean {
  return extras.nfacctCounters.includes(name);
}

/** IPv4 localhost NodePorts are on (upstream: localhostNodePorts and nodePortAddresses include 127.0.0.0/8). */
export function localhostNodePortsActive(node: NodeNetworkConfig, extras: IptablesExtras): boolean {
  return node.family === 'IPv4' && extras.localhostNodePorts && node.nodePortAddresses.containsIPv4Loopback;
}

export interface TopLevelRules {
  readonly filterChains: readonly string[];
  readonly filterRules: readonly IptablesRule[];
  readonly natChains: readonly string[];
  /** Rules after every service's KUBE-SERVICES rules (the NodePorts jump must be last there). */
  readonly natRules: readonly IptablesRule[];
}

/** The fixed rules of the top-level chains, for one family. */
export function renderTopLevel(node: NodeNetworkConfig, extras: IptablesExtras): TopLevelRules {
  const mark = node.masqueradeMark;
  const filterChains: string[] = [...FILTER_TOP_CHAINS];
  const filterRules: IptablesRule[] = [];
  const natRules: IptablesRule[] = [];
  const isIPv6 = node.family === 'IPv6';

  if (node.nodePortAddresses.matchAll) {
    // Localhost NodePorts only work on IPv4 with route_localnet; elsewhere keep loopback out.
    const dest = ['-m', 'addrtype', '--dst-type', 'LOCAL'];
    if (isIPv6) dest.push('!', '-d', '::1/128');
    else if (!extras.localhostNodePorts) dest.push('!', '-d', '127.0.0.0/8');
    natRules.push({
      chain: KUBE_SERVICES,
      args: [...commentMatch(NODEPORTS_LAST_COMMENT), ...dest, '-j', KUBE_NODEPORTS],
    });
  } else {
    for (const ip of nodePortIPs(node.nodePortAddresses, node.hostInterfaces)) {
      const loopback = isIPv6 ? ip === '::1' : ip.startsWith('127.');
      if (loopback && (isIPv6 || !extras.localhostNodePorts)) continue;
      natRules.push({
        chain: KUBE_SERVICES,
        args: [...commentMatch(NODEPORTS_LAST_COMMENT), '-d', ip, '-j', KUBE_NODEPORTS],
      });
    }
  }

  if (localhostNodePortsActive(node, extras)) {
    filterChains.push(KUBELET_FIREWALL);
    filterRules.push({
      chain: KUBELET_FIREWALL,
      args: [
        ...commentMatch('block incoming localnet connections'),
        '-d',
        '127.0.0.0/8',
        '!',
        '-s',
        '127.0.0.0/8',
        '-m',
        'conntrack',
        '!',
        '--ctstate',
        'RELATED,ESTABLISHED,DNAT',
        '-j',
        'DROP',
      ],
    });
  }
  // INVALID packets are not DNATed and would reach the host, which answers with a RST; drop them unless the
  // conntrack table is told to be liberal about TCP windows (upstream #74839, #117924).
  if (!extras.conntrackTCPBeLiberal) {
    const counter = hasCounter(extras, NFACCT_CT_STATE_INVALID)
      ? ['-m', 'nfacct', '--nfacct-name', NFACCT_CT_STATE_INVALID]
      : [];
    filterRules.push({
      chain: KUBE_FORWARD,
      args: ['-m', 'conntrack', '--ctstate', 'INVALID', ...counter, '-j', 'DROP'],
    });
  }
  filterRules.push({
    chain: KUBE_FORWARD,
    args: [
      ...commentMatch('kubernetes forwarding rules'),
      '-m',
      'mark',
      '--mark',
      `${mark}/${mark}`,
      '-j',
      'ACCEPT',
    ],
  });
  filterRules.push({
    chain: KUBE_FORWARD,
    args: [
      ...commentMatch('kubernetes forwarding conntrack rule'),
      '-m',
      'conntrack',
      '--ctstate',
      'RELATED,ESTABLISHED',
      '-j',
      'ACCEPT',
    ],
  });

  natRules.push({ chain: KUBE_MARK_MASQ, args: ['-j', 'MARK', '--or-mark', mark] });
  natRules.push({
    chain: KUBE_POSTROUTING,
    args: ['-m', 'mark', '!', '--mark', `${mark}/${mark}`, '-j', 'RETURN'],
  });
  // Clear the mark so a packet that goes through the stack again is not masqueraded twice.
  natRules.push({ chain: KUBE_POSTROUTING, args: ['-j', 'MARK', '--xor-mark', mark] });
  natRules.push({
    chain: KUBE_POSTROUTING,
    args: [
      ...commentMatch('kubernetes service traffic requiring SNAT'),
      '-j',
      'MASQUERADE',
      ...(extras.randomFully ? ['--random-fully'] : []),
    ],
  });
  return { filterChains, filterRules, natChains: [...NAT_TOP_CHAINS], natRules };
}

/** Total endpoints of the service ports in use (upstream counts only ports that have a Service). */
export function totalEndpoints(snapshot: ProxySnapshot): number {
  let n = 0;
  for (const key of snapshot.serviceMap.keys()) n += snapshot.endpointsMap.get(key)?.length ?? 0;
  return n;
}

/** Service ports in a stable order (by service-port name, then key). */
export function orderedServicePorts(snapshot: ProxySnapshot): ServicePort[] {
  return [...snapshot.serviceMap.values()].sort((a, b) =>
    a.nameString < b.nameString
      ? -1
      : a.nameString > b.nameString
        ? 1
        : a.key < b.key
          ? -1
          : a.key > b.key
            ? 1
            : 0,
  );
}
