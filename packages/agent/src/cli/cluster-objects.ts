// The cluster's state for the commands that read it once (explain; doctor's conntrack check; trace's frontend
// names): from -f FILE as render reads it, or from the API server (--kubeconfig, else $KUBECONFIG, else in-cluster).
// Objects that cannot be read are skipped, each said on stderr.
import { readFileSync } from 'node:fs';
import { hostname as osHostname } from 'node:os';
import { performance } from 'node:perf_hooks';
import type { EndpointSlice, Node, Service } from '../api/objects.js';
import { createApiClient } from '../kube/api-client.js';
import { loadClientConfig } from '../kube/client-config.js';
import { listAll } from '../kube/list-all.js';
import { loadManifestFile } from '../kube/manifest-file.js';
import type { IPFamily } from '../model/ip.js';
import type { ServicePort } from '../model/service-port.js';
import { snapshotFromObjects } from '../sync/snapshot.js';
import { systemClock } from '../util/clock.js';
import type { CommandOutput } from './command-line.js';
import { processOutput } from './command-line.js';

export interface ClusterObjects {
  readonly services: readonly Service[];
  readonly endpointSlices: readonly EndpointSlice[];
  readonly nodes: readonly Node[];
}

export interface ClusterSourceIO {
  readonly stderr: (text: string) => void;
  /** Default: the file system ("-" is stdin). */
  readonly readFile?: (path: string) => string;
  /** Default: process.env (for $KUBECONFIG). */
  readonly env?: Readonly<Record<string, string | undefined>>;
}

/** The flags that say where the cluster's objects come from (loadClusterObjects reads them). */
export const CLUSTER_SOURCE_OPTIONS = {
  filename: { type: 'string', short: 'f' },
  kubeconfig: { type: 'string' },
} as const;

/** A file's text, or stdin's for "-" (what `-f` reads). */
export function readInputFile(path: string): string {
  return readFileSync(path === '-' ? 0 : path, 'utf8');
}

/** What the commands that read objects from -f FILE use: output, the files, and the host's name (the node's default). */
export interface FileCommandIO extends CommandOutput {
  readonly readFile: (path: string) => string;
  readonly hostname: () => string;
}

export const processFileIO: FileCommandIO = {
  ...processOutput,
  readFile: readInputFile,
  hostname: () => osHostname(),
};

/**
 * For the commands that can do without the cluster (doctor, trace): its objects when -f or --kubeconfig was given,
 * undefined when neither was, and 'failed' when they could not be read (said on stderr as `COMMAND: why`).
 */
export async function loadGivenClusterObjects(
  source: { filename?: string | undefined; kubeconfig?: string | undefined },
  command: string,
  io: ClusterSourceIO,
): Promise<ClusterObjects | undefined | 'failed'> {
  if (source.filename === undefined && source.kubeconfig === undefined) return undefined;
  const objects = await loadClusterObjects(source, command, io);
  if (typeof objects !== 'string') return objects;
  io.stderr(`${command}: ${objects}\n`);
  return 'failed';
}

/** The objects, or what went wrong (naming the file or the server). */
export async function loadClusterObjects(
  source: { filename?: string | undefined; kubeconfig?: string | undefined },
  command: string,
  io: ClusterSourceIO,
): Promise<ClusterObjects | string> {
  if (source.filename !== undefined) {
    const loaded = loadManifestFile(source.filename, command, {
      readFile: io.readFile ?? readInputFile,
      stderr: io.stderr,
      now: () => performance.now(),
    });
    if (!loaded.ok) return loaded.error;
    for (const p of loaded.objects.problems) io.stderr(`${command}: skipped ${p}\n`);
    return loaded.objects;
  }
  const kubeconfig = source.kubeconfig ?? (io.env ?? process.env).KUBECONFIG ?? '';
  const cfg = loadClientConfig({ kubeconfig: kubeconfig.split(':')[0] ?? '' });
  if (!cfg.ok) return `no cluster to read: ${cfg.error.message} (give -f FILE or --kubeconfig)`;
  const client = createApiClient(cfg.config, { clock: systemClock });
  const signal = AbortSignal.timeout(60_000);
  try {
    const [services, endpointSlices, nodes] = await Promise.all([
      listAll<Service>(client, '/api/v1/services', true, signal),
      listAll<EndpointSlice>(client, '/apis/discovery.k8s.io/v1/endpointslices', true, signal),
      listAll<Node>(client, '/api/v1/nodes', false, signal),
    ]);
    for (const p of [...services.problems, ...endpointSlices.problems, ...nodes.problems])
      io.stderr(`${command}: skipped ${p}\n`);
    return { services: services.items, endpointSlices: endpointSlices.items, nodes: nodes.items };
  } catch (e) {
    return `reading the cluster from ${cfg.config.server.origin}: ${(e as Error).message}`;
  }
}

/** The model's service ports of one family (what the agent itself would read from these objects). */
export function servicePortsOf(
  objects: Pick<ClusterObjects, 'services' | 'endpointSlices'>,
  family: IPFamily,
): ServicePort[] {
  return [
    ...snapshotFromObjects({
      family,
      nodeName: '',
      services: objects.services,
      endpointSlices: objects.endpointSlices,
    }).snapshot.serviceMap.values(),
  ];
}
