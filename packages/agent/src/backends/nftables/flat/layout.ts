// The flat layout as NftablesBackend takes it (../layout.ts).
import { FIREWALL_IPS_MAP } from '../naming.js';
import type { NftablesLayout } from '../layout.js';
import { containerDeclarations } from '../setup.js';
import { FLAT_ELEMENT_CONTAINERS, FlatPlanner } from './planner.js';
import { flatSetupParts } from './setup.js';

/**
 * Operations per transaction when a flat table is filled from nothing: nft holds a whole transaction in memory
 * (about 2.4 KB per element with elements grouped on a line, measured with nft 1.0.6: ≈ 240 MiB per 100,000), so a
 * cold start is cut into pieces of this size. A piece's own cost beyond its elements (a fork, nft reading the
 * table's sets) is a few tens of milliseconds and does not grow with the table, so larger pieces gain little.
 */
export const FLAT_COLD_START_CHUNK = 100_000;

export const FLAT_LAYOUT: NftablesLayout = {
  name: 'flat',
  elementContainers: FLAT_ELEMENT_CONTAINERS,
  // Upstream's layout always has its firewall-ips map; flat never does.
  isForeign: (listing) => listing.maps.some((m) => m.name === FIREWALL_IPS_MAP),
  coldStartChunk: FLAT_COLD_START_CHUNK,
  declarations: (node) => containerDeclarations(node, flatSetupParts(node)),
  createPlanner: (node, nodePortIPs, featureGates) => new FlatPlanner(node, nodePortIPs, featureGates),
};
