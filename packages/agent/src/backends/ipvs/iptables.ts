// The small iptables rule set ipvs mode keeps beside IPVS (upstream ipvs proxier's writeIptablesRules): masquerade
// and filter decisions by ipset match, written as one --noflush restore of its own chains, and the jumps into them
// from the built-in chains.
import { clusterIPMasquerade } from '../../model/local-detector.js';
import { localMatch } from '../../netfilter/iptables/local-match.js';
import type { IptablesRule, IptablesTableName, RestoreInput } from '../../netfilter/iptables/types.js';
import type { NodeNetworkConfig } from '../../sync/backend.js';
import { kubeIPSet } from '../../netfilter/ipset/sets.js';
import type { KubeIPSetId } from '../../netfilter/ipset/sets.js';
import type { IpvsPlan } from './plan.js';

export const KUBE_SERVICES = 'KUBE-SERVICES';
export const KUBE_POSTROUTING = 'KUBE-POSTROUTING';
export const KUBE_NODE_PORT = 'KUBE-NODE-PORT';
export const KUBE_LOAD_BALANCER = 'KUBE-LOAD-BALANCER';
export const KUBE_MARK_MASQ = 'KUBE-MARK-MASQ';
export const KUBE_FORWARD = 'KUBE-FORWARD';
export const KUBE_PROXY_FIREWALL = 'KUBE-PROXY-FIREWALL';
export const KUBE_SOURCE_RANGES_FIREWALL = 'KUBE-SOURCE-RANGES-FIREWALL';
export const KUBE_IPVS_FILTER = 'KUBE-IPVS-FILTER';
export const KUBE_IPVS_OUT_FILTER = 'KUBE-IPVS-OUT-FILTER';

export const NAT_CHAINS = [
  KUBE_SERVICES,
  KUBE_POSTROUTING,
  KUBE_NODE_PORT,
  KUBE_LOAD_BALANCER,
  KUBE_MARK_MASQ,
];
export const FILTER_CHAINS = [
  KUBE_FORWARD,
  KUBE_NODE_PORT,
  KUBE_PROXY_FIREWALL,
  KUBE_SOURCE_RANGES_FIREWALL,
  KUBE_IPVS_FILTER,
  KUBE_IPVS_OUT_FILTER,
];

/** A jump from a built-in chain into one of ours, kept at the top of that chain. */
export interface IpvsJump {
  readonly table: IptablesTableName;
  readonly from: string;
  readonly to: string;
  readonly comment: string;
}

export const IPVS_JUMPS: readonly IpvsJump[] = [
  { table: 'nat', from: 'OUTPUT', to: KUBE_SERVICES, comment: 'kubernetes service portals' },
  { table: 'nat', from: 'PREROUTING', to: KUBE_SERVICES, comment: 'kubernetes service portals' },
  { table: 'nat', from: 'POSTROUTING', to: KUBE_POSTROUTING, comment: 'kubernetes postrouting rules' },
  { table: 'filter', from: 'FORWARD', to: KUBE_FORWARD, comment: 'kubernetes forwarding rules' },
  { table: 'filter', from: 'INPUT', to: KUBE_NODE_PORT, comment: 'kubernetes health check rules' },
  { table: 'filter', from: 'INPUT', to: KUBE_PROXY_FIREWALL, comment: 'kube-proxy firewall rules' },
  { table: 'filter', from: 'FORWARD', to: KUBE_PROXY_FIREWALL, comment: 'kube-proxy firewall rules' },
  { table: 'filter', from: 'INPUT', to: KUBE_IPVS_FILTER, comment: 'kubernetes ipvs access filter' },
  { table: 'filter', from: 'OUTPUT', to: KUBE_IPVS_OUT_FILTER, comment: 'kubernetes ipvs access filter' },
];

export function jumpArgs(j: IpvsJump): string[] {
  return ['-m', 'comment', '--comment', j.comment, '-j', j.to];
}

/**
 * A set matched by one rule whenever it has entries: from which chain, with which directions, to where. Order
 * matters: a NodePort's Local set returns before its masquerade set marks.
 */
