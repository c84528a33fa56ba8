// The fixed part of the ruleset (upstream-backends.md §1.1–1.4, "v2" generation): table, base chains and their
// jump rules, the dispatch/check chains, the shared sets and maps, and the nodeport-ips contents. Pure: the same
// NodeNetworkConfig always gives the same operations.
import type {
  NftChain,
  NftChainType,
  NftHook,
  NftMap,
  NftObject,
  NftOperation,
  NftRule,
  NftSet,
  NftVerb,
} from '../../netfilter/nft/objects.js';
import { clusterIPMasquerade } from '../../model/local-detector.js';
import type { NodeNetworkConfig } from '../../sync/backend.js';
import {
  CLUSTER_IPS_CHECK_CHAIN,
  CLUSTER_IPS_SET,
  FIREWALL_CHECK_CHAIN,
  FIREWALL_IPS_MAP,
  HAIRPIN_SET,
  MASQUERADING_CHAIN,
  NODEPORT_ENDPOINTS_CHECK_CHAIN,
  NODEPORT_IPS_SET,
  NO_ENDPOINT_NODEPORTS_MAP,
  NO_ENDPOINT_SERVICES_MAP,
  REJECT_CHAIN,
  SERVICES_CHAIN,
  SERVICE_ENDPOINTS_CHECK_CHAIN,
  SERVICE_IPS_MAP,
  SERVICE_NODEPORTS_MAP,
  TABLE_COMMENT,
} from './naming.js';

/** The address words of one family: `ip`/`ip6` selectors, `ipv4_addr`/`ipv6_addr` types, the loopback net. */
export interface FamilyWords {
  readonly ip: 'ip' | 'ip6';
  readonly addrType: 'ipv4_addr' | 'ipv6_addr';
  readonly loopback: string;
}

export function familyWords(node: Pick<NodeNetworkConfig, 'family'>): FamilyWords {
  return node.family === 'IPv6'
    ? { ip: 'ip6', addrType: 'ipv6_addr', loopback: '::1' }
    : { ip: 'ip', addrType: 'ipv4_addr', loopback: '127.0.0.0/8' };
}

interface BaseChainSpec {
  readonly name: string;
  readonly type: NftChainType;
  readonly hook: NftHook;
  /** Numeric, as knftables writes it: dstnat-10 = -110, filter = 0, dstnat = -100, srcnat = 100. */
  readonly priority: number;
}

/** Upstream's nftablesBaseChains, in its order. */
export const BASE_CHAINS: readonly BaseChainSpec[] = [
  { name: 'filter-prerouting-pre-dnat', type: 'filter', hook: 'prerouting', priority: -110 },
  { name: 'filter-output-pre-dnat', type: 'filter', hook: 'output', priority: -110 },
  { name: 'filter-input', type: 'filter', hook: 'input', priority: 0 },
  { name: 'filter-forward', type: 'filter', hook: 'forward', priority: 0 },
  { name: 'filter-output', type: 'filter', hook: 'output', priority: 0 },
  { name: 'nat-prerouting', type: 'nat', hook: 'prerouting', priority: -100 },
  { name: 'nat-output', type: 'nat', hook: 'output', priority: -100 },
  { name: 'nat-postrouting', type: 'nat', hook: 'postrouting', priority: 100 },
];

/** Upstream's nftablesJumpChains: base chain → (match, target), in rule order. */
const JUMPS: readonly { readonly from: string; readonly match: string; readonly to: string }[] = [
  { from: 'filter-input', match: 'ct state new', to: NODEPORT_ENDPOINTS_CHECK_CHAIN },
  { from: 'filter-input', match: 'ct state new', to: SERVICE_ENDPOINTS_CHECK_CHAIN },
  { from: 'filter-forward', match: 'ct state new', to: SERVICE_ENDPOINTS_CHECK_CHAIN },
  { from: 'filter-forward', match: 'ct state new', to: CLUSTER_IPS_CHECK_CHAIN },
  { from: 'filter-output', match: 'ct state new', to: SERVICE_ENDPOINTS_CHECK_CHAIN },
  { from: 'filter-output', match: 'ct state new', to: CLUSTER_IPS_CHECK_CHAIN },
  { from: 'filter-prerouting-pre-dnat', match: 'ct state new', to: FIREWALL_CHECK_CHAIN },
  { from: 'filter-output-pre-dnat', match: 'ct state new', to: FIREWALL_CHECK_CHAIN },
  { from: 'nat-prerouting', match: '', to: SERVICES_CHAIN },
  { from: 'nat-output', match: '', to: SERVICES_CHAIN },
  { from: 'nat-postrouting', match: '', to: MASQUERADING_CHAIN },
];

