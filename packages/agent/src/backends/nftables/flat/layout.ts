// The flat layout as NftablesBackend takes it (../layout.ts): every service port is elements of the shared maps
// below (render.ts), pointing at dispatch chains shared by every port with as many endpoints (the shared chains of
// ../planner.ts); a port's slots are kept between renderings, so an endpoint change rewrites only what moved.
import type { ElementContainer, NftablesLayout } from '../layout.js';
import {
  CLUSTER_DISPATCH_MAP,
  CLUSTER_IPS_SET,
  DISPATCH_KINDS,
  FIREWALL_ALLOW_SET,
  FIREWALL_FRONTENDS_SET,
  FIREWALL_IPS_MAP,
  FLAT_PROTOCOLS,
  HAIRPIN_SET,
  LOCAL_DISPATCH_MAP,
  NODEPORT_CLUSTER_DISPATCH_MAP,
  NODEPORT_LOCAL_DISPATCH_MAP,
  NO_ENDPOINT_NODEPORTS_MAP,
  NO_ENDPOINT_SERVICES_MAP,
  SERVICE_IPS_MAP,
  SERVICE_NODEPORTS_MAP,
  endpointsMapName,
  parseDispatchChainName,
} from '../naming.js';
import type { PortRendering } from '../planner.js';
import { SyncPlanner } from '../planner.js';
import { containerDeclarations, renderSetup } from '../setup.js';
import type { NodeNetworkConfig } from '../../../sync/backend.js';
import type { FlatRenderedPort, PortSlots } from './render.js';
import { NO_SLOTS, renderFlatServicePort } from './render.js';
import { dispatchChainRule, flatSetupParts } from './setup.js';

/**
 * The flat layout's diffed containers, leaves first: when a cold start is cut into several transactions (nft's
 * memory), a frontend's verdict is only added after the endpoints and dispatch entries it leads to, and a
 * firewall's admitted sources before the frontend that makes it drop the rest.
 */
export const FLAT_ELEMENT_CONTAINERS: readonly ElementContainer[] = [
  ...DISPATCH_KINDS.flatMap((kind) =>
    FLAT_PROTOCOLS.map((p): ElementContainer => ({ kind: 'map', name: endpointsMapName(kind, p) })),
  ),
  { kind: 'map', name: CLUSTER_DISPATCH_MAP },
  { kind: 'map', name: LOCAL_DISPATCH_MAP },
  { kind: 'map', name: NODEPORT_CLUSTER_DISPATCH_MAP },
  { kind: 'map', name: NODEPORT_LOCAL_DISPATCH_MAP },
  { kind: 'set', name: FIREWALL_ALLOW_SET },
  { kind: 'set', name: FIREWALL_FRONTENDS_SET },
  { kind: 'set', name: HAIRPIN_SET },
  { kind: 'set', name: CLUSTER_IPS_SET },
  { kind: 'map', name: SERVICE_IPS_MAP },
  { kind: 'map', name: SERVICE_NODEPORTS_MAP },
  { kind: 'map', name: NO_ENDPOINT_SERVICES_MAP },
  { kind: 'map', name: NO_ENDPOINT_NODEPORTS_MAP },
];

/**
 * Operations per transaction when a flat table is filled from nothing: nft holds a whole transaction in memory
 * (about 2.4 KB per element with elements grouped on a line, measured with nft 1.0.6: ≈ 240 MiB per 100,000), so a
 * cold start is cut into pieces of this size. A piece's own cost beyond its elements (a fork, nft reading the
 * table's sets) is a few tens of milliseconds and does not grow with the table, so larger pieces gain little.
 */
export const FLAT_COLD_START_CHUNK = 100_000;

/** Slots saved by an agent that stopped (state.ts), if they are slots: the two views' joined identities. */
function readPortSlots(value: unknown): PortSlots | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const { cluster, local } = value as Record<string, unknown>;
  return typeof cluster === 'string' && typeof local === 'string' ? { cluster, local } : undefined;
}

/** How the flat layout renders: a port's slots are kept for its next rendering; dispatch chains are shared. */
export function flatPorts(node: NodeNetworkConfig): PortRendering<FlatRenderedPort, PortSlots> {
  return {
    containers: FLAT_ELEMENT_CONTAINERS,
    setup: (firstSync, nodePortIPs) => renderSetup(node, { firstSync, nodePortIPs }, flatSetupParts(node)),
    render: (policy, previous) => renderFlatServicePort(policy, node, previous ?? NO_SLOTS),
    memo: (rendered) => rendered.slots,
    carries: (rendered) => rendered.slotsMoved,
    readMemo: readPortSlots,
    isSharedChain: (name) => parseDispatchChainName(name) !== undefined,
    sharedChainOps: (name) => {
      const parsed = parseDispatchChainName(name);
      if (!parsed) return [];
      return [
        { verb: 'add', object: { kind: 'chain', name } },
        { verb: 'flush', object: { kind: 'chain', name } },
        { verb: 'add', object: dispatchChainRule(parsed.kind, parsed.protocol, parsed.count, node) },
      ];
    },
  };
}

export const FLAT_LAYOUT: NftablesLayout = {
  name: 'flat',
  elementContainers: FLAT_ELEMENT_CONTAINERS,
  // Upstream's layout always has its firewall-ips map; flat never does.
  isForeign: (listing) => listing.maps.some((m) => m.name === FIREWALL_IPS_MAP),
  coldStartChunk: FLAT_COLD_START_CHUNK,
  refillApart: true,
  declarations: (node) => containerDeclarations(node, flatSetupParts(node)),
  createPlanner: (node, nodePortIPs, featureGates) =>
    new SyncPlanner(flatPorts(node), node, nodePortIPs, featureGates),
};
