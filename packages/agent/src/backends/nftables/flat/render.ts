// What one service port needs in the flat layout (README.md beside this file): only elements of the shared maps
// and sets, keyed by the port's frontends (ClusterIP, external IPs and load-balancer VIPs as address . protocol .
// port, the NodePort as protocol . port), plus, for ClientIP affinity only, upstream's per-endpoint chains and
// sets. Pure: the slots it was given last time come in, the slots it used go out; the planner keeps them.
import { RUN_SEPARATOR } from '../element-ledger.js';
import type { ElementRun } from '../element-ledger.js';
import type { RenderedServicePort } from '../service-port.js';
import type { NftElement, NftOperation } from '../../../netfilter/nft/objects.js';
import { runValuesProblem, validateOperation } from '../../../netfilter/nft/validate.js';
import { cidrContains } from '../../../model/ip.js';
import type { NoEndpointsVerdict, ServicePortPolicy } from '../../../model/port-policy.js';
import type { NodeNetworkConfig } from '../../../sync/backend.js';
import { affinityEndpoint, affinitySelectionRules } from '../affinity.js';
import {
  CLUSTER_DISPATCH_MAP,
  CLUSTER_IPS_SET,
  EXTERNAL_CLUSTER_CHAIN,
  EXTERNAL_LOCAL_CHAIN,
  FIREWALL_ALLOW_SET,
  FIREWALL_FRONTENDS_SET,
  HAIRPIN_SET,
  LOCAL_CHAIN_PREFIX,
  LOCAL_DISPATCH_MAP,
  NODEPORT_CLUSTER_DISPATCH_MAP,
  NODEPORT_EXTERNAL_CLUSTER_CHAIN,
  NODEPORT_EXTERNAL_LOCAL_CHAIN,
  NODEPORT_LOCAL_DISPATCH_MAP,
  NO_ENDPOINT_NODEPORTS_MAP,
  NO_ENDPOINT_SERVICES_MAP,
  REJECT_CHAIN,
  SERVICE_CHAIN_PREFIX,
  SERVICE_IPS_MAP,
  SERVICE_NODEPORTS_MAP,
  FLAT_PROTOCOLS,
  dispatchChainName,
  endpointsMapName,
  servicePortChainBase,
} from '../naming.js';
import type { DispatchKind, FlatProtocol } from '../naming.js';
import { assignSlots, slotIdentities, slotValue } from './slots.js';

/**
 * Which endpoint identity is in which slot, per view (see slots.ts): the identities in slot order joined with
 * RUN_SEPARATOR, '' when the view is unused. One string per view, not a string per endpoint and an array: the
 * planner keeps these for every port (at 100,000 Services × 10, a million identities).
 */
export interface PortSlots {
  readonly cluster: string;
  readonly local: string;
}

export const NO_SLOTS: PortSlots = { cluster: '', local: '' };

const NO_IDS: readonly string[] = [];

function slotList(joined: string): readonly string[] {
  return joined === '' ? NO_IDS : joined.split(RUN_SEPARATOR);
}

/**
 * `goto <chain>` of each dispatch chain, and the chain's name: one string each for every port that uses them
 * (made per port they were 10 MB at 100,000 Services). Bounded: a name is a kind, a protocol and an endpoint count.
 */
const DISPATCH_TARGETS = new Map<string, { readonly name: string; readonly verdict: string }>();

function dispatchTarget(name: string): { readonly name: string; readonly verdict: string } {
  let target = DISPATCH_TARGETS.get(name);
  if (!target) DISPATCH_TARGETS.set(name, (target = { name, verdict: `goto ${name}` }));
  return target;
}

/**
 * What upstream's layout renders for a port (chainOps, chains and affinity sets only for affinity ports; the shared
 * chains are the dispatch chains the elements point at), plus:
 */
export interface FlatRenderedPort extends RenderedServicePort {
  readonly slots: PortSlots;
  /**
   * Whether the slots differ from the model's order, the order a rendering with no previous slots gives: only
   * such slots need carrying over a restart (state.ts) for the next agent to render what this one wrote.
   */
  readonly slotsMoved: boolean;
}

export type FlatRenderResult =
  | { readonly ok: true; readonly value: FlatRenderedPort }
  | { readonly ok: false; readonly key: string; readonly serviceName: string; readonly reason: string };

