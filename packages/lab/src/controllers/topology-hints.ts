// Topology hints on EndpointSlice endpoints: which of the two ways a Service asks for them applies, and for the
// annotation's way (`service.kubernetes.io/topology-mode: Auto`), which zone each endpoint is hinted to. Upstream's
// EndpointSlice controller (k8s.io/endpointslice, topologycache) gives every zone a share of the ready endpoints in
// proportion to the allocatable CPU of its nodes, lets each endpoint serve its own zone first, then moves the surplus
// of zones above their share to zones below it. It gives no hints at all when a share cannot be met without
// overloading some endpoints by more than 20%, and says why in a Warning event. Pure functions: the controller
// feeds them the Nodes and the endpoints it computed.
import { arr, child, str, stringMap, type JsonObject } from '../apiserver/json.js';
import { LABEL_TOPOLOGY_ZONE } from 'kube-proxy-ts/api/objects.js';

export const ANNOTATION_TOPOLOGY_MODE = 'service.kubernetes.io/topology-mode';
/** The annotation's name before 1.27; when both are set, upstream reads this one. */
export const ANNOTATION_TOPOLOGY_AWARE_HINTS = 'service.kubernetes.io/topology-aware-hints';
/** How far beyond its fair share of traffic upstream lets one endpoint be loaded (topologycache's 0.2). */
export const OVERLOAD_THRESHOLD = 0.2;

/** The events' reason when hints are removed or cannot be given; its messages are upstream's (event.go). */
export const REASON_HINTS_DISABLED = 'TopologyAwareHintsDisabled';
export const REASON_HINTS_ENABLED = 'TopologyAwareHintsEnabled';
export const MESSAGES = {
  noZoneSpecified: 'One or more endpoints do not have a zone specified',
  noAllocatedHintsForZones: 'No hints allocated for zones',
  enabled: 'Topology Aware Hints has been enabled',
  disabled: 'Topology Aware Hints has been disabled',
  insufficientNodeInfo:
    'Insufficient Node information: allocatable CPU or zone not specified on one or more nodes',
  insufficientNumberOfEndpoints: 'Insufficient number of endpoints',
  minAllocationExceedsOverloadThreshold:
    'Unable to allocate minimum required endpoints to each zone without exceeding overload threshold',
} as const;

export type TrafficDistribution = 'PreferClose' | 'PreferSameZone' | 'PreferSameNode';

/** Which hints a Service's endpoints get: decided here and only here. */
export type HintPolicy =
  | { readonly kind: 'auto' }
  | { readonly kind: 'trafficDistribution'; readonly value: TrafficDistribution }
  | { readonly kind: 'none' };

/**
 * The annotation (either spelling, value Auto or auto) wins over spec.trafficDistribution, as upstream's reconciler
 * has it (trafficDistribution is used only when the annotation does not enable hints). When both annotation keys are
 * present the older one decides, even when it disables hints.
 */
export function hintPolicy(svc: JsonObject): HintPolicy {
  const annotations = stringMap(child(svc, 'metadata'), 'annotations');
  const mode =
    ANNOTATION_TOPOLOGY_AWARE_HINTS in annotations
      ? annotations[ANNOTATION_TOPOLOGY_AWARE_HINTS]
      : annotations[ANNOTATION_TOPOLOGY_MODE];
  if (mode === 'Auto' || mode === 'auto') return { kind: 'auto' };
  const dist = str(child(svc, 'spec'), 'trafficDistribution');
  if (dist === 'PreferClose' || dist === 'PreferSameZone' || dist === 'PreferSameNode')
    return { kind: 'trafficDistribution', value: dist };
  return { kind: 'none' };
}

/** Each zone's share of the cluster's allocatable CPU, or why there is none to use. */
export type ZoneShares =
  | { readonly ok: true; readonly shares: ReadonlyMap<string, number> }
  | { readonly ok: false; readonly message: string };

/** A CPU quantity in millicores ("4", "3500m", "0.5"); 0 when it is absent or not one we read. */
export function cpuMillis(quantity: string | undefined): number {
  const m = /^(\d+(?:\.\d+)?)(m?)$/.exec(quantity ?? '');
  if (!m) return 0;
  const value = Number(m[1]);
  return m[2] === 'm' ? value : value * 1000;
}

const isReadyNode = (node: JsonObject): boolean =>
  arr(child(node, 'status'), 'conditions').some(
    (c) => str(c, 'type') === 'Ready' && str(c, 'status') === 'True',
  );

/**
 * The zones' CPU shares from the Nodes, as upstream's SetNodes: control-plane nodes and nodes that are not Ready do
 * not count; one counted node without a zone or allocatable CPU spoils them all; fewer than two zones is no use.
 * Upstream reports all of these as "insufficient node information" (its one-zone message is never reached).
 */
export function zoneShares(nodes: readonly JsonObject[]): ZoneShares {
  const cpuByZone = new Map<string, number>();
  let total = 0;
  for (const node of nodes) {
    const labels = stringMap(child(node, 'metadata'), 'labels');
    if ('node-role.kubernetes.io/control-plane' in labels || 'node-role.kubernetes.io/master' in labels)
      continue;
    if (!isReadyNode(node)) continue;
    const zone = labels[LABEL_TOPOLOGY_ZONE];
    const cpu = cpuMillis(str(child(child(node, 'status'), 'allocatable'), 'cpu'));
    if (!zone || cpu === 0) return { ok: false, message: MESSAGES.insufficientNodeInfo };
    cpuByZone.set(zone, (cpuByZone.get(zone) ?? 0) + cpu);
    total += cpu;
  }
  if (total === 0 || cpuByZone.size < 2) return { ok: false, message: MESSAGES.insufficientNodeInfo };
  return { ok: true, shares: new Map([...cpuByZone].map(([zone, cpu]) => [zone, cpu / total])) };
}

