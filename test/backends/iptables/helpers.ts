// Shared by the iptables backend tests: upstream's vectors, their node config and upstream's canonical ordering
// of iptables-restore text (the model pipeline is test/helpers/model-cluster.ts).
import { readFileSync } from 'node:fs';
import type { EndpointSlice, Service } from '../../../packages/agent/src/api/objects.js';
import type { IptablesExtras } from '../../../packages/agent/src/backends/iptables/render.js';
import { tokenizeLine } from '../../../packages/agent/src/netfilter/iptables/parse.js';
import type { NodeNetworkConfig } from '../../../packages/agent/src/sync/backend.js';
import { nodeNetworkConfig } from '../../../packages/agent/src/sync/node-network.js';

import { VECTORS_DIR } from '../../helpers/vectors.js';
import type { VectorObjectAction, VectorProxierConfig } from '../../helpers/vectors.js';

export { VECTORS_DIR };
/** A one-family IPv4 node for tests that need no particular node (test/dataplane imports it from here). */
export { testNode } from '../../helpers/model-values.js';

export interface ProxierConfig extends VectorProxierConfig {
  readonly localTrafficDetector: { readonly mode: string; readonly cidr: string };
  readonly nodePortAddresses: readonly string[] | null;
  readonly localhostNodePorts: boolean;
  readonly nfacctCountersAvailable: readonly string[];
  readonly hasRandomFully: boolean;
  readonly conntrackTCPBeLiberal: boolean;
}

export type VectorAction =
  | VectorObjectAction
  | { readonly externalRule: string }
  | { readonly sync: true; readonly expectFailure?: boolean };

export interface IptVector {
  readonly test: string;
  readonly proxierConfig: ProxierConfig;
  readonly comparison: string;
  readonly services?: readonly Service[];
  readonly endpointSlices?: readonly EndpointSlice[];
  readonly expected?: string;
  readonly steps?: readonly {
    readonly description: string;
    readonly actions: readonly VectorAction[];
    readonly consistencyCheck: boolean;
    readonly expected: string;
  }[];
}

export function loadVector(name: string): IptVector {
  return JSON.parse(readFileSync(`${VECTORS_DIR}/${name}`, 'utf8')) as IptVector;
}

export function vectorNode(c: ProxierConfig): NodeNetworkConfig {
  const { config, problems } = nodeNetworkConfig({
    family: c.ipFamily,
    nodeName: c.nodeName,
    nodeIPs: [c.nodeIP],
    detectLocalMode: 'ClusterCIDR',
    clusterCIDRs: [c.localTrafficDetector.cidr],
    nodePortAddresses: c.nodePortAddresses ?? [],
    masqueradeAll: c.masqueradeAll,
    masqueradeBit: 14,
    masqueradeMark: c.masqueradeMark,
    hostInterfaces: new Map(Object.entries(c.hostInterfaces)),
  });
  if (problems.length > 0) throw new Error(`vector node config: ${problems.join('; ')}`);
  return config;
}

export function vectorExtras(c: ProxierConfig): IptablesExtras {
  return {
    localhostNodePorts: c.localhostNodePorts,
    nfacctCounters: c.nfacctCountersAvailable,
    randomFully: c.hasRandomFully,
    conntrackTCPBeLiberal: c.conntrackTCPBeLiberal,
  };
}

const NODEPORTS_LAST = 'kubernetes service nodeports; NOTE: this must be the last rule in this chain';

function chainRank(name: string): [number, string] {
  if (name === 'KUBE-NODEPORTS') return [0, ''];
  if (name === 'KUBE-SERVICES') return [1, ''];
  if (name.startsWith('KUBE-')) return [2, name];
  return [3, name];
}

function compareChains(a: string, b: string): number {
  const [ra, na] = chainRank(a);
  const [rb, nb] = chainRank(b);
  if (ra !== rb) return ra - rb;
  return na < nb ? -1 : na > nb ? 1 : 0;
}

