// Where upstream's test vectors live: test/fixtures/upstream/ in this repository (origin in its README).
import { fileURLToPath } from 'node:url';
import type { EndpointSlice, Service } from '../../packages/agent/src/api/objects.js';

export const VECTORS_DIR = fileURLToPath(new URL('../fixtures/upstream', import.meta.url));

/** The proxierConfig fields that the iptables and the nftables vectors share. */
export interface VectorProxierConfig {
  readonly ipFamily: 'IPv4' | 'IPv6';
  readonly nodeName: string;
  readonly nodeIP: string;
  readonly masqueradeMark: string;
  readonly masqueradeAll: boolean;
  readonly hostInterfaces: Readonly<Record<string, readonly string[]>>;
}

/** The steps' changes to the cluster's objects, in both backends' vectors. */
export type VectorObjectAction =
  | { readonly addService: Service }
  | { readonly deleteService: string }
  | { readonly addEndpointSlice: EndpointSlice }
  | { readonly updateEndpointSlice: EndpointSlice };
