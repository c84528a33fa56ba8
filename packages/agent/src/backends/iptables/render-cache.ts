// iptables mode's render cache: each service port's rules, rendered from its policy and serialized once into
// restore text (restore-text.ts), kept between syncs with the ports in sync order and every port's top-level
// lines joined. A sync renders only the ports that changed; a restore is then joined from cached strings. The
// backend and `render` (renderIptablesRestore) both build their restore input through this cache.
import type { Endpoint } from '../../model/endpoint.js';
import type { FeatureGates } from '../../model/feature-gates.js';
import { policyNode, servicePortPolicy } from '../../model/port-policy.js';
import type { ServicePort } from '../../model/service-port.js';
import type { NodeNetworkConfig, ProxySnapshot } from '../../sync/backend.js';
import { isServiceChainName } from './naming.js';
import { renderServicePort } from './service-port.js';
import type { IptablesExtras, RenderContext } from './render.js';
import {
  DEFAULT_IPTABLES_EXTRAS,
  LARGE_CLUSTER_ENDPOINTS_THRESHOLD,
  renderTopLevel,
  totalEndpoints,
} from './render.js';
import type { JoinedTopRules, RestoreText, ServicePortText, TopLevelText } from './restore-text.js';
import { assembleRestoreText, joinTopRules, servicePortText, topLevelText } from './restore-text.js';

const NO_ENDPOINTS: readonly Endpoint[] = Object.freeze([]);

/** What one refresh did. */
export interface CacheRefresh {
  /** The ports rendered afresh, in sync order: their own chains are what a partial restore writes. */
  readonly written: readonly ServicePortText[];
  /** Ports whose ClusterIP / external traffic is dropped for want of a local endpoint, over all ports. */
  readonly noLocalInternal: number;
  readonly noLocalExternal: number;
  /** Rules in every port's own chains (for the iptables_total metric). */
  readonly natChainRuleTotal: number;
}

/**
 * One service port's cached rendering. Mutated in place when the port is rendered again, so `order` (the ports in
 * sync order) keeps pointing at the live entries without being rebuilt.
 */
interface CacheEntry {
  readonly key: string;
  readonly name: string;
  servicePort: ServicePort;
  endpoints: readonly Endpoint[];
  largeClusterMode: boolean;
  text: ServicePortText;
}

function compareEntries(a: CacheEntry, b: CacheEntry): number {
  if (a.name !== b.name) return a.name < b.name ? -1 : 1;
  return a.key < b.key ? -1 : a.key > b.key ? 1 : 0;
}

/** Inserts `e` into the sorted `order` at its place (binary search). */
function insertSorted(order: CacheEntry[], e: CacheEntry): void {
  let lo = 0;
  let hi = order.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (compareEntries(order[mid] as CacheEntry, e) < 0) lo = mid + 1;
    else hi = mid;
  }
  order.splice(lo, 0, e);
}

export class IptablesRenderCache {
  private readonly node: NodeNetworkConfig;
  private readonly extras: IptablesExtras;
  private readonly featureGates: FeatureGates | undefined;
  private readonly cache = new Map<string, CacheEntry>();
  /** The cached entries in sync order. */
  private order: CacheEntry[] = [];
  /** Every port's top-level lines joined in `order`; undefined when one changed and it must be joined again. */
  private joinedRules: JoinedTopRules | undefined;
  /** The node's fixed top-level rules (they depend only on the node and the options). */
  readonly top: TopLevelText;
  private cacheTopology = '';
  private large = false;

  constructor(node: NodeNetworkConfig, extras: IptablesExtras, featureGates: FeatureGates | undefined) {
    this.node = node;
    this.extras = extras;
    this.featureGates = featureGates;
    this.top = topLevelText(renderTopLevel(node, extras));
  }

  /** More than 1,000 endpoints at the last refresh: no per-endpoint comments. */
  get largeClusterMode(): boolean {
    return this.large;
  }

  /** Service ports cached (all of the last snapshot's). */
  get size(): number {
    return this.order.length;
  }

  /** Every port's top-level lines, joined in sync order. */
  get joined(): JoinedTopRules {
    this.joinedRules ??= joinTopRules(this.orderedTexts());
    return this.joinedRules;
  }

  /**
   * The restore input: the top-level chains whole, the own chains of `written` (every port on a full sync), and
   * `staleChains` flushed and deleted.
   */
  restore(written: Iterable<ServicePortText>, staleChains: readonly string[]): RestoreText {
    return assembleRestoreText({ top: this.top, joined: this.joined, written, staleChains });
  }

