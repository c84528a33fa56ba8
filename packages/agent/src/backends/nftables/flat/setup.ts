// The fixed objects of the flat layout, beside the shared ones of ../setup.ts: the dispatch and endpoint maps, the
// load-balancer firewall as two sets, the four shared external chains, and the dispatch chains (one per view,
// frontend kind and endpoint count in use, made on demand by the planner).
import type { NftMap, NftRule, NftSet } from '../../../netfilter/nft/objects.js';
import type { NodeNetworkConfig } from '../../../sync/backend.js';
import {
  CLUSTER_DISPATCH_MAP,
  DISPATCH_KINDS,
  EXTERNAL_CLUSTER_CHAIN,
  EXTERNAL_LOCAL_CHAIN,
  FIREWALL_ALLOW_SET,
  FIREWALL_CHECK_CHAIN,
  FIREWALL_FRONTENDS_SET,
  FLAT_PROTOCOLS,
  LOCAL_DISPATCH_MAP,
  NODEPORT_CLUSTER_DISPATCH_MAP,
  NODEPORT_EXTERNAL_CLUSTER_CHAIN,
  NODEPORT_EXTERNAL_LOCAL_CHAIN,
  NODEPORT_LOCAL_DISPATCH_MAP,
  dispatchChainName,
  endpointsMapName,
} from '../naming.js';
import type { DispatchKind, FlatProtocol } from '../naming.js';
import type { LayoutSetupParts } from '../setup.js';
import { familyWords, localTrafficMatch, markSet } from '../setup.js';

/** What a dispatch map is keyed on: the frontend (address, protocol, port; a NodePort has no address). */
function dispatchKey(kind: DispatchKind, w: ReturnType<typeof familyWords>): string {
  return kind === 'cluster' || kind === 'local'
    ? `${w.ip} daddr . meta l4proto . th dport`
    : 'meta l4proto . th dport';
}

/**
 * One view's endpoints map for one protocol. `typeof` because the slot is `numgen random mod N` itself: nft then
 * types the key's last field as the numgen's 32-bit integer, and no packet mark carries the slot (other users of
 * mark bits are left alone). The value names the protocol (`tcp dport`, not `th dport`): nft 1.0.6 cannot read a
 * `th dport` value back from the kernel ("conflicting protocols specified: ip vs. th"), which breaks every later
 * rule that names the map; so there is one map per protocol, and its dispatch chains match that protocol.
 */
function endpointsMap(kind: DispatchKind, protocol: FlatProtocol, w: ReturnType<typeof familyWords>): NftMap {
  const key = dispatchKey(kind, w);
  return {
    kind: 'map',
    name: endpointsMapName(kind, protocol),
    typeof: `${key} . numgen random mod 2 : ${w.ip} daddr . ${protocol} dport`,
    comment: `${ENDPOINTS_COMMENT[kind]} (${protocol})`,
  };
}

const ENDPOINTS_COMMENT: Readonly<Record<DispatchKind, string>> = {
  cluster: 'ClusterIP, ExternalIP and LoadBalancer IP endpoints by slot',
  local: 'node-local endpoints by slot',
  'nodeport-cluster': 'NodePort endpoints by slot',
  'nodeport-local': 'node-local NodePort endpoints by slot',
};

