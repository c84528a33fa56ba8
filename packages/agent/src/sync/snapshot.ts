// Builds a ProxySnapshot from whole sets of objects, through the same trackers the running proxier uses: for
// `render`, benchmarks and tests, so that nothing renders from a different model than the daemon.
import type { EndpointSlice, Node, Service } from '../api/objects.js';
import { nodeTopology } from '../model/node-facts.js';
import type { EndpointsMap } from '../model/endpoint-slice-cache.js';
import { EndpointsChangeTracker } from '../model/endpoints-change-tracker.js';
import type { FeatureGates } from '../model/feature-gates.js';
import type { IPFamily } from '../model/ip.js';
import type { ServicePortMap, SkippedObject } from '../model/service-change-tracker.js';
import { ServiceChangeTracker } from '../model/service-change-tracker.js';
import type { ProxySnapshot } from './backend.js';

export interface SnapshotInput {
  readonly family: IPFamily;
  readonly nodeName: string;
  readonly services: readonly Service[];
  readonly endpointSlices: readonly EndpointSlice[];
  /** This node's Node object, if known: its zone label drives topology hints. */
  readonly node?: Node;
  readonly featureGates?: FeatureGates;
}

export interface SnapshotResult {
  readonly snapshot: ProxySnapshot;
  readonly skipped: readonly SkippedObject[];
}

export function snapshotFromObjects(input: SnapshotInput): SnapshotResult {
  const skipped: SkippedObject[] = [];
  const onSkip = (s: SkippedObject): void => void skipped.push(s);
  const services = new ServiceChangeTracker({ family: input.family, onSkip });
  const endpoints = new EndpointsChangeTracker({
    family: input.family,
    nodeName: input.nodeName,
    featureGates: input.featureGates,
    onSkip,
  });
  for (const svc of input.services) services.update(undefined, svc);
  for (const slice of input.endpointSlices) endpoints.endpointSliceUpdate(slice, false);
  const serviceMap: ServicePortMap = new Map();
  const endpointsMap: EndpointsMap = new Map();
  services.checkout(serviceMap);
  endpoints.checkout(endpointsMap);
  return {
    snapshot: { serviceMap, endpointsMap, topology: nodeTopology(input.nodeName, input.node) },
    skipped,
  };
}