  /**
   * Brings the cache up to date with the snapshot: renders (and serializes) only the service ports that changed,
   * drops removed ones, and keeps the sync order and the joined top-level lines valid. Allocates per changed port,
   * not per port: an unchanged port costs two map lookups.
   */
  refresh(snapshot: ProxySnapshot, changedServices: ReadonlySet<string>, full: boolean): CacheRefresh {
    // Rendering depends on the node's topology; a change there (upstream forces a full sync) voids the cache.
    const topologyKey = JSON.stringify([snapshot.topology.nodeName, snapshot.topology.zone ?? null]);
    if (topologyKey !== this.cacheTopology) {
      this.cache.clear();
      this.order = [];
      this.joinedRules = undefined;
      this.cacheTopology = topologyKey;
    }
    this.large = totalEndpoints(snapshot) > LARGE_CLUSTER_ENDPOINTS_THRESHOLD;
    const ctx: RenderContext = { node: this.node, extras: this.extras, largeClusterMode: this.large };
    const forNode = policyNode(snapshot.topology, this.node.nodeIPs[0], this.featureGates);

    const renderedEntries: CacheEntry[] = [];
    const addedEntries: CacheEntry[] = [];
    let noLocalInternal = 0;
    let noLocalExternal = 0;
    let natChainRuleTotal = 0;
    for (const sp of snapshot.serviceMap.values()) {
      const endpoints = snapshot.endpointsMap.get(sp.key) ?? NO_ENDPOINTS;
      let entry = this.cache.get(sp.key);
      if (
        entry === undefined ||
        changedServices.has(sp.serviceName) ||
        entry.servicePort !== sp ||
        entry.endpoints !== endpoints ||
        (full && entry.largeClusterMode !== this.large)
      ) {
        const text = servicePortText(renderServicePort(servicePortPolicy(sp, endpoints, forNode), ctx));
        if (entry === undefined || entry.name !== sp.nameString) {
          if (entry !== undefined) this.order = this.order.filter((e) => e !== entry);
          entry = {
            key: sp.key,
            name: sp.nameString,
            servicePort: sp,
            endpoints,
            largeClusterMode: this.large,
            text,
          };
          this.cache.set(sp.key, entry);
          addedEntries.push(entry);
        } else {
          if (entry.text.filterRules !== text.filterRules || entry.text.natTopRules !== text.natTopRules) {
            this.joinedRules = undefined;
          }
          entry.servicePort = sp;
          entry.endpoints = endpoints;
          entry.largeClusterMode = this.large;
          entry.text = text;
        }
        renderedEntries.push(entry);
      }
      if (entry.text.noLocalEndpointsInternal) noLocalInternal++;
      if (entry.text.noLocalEndpointsExternal) noLocalExternal++;
      natChainRuleTotal += entry.text.chainRuleCount;
    }

    // Every port of the snapshot is cached now, so a larger cache holds ports that are gone.
    if (this.cache.size > snapshot.serviceMap.size) {
      for (const key of this.cache.keys()) if (!snapshot.serviceMap.has(key)) this.cache.delete(key);
      this.order = this.order.filter((e) => this.cache.get(e.key) === e);
      this.joinedRules = undefined;
    }
    if (addedEntries.length > 0) {
      // A few new ports are inserted in place; many (a first sync) are cheaper to sort once.
      if (addedEntries.length > 64) {
        for (const e of addedEntries) this.order.push(e);
        this.order.sort(compareEntries);
      } else {
        for (const e of addedEntries) insertSorted(this.order, e);
      }
      this.joinedRules = undefined;
    }

    // Written in sync order, as a full sync would write them.
    renderedEntries.sort(compareEntries);
    return {
      written: renderedEntries.map((e) => e.text),
      noLocalInternal,
      noLocalExternal,
      natChainRuleTotal,
    };
  }

  /** The cached texts in sync order (service-port name, then key). */
  *orderedTexts(): Iterable<ServicePortText> {
    for (const e of this.order) yield e.text;
  }

  /** Per-service chains in `existing` that no cached service port uses. */
  staleChainsIn(existing: ReadonlySet<string>): string[] {
    const active = new Set<string>();
    for (const e of this.order) for (const c of e.text.chains) active.add(c);
    return [...existing].filter((c) => isServiceChainName(c) && !active.has(c)).sort();
  }
}

/**
 * The full iptables-restore input for a snapshot, as a first sync writes it (no stale chains): the same cache
 * and assembly the backend uses, on a fresh cache. Pure: for `kube-proxy-ts render --proxy-mode iptables`.
 */
export function renderIptablesRestore(
  snapshot: ProxySnapshot,
  node: NodeNetworkConfig,
  extras: IptablesExtras = DEFAULT_IPTABLES_EXTRAS,
  featureGates?: FeatureGates,
): string {
  const cache = new IptablesRenderCache(node, extras, featureGates);
  cache.refresh(snapshot, new Set(), true);
  return cache.restore(cache.orderedTexts(), []).text;
}
