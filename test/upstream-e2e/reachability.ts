// CheckServiceReachability (e2eservice.TestJig) and testEndpointReachability: from an exec pod, a Service must
// answer on its name and ClusterIP for every port, and on every node's InternalIP at the NodePort for NodePort
// Services; an ExternalName Service's name must resolve.
//
// Upstream runs `echo hostName | nc -v -t|-u -w 2 HOST PORT` in agnhost's image and counts a non-empty stdout as
// reached. Lab pods run commands with the host's files, where nc is not a given; the same exchange is made with
// tools that are: curl's telnet:// for TCP (send the line, print what comes back) and bash's /dev/udp for UDP (send
// one datagram, read one back within 2 s). As upstream, only a non-empty stdout counts (curl exits 28 when a server
// keeps the connection open past 2 s, where nc -w 2 exits 0 with what it read).
import { fail, poll, POLL_MS, SERVICE_REACHABILITY_SHORT_POLL_TIMEOUT_MS } from './framework.js';
import { field, fieldArray, fieldString, type KubeObject } from './kube.js';
import { sanityCheckService, serviceType, type TestJig } from './jig.js';
import type { UpstreamContext } from './registry-types.js';

export type Protocol = 'TCP' | 'UDP';

/** The names and addresses in these commands come from the API (IPs, DNS labels); refuse anything else. */
function safeHost(host: string): string {
  if (!/^[A-Za-z0-9.:-]+$/.test(host)) throw new Error(`not a host name or address: ${host}`);
  return host;
}

/** `echo hostName | nc [-t|-u] -w WAIT HOST PORT` with the host's tools; `waitSeconds` is nc's -w (2 here upstream). */
export function reachabilityCommand(host: string, port: number, protocol: Protocol, waitSeconds = 2): string {
  const h = safeHost(host);
  if (protocol === 'TCP') {
    const url = h.includes(':') ? `telnet://[${h}]:${port}` : `telnet://${h}:${port}`;
    return `echo hostName | curl -s --connect-timeout ${waitSeconds} --max-time ${waitSeconds} ${url}`;
  }
  return `bash -c 'exec 3<>/dev/udp/${h}/${port} && echo hostName >&3 && timeout ${waitSeconds} dd bs=65536 count=1 <&3 2>/dev/null'`;
}

/** One attempt: did HOST:PORT answer the exec pod with anything? */
export async function reachedOnce(
  ctx: UpstreamContext,
  execPod: string,
  host: string,
  port: number,
  protocol: Protocol,
): Promise<boolean> {
  const r = await ctx.kube.exec(ctx.namespace, execPod, reachabilityCommand(host, port, protocol));
  if (r.stdout.trim() !== '') return true;
  ctx.log(
    `Service reachability failing (exit ${r.code}${r.stderr.trim() ? `: ${r.stderr.trim()}` : ''}), retrying`,
  );
  return false;
}

/**
 * testEndpointReachability: polls (every `intervalMs`, immediately first) until HOST:PORT answers or `timeoutMs`
 * passes; false on timeout. The jig's version polls each second for ServiceReachabilityShortPollTimeout; service.go's
 * takes a timeout and polls at framework.Poll.
 */
export function endpointReachable(
  ctx: UpstreamContext,
  execPod: string,
  host: string,
  port: number,
  protocol: Protocol,
  timeoutMs = SERVICE_REACHABILITY_SHORT_POLL_TIMEOUT_MS,
  intervalMs = 1_000,
): Promise<boolean> {
  return poll(intervalMs, timeoutMs, () => reachedOnce(ctx, execPod, host, port, protocol), ctx.signal);
}

async function mustReach(
  ctx: UpstreamContext,
  execPod: string,
  host: string,
  port: number,
  protocol: Protocol,
): Promise<void> {
  if (!(await endpointReachable(ctx, execPod, host, port, protocol)))
    fail(
      `service is not reachable within ${SERVICE_REACHABILITY_SHORT_POLL_TIMEOUT_MS / 1000}s timeout on endpoint ${host}:${port} over ${protocol} protocol`,
    );
}

