// Plain-value builders for model tests: Services and EndpointSlices as the API would send them.
import type {
  EndpointSlice,
  EndpointSliceEndpoint,
  EndpointSlicePort,
  Service,
} from '../../packages/agent/src/api/objects.js';
import { servicePortKey } from '../../packages/agent/src/model/service-port-name.js';
import type { Protocol } from '../../packages/agent/src/model/service-port-name.js';

export function service(ns: string, name: string, spec: NonNullable<Service['spec']>, rv = '1'): Service {
  return { metadata: { namespace: ns, name, resourceVersion: rv }, spec };
}

export interface SliceOptions {
  readonly ns?: string;
  readonly service?: string;
  readonly addressType?: string;
  readonly ports?: readonly EndpointSlicePort[];
  readonly endpoints?: readonly EndpointSliceEndpoint[];
  readonly rv?: string;
  readonly annotations?: Record<string, string>;
  readonly labels?: Record<string, string> | null;
}

export function slice(name: string, o: SliceOptions = {}): EndpointSlice {
  const ns = o.ns ?? 'ns';
  const labels =
    o.labels === null ? undefined : (o.labels ?? { 'kubernetes.io/service-name': o.service ?? 'svc' });
  return {
    metadata: {
      namespace: ns,
      name,
      resourceVersion: o.rv ?? '1',
      ...(labels ? { labels } : {}),
      ...(o.annotations ? { annotations: o.annotations } : {}),
    },
    addressType: o.addressType ?? 'IPv4',
    ports: o.ports ?? [{ name: 'http', port: 80, protocol: 'TCP' }],
    endpoints: o.endpoints ?? [],
  };
}

export function ep(address: string, extra: Partial<EndpointSliceEndpoint> = {}): EndpointSliceEndpoint {
  return { addresses: [address], ...extra };
}

export function key(ns: string, svc: string, port: string, protocol: Protocol = 'TCP'): string {
  return servicePortKey({ namespace: ns, name: svc, port, protocol });
}