const SET_RULES: readonly {
  readonly set: KubeIPSetId;
  readonly table: IptablesTableName;
  readonly from: string;
  readonly match: string;
  readonly to: string;
  readonly protocol?: string;
}[] = [
  { set: 'loopBack', table: 'nat', from: KUBE_POSTROUTING, match: 'dst,dst,src', to: 'MASQUERADE' },
  { set: 'loadBalancer', table: 'nat', from: KUBE_SERVICES, match: 'dst,dst', to: KUBE_LOAD_BALANCER },
  { set: 'loadBalancerLocal', table: 'nat', from: KUBE_LOAD_BALANCER, match: 'dst,dst', to: 'RETURN' },
  {
    set: 'nodePortLocalTCP',
    table: 'nat',
    from: KUBE_NODE_PORT,
    match: 'dst',
    to: 'RETURN',
    protocol: 'tcp',
  },
  {
    set: 'nodePortTCP',
    table: 'nat',
    from: KUBE_NODE_PORT,
    match: 'dst',
    to: KUBE_MARK_MASQ,
    protocol: 'tcp',
  },
  {
    set: 'nodePortLocalUDP',
    table: 'nat',
    from: KUBE_NODE_PORT,
    match: 'dst',
    to: 'RETURN',
    protocol: 'udp',
  },
  {
    set: 'nodePortUDP',
    table: 'nat',
    from: KUBE_NODE_PORT,
    match: 'dst',
    to: KUBE_MARK_MASQ,
    protocol: 'udp',
  },
  {
    set: 'nodePortLocalSCTP',
    table: 'nat',
    from: KUBE_NODE_PORT,
    match: 'dst,dst',
    to: 'RETURN',
    protocol: 'sctp',
  },
  {
    set: 'nodePortSCTP',
    table: 'nat',
    from: KUBE_NODE_PORT,
    match: 'dst,dst',
    to: KUBE_MARK_MASQ,
    protocol: 'sctp',
  },
  {
    set: 'loadBalancerFW',
    table: 'filter',
    from: KUBE_PROXY_FIREWALL,
    match: 'dst,dst',
    to: KUBE_SOURCE_RANGES_FIREWALL,
  },
  {
    set: 'loadBalancerSourceCIDR',
    table: 'filter',
    from: KUBE_SOURCE_RANGES_FIREWALL,
    match: 'dst,dst,src',
    to: 'RETURN',
  },
  {
    set: 'loadBalancerSourceIP',
    table: 'filter',
    from: KUBE_SOURCE_RANGES_FIREWALL,
    match: 'dst,dst,src',
    to: 'RETURN',
  },
];

export interface IpvsIptablesOptions {
  /** MASQUERADE --random-fully (iptables ≥ 1.6.2 with kernel support). */
  readonly randomFully: boolean;
}

interface Rules {
  readonly nat: IptablesRule[];
  readonly filter: IptablesRule[];
}

/** The restore input for this plan: both tables' chains, flushed and refilled in one transaction. */
export function ipvsRestoreInput(
  plan: IpvsPlan,
  node: NodeNetworkConfig,
  options: IpvsIptablesOptions,
): RestoreInput {
  const r: Rules = { nat: [], filter: [] };
  const set = (id: KubeIPSetId): string => kubeIPSet(id, node.family).name;
  const has = (id: KubeIPSetId): boolean => (plan.sets.get(id)?.size ?? 0) > 0;
  const loopback = node.family === 'IPv6' ? '::1/128' : '127.0.0.0/8';
  r.nat.push({ chain: KUBE_SERVICES, args: ['-s', loopback, '-j', 'RETURN'] });
  for (const s of SET_RULES) {
    if (!has(s.set)) continue;
    const args = [
      ...(s.protocol !== undefined ? ['-p', s.protocol] : []),
      ...setMatch(s.set, set(s.set), s.match),
      '-j',
      s.to,
    ];
    r[s.table === 'nat' ? 'nat' : 'filter'].push({ chain: s.from, args });
  }
  clusterIPRules(r, node, has('clusterIP') ? set('clusterIP') : undefined);
  externalIPRules(r, set, has);
  r.nat.push({ chain: KUBE_SERVICES, args: ['-m', 'addrtype', '--dst-type', 'LOCAL', '-j', KUBE_NODE_PORT] });
  r.nat.push({ chain: KUBE_LOAD_BALANCER, args: ['-j', KUBE_MARK_MASQ] });
  r.filter.push({ chain: KUBE_SOURCE_RANGES_FIREWALL, args: ['-j', 'DROP'] });
  for (const b of plan.nodeBlockedVIPs) {
    r.filter.push({
      chain: KUBE_IPVS_OUT_FILTER,
      args: [
        '-s',
        b.vip,
        '-m',
        'ipvs',
        '--vaddr',
        b.vip,
        '--vproto',
        b.protocol,
        '--vport',
        String(b.port),
        '-j',
        'DROP',
      ],
    });
  }
  // Service traffic is accepted at the end of KUBE-SERVICES, whatever later rules of others would do with it.
  for (const id of ['clusterIP', 'loadBalancer'] as const) {
    if (has(id))
      r.nat.push({
        chain: KUBE_SERVICES,
        args: ['-m', 'set', '--match-set', set(id), 'dst,dst', '-j', 'ACCEPT'],
      });
  }
  fixedRules(r, node, set, options);
  return {
    tables: [
      { table: 'nat', chains: NAT_CHAINS, rules: r.nat, deleteChains: [] },
      { table: 'filter', chains: FILTER_CHAINS, rules: r.filter, deleteChains: [] },
    ],
  };
}

function setMatch(id: KubeIPSetId, name: string, match: string): string[] {
  return [
    '-m',
    'comment',
    '--comment',
    kubeIPSet(id, 'IPv4').comment,
    '-m',
    'set',
    '--match-set',
    name,
    match,
  ];
}

