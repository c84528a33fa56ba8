// The three resources kube-proxy follows, with upstream's selectors (upstream-model.md §1.4;
// cmd/kube-proxy/app/server.go): Services not claimed by another proxy and not headless, EndpointSlices not of
// headless Services, and this node's own Node object.
import type { EndpointSlice, Node, Service, ServiceCIDR } from '../api/objects.js';
import { LABEL_HEADLESS, LABEL_SERVICE_PROXY_NAME } from '../api/objects.js';
import { serviceRemnant } from '../model/service-port.js';
import { Reflector } from './reflector.js';
import type { ReflectorHandlers, ReflectorOptions, ResourceSpec } from './reflector.js';

export const SERVICES: ResourceSpec = {
  name: 'services',
  path: '/api/v1/services',
  namespaced: true,
  labelSelector: `!${LABEL_SERVICE_PROXY_NAME}`,
  fieldSelector: 'spec.clusterIP!=None',
};

// Newest upstream applies only the headless filter to slices (not service-proxy-name): a slice whose Service is
// filtered out is dropped later, for want of a Service.
export const ENDPOINT_SLICES: ResourceSpec = {
  name: 'endpointslices',
  path: '/apis/discovery.k8s.io/v1/endpointslices',
  namespaced: true,
  labelSelector: `!${LABEL_HEADLESS}`,
};

// The ranges ClusterIPs come from (MultiCIDRServiceAllocator, GA in 1.33): nftables mode drops traffic to addresses in
// them that no Service holds. Older API servers do not serve the resource; the agent asks once before watching.
export const SERVICE_CIDRS: ResourceSpec = {
  name: 'servicecidrs',
  path: '/apis/networking.k8s.io/v1/servicecidrs',
  namespaced: false,
};

export function nodeResource(nodeName: string): ResourceSpec {
  return {
    name: 'nodes',
    path: '/api/v1/nodes',
    namespaced: false,
    fieldSelector: `metadata.name=${nodeName}`,
  };
}

export type WatchOptions<T> = Omit<ReflectorOptions<T>, 'resource' | 'handlers'> & {
  readonly handlers: ReflectorHandlers<T>;
};

/**
 * Services: the store keeps each one's identity (serviceRemnant), unless the caller says what to keep: the
 * service tracker reads only the name of an update's `old` or a relist's delete. Like the slices, they are
 * therefore not resynced (a resync would hand the tracker nothing it does not have).
 */
export function serviceReflector(options: WatchOptions<Service>): Reflector<Service> {
  const keep = options.keep === undefined ? { keep: serviceRemnant } : {};
  return new Reflector<Service>({ ...options, ...keep, resource: SERVICES });
}

export function endpointSliceReflector(options: WatchOptions<EndpointSlice>): Reflector<EndpointSlice> {
  return new Reflector<EndpointSlice>({ ...options, resource: ENDPOINT_SLICES });
}

export function nodeReflector(nodeName: string, options: WatchOptions<Node>): Reflector<Node> {
  return new Reflector<Node>({ ...options, resource: nodeResource(nodeName) });
}

export function serviceCIDRReflector(options: WatchOptions<ServiceCIDR>): Reflector<ServiceCIDR> {
  return new Reflector<ServiceCIDR>({ ...options, resource: SERVICE_CIDRS });
}
