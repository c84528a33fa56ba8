// The cluster's Services and EndpointSlices for the node commands that want them (doctor's conntrack check,
// trace's frontend names): from -f FILE as render reads it, or from the API server (--kubeconfig).
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import type { EndpointSlice, Service } from '../api/objects.js';
import { createApiClient } from '../kube/api-client.js';
import { loadClientConfig } from '../kube/client-config.js';
import { listAll } from '../kube/list-all.js';
import { loadManifestFile } from '../kube/manifest-file.js';
import type { IPFamily } from '../model/ip.js';
import type { ServicePort } from '../model/service-port.js';
import { snapshotFromObjects } from '../sync/snapshot.js';
import { systemClock } from '../util/clock.js';

export interface ClusterObjects {
  readonly services: readonly Service[];
  readonly endpointSlices: readonly EndpointSlice[];
}

/** The objects, or what went wrong (naming the file or the server). */
export async function loadClusterObjects(
  source: { filename?: string | undefined; kubeconfig?: string | undefined },
  command: string,
  stderr: (text: string) => void,
): Promise<ClusterObjects | string> {
  if (source.filename !== undefined) {
    const loaded = loadManifestFile(source.filename, command, {
      readFile: (p) => readFileSync(p === '-' ? 0 : p, 'utf8'),
      stderr,
      now: () => performance.now(),
    });
    return loaded.ok ? loaded.objects : loaded.error;
  }
  const cfg = loadClientConfig({ kubeconfig: (source.kubeconfig ?? '').split(':')[0] ?? '' });
  if (!cfg.ok) return `--kubeconfig: ${cfg.error.message}`;
  const client = createApiClient(cfg.config, { clock: systemClock });
  const signal = AbortSignal.timeout(30_000);
  try {
    const [services, endpointSlices] = await Promise.all([
      listAll<Service>(client, '/api/v1/services', true, signal),
      listAll<EndpointSlice>(client, '/apis/discovery.k8s.io/v1/endpointslices', true, signal),
    ]);
    return { services: services.items, endpointSlices: endpointSlices.items };
  } catch (e) {
    return `reading the cluster from ${cfg.config.server.origin}: ${(e as Error).message}`;
  }
}

/** The model's service ports of one family (what the agent itself would read from these objects). */
export function servicePortsOf(objects: ClusterObjects, family: IPFamily): ServicePort[] {
  return [...snapshotFromObjects({ family, nodeName: '', ...objects }).snapshot.serviceMap.values()];
}
