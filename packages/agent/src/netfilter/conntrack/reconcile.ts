// Which UDP conntrack flows are stale (upstream pkg/proxy/conntrack/cleanup.go, as summarised in
// upstream-model.md §9): a pure planner over the whole service map, the whole endpoints map and one family's flows.
//
// A UDP flow keeps its DNAT target for as long as packets keep coming, so a client that talks to a removed endpoint
// (or that talked to the VIP before the Service had endpoints, and so was never DNATed) is blackholed until the
// flow is deleted. The reconcile is whole-table: a flow whose original destination is a frontend of a UDP service
// port, and whose reply source is not one of that port's serving endpoints, is stale. TCP and SCTP are never
// touched (their endpoints reset the connection themselves).
//
// A port with no serving endpoints is judged with an empty set, so every flow to its frontends goes (upstream
// kubernetes/kubernetes#139629, fixing #139628: the v1.32 reconciler skipped such ports, and a one-way sender kept
// its DNAT to the removed endpoint for as long as it sent). A port deleted since the last pass (its Service deleted,
// or the port removed from it) is judged the same way, as long as no live port has its frontend (upstream #141371:
// the deleted ports come from the service map's update, as they are no longer in the map). NodePorts there differ:
// upstream matches a NodePort flow by port alone, so with an empty set it would delete every flow to that port
// number, and its #141371 review leaves NodePorts without serving endpoints alone. Here such a NodePort flow goes only
// when it was DNATed (reply source other than its original destination): a DNAT to a port with no endpoints can only
// be a leftover, and an unrelated flow that happens to use the port number is not DNATed and stays.
import type { Endpoint } from '../../model/endpoint.js';
import type { IPFamily } from '../../model/ip.js';
import type { ServicePort } from '../../model/service-port.js';
import type { ConntrackFlow } from './flow.js';

/** One `conntrack -D` filter. NodePort deletions have no origDst: they match any destination IP. */
export interface ConntrackDeletion {
  readonly family: IPFamily;
  readonly protocol: 'udp';
  readonly origDst?: string;
  readonly origDstPort: number;
  readonly replySrc: string;
  readonly replySrcPort: number;
}

export interface ConntrackPlan {
  /** Distinct filters, in the order first needed. */
  readonly deletions: readonly ConntrackDeletion[];
  /** Listed flows that matched a deletion (several flows can share one filter). */
  readonly staleFlows: number;
}

/** "ip:port", IPv6 bracketed: the same spelling as Endpoint.endpoint, so sets compare by string. */
export function hostPortKey(ip: string, port: number): string {
  return ip.includes(':') ? `[${ip}]:${port}` : `${ip}:${port}`;
}

function addAll(
  map: Map<string | number, Set<string>>,
  key: string | number,
  values: ReadonlySet<string>,
): void {
  // Two service ports sharing a frontend is not expected; if it happens, a flow to either's endpoints is live.
  const existing = map.get(key);
  if (existing) for (const v of values) existing.add(v);
  else map.set(key, new Set(values));
}

function frontends(sp: ServicePort): string[] {
  return [sp.clusterIP, ...sp.loadBalancerVIPs, ...sp.externalIPs]
    .filter((ip) => ip !== '')
    .map((ip) => hostPortKey(ip, sp.port));
}

/**
 * `deletedServicePorts`: ports removed from the service map since the last pass (UpdateServiceMapResult's
 * deletedServicePorts), judged as ports without endpoints where no live port has the same frontend.
 */
export function planStaleFlowDeletions(
  family: IPFamily,
  serviceMap: ReadonlyMap<string, ServicePort>,
  endpointsMap: ReadonlyMap<string, readonly Endpoint[]>,
  flows: readonly ConntrackFlow[],
  deletedServicePorts: readonly ServicePort[] = [],
): ConntrackPlan {
  const byFrontend = new Map<string | number, Set<string>>();
  const byNodePort = new Map<string | number, Set<string>>();
  // NodePorts of ports with no serving endpoints (or deleted): only DNATed flows to them are stale (above).
  const emptyNodePorts = new Set<number>();
  const isUdpOfFamily = (sp: ServicePort): boolean => sp.protocol === 'UDP' && sp.family === family;
  for (const sp of serviceMap.values()) {
    if (!isUdpOfFamily(sp)) continue;
    // Serving, whatever readiness, termination, traffic policy or topology say: a flow to a terminating endpoint
    // may still be answered, and topology only decides where *new* flows go.
    const serving = new Set<string>();
    for (const ep of endpointsMap.get(sp.key) ?? []) if (ep.serving) serving.add(ep.endpoint);
    for (const key of frontends(sp)) addAll(byFrontend, key, serving);
    if (sp.nodePort > 0) {
      if (serving.size > 0) addAll(byNodePort, sp.nodePort, serving);
      else emptyNodePorts.add(sp.nodePort);
    }
  }
  // A live port with serving endpoints wins over an empty one of the same NodePort.
  for (const nodePort of byNodePort.keys()) emptyNodePorts.delete(Number(nodePort));
  for (const sp of deletedServicePorts) {
    if (!isUdpOfFamily(sp)) continue;
    for (const key of frontends(sp)) if (!byFrontend.has(key)) byFrontend.set(key, new Set());
    if (sp.nodePort > 0 && !byNodePort.has(sp.nodePort)) emptyNodePorts.add(sp.nodePort);
  }

  const deletions = new Map<string, ConntrackDeletion>();
  let staleFlows = 0;
  for (const flow of flows) {
    if (flow.protocol !== 'udp' || flow.family !== family) continue;
    const { original, reply } = flow;
    if (original.dport === undefined || reply.sport === undefined) continue;
    const replyKey = hostPortKey(reply.src, reply.sport);
    const frontend = byFrontend.get(hostPortKey(original.dst, original.dport));
    let deletion: ConntrackDeletion | undefined;
    if (frontend) {
      if (!frontend.has(replyKey)) {
        deletion = {
          family,
          protocol: 'udp',
          origDst: original.dst,
          origDstPort: original.dport,
          replySrc: reply.src,
          replySrcPort: reply.sport,
        };
      }
    } else {
      // A NodePort flow is addressed to some node IP, so it is matched by port alone. A flow to a service VIP is
      // judged only as such (above), never also against a NodePort that happens to have the same number.
      const nodePort = byNodePort.get(original.dport);
      const dnatedToEmpty = emptyNodePorts.has(original.dport) && reply.src !== original.dst;
      if ((nodePort && !nodePort.has(replyKey)) || dnatedToEmpty) {
        deletion = {
          family,
          protocol: 'udp',
          origDstPort: original.dport,
          replySrc: reply.src,
          replySrcPort: reply.sport,
        };
      }
    }
    if (!deletion) continue;
    staleFlows++;
    const key = [
      deletion.origDst ?? '*',
      deletion.origDstPort,
      deletion.replySrc,
      deletion.replySrcPort,
    ].join(' ');
    if (!deletions.has(key)) deletions.set(key, deletion);
  }
  return { deletions: [...deletions.values()], staleFlows };
}

/** The `conntrack` arguments that delete the flows one filter matches. */
export function deletionArgs(d: ConntrackDeletion): string[] {
  const args = ['-D', '-p', 'udp', '-f', d.family === 'IPv6' ? 'ipv6' : 'ipv4'];
  if (d.origDst !== undefined) args.push('--orig-dst', d.origDst);
  args.push('--orig-port-dst', String(d.origDstPort), '--reply-src', d.replySrc);
  args.push('--reply-port-src', String(d.replySrcPort));
  return args;
}
