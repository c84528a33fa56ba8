// Which endpoints this node uses for one service port (upstream pkg/proxy/topology.go CategorizeEndpoints).
import type { Endpoint } from './endpoint.js';
import type { FeatureGates } from './feature-gates.js';
import type { ServicePort } from './service-port.js';

export interface NodeTopology {
  /** This node's name (for node hints). */
  readonly nodeName: string;
  /** The node's topology.kubernetes.io/zone label, if any (for zone hints). */
  readonly zone?: string;
}

export interface CategorizedEndpoints {
  /** Endpoints for Cluster-policy traffic; null when the Cluster set is not used by this port. */
  readonly clusterEndpoints: readonly Endpoint[] | null;
  /** Endpoints for Local-policy traffic; null when the Local set is not used by this port. */
  readonly localEndpoints: readonly Endpoint[] | null;
  /** Every endpoint that some traffic to this port may reach from this node. */
  readonly allReachableEndpoints: readonly Endpoint[];
  /** Whether the service has any usable endpoint cluster-wide (else every frontend rejects). */
  readonly hasAnyEndpoints: boolean;
}

export declare function categorizeEndpoints(
  endpoints: readonly Endpoint[],
  servicePort: ServicePort,
  node: NodeTopology,
  featureGates?: FeatureGates,
): CategorizedEndpoints;