/**
 * The source ranges (and admitted VIPs) of a firewall as disjoint prefixes: an interval set refuses an element
 * that overlaps another ("File exists"), and CIDRs either nest or are disjoint, so dropping every prefix inside
 * another leaves the same addresses. Host prefixes are written bare, as nft lists them back.
 */
export function firewallSources(sourceRanges: readonly string[], allowedVIPs: readonly string[]): string[] {
  const all = [...sourceRanges, ...allowedVIPs.map((ip) => (ip.includes(':') ? `${ip}/128` : `${ip}/32`))];
  const parsed = all.map((c) => {
    const slash = c.indexOf('/');
    return { cidr: c, address: c.slice(0, slash), length: Number(c.slice(slash + 1)) };
  });
  const kept = parsed.filter(
    (r, i) =>
      !parsed.some(
        (s, j) =>
          j !== i &&
          (s.length < r.length || (s.length === r.length && j < i)) &&
          cidrContains(s.cidr, r.address),
      ),
  );
  return kept.map((r) =>
    (r.address.includes(':') ? r.length === 128 : r.length === 32) ? r.address : r.cidr,
  );
}

/**
 * Where an external frontend's entries go, for the two kinds of external frontend: an address (externalIP or
 * load-balancer VIP, matched with its protocol and port) and a NodePort (matched on any local address).
 */
interface ExternalFrontendKind {
  /** The frontend's jump to the shared external chain of its policy, while the Service has endpoints. */
  readonly serviceMap: string;
  readonly clusterVerdict: string;
  readonly localVerdict: string;
  /** The dispatch entries of the Cluster and Local views. */
  readonly clusterDispatchMap: string;
  readonly localDispatchMap: string;
  readonly cluster: DispatchKind;
  readonly local: DispatchKind;
  /** The verdict when the policy leaves the frontend no endpoint. */
  readonly noEndpointsMap: string;
}

const EXTERNAL_IP_FRONTEND: ExternalFrontendKind = {
  serviceMap: SERVICE_IPS_MAP,
  clusterVerdict: `goto ${EXTERNAL_CLUSTER_CHAIN}`,
  localVerdict: `goto ${EXTERNAL_LOCAL_CHAIN}`,
  clusterDispatchMap: CLUSTER_DISPATCH_MAP,
  localDispatchMap: LOCAL_DISPATCH_MAP,
  cluster: 'cluster',
  local: 'local',
  noEndpointsMap: NO_ENDPOINT_SERVICES_MAP,
};

const NODEPORT_FRONTEND: ExternalFrontendKind = {
  serviceMap: SERVICE_NODEPORTS_MAP,
  clusterVerdict: `goto ${NODEPORT_EXTERNAL_CLUSTER_CHAIN}`,
  localVerdict: `goto ${NODEPORT_EXTERNAL_LOCAL_CHAIN}`,
  clusterDispatchMap: NODEPORT_CLUSTER_DISPATCH_MAP,
  localDispatchMap: NODEPORT_LOCAL_DISPATCH_MAP,
  cluster: 'nodeport-cluster',
  local: 'nodeport-local',
  noEndpointsMap: NO_ENDPOINT_NODEPORTS_MAP,
};

function flatProtocol(proto: string): FlatProtocol {
  const p = FLAT_PROTOCOLS.find((x) => x === proto);
  // The model admits only TCP, UDP and SCTP ports, so this is a programming error, not a cluster's.
  if (p === undefined) throw new Error(`flat layout: no endpoints map for protocol ${JSON.stringify(proto)}`);
  return p;
}

interface AffinityChains {
  readonly chainOps: NftOperation[];
  readonly chains: string[];
  readonly affinitySets: string[];
}

/**
 * A ClientIP-affinity port's own chains: its selection chains (cluster and local views), and per endpoint the
 * affinity set and the chain that records and DNATs; sets first, then the chains, then their rules.
 */
