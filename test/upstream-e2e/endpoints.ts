// validateEndpointsPortsOrFail and its WithProtocols twin (service.go): poll, once a second for
// framework.ServiceStartTimeout, until both the Service's Endpoints (ready addresses) and its EndpointSlices show
// exactly the expected pods, by UID, each with exactly the expected ports.
import { fail, poll, SERVICE_START_TIMEOUT_MS } from './framework.js';
import { field, fieldArray, fieldString, type KubeObject } from './kube.js';
import type { UpstreamContext } from './registry-types.js';

export interface EndpointPort {
  readonly port: number;
  readonly protocol: string;
}

/** Pod UID → its ports, as one of the two APIs shows them. */
type PortsByUID = Map<string, EndpointPort[]>;

function add(m: PortsByUID, uid: string, port: EndpointPort): void {
  m.set(uid, [...(m.get(uid) ?? []), port]);
}

function portOf(p: unknown): EndpointPort {
  return { port: Number(field(p, 'port')), protocol: fieldString(p, 'protocol') || 'TCP' };
}

/** e2eendpoints.GetContainerPortsByPodUID: every port of a subset for each of its (ready) addresses. */
function portsFromEndpoints(ep: KubeObject): PortsByUID {
  const m: PortsByUID = new Map();
  for (const ss of fieldArray(ep, 'subsets'))
    for (const port of fieldArray(ss, 'ports'))
      for (const addr of fieldArray(ss, 'addresses'))
        add(m, fieldString(addr, 'targetRef', 'uid'), portOf(port));
  return m;
}

/** e2eendpointslice.GetContainerPortsByPodUID: every port of a slice for each of its endpoints. */
function portsFromSlices(slices: readonly KubeObject[]): PortsByUID {
  const m: PortsByUID = new Map();
  for (const es of slices)
    for (const port of fieldArray(es, 'ports'))
      for (const e of fieldArray(es, 'endpoints')) add(m, fieldString(e, 'targetRef', 'uid'), portOf(port));
  return m;
}

function samePorts(
  got: readonly EndpointPort[],
  want: readonly EndpointPort[],
  withProtocol: boolean,
): boolean {
  const key = (p: EndpointPort): string => (withProtocol ? `${p.port}/${p.protocol}` : String(p.port));
  const a = got.map(key).sort();
  const b = want.map(key).sort();
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

/** validatePorts / validatePortsAndProtocols: the same pods, each with the same ports. */
function matches(got: PortsByUID, want: PortsByUID, withProtocol: boolean): boolean {
  if (got.size !== want.size) return false;
  for (const [uid, ports] of want) {
    const g = got.get(uid);
    if (!g || !samePorts(g, ports, withProtocol)) return false;
  }
  return true;
}

function describe(m: PortsByUID): string {
  return JSON.stringify(
    Object.fromEntries([...m].map(([uid, ps]) => [uid, ps.map((p) => `${p.port}/${p.protocol}`)])),
  );
}

/**
 * `expected` maps pod name → ports (a number: compared by port only, as validateEndpointsPortsOrFail does; an
 * EndpointPort: by port and protocol, as the WithProtocols variant does).
 */
export async function validateEndpointsPortsOrFail(
  ctx: UpstreamContext,
  serviceName: string,
  expected: Readonly<Record<string, readonly (number | EndpointPort)[]>>,
): Promise<void> {
  ctx.step(
    `waiting up to ${SERVICE_START_TIMEOUT_MS / 1000}s for service ${serviceName} in namespace ${ctx.namespace} to expose endpoints ${JSON.stringify(expected)}`,
  );
  const withProtocol = Object.values(expected).some((ps) => ps.some((p) => typeof p !== 'number'));
  const want: PortsByUID = new Map();
  for (const [podName, ports] of Object.entries(expected)) {
    const pod = await ctx.kube.get(ctx.namespace, 'pod', podName);
    want.set(
      fieldString(pod, 'metadata', 'uid'),
      ports.map((p) => (typeof p === 'number' ? { port: p, protocol: 'TCP' } : p)),
    );
  }
  let seen = '';
  const ok = await poll(
    1_000,
    SERVICE_START_TIMEOUT_MS,
    async () => {
      const ep = await ctx.kube.get(ctx.namespace, 'endpoints', serviceName).catch(() => undefined);
      if (!ep) return false;
      const fromEndpoints = portsFromEndpoints(ep);
      seen = `endpoints ${describe(fromEndpoints)}`;
      if (!matches(fromEndpoints, want, withProtocol)) return false;
      const slices = await ctx.kube.list(
        ctx.namespace,
        'endpointslices',
        `kubernetes.io/service-name=${serviceName}`,
      );
      const fromSlices = portsFromSlices(slices);
      seen = `endpoint slices ${describe(fromSlices)}`;
      return matches(fromSlices, want, withProtocol);
    },
    ctx.signal,
  );
  if (!ok)
    fail(
      `error waiting for service ${serviceName} in namespace ${ctx.namespace} to expose endpoints ${describe(want)}: last seen ${seen}`,
    );
  ctx.log(
    `successfully validated that service ${serviceName} in namespace ${ctx.namespace} exposes endpoints ${JSON.stringify(expected)}`,
  );
}
