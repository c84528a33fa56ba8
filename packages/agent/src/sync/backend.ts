// The seam between the proxier (when and what to sync) and a backend (what the kernel must hold, and how to get
// it there). Backends implement ProxyBackend; the proxier knows nothing of nft or iptables.
import type { ProxyMode } from '../config/proxy-mode.js';
import type { Endpoint } from '../model/endpoint.js';
import type { IPFamily } from '../model/ip.js';
import type { LocalTrafficDetector } from '../model/local-detector.js';
import type { NodePortAddresses } from '../model/nodeport-addresses.js';
import type { ServicePort } from '../model/service-port.js';
import type { NodeTopology } from '../model/topology.js';

/** What the cluster asks of this node right now, for one family. Read-only for backends. */
export interface ProxySnapshot {
  readonly serviceMap: ReadonlyMap<string, ServicePort>;
  readonly endpointsMap: ReadonlyMap<string, readonly Endpoint[]>;
  readonly topology: NodeTopology;
  /**
   * This family's service ranges from the cluster's ServiceCIDR objects, when the API server serves them; absent
   * otherwise (the node config's serviceCIDRs apply (render's --service-cidrs)). A change makes nftables mode's next sync full.
   */
  readonly serviceCIDRs?: readonly string[];
}

export interface SyncRequest {
  /**
   * The caller wants everything rewritten this time (the hourly resync, tests). The backend also rewrites
   * everything whenever it needs to on its own (first sync, after a failure, after requestFullSync, its rules
   * found flushed); `BackendSyncResult.full` says what it did.
   */
  readonly full?: boolean;
  /** "ns/name" of Services whose Service or EndpointSlices changed since the last sync. */
  readonly changedServices: ReadonlySet<string>;
}

export interface BackendSyncResult {
  /** Whether this sync rewrote everything (a full sync) or only what changed (partial). */
  readonly full: boolean;
  /** Service ports whose ClusterIP traffic is dropped for want of a local endpoint (iTP=Local). */
  readonly noLocalEndpointsInternal: number;
  /** Service ports whose external traffic is dropped for want of a local endpoint (eTP=Local). */
  readonly noLocalEndpointsExternal: number;
  /** Time spent in our own work (render, diff, serialize) and in the kernel tool, ms. */
  readonly timings: { readonly ownMs: number; readonly kernelMs: number };
  /** Operations (nft) or lines (iptables-restore) sent; 0 when nothing needed changing. */
  readonly operations: number;
}

/** How a backend's sync rejects: the cause, and whether the failed sync was a full one. */
export class BackendSyncError extends Error {
  readonly full: boolean;

  constructor(message: string, options: { readonly full: boolean; readonly cause: unknown }) {
    super(message, { cause: options.cause });
    this.name = 'BackendSyncError';
    this.full = options.full;
  }
}

/**
 * A backend owns the decision "full or partial": it keeps the one flag that says its next sync must rewrite
 * everything, and reports in each result what it did.
 */
export interface ProxyBackend {
  readonly mode: ProxyMode;
  readonly family: IPFamily;
  /** Makes the next sync a full one (the node's topology changed; rules were found flushed). */
  requestFullSync(): void;
  /** Brings the kernel to the state for `snapshot`. Rejects with a BackendSyncError naming what failed. */
  sync(snapshot: ProxySnapshot, request: SyncRequest): Promise<BackendSyncResult>;
  /** The agent stops (no sync runs any more): what the backend leaves for the next start. Never rejects. */
  stop?(): Promise<void>;
}

/** Node-level facts every backend needs, for one family. */
export interface NodeNetworkConfig {
  readonly family: IPFamily;
  readonly nodeName: string;
  /** This family's node IPs, canonical; the first is the primary. */
  readonly nodeIPs: readonly string[];
  readonly localDetector: LocalTrafficDetector;
  /** As the rules print it: "0x00004000" in production (Go %#08x of 1<<bit); upstream's tests use "0x4000". */
  readonly masqueradeMark: string;
  readonly masqueradeAll: boolean;
  readonly nodePortAddresses: NodePortAddresses;
  /** Interface name → addresses with prefix ("192.168.0.2/24"), for NodePort address matching. */
  readonly hostInterfaces: ReadonlyMap<string, readonly string[]>;
  /** Service CIDRs of this family when known (nft drops traffic to unallocated ClusterIPs); may be empty. */
  readonly serviceCIDRs: readonly string[];
}

/** Go's %#08x of 1<<bit, as production kube-proxy prints the masquerade mark. */
export function masqueradeMarkFor(bit: number): string {
  return '0x' + ((1 << bit) >>> 0).toString(16).padStart(8, '0');
}
