// Pure rendering of iptables mode's rules (upstream pkg/proxy/iptables/proxier.go syncProxyRules): one service
// port at a time from its policy (renderServicePort, cached between syncs by render-cache.ts), and the fixed
// top-level rules. No I/O; every function is a function of its arguments.
import type { Endpoint } from '../../model/endpoint.js';
import type { LocalTrafficDetector } from '../../model/local-detector.js';
import { clusterIPMasquerade } from '../../model/local-detector.js';
import { nodePortIPs } from '../../model/nodeport-addresses.js';
import type { NoEndpointsVerdict, ServicePortPolicy } from '../../model/port-policy.js';
import type { ServicePort } from '../../model/service-port.js';
import type { IptablesRule } from '../../netfilter/iptables/types.js';
import { commentMatch } from '../../netfilter/iptables/types.js';
import type { NodeNetworkConfig, ProxySnapshot } from '../../sync/backend.js';
import {
  endpointChainName,
  KUBE_EXTERNAL_SERVICES,
  KUBE_FORWARD,
  KUBE_MARK_MASQ,
  KUBE_NODEPORTS,
  KUBE_POSTROUTING,
  KUBE_PROXY_FIREWALL,
  KUBE_SERVICES,
  KUBELET_FIREWALL,
  servicePortChainNames,
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

export function localMatch(d: LocalTrafficDetector, local: boolean): string[] {
  const not = local ? [] : ['!'];
  switch (d.mode) {
    case 'ClusterCIDR':
    case 'NodeCIDR':
      return [...not, '-s', d.cidr];
    case 'BridgeInterface':
      return [...not, '-i', d.interfaceName];
    case 'InterfaceNamePrefix':
      return [...not, '-i', d.interfacePrefix + '+'];
    case 'None':
      return [];
  }
}

function hasCounter(extras: IptablesExtras, name: string): boolean {
  return extras.nfacctCounters.includes(name);
}

/** IPv4 localhost NodePorts are on (upstream: localhostNodePorts and nodePortAddresses include 127.0.0.0/8). */
export function localhostNodePortsActive(node: NodeNetworkConfig, extras: IptablesExtras): boolean {
  return node.family === 'IPv4' && extras.localhostNodePorts && node.nodePortAddresses.containsIPv4Loopback;
}

/** Rules for one service port, from its policy (src/model/port-policy.ts), which decided all but the rules. */
export function renderServicePort(policy: ServicePortPolicy, ctx: RenderContext): ServicePortRules {
  const { node, extras } = ctx;
  const sp = policy.servicePort;
  const { internal, external, hasEndpoints } = policy;
  const name = sp.nameString;
  const proto = sp.protocol.toLowerCase();
  const port = String(sp.port);
  const names = servicePortChainNames(name, sp.protocol);
  // Each endpoint's chain name is needed by the selection rules and by the endpoint chain: hash it once.
  const epChainNames = new Map<string, string>();
  const epChain = (ep: Endpoint): string => {
    let c = epChainNames.get(ep.endpoint);
    if (c === undefined) {
      c = endpointChainName(name, sp.protocol, ep.endpoint);
      epChainNames.set(ep.endpoint, c);
    }
    return c;
  };
  const clusterPolicyChain = names.clusterPolicy;
  const internalTrafficChain = sp.internalPolicyLocal ? names.localPolicy : names.clusterPolicy;
  const externalPolicyChain = sp.externalPolicyLocal ? names.localPolicy : names.clusterPolicy;
  const externalTrafficChain = names.external;
  // The firewall chain ends in the external chain, which exists only while the Service has endpoints.
  const firewall = hasEndpoints ? policy.firewall : undefined;
  const loadBalancerTrafficChain = firewall !== undefined ? names.firewall : externalTrafficChain;

  // Filter verdicts for frontends whose policy leaves no endpoint.
  const filterVerdict = (
    v: NoEndpointsVerdict | undefined,
  ): { target: string; comment: string } | undefined =>
    v === undefined
      ? undefined
      : v === 'reject'
        ? { target: 'REJECT', comment: `${name} has no endpoints` }
        : { target: 'DROP', comment: `${name} has no local endpoints` };
  const internalFilter = filterVerdict(internal.noEndpoints);
  const externalFilter = filterVerdict(external.noEndpoints);

  const filterRules: IptablesRule[] = [];
  const natTopRules: IptablesRule[] = [];
  const chains: string[] = [];
  const chainRules: IptablesRule[] = [];
  const protoMatch = ['-m', proto, '-p', proto];
  // Every ClusterIP, external IP and load-balancer IP rule matches the same way: one address and the port.
  const frontendMatch = (comment: string, ip: string): string[] => [
    ...commentMatch(comment),
    ...protoMatch,
    '-d',
    ip,
    '--dport',
    port,
  ];

  // ClusterIP.
  if (internal.noEndpoints === undefined) {
    natTopRules.push({
      chain: KUBE_SERVICES,
      args: [...frontendMatch(`${name} cluster IP`, sp.clusterIP), '-j', internalTrafficChain],
    });
  } else if (internalFilter) {
    filterRules.push({
      chain: KUBE_SERVICES,
      args: [...frontendMatch(internalFilter.comment, sp.clusterIP), '-j', internalFilter.target],
    });
  }

  // externalIPs.
  for (const ip of sp.externalIPs) {
    if (hasEndpoints) {
      natTopRules.push({
        chain: KUBE_SERVICES,
        args: [...frontendMatch(`${name} external IP`, ip), '-j', externalTrafficChain],
      });
    }
    if (externalFilter) {
      filterRules.push({
        chain: KUBE_EXTERNAL_SERVICES,
        args: [...frontendMatch(externalFilter.comment, ip), '-j', externalFilter.target],
      });
    }
  }

  // Load-balancer IPs.
  for (const ip of sp.loadBalancerVIPs) {
    if (hasEndpoints) {
      natTopRules.push({
        chain: KUBE_SERVICES,
        args: [...frontendMatch(`${name} loadbalancer IP`, ip), '-j', loadBalancerTrafficChain],
      });
    }
    if (firewall !== undefined) {
      filterRules.push({
        chain: KUBE_PROXY_FIREWALL,
        args: [...frontendMatch(`${name} traffic not accepted by ${names.firewall}`, ip), '-j', 'DROP'],
      });
    }
  }
  if (externalFilter) {
    for (const ip of sp.loadBalancerVIPs) {
      filterRules.push({
        chain: KUBE_EXTERNAL_SERVICES,
        args: [...frontendMatch(externalFilter.comment, ip), '-j', externalFilter.target],
      });
    }
  }

  // NodePorts (never subject to loadBalancerSourceRanges).
  if (sp.nodePort !== 0) {
    const nodePort = String(sp.nodePort);
    if (hasEndpoints) {
      if (localhostNodePortsActive(node, extras) && hasCounter(extras, NFACCT_LOCALHOST_NODEPORTS)) {
        // Same verdict as the next rule; it exists only to count localhost NodePort traffic.
        natTopRules.push({
          chain: KUBE_NODEPORTS,
          args: [
            ...commentMatch(name),
            ...protoMatch,
            '-d',
            '127.0.0.0/8',
            '--dport',
            nodePort,
            '-m',
            'nfacct',
            '--nfacct-name',
            NFACCT_LOCALHOST_NODEPORTS,
            '-j',
            externalTrafficChain,
          ],
        });
      }
      natTopRules.push({
        chain: KUBE_NODEPORTS,
        args: [...commentMatch(name), ...protoMatch, '--dport', nodePort, '-j', externalTrafficChain],
      });
    }
    if (externalFilter) {
      filterRules.push({
        chain: KUBE_EXTERNAL_SERVICES,
        args: [
          ...commentMatch(externalFilter.comment),
          '-m',
          'addrtype',
          '--dst-type',
          'LOCAL',
          ...protoMatch,
          '--dport',
          nodePort,
          '-j',
          externalFilter.target,
        ],
      });
    }
  }

  // Health-check node port: always TCP.
  if (sp.healthCheckNodePort !== 0) {
    filterRules.push({
      chain: KUBE_NODEPORTS,
      args: [
        ...commentMatch(`${name} health check node port`),
        '-m',
        'tcp',
        '-p',
        'tcp',
        '--dport',
        String(sp.healthCheckNodePort),
        '-j',
        'ACCEPT',
      ],
    });
  }

  // From here on: the port's own chains.
  if (internal.noEndpoints === undefined) {
    const clusterIPMatch = frontendMatch(`${name} cluster IP`, sp.clusterIP);
    const masquerade = clusterIPMasquerade(node.masqueradeAll, node.localDetector);
    if (masquerade === 'all') {
      chainRules.push({ chain: internalTrafficChain, args: [...clusterIPMatch, '-j', KUBE_MARK_MASQ] });
    } else if (masquerade === 'from-outside-cluster') {
      // Masquerade off-cluster traffic to the ClusterIP, so replies come back through this node.
      chainRules.push({
        chain: internalTrafficChain,
        args: [...clusterIPMatch, ...localMatch(node.localDetector, false), '-j', KUBE_MARK_MASQ],
      });
    }
  }

  if (external.viaExternalChain) {
    chains.push(externalTrafficChain);
    if (!sp.externalPolicyLocal) {
      // Cluster policy may send the packet to another node: masquerade so the reply returns through us.
      chainRules.push({
        chain: externalTrafficChain,
        args: [...commentMatch(`masquerade traffic for ${name} external destinations`), '-j', KUBE_MARK_MASQ],
      });
    } else {
      if (node.localDetector.mode !== 'None') {
        chainRules.push({
          chain: externalTrafficChain,
          args: [
            ...commentMatch(`pod traffic for ${name} external destinations`),
            ...localMatch(node.localDetector, true),
            '-j',
            clusterPolicyChain,
          ],
        });
      }
      chainRules.push({
        chain: externalTrafficChain,
        args: [
          ...commentMatch(`masquerade LOCAL traffic for ${name} external destinations`),
          '-m',
          'addrtype',
          '--src-type',
          'LOCAL',
          '-j',
          KUBE_MARK_MASQ,
        ],
      });
      chainRules.push({
        chain: externalTrafficChain,
        args: [
          ...commentMatch(`route LOCAL traffic for ${name} external destinations`),
          '-m',
          'addrtype',
          '--src-type',
          'LOCAL',
          '-j',
          clusterPolicyChain,
        ],
      });
    }
    if (external.noEndpoints === undefined)
      chainRules.push({ chain: externalTrafficChain, args: ['-j', externalPolicyChain] });
  }

  if (firewall !== undefined) {
    chains.push(names.firewall);
    const lbComment = commentMatch(`${name} loadbalancer IP`);
    for (const source of [...firewall.sourceRanges, ...firewall.allowedVIPs]) {
      chainRules.push({
        chain: names.firewall,
        args: [...lbComment, '-s', source, '-j', externalTrafficChain],
      });
    }
    // Reaching the end means no DNAT happened: KUBE-PROXY-FIREWALL (filter) drops it.
    chainRules.push({
      chain: names.firewall,
      args: commentMatch(`other traffic to ${name} will be dropped by KUBE-PROXY-FIREWALL`),
    });
  }

  if (policy.usesClusterEndpoints) {
    chains.push(names.clusterPolicy);
    writeEndpointSelection(chainRules, sp, names.clusterPolicy, policy.clusterEndpoints, epChain, ctx);
  }
  if (policy.usesLocalEndpoints) {
    chains.push(names.localPolicy);
    writeEndpointSelection(chainRules, sp, names.localPolicy, policy.localEndpoints, epChain, ctx);
  }

  for (const ep of policy.reachableEndpoints) {
    const chain = epChain(ep);
    chains.push(chain);
    const comment = ctx.largeClusterMode ? [] : commentMatch(name);
    // Hairpin: a pod reaching itself through the service must be masqueraded or it would answer itself directly.
    chainRules.push({ chain, args: [...comment, '-s', ep.ip, '-j', KUBE_MARK_MASQ] });
    const affinity = sp.sessionAffinityClientIP ? ['-m', 'recent', '--name', chain, '--set'] : [];
    chainRules.push({
      chain,
      args: [...comment, ...affinity, ...protoMatch, '-j', 'DNAT', '--to-destination', ep.endpoint],
    });
  }

  return {
    filterRules,
    natTopRules,
    chains,
    chainRules,
    noLocalEndpointsInternal: policy.noLocalEndpointsInternal,
    noLocalEndpointsExternal: policy.noLocalEndpointsExternal,
  };
}

/** Upstream's probability for rule i of n: 1/(n−i), printed with Go's %0.10f. */
export function probability(remaining: number): string {
  return (1 / remaining).toFixed(10);
}

function writeEndpointSelection(
  out: IptablesRule[],
  sp: ServicePort,
  chain: string,
  endpoints: readonly Endpoint[],
  epChain: (ep: Endpoint) => string,
  ctx: RenderContext,
): void {
  const name = sp.nameString;
  const epChains = endpoints.map(epChain);
  const comment = (ep: Endpoint): string[] =>
    ctx.largeClusterMode ? [] : commentMatch(`${name} -> ${ep.endpoint}`);
  // ClientIP affinity: a client seen recently goes back to the same endpoint before any random choice.
  if (sp.sessionAffinityClientIP) {
    endpoints.forEach((ep, i) => {
      const epChain = epChains[i] as string;
      out.push({
        chain,
        args: [
          ...comment(ep),
          '-m',
          'recent',
          '--name',
          epChain,
          '--rcheck',
          '--seconds',
          String(sp.stickyMaxAgeSeconds),
          '--reap',
          '-j',
          epChain,
        ],
      });
    });
  }
  const n = endpoints.length;
  endpoints.forEach((ep, i) => {
    const statistic =
      i < n - 1 ? ['-m', 'statistic', '--mode', 'random', '--probability', probability(n - i)] : [];
    out.push({ chain, args: [...comment(ep), ...statistic, '-j', epChains[i] as string] });
  });
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
