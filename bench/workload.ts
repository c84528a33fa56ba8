// The workload every mode's benchmark programs, in one place so the modes are compared on the same cluster: Service
// i has ClusterIP 198.18.128.0 + i (past 32,768 Services: benchClusterIP) and one port; its slice has E endpoints
// in 198.19.0.0/16, the first on this node.
// `variant` > 0 swaps the last endpoint for another address: the one-endpoint change.
import type { EndpointSlice, Service } from 'kube-proxy-ts/api/objects.js';
import type { EndpointsMap } from 'kube-proxy-ts/model/endpoint-slice-cache.js';
import { sliceRemnant } from 'kube-proxy-ts/model/endpoint-slice-cache.js';
import { EndpointsChangeTracker } from 'kube-proxy-ts/model/endpoints-change-tracker.js';
import type { UpdateEndpointsMapResult } from 'kube-proxy-ts/model/endpoints-change-tracker.js';
import type { UpdateServiceMapResult } from 'kube-proxy-ts/model/service-change-tracker.js';
import { ServiceChangeTracker } from 'kube-proxy-ts/model/service-change-tracker.js';
import { HealthCheckIndexedServicePortMap } from 'kube-proxy-ts/model/service-health-state.js';
import { nodePortAddressesFor } from 'kube-proxy-ts/model/nodeport-addresses.js';
import type { NodeNetworkConfig, ProxySnapshot, SyncRequest } from 'kube-proxy-ts/sync/backend.js';
import { masqueradeMarkFor } from 'kube-proxy-ts/sync/backend.js';

/**
 * The node the nftables benchmarks program (bench/nftables.ts, bench/netlink-workload.ts): NodePorts on its IP.
 * bench/iptables.ts programs the same node with iptables mode's defaults.
 */
export const NFTABLES_BENCH_NODE: NodeNetworkConfig = {
  family: 'IPv4',
  nodeName: 'bench-node',
  nodeIPs: ['198.18.0.2'],
  localDetector: { mode: 'ClusterCIDR', cidr: '198.19.0.0/16' },
  masqueradeMark: masqueradeMarkFor(14),
  masqueradeAll: false,
  nodePortAddresses: nodePortAddressesFor('IPv4', ['198.18.0.2/32']).value,
  hostInterfaces: new Map([['eth0', ['198.18.0.2/24']]]),
  serviceCIDRs: ['198.18.128.0/17'],
};

function ip(base: string, n: number): string {
  return `${base}.${(n >> 8) & 255}.${n & 255}`;
}

/**
 * Service i's ClusterIP, unique up to 130,816 Services: 198.18.128.0/17 for the first 32,768 (as always), then
 * 198.18.1.0–198.18.127.255, then 198.19.0.0/16. Past 32,768 they share addresses with pods, which no rule minds;
 * two Services sharing a ClusterIP would be a cluster no API server allows, and would merge their elements.
 */
function benchClusterIP(i: number): string {
  if (i < 32768) return ip('198.18', 32768 + i);
  if (i < 65280) return ip('198.18', 256 + (i - 32768));
  return ip('198.19', i - 65280);
}

export function benchService(i: number): Service {
  return {
    metadata: { namespace: `ns${i % 50}`, name: `svc${i}` },
    spec: {
      type: 'ClusterIP',
      clusterIP: benchClusterIP(i),
      ports: [{ name: 'http', port: 80, protocol: 'TCP' }],
    },
  };
}

export function benchSlice(i: number, endpoints: number, variant: number): EndpointSlice {
  return {
    metadata: {
      namespace: `ns${i % 50}`,
      name: `svc${i}-1`,
      labels: { 'kubernetes.io/service-name': `svc${i}` },
    },
    addressType: 'IPv4',
    endpoints: Array.from({ length: endpoints }, (_, e) => ({
      // 198.19.0.0/16 holds pod IPs; endpoint 0 is on this node (hairpin), the rest elsewhere.
      addresses: [
        e === endpoints - 1 && variant > 0
          ? ip('198.19', 60000 + variant)
          : ip('198.19', (i * endpoints + e) % 60000),
      ],
      nodeName: e === 0 ? 'bench-node' : 'other-node',
    })),
    ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
  };
}