interface ServicePortView {
  readonly port: number;
  readonly nodePort: number;
  readonly protocol: Protocol;
}

function servicePorts(svc: KubeObject): ServicePortView[] {
  return fieldArray(svc, 'spec', 'ports').map((p) => ({
    port: Number(field(p, 'port')),
    nodePort: Number(field(p, 'nodePort') ?? 0),
    protocol: fieldString(p, 'protocol') === 'UDP' ? 'UDP' : 'TCP',
  }));
}

/** checkClusterIPServiceReachability / checkNodePortServiceReachability (nodes: the first two, as upstream). */
async function checkPortsReachability(
  ctx: UpstreamContext,
  jig: TestJig,
  svc: KubeObject,
  execPod: string,
  withNodePorts: boolean,
): Promise<void> {
  await jig.waitForAvailableEndpoint();
  const name = fieldString(svc, 'metadata', 'name');
  const clusterIP = fieldString(svc, 'spec', 'clusterIP');
  for (const sp of servicePorts(svc)) {
    await mustReach(ctx, execPod, name, sp.port, sp.protocol);
    await mustReach(ctx, execPod, clusterIP, sp.port, sp.protocol);
    if (!withNodePorts) {
      // checkClusterIPServiceReachability: every external IP too, on the service port.
      for (const externalIP of fieldArray(svc, 'spec', 'externalIPs'))
        await mustReach(ctx, execPod, String(externalIP), sp.port, sp.protocol);
      continue;
    }
    for (const node of ctx.nodes.slice(0, 2))
      await mustReach(ctx, execPod, node.internalIP, sp.nodePort, sp.protocol);
  }
}

/**
 * checkExternalServiceReachability: `nslookup NAME.NS.svc.cluster.local` until it resolves. The lab's pods have
 * no nslookup; `getent hosts` asks the same resolver (the pod's resolv.conf, the cluster DNS) and fails as nslookup
 * does when the name does not resolve.
 */
async function checkExternalServiceReachability(
  ctx: UpstreamContext,
  svc: KubeObject,
  execPod: string,
): Promise<void> {
  const fqdn = `${fieldString(svc, 'metadata', 'name')}.${fieldString(svc, 'metadata', 'namespace')}.svc.cluster.local`;
  const ok = await poll(
    POLL_MS,
    SERVICE_REACHABILITY_SHORT_POLL_TIMEOUT_MS,
    async () => {
      const r = await ctx.kube.exec(ctx.namespace, execPod, `getent hosts ${safeHost(fqdn)}`);
      if (r.code === 0) return true;
      ctx.log(`ExternalName service "${ctx.namespace}/${execPod}" failed to resolve to IP`);
      return false;
    },
    ctx.signal,
  );
  if (!ok)
    fail(
      `ExternalName service ${fqdn} did not resolve within ${SERVICE_REACHABILITY_SHORT_POLL_TIMEOUT_MS / 1000}s`,
    );
}

/** CheckServiceReachability: only ClusterIP, NodePort and ExternalName, as upstream (LoadBalancer: as ClusterIP). */
export async function checkServiceReachability(
  ctx: UpstreamContext,
  jig: TestJig,
  svc: KubeObject,
  execPod: string,
): Promise<void> {
  const type = serviceType(svc);
  sanityCheckService(svc, type);
  switch (type) {
    case 'ClusterIP':
    case 'LoadBalancer':
      return checkPortsReachability(ctx, jig, svc, execPod, false);
    case 'NodePort':
      return checkPortsReachability(ctx, jig, svc, execPod, true);
    case 'ExternalName':
      return checkExternalServiceReachability(ctx, svc, execPod);
    default:
      fail(
        `unsupported service type "${type}" to verify service reachability for "${fieldString(svc, 'metadata', 'name')}" service`,
      );
  }
}
