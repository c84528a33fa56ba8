// Upstream kube-proxy's layout as NftablesBackend takes it (layout.ts): a chain per service port and per endpoint
// (service-port.ts), the shared sets and maps below, no shared chains.
import type { NftablesLayout } from './layout.js';
import {
  CLUSTER_DISPATCH_MAP,
  CLUSTER_IPS_SET,
  FIREWALL_IPS_MAP,
  HAIRPIN_SET,
  NO_ENDPOINT_NODEPORTS_MAP,
  NO_ENDPOINT_SERVICES_MAP,
  SERVICE_IPS_MAP,
  SERVICE_NODEPORTS_MAP,
} from './naming.js';
import type { PortRendering } from './planner.js';
import { SyncPlanner } from './planner.js';
import type { RenderedServicePort } from './service-port.js';
import { renderServicePort } from './service-port.js';
import { containerDeclarations, renderSetup, upstreamSetupParts } from './setup.js';
import type { NodeNetworkConfig } from '../../sync/backend.js';

/** The shared sets and maps whose elements are diffed against the kernel. */
export const UPSTREAM_ELEMENT_CONTAINERS = [
  { kind: 'set', name: CLUSTER_IPS_SET },
  { kind: 'set', name: HAIRPIN_SET },
  { kind: 'map', name: SERVICE_IPS_MAP },
  { kind: 'map', name: SERVICE_NODEPORTS_MAP },
  { kind: 'map', name: FIREWALL_IPS_MAP },
  { kind: 'map', name: NO_ENDPOINT_SERVICES_MAP },
  { kind: 'map', name: NO_ENDPOINT_NODEPORTS_MAP },
] as const;

/** How upstream's layout renders: nothing is kept between renderings of a port. */
export function upstreamPorts(node: NodeNetworkConfig): PortRendering<RenderedServicePort, undefined> {
  return {
    containers: UPSTREAM_ELEMENT_CONTAINERS,
    setup: (firstSync, nodePortIPs) => renderSetup(node, { firstSync, nodePortIPs }),
    render: (policy) => renderServicePort(policy, { node }),
    memo: () => undefined,
    isSharedChain: () => false,
    sharedChainOps: () => [],
  };
}

export const UPSTREAM_LAYOUT: NftablesLayout = {
  name: 'upstream',
  elementContainers: UPSTREAM_ELEMENT_CONTAINERS,
  // The flat layout always has its cluster-dispatch map; upstream's never does.
  isForeign: (listing) => listing.maps.some((m) => m.name === CLUSTER_DISPATCH_MAP),
  declarations: (node) => containerDeclarations(node, upstreamSetupParts(node)),
  createPlanner: (node, nodePortIPs, featureGates) =>
    new SyncPlanner(upstreamPorts(node), node, nodePortIPs, featureGates),
};