/** One checkout: the backend's request, and the trackers' results (what the proxier's post-sync step reads). */
export interface BenchCheckout {
  readonly request: SyncRequest;
  readonly services: UpdateServiceMapResult;
  readonly endpoints: UpdateEndpointsMapResult;
}

/**
 * The workload fed through the real change trackers, as the proxier does: `load` adds every Service and slice,
 * `setSlice` changes one Service's slice, and `checkout()` hands the backend what a sync would get. All three are
 * the model's work and part of what bench/measure.ts's timedSync times.
 */
export class BenchCluster {
  readonly snapshot: ProxySnapshot;
  private readonly services = new ServiceChangeTracker({ family: 'IPv4' });
  private readonly endpoints: EndpointsChangeTracker;
  /** The live maps, as the proxier keeps them (the service map indexes healthCheckNodePorts). */
  readonly serviceMap = new HealthCheckIndexedServicePortMap();
  readonly endpointsMap: EndpointsMap = new Map();

  constructor(
    nodeName: string,
    private readonly endpointsPerService: number,
  ) {
    this.endpoints = new EndpointsChangeTracker({ family: 'IPv4', nodeName });
    this.snapshot = { serviceMap: this.serviceMap, endpointsMap: this.endpointsMap, topology: { nodeName } };
  }

  /** Objects made by prepare(), waiting to be handed in by load(). */
  #prepared: { services: Service[]; slices: EndpointSlice[] } | undefined;

  /**
   * Makes the API objects of `count` Services before the clock starts: an agent's reflector has decoded them
   * (so they are part of its memory, and of this process's peak RSS), but building them is the bench's own work,
   * not the proxy's. load() then keeps of each what the agent's store keeps: the whole Service, and of a slice
   * its remnant (src/cli/run.ts gives the slice reflector sliceRemnant).
   */
  prepare(count: number): void {
    const services: Service[] = [];
    const slices: EndpointSlice[] = [];
    // Through JSON, as the reflector has them: its strings are flat, where the bench's own are built up from
    // pieces (V8 keeps such a string as a tree of its parts, about twice the memory of the text).
    const decoded = <T>(o: T): T => JSON.parse(JSON.stringify(o)) as T;
    for (let i = 0; i < count; i++) {
      services.push(decoded(benchService(i)));
      slices.push(decoded(benchSlice(i, this.endpointsPerService, 0)));
    }
    this.#prepared = { services, slices };
  }

  /** Hands every Service and slice to the trackers: prepare()'s objects when it made `count` of them. */
  load(count: number): void {
    const prepared = this.#prepared?.services.length === count ? this.#prepared : undefined;
    for (let i = 0; i < count; i++) {
      this.services.update(undefined, prepared?.services[i] ?? benchService(i));
      const slice = prepared?.slices[i] ?? benchSlice(i, this.endpointsPerService, 0);
      this.endpoints.endpointSliceUpdate(slice, false);
      if (prepared) prepared.slices[i] = sliceRemnant(slice);
    }
  }

  setSlice(i: number, variant: number): void {
    this.endpoints.endpointSliceUpdate(benchSlice(i, this.endpointsPerService, variant), false);
  }

  /** The request asks for no full sync, as the proxier's between hourly resyncs: the backend decides. */
  checkout(): SyncRequest {
    return this.checkoutChanges().request;
  }

  /** checkout(), with the trackers' results beside the request. */
  checkoutChanges(): BenchCheckout {
    const services = this.services.checkout(this.serviceMap);
    const endpoints = this.endpoints.checkout(this.endpointsMap);
    const changedServices = new Set([...services.updatedServices, ...endpoints.updatedServices]);
    return { request: { full: false, changedServices }, services, endpoints };
  }
}
