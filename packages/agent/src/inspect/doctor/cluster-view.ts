// The cluster as the stale-udp-conntrack check reads it: each family's service ports and endpoints, built by
// the agent's own snapshot code from the objects (so "is this still an endpoint" is the agent's answer). Used by
// `doctor` and by the lab's soak, which checks every node for stale UDP entries after its run.
import type { EndpointSlice, Node, Service } from '../../api/objects.js';
import { IP_FAMILIES } from '../../model/ip.js';
import { snapshotFromObjects } from '../../sync/snapshot.js';
import type { ClusterView } from './types.js';

export function clusterView(
  objects: {
    readonly services: readonly Service[];
    readonly endpointSlices: readonly EndpointSlice[];
    readonly nodes: readonly Node[];
  },
  source: string,
): ClusterView {
  return {
    source,
    families: IP_FAMILIES.map((family) => {
      const { snapshot } = snapshotFromObjects({ family, nodeName: '', ...objects });
      return { family, serviceMap: snapshot.serviceMap, endpointsMap: snapshot.endpointsMap };
    }),
  };
}
