// Test helpers for nftables mode: upstream's vectors as inputs and upstream's golden-text normalisation
// (sortNFTablesTransaction), written from the vectors' `comparison` description. Services and EndpointSlices go
// through the real model with test/helpers/model-cluster.ts.
import { readFileSync } from 'node:fs';
import type { EndpointSlice, Service } from '../../../packages/agent/src/api/objects.js';
import type { LocalTrafficDetector } from '../../../packages/agent/src/model/local-detector.js';
import { nodePortAddressesFor } from '../../../packages/agent/src/model/nodeport-addresses.js';
import { elementLines } from '../../../packages/agent/src/netfilter/nft/parse.js';
import type { NodeNetworkConfig } from '../../../packages/agent/src/sync/backend.js';

import { VECTORS_DIR } from '../../helpers/vectors.js';
import type { VectorObjectAction, VectorProxierConfig } from '../../helpers/vectors.js';

export { VECTORS_DIR };

export interface ProxierConfig extends VectorProxierConfig {
  readonly localTrafficDetector: LocalTrafficDetector;
  readonly serviceCIDRs: string;
  readonly nodePortAddresses: readonly string[];
}

export type VectorAction =
  VectorObjectAction | { readonly ageStaleChainsSeconds: number } | { readonly sync: true };

export interface VectorStep {
  readonly description: string;
  readonly actions: readonly VectorAction[];
  readonly expected: string;
  readonly expectedLastTransactionOperations?: number;
  readonly expectedStaleChains?: readonly string[];
}

export interface NftVector {
  readonly test: string;
  readonly proxierConfig: ProxierConfig;
  readonly services?: readonly Service[];
  readonly endpointSlices?: readonly EndpointSlice[];
  readonly expected?: string;
  readonly preexistingState?: string;
  readonly steps?: readonly VectorStep[];
}

export function loadVector(name: string): NftVector {
  return JSON.parse(readFileSync(`${VECTORS_DIR}/${name}.json`, 'utf8')) as NftVector;
}

export function nodeConfigFromVector(c: ProxierConfig): NodeNetworkConfig {
  return {
    family: c.ipFamily,
    nodeName: c.nodeName,
    nodeIPs: [c.nodeIP],
    localDetector: c.localTrafficDetector,
    masqueradeMark: c.masqueradeMark,
    masqueradeAll: c.masqueradeAll,
    nodePortAddresses: nodePortAddressesFor(c.ipFamily, c.nodePortAddresses).value,
    hostInterfaces: new Map(Object.entries(c.hostInterfaces)),
    serviceCIDRs: c.serviceCIDRs
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s !== ''),
  };
}

/**
 * The text's operations, one line each as serializeOperations (and upstream's vectors) write them: blank and `#`
 * lines dropped, a statement of several elements (render's and the executor's text) split into one line per
 * element, in its order.
 */
export function nftOperationLines(text: string): string[] {
  return text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'))
    .flatMap(elementLines);
}

const TYPE_ORDER = ['table', 'chain', 'rule', 'set', 'map', 'element'];

/**
 * Upstream's sortNFTablesTransaction as the vectors describe it: drop blank and `#` lines; stable-sort by object
 * type (table, chain, rule, set, map, element), then by object name (5th word); rules keep their relative order;
 * other lines with the same name sort by their full text.
 */
export function normaliseNft(text: string): string {
  const lines = nftOperationLines(text);
  const keyed = lines.map((line) => {
    const words = line.split(' ');
    return { line, type: TYPE_ORDER.indexOf(words[1] ?? ''), name: words[4] ?? '' };
  });
  keyed.sort((a, b) => {
    if (a.type !== b.type) return a.type - b.type;
    if (a.name !== b.name) return a.name < b.name ? -1 : 1;
    if (TYPE_ORDER[a.type] === 'rule') return 0;
    return a.line < b.line ? -1 : a.line > b.line ? 1 : 0;
  });
  return keyed.map((k) => k.line).join('\n') + '\n';
}

/** The i-th of a numbered set of ClusterIPs (172.30.0.0/16), and of pod IPs in 10.NET.0.0/16. */
export const clusterIP = (i: number): string => `172.30.${Math.floor(i / 250)}.${(i % 250) + 1}`;
export const podIP = (net: number, i: number): string => `10.${net}.${Math.floor(i / 250)}.${(i % 250) + 1}`;

/** Service ns/svcI: a ClusterIP (clusterIP(i)) with one TCP port, p80. */
export function service(i: number): Service {
  return {
    metadata: { namespace: 'ns', name: `svc${i}` },
    spec: { type: 'ClusterIP', clusterIP: clusterIP(i), ports: [{ name: 'p80', port: 80, protocol: 'TCP' }] },
  };
}

/** svcI's one EndpointSlice: an endpoint per address, all on another node. */
export function slice(i: number, ips: readonly string[]): EndpointSlice {
  return {
    metadata: { namespace: 'ns', name: `svc${i}-1`, labels: { 'kubernetes.io/service-name': `svc${i}` } },
    addressType: 'IPv4',
    endpoints: ips.map((ip) => ({ addresses: [ip], nodeName: 'other-node' })),
    ports: [{ name: 'p80', port: 80, protocol: 'TCP' }],
  };
}
