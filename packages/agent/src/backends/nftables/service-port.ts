// What one service port needs in the table (upstream-backends.md §1.5–1.7, "v2"): its chains and their rules, its
// affinity sets, and its elements in the shared sets and maps. Pure; the planner decides what to send.
import type { NftChain, NftElement, NftOperation, NftRule, NftSet } from '../../netfilter/nft/objects.js';
import { validateOperation } from '../../netfilter/nft/validate.js';
import type { ElementRun } from './element-ledger.js';
import type { Endpoint } from '../../model/endpoint.js';
import type { NoEndpointsVerdict, ServicePortPolicy } from '../../model/port-policy.js';
import type { NodeNetworkConfig } from '../../sync/backend.js';
import { affinityEndpoint, affinitySelectionRules } from './affinity.js';
import {
  CLUSTER_IPS_SET,
  EXTERNAL_CHAIN_PREFIX,
  FIREWALL_CHAIN_PREFIX,
  FIREWALL_IPS_MAP,
  HAIRPIN_SET,
  LOCAL_CHAIN_PREFIX,
  NO_ENDPOINT_NODEPORTS_MAP,
  NO_ENDPOINT_SERVICES_MAP,
  REJECT_CHAIN,
  SERVICE_CHAIN_PREFIX,
  SERVICE_IPS_MAP,
  SERVICE_NODEPORTS_MAP,
  servicePortChainBase,
} from './naming.js';
import { familyWords, localTrafficMatch, markSet } from './setup.js';

export interface RenderedServicePort {
  readonly key: string;
  readonly serviceName: string;
  /** Chain and affinity-set operations (add set, add+flush chain, rules), replayed when the port is rewritten. */
  readonly chainOps: readonly NftOperation[];
  /** Names of every chain this port uses (to tell active chains from stale ones). */
  readonly chains: readonly string[];
  readonly affinitySets: readonly string[];
  /** Chains other ports jump to as well (the flat layout's dispatch chains; upstream's layout has none). */
  readonly sharedChains: readonly string[];
  /** Elements in the shared sets and maps (always diffed against the kernel). */
  readonly elements: readonly NftElement[];
  /** More elements of the shared maps, as runs of consecutive indexes (the flat layout's endpoint entries). */
  readonly runs?: readonly ElementRun[];
  readonly noLocalInternal: boolean;
  readonly noLocalExternal: boolean;
}

export type RenderResult =
  | { readonly ok: true; readonly value: RenderedServicePort }
  | { readonly ok: false; readonly key: string; readonly serviceName: string; readonly reason: string };

export interface RenderContext {
  readonly node: NodeNetworkConfig;
}

