// ClientIP session affinity, as upstream writes it (upstream-backends.md §1.7): one `endpoint-…` chain and one
// `affinity-…` set per endpoint, the chain recording the client in the set, and a policy chain that first sends a
// known client to its endpoint's chain. Both layouts use this shape for affinity ports: the set is what remembers
// the client, and nft has no per-element "remember which value was picked" for a shared map.
import type { NftRule, NftSet } from '../../netfilter/nft/objects.js';
import type { Endpoint } from '../../model/endpoint.js';
import type { ServicePort } from '../../model/service-port.js';
import type { NodeNetworkConfig } from '../../sync/backend.js';
import { AFFINITY_SET_PREFIX, ENDPOINT_CHAIN_PREFIX, endpointChainBase } from './naming.js';
import { familyWords } from './setup.js';

export function affinityEndpointChain(sp: ServicePort, ep: Endpoint): string {
  return ENDPOINT_CHAIN_PREFIX + endpointChainBase(sp.name, ep);
}

export function affinitySetName(sp: ServicePort, ep: Endpoint): string {
  return AFFINITY_SET_PREFIX + endpointChainBase(sp.name, ep);
}

/** The rules of a policy chain that picks one of `eps` with affinity: known clients first, then a random pick. */
export function affinitySelectionRules(
  sp: ServicePort,
  eps: readonly Endpoint[],
  chain: string,
  node: Pick<NodeNetworkConfig, 'family'>,
): NftRule[] {
  const w = familyWords(node);
  const rules: NftRule[] = eps.map((ep) => ({
    kind: 'rule',
    chain,
    rule: `${w.ip} saddr @${affinitySetName(sp, ep)} goto ${affinityEndpointChain(sp, ep)}`,
  }));
  const entries = eps.map((ep, i) => `${i} : goto ${affinityEndpointChain(sp, ep)}`).join(' , ');
  rules.push({ kind: 'rule', chain, rule: `numgen random mod ${eps.length} vmap { ${entries} }` });
  return rules;
}

/** One endpoint's affinity set and chain (record the client, then DNAT to the endpoint). */
export function affinityEndpoint(
  sp: ServicePort,
  ep: Endpoint,
  node: Pick<NodeNetworkConfig, 'family'>,
): { readonly set: NftSet; readonly chain: string; readonly rules: readonly NftRule[] } {
  const w = familyWords(node);
  const chain = affinityEndpointChain(sp, ep);
  const setName = affinitySetName(sp, ep);
  const target = node.family === 'IPv6' ? `[${ep.ip}]:${ep.port}` : `${ep.ip}:${ep.port}`;
  return {
    set: {
      kind: 'set',
      name: setName,
      type: w.addrType,
      flags: ['dynamic', 'timeout'],
      timeout: sp.stickyMaxAgeSeconds,
    },
    chain,
    rules: [
      { kind: 'rule', chain, rule: `update @${setName} { ${w.ip} saddr }` },
      { kind: 'rule', chain, rule: `meta l4proto ${sp.protocol.toLowerCase()} dnat to ${target}` },
    ],
  };
}
