// The flat layout as NftablesBackend takes it (../layout.ts).
import { FIREWALL_IPS_MAP } from '../naming.js';
import type { NftablesLayout } from '../layout.js';
import { FLAT_ELEMENT_CONTAINERS, FlatPlanner } from './planner.js';

/**
 * Operations per transaction when a flat table is filled from nothing: nft holds a whole transaction in memory
 * (about 2 KB per element at 100,000 Services), so a cold start is cut into pieces of this size.
 */
export const FLAT_COLD_START_CHUNK = 50_000;

export const FLAT_LAYOUT: NftablesLayout = {
  name: 'flat',
  elementContainers: FLAT_ELEMENT_CONTAINERS,
  // Upstream's layout always has its firewall-ips map; flat never does.
  isForeign: (listing) => listing.maps.some((m) => m.name === FIREWALL_IPS_MAP),
  coldStartChunk: FLAT_COLD_START_CHUNK,
  createPlanner: (node, nodePortIPs, featureGates) => new FlatPlanner(node, nodePortIPs, featureGates),
};
