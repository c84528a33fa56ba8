// The backend's cache holds restore text, not rule objects: each service port's rules are serialized once, when
// they are rendered, into a few strings (its lines in the shared top-level chains, its chain declarations, its
// chains' rules). A sync then joins cached strings; only changed service ports are rendered and serialized again.
// Strings keep the cache's memory close to the size of the rules themselves (one byte per character for ASCII),
// where arrays of token arrays cost several times that. The text still comes only from serialize.ts.
import {
  chainsText,
  COMMIT_LINE,
  deleteChainsText,
  rulesText,
  tableHeader,
} from '../../netfilter/iptables/serialize.js';
import type { ServicePortRules, TopLevelRules } from './render.js';

/** One service port's contribution to a restore, as finished text (every line ends in a newline). */
export interface ServicePortText {
  /** `-A` lines in the filter table's top-level chains. */
  readonly filterRules: string;
  readonly filterRuleCount: number;
  /** `-A` lines in nat KUBE-SERVICES and KUBE-NODEPORTS. */
  readonly natTopRules: string;
  readonly natTopRuleCount: number;
  /** The port's own nat chains (for stale-chain detection). */
  readonly chains: readonly string[];
  /** `:CHAIN - [0:0]` lines for `chains`. */
  readonly chainLines: string;
  /** `-A` lines of those chains. */
  readonly chainRules: string;
  readonly chainRuleCount: number;
  readonly noLocalEndpointsInternal: boolean;
  readonly noLocalEndpointsExternal: boolean;
}

export function servicePortText(r: ServicePortRules): ServicePortText {
  return {
    filterRules: rulesText(r.filterRules),
    filterRuleCount: r.filterRules.length,
    natTopRules: rulesText(r.natTopRules),
    natTopRuleCount: r.natTopRules.length,
    chains: r.chains,
    chainLines: chainsText(r.chains),
    chainRules: rulesText(r.chainRules),
    chainRuleCount: r.chainRules.length,
    noLocalEndpointsInternal: r.noLocalEndpointsInternal,
    noLocalEndpointsExternal: r.noLocalEndpointsExternal,
  };
}

/** The fixed top-level chains and rules of one family, as text (they depend only on the node). */
export interface TopLevelText {
  readonly filterChainLines: string;
  readonly filterChainCount: number;
  /** Written after every service port's filter rules. */
  readonly filterRules: string;
  readonly filterRuleCount: number;
  readonly natChainLines: string;
  readonly natChainCount: number;
  /** Written after every service port's KUBE-SERVICES / KUBE-NODEPORTS rules (the NodePorts jump is last). */
  readonly natRules: string;
  readonly natRuleCount: number;
}

export function topLevelText(top: TopLevelRules): TopLevelText {
  return {
    filterChainLines: chainsText(top.filterChains),
    filterChainCount: top.filterChains.length,
    filterRules: rulesText(top.filterRules),
    filterRuleCount: top.filterRules.length,
    natChainLines: chainsText(top.natChains),
    natChainCount: top.natChains.length,
    natRules: rulesText(top.natRules),
    natRuleCount: top.natRules.length,
  };
}

/** Every service port's top-level lines joined, in sync order; rebuilt only when one of them changes. */
export interface JoinedTopRules {
  readonly filterRules: string;
  readonly filterRuleCount: number;
  readonly natTopRules: string;
  readonly natTopRuleCount: number;
}

export function joinTopRules(ports: Iterable<ServicePortText>): JoinedTopRules {
  const filter: string[] = [];
  const nat: string[] = [];
  let filterRuleCount = 0;
  let natTopRuleCount = 0;
  for (const p of ports) {
    if (p.filterRuleCount > 0) filter.push(p.filterRules);
    if (p.natTopRuleCount > 0) nat.push(p.natTopRules);
    filterRuleCount += p.filterRuleCount;
    natTopRuleCount += p.natTopRuleCount;
  }
  return { filterRules: filter.join(''), filterRuleCount, natTopRules: nat.join(''), natTopRuleCount };
}

export interface RestoreTextInput {
  readonly top: TopLevelText;
  readonly joined: JoinedTopRules;
  /** The service ports whose own chains are (re)written this time, in sync order. */
  readonly written: Iterable<ServicePortText>;
  /** Stale per-service chains to flush and delete. */
  readonly staleChains: readonly string[];
}

export interface RestoreText {
  readonly text: string;
  /** Lines in `text` (headers and COMMITs included). */
  readonly lines: number;
  /** `-A` lines per table (upstream's iptables_last metric). */
  readonly filterRules: number;
  readonly natRules: number;
}

/**
 * One iptables-restore input, the same text `serializeRestore(assembleRestore(…))` gives for the same rules:
 * filter then nat, the top-level chains always rewritten, the written ports' chains after them, stale chains
 * declared (so they are flushed) and then deleted.
 */
export function assembleRestoreText(input: RestoreTextInput): RestoreText {
  const { top, joined, staleChains } = input;
  const chainLines: string[] = [];
  const chainRules: string[] = [];
  let chainCount = 0;
  let chainRuleCount = 0;
  for (const p of input.written) {
    chainLines.push(p.chainLines);
    chainRules.push(p.chainRules);
    chainCount += p.chains.length;
    chainRuleCount += p.chainRuleCount;
  }
  const text =
    tableHeader('filter') +
    top.filterChainLines +
    joined.filterRules +
    top.filterRules +
    COMMIT_LINE +
    tableHeader('nat') +
    top.natChainLines +
    chainLines.join('') +
    chainsText(staleChains) +
    joined.natTopRules +
    top.natRules +
    chainRules.join('') +
    deleteChainsText(staleChains) +
    COMMIT_LINE;
  const filterRules = joined.filterRuleCount + top.filterRuleCount;
  const natRules = joined.natTopRuleCount + top.natRuleCount + chainRuleCount;
  const lines =
    2 +
    top.filterChainCount +
    filterRules +
    2 +
    top.natChainCount +
    chainCount +
    2 * staleChains.length +
    natRules;
  return { text, lines, filterRules, natRules };
}