const REGULAR_CHAINS: readonly NftChain[] = [
  { kind: 'chain', name: SERVICES_CHAIN },
  { kind: 'chain', name: MASQUERADING_CHAIN },
  { kind: 'chain', name: SERVICE_ENDPOINTS_CHECK_CHAIN },
  { kind: 'chain', name: NODEPORT_ENDPOINTS_CHECK_CHAIN },
  { kind: 'chain', name: FIREWALL_CHECK_CHAIN },
  { kind: 'chain', name: CLUSTER_IPS_CHECK_CHAIN },
  { kind: 'chain', name: REJECT_CHAIN, comment: 'helper for @no-endpoint-services / @no-endpoint-nodeports' },
];

export function sharedSets(w: FamilyWords): {
  readonly sets: readonly NftSet[];
  readonly maps: readonly NftMap[];
} {
  const ipProtoPort = `${w.addrType} . inet_proto . inet_service : verdict`;
  return {
    sets: [
      { kind: 'set', name: CLUSTER_IPS_SET, type: w.addrType, comment: 'Active ClusterIPs' },
      { kind: 'set', name: NODEPORT_IPS_SET, type: w.addrType, comment: 'IPs that accept NodePort traffic' },
      {
        kind: 'set',
        name: HAIRPIN_SET,
        type: `${w.addrType} . ${w.addrType} . inet_proto . inet_service`,
        comment: 'service hairpin connections',
      },
    ],
    maps: [
      {
        kind: 'map',
        name: NO_ENDPOINT_NODEPORTS_MAP,
        type: 'inet_proto . inet_service : verdict',
        comment: 'vmap to drop or reject packets to service nodeports with no endpoints',
      },
      {
        kind: 'map',
        name: NO_ENDPOINT_SERVICES_MAP,
        type: ipProtoPort,
        comment: 'vmap to drop or reject packets to services with no endpoints',
      },
      {
        kind: 'map',
        name: SERVICE_IPS_MAP,
        type: ipProtoPort,
        comment: 'ClusterIP, ExternalIP and LoadBalancer IP traffic',
      },
      {
        kind: 'map',
        name: SERVICE_NODEPORTS_MAP,
        type: 'inet_proto . inet_service : verdict',
        comment: 'NodePort traffic',
      },
    ],
  };
}

/**
 * What a layout adds to the fixed ruleset: its own sets and maps (added after the shared ones), regular chains
 * (after the shared ones) and rules (the firewall-check chain's, and its own chains').
 */
export interface LayoutSetupParts {
  readonly containers: readonly (NftSet | NftMap)[];
  readonly chains: readonly NftChain[];
  readonly rules: readonly NftRule[];
}

/** Upstream's layout: the load-balancer firewall is a map from VIP to the port's own firewall chain. */
export function upstreamSetupParts(node: Pick<NodeNetworkConfig, 'family'>): LayoutSetupParts {
  const w = familyWords(node);
  return {
    containers: [
      {
        kind: 'map',
        name: FIREWALL_IPS_MAP,
        type: `${w.addrType} . inet_proto . inet_service : verdict`,
        comment: 'destinations that are subject to LoadBalancerSourceRanges',
      },
    ],
    chains: [],
    rules: [
      {
        kind: 'rule',
        chain: FIREWALL_CHECK_CHAIN,
        rule: `${w.ip} daddr . meta l4proto . th dport vmap @${FIREWALL_IPS_MAP}`,
      },
    ],
  };
}

/** nft's match for "from a local pod" (ifLocal) or "not from a local pod" (ifNotLocal); undefined with no detector. */
export function localTrafficMatch(node: NodeNetworkConfig, negate: boolean): string | undefined {
  const w = familyWords(node);
  const op = negate ? '!= ' : '';
  const d = node.localDetector;
  switch (d.mode) {
    case 'ClusterCIDR':
    case 'NodeCIDR':
      return `${w.ip} saddr ${op}${d.cidr}`;
    case 'BridgeInterface':
      return `iif ${op}${d.interfaceName}`;
    case 'InterfaceNamePrefix':
      return `iif ${op}${d.interfacePrefix}*`;
    case 'None':
      return undefined;
  }
}

export function markSet(node: NodeNetworkConfig): string {
  return `mark set mark or ${node.masqueradeMark}`;
}

/**
 * Every set and map the fixed ruleset declares for this layout, with its type: the shared ones, then the layout's
 * (renderSetup adds them in this order). An executor that writes elements itself (netlink/) encodes keys by them.
 */
export function containerDeclarations(
  node: Pick<NodeNetworkConfig, 'family'>,
  layout: LayoutSetupParts,
): (NftSet | NftMap)[] {
  const { sets, maps } = sharedSets(familyWords(node));
  return [...sets, ...maps, ...layout.containers];
}

export interface SetupOptions {
  /** First full sync since start: base chains are added and deleted first, so a new priority takes effect. */
  readonly firstSync: boolean;
  /** Host addresses accepting NodePorts (this family, no loopback); ignored when nodePortAddresses.matchAll. */
  readonly nodePortIPs: readonly string[];
}