/** Traffic to a ClusterIP is marked for masquerade as the model's clusterIPMasquerade says. */
function clusterIPRules(r: Rules, node: NodeNetworkConfig, name: string | undefined): void {
  if (name === undefined) return;
  const base = [
    '-m',
    'comment',
    '--comment',
    kubeIPSet('clusterIP', 'IPv4').comment,
    '-m',
    'set',
    '--match-set',
    name,
  ];
  const mode = clusterIPMasquerade(node.masqueradeAll, node.localDetector);
  const tail =
    mode === 'all'
      ? ['dst,dst']
      : mode === 'from-outside-cluster'
        ? ['dst,dst', ...localMatch(node.localDetector, false)]
        : // No way to tell pods: masquerade what the node sends from a VIP (kube-ipvs0 makes VIPs its sources).
          ['src,dst'];
  r.nat.push({ chain: KUBE_SERVICES, args: [...base, ...tail, '-j', KUBE_MARK_MASQ] });
}

/**
 * externalIPs: masqueraded unless Local; accepted when they come from off the machine (not from a bridge port, not
 * from a local address) or are addressed to a local address.
 */
function externalIPRules(
  r: Rules,
  set: (id: KubeIPSetId) => string,
  has: (id: KubeIPSetId) => boolean,
): void {
  for (const id of ['externalIP', 'externalIPLocal'] as const) {
    if (!has(id)) continue;
    const match = setMatch(id, set(id), 'dst,dst');
    if (id === 'externalIP') r.nat.push({ chain: KUBE_SERVICES, args: [...match, '-j', KUBE_MARK_MASQ] });
    r.nat.push({
      chain: KUBE_SERVICES,
      args: [
        ...match,
        '-m',
        'physdev',
        '!',
        '--physdev-is-in',
        '-m',
        'addrtype',
        '!',
        '--src-type',
        'LOCAL',
        '-j',
        'ACCEPT',
      ],
    });
    r.nat.push({
      chain: KUBE_SERVICES,
      args: [...match, '-m', 'addrtype', '--dst-type', 'LOCAL', '-j', 'ACCEPT'],
    });
  }
}

/** The rules every sync writes whatever the Services: forwarding, health checks, the VIP filter, masquerade. */
function fixedRules(
  r: Rules,
  node: NodeNetworkConfig,
  set: (id: KubeIPSetId) => string,
  options: IpvsIptablesOptions,
): void {
  const mark = node.masqueradeMark;
  const markMask = `${mark}/${mark}`;
  r.filter.push(
    {
      chain: KUBE_FORWARD,
      args: [
        '-m',
        'comment',
        '--comment',
        'kubernetes forwarding rules',
        '-m',
        'mark',
        '--mark',
        markMask,
        '-j',
        'ACCEPT',
      ],
    },
    {
      chain: KUBE_FORWARD,
      args: [
        ...['-m', 'comment', '--comment', 'kubernetes forwarding conntrack rule'],
        ...['-m', 'conntrack', '--ctstate', 'RELATED,ESTABLISHED', '-j', 'ACCEPT'],
      ],
    },
    {
      chain: KUBE_NODE_PORT,
      args: [...setMatch('healthCheckNodePort', set('healthCheckNodePort'), 'dst'), '-j', 'ACCEPT'],
    },
  );
  // Ports on the host are not reachable through a Service address unless a Service uses them (k/k #72236).
  for (const [id, match] of [
    ['loadBalancer', 'dst,dst'],
    ['clusterIP', 'dst,dst'],
    ['externalIP', 'dst,dst'],
    ['externalIPLocal', 'dst,dst'],
    ['healthCheckNodePort', 'dst'],
  ] as const) {
    r.filter.push({
      chain: KUBE_IPVS_FILTER,
      args: ['-m', 'set', '--match-set', set(id), match, '-j', 'RETURN'],
    });
  }
  r.filter.push({
    chain: KUBE_IPVS_FILTER,
    args: [
      '-m',
      'conntrack',
      '--ctstate',
      'NEW',
      '-m',
      'set',
      '--match-set',
      set('ipvsIPs'),
      'dst',
      '-j',
      'REJECT',
    ],
  });
  r.nat.push(
    { chain: KUBE_POSTROUTING, args: ['-m', 'mark', '!', '--mark', markMask, '-j', 'RETURN'] },
    { chain: KUBE_POSTROUTING, args: ['-j', 'MARK', '--xor-mark', mark] },
    {
      chain: KUBE_POSTROUTING,
      args: [
        ...['-m', 'comment', '--comment', 'kubernetes service traffic requiring SNAT', '-j', 'MASQUERADE'],
        ...(options.randomFully ? ['--random-fully'] : []),
      ],
    },
    { chain: KUBE_MARK_MASQ, args: ['-j', 'MARK', '--or-mark', mark] },
  );
}