function ruleServiceKey(line: string): { key: string; last: boolean } {
  const tokens = tokenizeLine(line);
  const i = tokens.indexOf('--comment');
  const comment = i >= 0 ? (tokens[i + 1] ?? '') : '';
  if (comment === NODEPORTS_LAST) return { key: '', last: true };
  const m = /^[^ :]*/.exec(comment);
  return { key: m ? m[0] : '', last: false };
}

/**
 * Upstream's sortIPTablesRules, written from its description: tables by name; chains KUBE-NODEPORTS, then
 * KUBE-SERVICES, then other KUBE-* by name, then the rest by name; rules grouped by chain in that order and kept in
 * their order, except that KUBE-NODEPORTS and KUBE-SERVICES rules are stable-sorted by the service name in their
 * comment with the "must be the last rule" jump last; `-X` lines after the rules, in chain order.
 */
export function canonicalRestore(text: string): string {
  interface Table {
    name: string;
    chains: Map<string, string>;
    rules: Map<string, string[]>;
    deletes: string[];
  }
  const tables: Table[] = [];
  let t: Table | undefined;
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    if (line.startsWith('*')) {
      t = { name: line.slice(1), chains: new Map(), rules: new Map(), deletes: [] };
      tables.push(t);
    } else if (line === 'COMMIT') {
      t = undefined;
    } else if (!t) {
      throw new Error(`line outside a table: ${line}`);
    } else if (line.startsWith(':')) {
      const name = tokenizeLine(line.slice(1))[0] ?? '';
      t.chains.set(name, line);
    } else if (line.startsWith('-X ')) {
      t.deletes.push(line);
    } else {
      const chain = tokenizeLine(line)[1] ?? '';
      const list = t.rules.get(chain) ?? [];
      list.push(line);
      t.rules.set(chain, list);
    }
  }
  tables.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const out: string[] = [];
  for (const table of tables) {
    out.push('*' + table.name);
    const chainNames = [...table.chains.keys()].sort(compareChains);
    for (const c of chainNames) out.push(table.chains.get(c) as string);
    const ruleChains = [...new Set([...chainNames, ...table.rules.keys()])].sort(compareChains);
    for (const c of ruleChains) {
      let rules = table.rules.get(c) ?? [];
      if (c === 'KUBE-NODEPORTS' || c === 'KUBE-SERVICES') {
        const keyed = rules.map((line, i) => ({ line, i, ...ruleServiceKey(line) }));
        keyed.sort((a, b) => {
          if (a.last !== b.last) return a.last ? 1 : -1;
          if (a.key !== b.key) return a.key < b.key ? -1 : 1;
          return a.i - b.i;
        });
        rules = keyed.map((k) => k.line);
      }
      out.push(...rules);
    }
    const deletes = [...table.deletes].sort((a, b) => compareChains(a.slice(3), b.slice(3)));
    out.push(...deletes);
    out.push('COMMIT');
  }
  return out.join('\n') + '\n';
}

/**
 * Upstream's consistency check (checkIPTablesRuleJumps): every jump in the nat table goes to an existing chain,
 * and every per-service chain is jumped to from somewhere.
 */
export function natConsistencyProblems(
  chains: ReadonlyMap<string, readonly (readonly string[])[]>,
): string[] {
  const problems: string[] = [];
  const targets = new Set<string>();
  for (const [chain, rules] of chains) {
    for (const r of rules) {
      const j = r.indexOf('-j');
      const target = j >= 0 ? r[j + 1] : undefined;
      if (target === undefined || !target.startsWith('KUBE-')) continue;
      targets.add(target);
      if (!chains.has(target)) problems.push(`${chain} jumps to missing ${target}`);
    }
  }
  for (const chain of chains.keys()) {
    if (/^KUBE-(SVC|SVL|EXT|FW|SEP)-/.test(chain) && !targets.has(chain)) problems.push(`${chain} is unused`);
  }
  return problems;
}