function affinityChains(policy: ServicePortPolicy, node: NodeNetworkConfig): AffinityChains {
  const sp = policy.servicePort;
  const base = servicePortChainBase(sp.name);
  const chainOps: NftOperation[] = [];
  const chains: string[] = [];
  const affinitySets: string[] = [];
  const rules: NftOperation[] = [];
  const chain = (name: string): void => {
    chains.push(name);
    chainOps.push({ verb: 'add', object: { kind: 'chain', name } });
    chainOps.push({ verb: 'flush', object: { kind: 'chain', name } });
  };
  const selection = (name: string, eps: ServicePortPolicy['clusterEndpoints']): void => {
    chain(name);
    for (const r of affinitySelectionRules(sp, eps, name, node)) rules.push({ verb: 'add', object: r });
  };
  if (policy.usesClusterEndpoints) selection(SERVICE_CHAIN_PREFIX + base, policy.clusterEndpoints);
  if (policy.usesLocalEndpoints) selection(LOCAL_CHAIN_PREFIX + base, policy.localEndpoints);
  const sets: NftOperation[] = [];
  for (const ep of policy.reachableEndpoints) {
    const a = affinityEndpoint(sp, ep, node);
    sets.push({ verb: 'add', object: a.set });
    affinitySets.push(a.set.name);
    chain(a.chain);
    for (const r of a.rules) rules.push({ verb: 'add', object: r });
  }
  chainOps.unshift(...sets);
  chainOps.push(...rules);
  return { chainOps, chains, affinitySets };
}

/**
 * The first name nft cannot hold in what a port renders (names come from the cluster: such a Service is skipped,
 * never sent). An endpoint run's prefix is a frontend that another element of this port carries too (its
 * service-ips or dispatch entry, checked here), and its values are checked as one text.
 */
function firstProblem(
  chainOps: readonly NftOperation[],
  runs: readonly ElementRun[],
  elements: readonly NftElement[],
): string | undefined {
  for (const op of chainOps) {
    const problem = validateOperation(op);
    if (problem !== undefined) return problem;
  }
  for (const run of runs) {
    const problem = runValuesProblem(run.set, run.values);
    if (problem !== undefined) return problem;
  }
  for (const e of elements) {
    const problem = validateOperation({ verb: 'add', object: e });
    if (problem !== undefined) return problem;
  }
  return undefined;
}

/**
 * A view's slots as the values of its endpoint entries (an ElementRun's): the joined slots themselves where every
 * identity is `ip . port` (the planner keeps the slots and the ledger the values: one string for both), else each
 * identity's `ip . port`.
 */