/** How many endpoints a zone should serve: at least `minimum`, ideally `desired`. */
export interface ZoneAllocation {
  readonly minimum: number;
  readonly desired: number;
}

/**
 * Per zone, its share of `ready` endpoints; the minimum is what keeps each of its endpoints within the overload
 * threshold. Fails when some zone could get none, or when the minimums add up to more endpoints than there are.
 */
export function zoneAllocations(
  shares: ReadonlyMap<string, number>,
  ready: number,
): { ok: true; allocations: Map<string, ZoneAllocation> } | { ok: false; message: string } {
  const counts = `(${ready} endpoints, ${shares.size} zones)`;
  if (shares.size > ready)
    return { ok: false, message: `${MESSAGES.insufficientNumberOfEndpoints} ${counts}` };
  const allocations = new Map<string, ZoneAllocation>();
  let minimums = 0;
  for (const [zone, share] of shares) {
    const desired = share * ready;
    const minimum = Math.ceil(desired / (1 + OVERLOAD_THRESHOLD));
    minimums += minimum;
    if (minimums > ready)
      return { ok: false, message: `${MESSAGES.minAllocationExceedsOverloadThreshold} ${counts}` };
    allocations.set(zone, { minimum, desired: Math.max(desired, minimum) });
  }
  return { ok: true, allocations };
}

/** The largest entry (ties: the first zone by name), so the outcome does not depend on insertion order. */
function most(m: ReadonlyMap<string, number>): [string, number] | undefined {
  let best: [string, number] | undefined;
  for (const zone of [...m.keys()].sort()) {
    const n = m.get(zone) ?? 0;
    if (n > 0 && (!best || n > best[1])) best = [zone, n];
  }
  return best;
}

/**
 * How many endpoints each zone gives away and receives, in whole endpoints: the surplus and deficit against the
 * desired counts, moved one at a time from the largest surplus to the largest deficit while both are worth moving
 * (upstream's getGivingAndReceivingZones: stop when either is under half an endpoint, or both under one).
 */
function transfers(
  allocations: ReadonlyMap<string, ZoneAllocation>,
  own: ReadonlyMap<string, number>,
): { giving: Map<string, number>; receiving: Map<string, number> } {
  const surplus = new Map<string, number>();
  const deficit = new Map<string, number>();
  for (const [zone, a] of allocations) {
    const have = own.get(zone) ?? 0;
    if (have > a.desired) surplus.set(zone, have - a.desired);
    else if (have < a.desired) deficit.set(zone, a.desired - have);
  }
  const giving = new Map<string, number>();
  const receiving = new Map<string, number>();
  for (;;) {
    const g = most(surplus);
    const r = most(deficit);
    if (!g || !r || (g[1] < 1 && r[1] < 1) || g[1] < 0.5 || r[1] < 0.5) break;
    giving.set(g[0], (giving.get(g[0]) ?? 0) + 1);
    surplus.set(g[0], g[1] - 1);
    receiving.set(r[0], (receiving.get(r[0]) ?? 0) + 1);
    deficit.set(r[0], r[1] - 1);
  }
  return { giving, receiving };
}

export interface HintedEndpoint {
  readonly zone?: string;
  readonly ready: boolean;
}

/** The zone each endpoint is hinted to (undefined: no hint, as for endpoints that are not ready), or why none. */
export type AutoHints =
  | { readonly ok: true; readonly zones: readonly (string | undefined)[] }
  | { readonly ok: false; readonly message: string };

/**
 * topology-mode Auto over one address type's endpoints, in the order given (the order decides which endpoints of a
 * zone with a surplus are lent to another zone; the caller keeps it stable so an unchanged Service keeps its hints).
 */
export function autoZoneHints(endpoints: readonly HintedEndpoint[], shares: ZoneShares): AutoHints {
  if (!shares.ok) return shares;
  const ready = endpoints.filter((e) => e.ready).length;
  const allocated = zoneAllocations(shares.shares, ready);
  if (!allocated.ok) return allocated;
  if (endpoints.some((e) => e.ready && !e.zone)) return { ok: false, message: MESSAGES.noZoneSpecified };
  // Every ready endpoint first serves its own zone.
  const zones = endpoints.map((e) => (e.ready ? e.zone : undefined));
  const own = new Map<string, number>();
  for (const z of zones) if (z) own.set(z, (own.get(z) ?? 0) + 1);
  const { giving, receiving } = transfers(allocated.allocations, own);
  zones.forEach((zone, i) => {
    if (!zone || !giving.get(zone)) return;
    const to = [...receiving.keys()].sort().find((z) => (receiving.get(z) ?? 0) > 0);
    if (!to) return;
    zones[i] = to;
    giving.set(zone, (giving.get(zone) ?? 0) - 1);
    receiving.set(to, (receiving.get(to) ?? 0) - 1);
  });
  if (zones.every((z) => z === undefined)) return { ok: false, message: MESSAGES.noAllocatedHintsForZones };
  return { ok: true, zones };
}

/** upstream's FormatWithAddressType: every hint event names the address type it is about. */
export const withAddressType = (message: string, addressType: string): string =>
  `${message}, addressType: ${addressType}`;