/** Every operation of the fixed ruleset, in an order nft accepts (containers before the rules that use them). */
export function renderSetup(
  node: NodeNetworkConfig,
  options: SetupOptions,
  layout: LayoutSetupParts = upstreamSetupParts(node),
): NftOperation[] {
  const w = familyWords(node);
  const ops: NftOperation[] = [];
  const op = (verb: NftVerb, object: NftObject): void => void ops.push({ verb, object });
  const rule = (chain: string, text: string, comment?: string): void =>
    op('add', { kind: 'rule', chain, rule: text, ...(comment !== undefined ? { comment } : {}) });
  const matchAll = node.nodePortAddresses.matchAll;

  op('add', { kind: 'table', comment: TABLE_COMMENT });
  const { sets, maps } = sharedSets(w);
  for (const s of sets) if (!(matchAll && s.name === NODEPORT_IPS_SET)) op('add', s);
  for (const m of maps) op('add', m);
  for (const c of layout.containers) op('add', c);

  for (const b of BASE_CHAINS) {
    if (options.firstSync) {
      op('add', { kind: 'chain', name: b.name });
      op('delete', { kind: 'chain', name: b.name });
    }
    op('add', { kind: 'chain', name: b.name, base: { type: b.type, hook: b.hook, priority: b.priority } });
    op('flush', { kind: 'chain', name: b.name });
  }
  for (const c of [...REGULAR_CHAINS, ...layout.chains]) {
    op('add', c);
    op('flush', { kind: 'chain', name: c.name });
  }
  if (matchAll) {
    // Add-then-delete: removes a set left from an earlier configuration without failing when there is none.
    const npSet = sets.find((s) => s.name === NODEPORT_IPS_SET);
    if (npSet) {
      op('add', npSet);
      op('delete', { kind: 'set', name: NODEPORT_IPS_SET });
    }
  }

  for (const j of JUMPS) rule(j.from, j.match ? `${j.match} jump ${j.to}` : `jump ${j.to}`);

  const masquerade = clusterIPMasquerade(node.masqueradeAll, node.localDetector);
  if (masquerade === 'all') {
    rule(
      SERVICES_CHAIN,
      `${w.ip} daddr @${CLUSTER_IPS_SET} ${markSet(node)}`,
      'masquerade all clusterIP traffic',
    );
  } else if (masquerade === 'from-outside-cluster') {
    rule(
      SERVICES_CHAIN,
      `${w.ip} daddr @${CLUSTER_IPS_SET} ${localTrafficMatch(node, true) ?? ''} ${markSet(node)}`,
      'masquerade clusterIP traffic from outside cluster',
    );
  }
  rule(SERVICES_CHAIN, `${w.ip} daddr . meta l4proto . th dport vmap @${SERVICE_IPS_MAP}`);
  if (matchAll) {
    rule(
      SERVICES_CHAIN,
      `fib daddr type local ${w.ip} daddr != ${w.loopback} meta l4proto . th dport vmap @${SERVICE_NODEPORTS_MAP}`,
    );
  } else {
    rule(
      SERVICES_CHAIN,
      `${w.ip} daddr @${NODEPORT_IPS_SET} meta l4proto . th dport vmap @${SERVICE_NODEPORTS_MAP}`,
    );
  }

  const mark = node.masqueradeMark;
  rule(MASQUERADING_CHAIN, `mark and ${mark} != 0 mark set mark xor ${mark} masquerade fully-random`);
  rule(
    MASQUERADING_CHAIN,
    `ct status dnat ${w.ip} saddr . ${w.ip} daddr . meta l4proto . th dport @${HAIRPIN_SET} masquerade fully-random`,
  );

  rule(
    SERVICE_ENDPOINTS_CHECK_CHAIN,
    `${w.ip} daddr . meta l4proto . th dport vmap @${NO_ENDPOINT_SERVICES_MAP}`,
  );
  if (matchAll) {
    rule(
      NODEPORT_ENDPOINTS_CHECK_CHAIN,
      `${w.ip} daddr != ${w.loopback} meta l4proto . th dport vmap @${NO_ENDPOINT_NODEPORTS_MAP}`,
    );
  } else {
    rule(
      NODEPORT_ENDPOINTS_CHECK_CHAIN,
      `${w.ip} daddr @${NODEPORT_IPS_SET} meta l4proto . th dport vmap @${NO_ENDPOINT_NODEPORTS_MAP}`,
    );
  }
  rule(
    CLUSTER_IPS_CHECK_CHAIN,
    `${w.ip} daddr @${CLUSTER_IPS_SET} reject`,
    'Reject traffic to invalid ports of ClusterIPs',
  );
  if (node.serviceCIDRs.length > 0) {
    rule(
      CLUSTER_IPS_CHECK_CHAIN,
      `${w.ip} daddr { ${node.serviceCIDRs.join(',')} } drop`,
      'Drop traffic to unallocated ClusterIPs',
    );
  }
  rule(REJECT_CHAIN, 'reject');
  for (const r of layout.rules) op('add', r);

  if (!matchAll) {
    op('flush', { kind: 'set', name: NODEPORT_IPS_SET });
    for (const ip of options.nodePortIPs) op('add', { kind: 'element', set: NODEPORT_IPS_SET, key: [ip] });
  }
  return ops;
}