function slotValues(joined: string, ids: readonly string[]): string {
  return joined.includes('#') ? ids.map((id) => slotValue(id).join(' . ')).join(RUN_SEPARATOR) : joined;
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** Renders one service port from its policy (src/model/port-policy.ts) and the slots it had last time. */
export function renderFlatServicePort(
  policy: ServicePortPolicy,
  node: NodeNetworkConfig,
  previous: PortSlots,
): FlatRenderResult {
  const sp = policy.servicePort;
  const { internal, external, firewall } = policy;
  const proto = sp.protocol.toLowerCase();
  const port = String(sp.port);
  const affinity = sp.sessionAffinityClientIP;
  const verdict = (v: NoEndpointsVerdict): string => (v === 'reject' ? `goto ${REJECT_CHAIN}` : 'drop');
  const comment = sp.nameString;

  const elements: NftElement[] = [];
  const el = (set: string, key: string[], value?: string[], elementComment?: string): void =>
    void elements.push({
      kind: 'element',
      set,
      key,
      ...(value !== undefined ? { value } : {}),
      ...(elementComment !== undefined ? { comment: elementComment } : {}),
    });
  const runs: ElementRun[] = [];

  const inModelOrder = {
    cluster: policy.usesClusterEndpoints ? slotIdentities(policy.clusterEndpoints) : NO_IDS,
    local: policy.usesLocalEndpoints ? slotIdentities(policy.localEndpoints) : NO_IDS,
  };
  const ids = {
    cluster: assignSlots(slotList(previous.cluster), inModelOrder.cluster),
    local: assignSlots(slotList(previous.local), inModelOrder.local),
  };
  const slotsMoved = !sameList(ids.cluster, inModelOrder.cluster) || !sameList(ids.local, inModelOrder.local);
  const slots: PortSlots = { cluster: ids.cluster.join(RUN_SEPARATOR), local: ids.local.join(RUN_SEPARATOR) };

  // Where a view's traffic goes: a shared dispatch chain by endpoint count, or (affinity) the port's own chain.
  const dispatchChains = new Set<string>();
  const protocol = flatProtocol(proto);
  const target = (kind: DispatchKind): string => {
    const local = kind === 'local' || kind === 'nodeport-local';
    if (affinity)
      return `goto ${(local ? LOCAL_CHAIN_PREFIX : SERVICE_CHAIN_PREFIX) + servicePortChainBase(sp.name)}`;
    const { name, verdict } = dispatchTarget(
      dispatchChainName(kind, protocol, local ? ids.local.length : ids.cluster.length),
    );
    dispatchChains.add(name);
    return verdict;
  };
  /**
   * The endpoint entries of one frontend for one view, `frontend . slot` → endpoint, as one run (none with
   * affinity: its chains DNAT).
   */
  const endpoints = (kind: DispatchKind, frontend: readonly string[]): void => {
    if (affinity) return;
    const local = kind === 'local' || kind === 'nodeport-local';
    const joined = local ? slots.local : slots.cluster;
    if (joined === '') return;
    const values = slotValues(joined, local ? ids.local : ids.cluster);
    runs.push({ set: endpointsMapName(kind, protocol), prefix: frontend.join(' . '), values });
  };

  el(CLUSTER_IPS_SET, [sp.clusterIP]);
  const clusterIPFrontend = [sp.clusterIP, proto, port];
  if (internal.noEndpoints === undefined) {
    if (sp.internalPolicyLocal) {
      el(SERVICE_IPS_MAP, clusterIPFrontend, [target('local')]);
      endpoints('local', clusterIPFrontend);
    } else {
      el(SERVICE_IPS_MAP, clusterIPFrontend, [target('cluster')]);
      endpoints('cluster', clusterIPFrontend);
    }
  } else {
    el(NO_ENDPOINT_SERVICES_MAP, clusterIPFrontend, [verdict(internal.noEndpoints)], comment);
  }

  // External frontends go to the shared external chains whenever the Service has endpoints (as upstream's
  // per-port external chain: masquerade, short-circuit pod and node traffic to the Cluster view, then the
  // policy's view); each keeps its own dispatch entries for both views. The no-endpoint maps take what the
  // policy leaves without one.
  const noExternal = external.noEndpoints;
  const localExternal = sp.externalPolicyLocal && noExternal === undefined && policy.usesLocalEndpoints;
  const externalFrontend = (kind: ExternalFrontendKind, frontend: string[]): void => {
    if (policy.hasEndpoints) {
      el(kind.serviceMap, frontend, [sp.externalPolicyLocal ? kind.localVerdict : kind.clusterVerdict]);
      if (policy.usesClusterEndpoints) {
        el(kind.clusterDispatchMap, frontend, [target(kind.cluster)]);
        endpoints(kind.cluster, frontend);
      }
      if (localExternal) {
        el(kind.localDispatchMap, frontend, [target(kind.local)]);
        endpoints(kind.local, frontend);
      }
    }
    if (noExternal !== undefined) el(kind.noEndpointsMap, frontend, [verdict(noExternal)], comment);
  };
  const ipFrontend = (ip: string): void => externalFrontend(EXTERNAL_IP_FRONTEND, [ip, proto, port]);
  for (const ip of sp.externalIPs) ipFrontend(ip);
  const sources = firewall ? firewallSources(firewall.sourceRanges, firewall.allowedVIPs) : [];
  for (const ip of sp.loadBalancerVIPs) {
    ipFrontend(ip);
    if (firewall === undefined) continue;
    el(FIREWALL_FRONTENDS_SET, [ip, proto, port]);
    for (const source of sources) el(FIREWALL_ALLOW_SET, [ip, proto, port, source]);
  }
  if (sp.nodePort !== 0) externalFrontend(NODEPORT_FRONTEND, [proto, String(sp.nodePort)]);

  for (const ep of policy.reachableEndpoints) {
    if (ep.isLocal) el(HAIRPIN_SET, [ep.ip, ep.ip, proto, String(ep.port)]);
  }
  const { chainOps, chains, affinitySets } = affinity
    ? affinityChains(policy, node)
    : { chainOps: [], chains: [], affinitySets: [] };
  const problem = firstProblem(chainOps, runs, elements);
  if (problem !== undefined) return { ok: false, key: sp.key, serviceName: sp.serviceName, reason: problem };

  return {
    ok: true,
    value: {
      key: sp.key,
      serviceName: sp.serviceName,
      elements,
      runs,
      sharedChains: [...dispatchChains],
      chainOps,
      chains,
      affinitySets,
      slots,
      slotsMoved,
      noLocalInternal: policy.noLocalEndpointsInternal,
      noLocalExternal: policy.noLocalEndpointsExternal,
    },
  };
}
