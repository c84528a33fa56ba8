// Upstream kube-proxy's layout (planner.ts, service-port.ts) as NftablesBackend takes it (layout.ts).
import type { NftablesLayout } from './layout.js';
import { CLUSTER_DISPATCH_MAP } from './naming.js';
import { ELEMENT_CONTAINERS, SyncPlanner } from './planner.js';
import { containerDeclarations, upstreamSetupParts } from './setup.js';

export const UPSTREAM_LAYOUT: NftablesLayout = {
  name: 'upstream',
  elementContainers: ELEMENT_CONTAINERS,
  // The flat layout always has its cluster-dispatch map; upstream's never does.
  isForeign: (listing) => listing.maps.some((m) => m.name === CLUSTER_DISPATCH_MAP),
  declarations: (node) => containerDeclarations(node, upstreamSetupParts(node)),
  createPlanner: (node, nodePortIPs, featureGates) => new SyncPlanner(node, nodePortIPs, featureGates),
};