export function flatSetupParts(node: NodeNetworkConfig): LayoutSetupParts {
  const w = familyWords(node);
  const ipFrontend = `${w.addrType} . inet_proto . inet_service`;
  const ipKey = `${w.ip} daddr . meta l4proto . th dport`;
  const containers: (NftSet | NftMap)[] = [
    ...DISPATCH_KINDS.flatMap((kind) => FLAT_PROTOCOLS.map((p) => endpointsMap(kind, p, w))),
    {
      kind: 'map',
      name: CLUSTER_DISPATCH_MAP,
      type: `${ipFrontend} : verdict`,
      comment: 'external frontends to their cluster-wide dispatch chain',
    },
    {
      kind: 'map',
      name: LOCAL_DISPATCH_MAP,
      type: `${ipFrontend} : verdict`,
      comment: 'external frontends to their node-local dispatch chain',
    },
    {
      kind: 'map',
      name: NODEPORT_CLUSTER_DISPATCH_MAP,
      type: 'inet_proto . inet_service : verdict',
      comment: 'NodePorts to their cluster-wide dispatch chain',
    },
    {
      kind: 'map',
      name: NODEPORT_LOCAL_DISPATCH_MAP,
      type: 'inet_proto . inet_service : verdict',
      comment: 'NodePorts to their node-local dispatch chain',
    },
    {
      kind: 'set',
      name: FIREWALL_FRONTENDS_SET,
      type: ipFrontend,
      comment: 'destinations that are subject to LoadBalancerSourceRanges',
    },
    {
      kind: 'set',
      name: FIREWALL_ALLOW_SET,
      type: `${ipFrontend} . ${w.addrType}`,
      flags: ['interval'],
      comment: 'LoadBalancerSourceRanges by destination',
    },
  ];

  const rules: NftRule[] = [];
  const rule = (chain: string, text: string, comment?: string): void =>
    void rules.push({ kind: 'rule', chain, rule: text, ...(comment !== undefined ? { comment } : {}) });
  rule(
    FIREWALL_CHECK_CHAIN,
    `${ipKey} @${FIREWALL_FRONTENDS_SET} ${ipKey} . ${w.ip} saddr != @${FIREWALL_ALLOW_SET} drop`,
  );
  // Upstream's per-port external chain, once per policy: the frontend's dispatch entries stand for its gotos.
  const fromPod = localTrafficMatch(node, false);
  const nodePortKey = 'meta l4proto . th dport';
  for (const [cluster, local, key, clusterMap, localMap] of [
    [EXTERNAL_CLUSTER_CHAIN, EXTERNAL_LOCAL_CHAIN, ipKey, CLUSTER_DISPATCH_MAP, LOCAL_DISPATCH_MAP],
    [
      NODEPORT_EXTERNAL_CLUSTER_CHAIN,
      NODEPORT_EXTERNAL_LOCAL_CHAIN,
      nodePortKey,
      NODEPORT_CLUSTER_DISPATCH_MAP,
      NODEPORT_LOCAL_DISPATCH_MAP,
    ],
  ] as const) {
    rule(cluster, markSet(node), 'masquerade');
    rule(cluster, `${key} vmap @${clusterMap}`);
    if (fromPod !== undefined)
      rule(local, `${fromPod} ${key} vmap @${clusterMap}`, 'short-circuit pod traffic');
    rule(local, `fib saddr type local ${markSet(node)}`, 'masquerade local traffic');
    rule(local, `fib saddr type local ${key} vmap @${clusterMap}`, 'short-circuit local traffic');
    rule(local, `${key} vmap @${localMap}`);
  }

  return {
    containers,
    chains: [
      EXTERNAL_CLUSTER_CHAIN,
      EXTERNAL_LOCAL_CHAIN,
      NODEPORT_EXTERNAL_CLUSTER_CHAIN,
      NODEPORT_EXTERNAL_LOCAL_CHAIN,
    ].map((name) => ({ kind: 'chain', name })),
    rules,
  };
}

/** The one rule of a dispatch chain: DNAT to the endpoint in slot `numgen random mod count` of the frontend. */
export function dispatchChainRule(
  kind: DispatchKind,
  protocol: FlatProtocol,
  count: number,
  node: Pick<NodeNetworkConfig, 'family'>,
): NftRule {
  const w = familyWords(node);
  const key = dispatchKey(kind, w);
  return {
    kind: 'rule',
    chain: dispatchChainName(kind, protocol, count),
    rule: `dnat ${w.ip} to ${key} . numgen random mod ${count} map @${endpointsMapName(kind, protocol)}`,
  };
}