/** Renders one service port from its policy (src/model/port-policy.ts), which decided everything but the text. */
export function renderServicePort(policy: ServicePortPolicy, ctx: RenderContext): RenderResult {
  const { node } = ctx;
  const sp = policy.servicePort;
  const { internal, external, firewall } = policy;
  const w = familyWords(node);
  const proto = sp.protocol.toLowerCase();
  const port = String(sp.port);
  const base = servicePortChainBase(sp.name);
  const clusterChain = SERVICE_CHAIN_PREFIX + base;
  const localChain = LOCAL_CHAIN_PREFIX + base;
  const externalChain = EXTERNAL_CHAIN_PREFIX + base;
  const firewallChain = FIREWALL_CHAIN_PREFIX + base;
  const policyChain = (local: boolean): string => (local ? localChain : clusterChain);
  const verdict = (v: NoEndpointsVerdict): string => (v === 'reject' ? `goto ${REJECT_CHAIN}` : 'drop');

  const elements: NftElement[] = [];
  const el = (set: string, key: string[], value?: string, comment?: string): void =>
    void elements.push({
      kind: 'element',
      set,
      key,
      ...(value !== undefined ? { value: [value] } : {}),
      ...(comment !== undefined ? { comment } : {}),
    });
  const comment = sp.nameString;

  el(CLUSTER_IPS_SET, [sp.clusterIP]);
  if (internal.noEndpoints === undefined)
    el(SERVICE_IPS_MAP, [sp.clusterIP, proto, port], `goto ${policyChain(sp.internalPolicyLocal)}`);
  else el(NO_ENDPOINT_SERVICES_MAP, [sp.clusterIP, proto, port], verdict(internal.noEndpoints), comment);

  // External frontends reach the external chain whenever the Service has endpoints (it short-circuits pod and
  // node traffic before applying a Local policy); the no-endpoint maps take what the policy leaves without one.
  const noExternal = external.noEndpoints;
  for (const ip of sp.externalIPs) {
    if (policy.hasEndpoints) el(SERVICE_IPS_MAP, [ip, proto, port], `goto ${externalChain}`);
    if (noExternal !== undefined)
      el(NO_ENDPOINT_SERVICES_MAP, [ip, proto, port], verdict(noExternal), comment);
  }
  for (const ip of sp.loadBalancerVIPs) {
    if (policy.hasEndpoints) el(SERVICE_IPS_MAP, [ip, proto, port], `goto ${externalChain}`);
    if (firewall !== undefined) el(FIREWALL_IPS_MAP, [ip, proto, port], `goto ${firewallChain}`);
    if (noExternal !== undefined)
      el(NO_ENDPOINT_SERVICES_MAP, [ip, proto, port], verdict(noExternal), comment);
  }
  if (sp.nodePort !== 0) {
    if (policy.hasEndpoints) el(SERVICE_NODEPORTS_MAP, [proto, String(sp.nodePort)], `goto ${externalChain}`);
    if (noExternal !== undefined)
      el(NO_ENDPOINT_NODEPORTS_MAP, [proto, String(sp.nodePort)], verdict(noExternal), comment);
  }

  // Chains and rules.
  const chainOrder: NftChain[] = [];
  const rules: NftRule[] = [];
  const affinitySets: NftSet[] = [];
  const chain = (name: string): void => void chainOrder.push({ kind: 'chain', name });
  const rule = (chainName: string, text: string, ruleComment?: string): void =>
    void rules.push({
      kind: 'rule',
      chain: chainName,
      rule: text,
      ...(ruleComment !== undefined ? { comment: ruleComment } : {}),
    });

  if (policy.usesClusterEndpoints) chain(clusterChain);
  if (policy.usesLocalEndpoints) chain(localChain);
  if (external.viaExternalChain) {
    chain(externalChain);
    if (!sp.externalPolicyLocal) {
      rule(externalChain, markSet(node), 'masquerade');
    } else {
      const fromPod = localTrafficMatch(node, false);
      if (fromPod !== undefined)
        rule(externalChain, `${fromPod} goto ${clusterChain}`, 'short-circuit pod traffic');
      rule(externalChain, `fib saddr type local ${markSet(node)}`, 'masquerade local traffic');
      rule(externalChain, `fib saddr type local goto ${clusterChain}`, 'short-circuit local traffic');
    }
    if (external.noEndpoints === undefined)
      rule(externalChain, `goto ${policyChain(sp.externalPolicyLocal)}`);
  }
  if (firewall !== undefined) {
    chain(firewallChain);
    const sources = [...firewall.sourceRanges, ...firewall.allowedVIPs];
    rule(firewallChain, `${w.ip} saddr != { ${sources.join(' , ')} } drop`);
  }

  const writeEndpointSelection = (chainName: string, eps: readonly Endpoint[]): void => {
    if (sp.sessionAffinityClientIP) {
      for (const r of affinitySelectionRules(sp, eps, chainName, node)) rules.push(r);
    } else {
      const entries = eps.map((ep, i) => `${i} : ${ep.ip} . ${ep.port}`).join(' , ');
      rule(
        chainName,
        `meta l4proto ${proto} dnat ${w.ip} addr . port to numgen random mod ${eps.length} map { ${entries} }`,
      );
    }
  };
  if (policy.usesClusterEndpoints) writeEndpointSelection(clusterChain, policy.clusterEndpoints);
  if (policy.usesLocalEndpoints) writeEndpointSelection(localChain, policy.localEndpoints);

  for (const ep of policy.reachableEndpoints) {
    if (ep.isLocal) el(HAIRPIN_SET, [ep.ip, ep.ip, proto, String(ep.port)]);
    if (!sp.sessionAffinityClientIP) continue;
    const a = affinityEndpoint(sp, ep, node);
    affinitySets.push(a.set);
    chain(a.chain);
    for (const r of a.rules) rules.push(r);
  }

  const chainOps: NftOperation[] = [];
  for (const s of affinitySets) chainOps.push({ verb: 'add', object: s });
  for (const c of chainOrder) {
    chainOps.push({ verb: 'add', object: c });
    chainOps.push({ verb: 'flush', object: c });
  }
  for (const r of rules) chainOps.push({ verb: 'add', object: r });

  // Names come from the cluster: a Service whose names nft cannot hold is skipped, never sent.
  for (const op of chainOps) {
    const problem = validateOperation(op);
    if (problem !== undefined)
      return { ok: false, key: sp.key, serviceName: sp.serviceName, reason: problem };
  }
  for (const e of elements) {
    const problem = validateOperation({ verb: 'add', object: e });
    if (problem !== undefined)
      return { ok: false, key: sp.key, serviceName: sp.serviceName, reason: problem };
  }

  return {
    ok: true,
    value: {
      key: sp.key,
      serviceName: sp.serviceName,
      chainOps,
      chains: chainOrder.map((c) => c.name),
      affinitySets: affinitySets.map((s) => s.name),
      sharedChains: [],
      elements,
      noLocalInternal: policy.noLocalEndpointsInternal,
      noLocalExternal: policy.noLocalEndpointsExternal,
    },
  };
}
