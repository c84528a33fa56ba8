// explain in ipvs mode: the kernel objects one service port has, from the same plan the backend applies (its
// virtual servers with their real servers, as ipvsadm prints them, and its ipset entries), each with how
// `explain --programmed` finds it in the live kernel.
import { localNodeAddresses, planIpvs } from '../backends/ipvs/plan.js';
import { ipvsadmLines } from '../backends/ipvs/render.js';
import { DEFAULT_IPVS_SCHEDULER } from '../backends/ipvs/requirements.js';
import type { ServicePort } from '../model/service-port.js';
import { kubeIPSet, KUBE_IPSETS } from '../netfilter/ipset/sets.js';
import { IPVS_FLAG_PERSISTENT, realServerKey } from '../netfilter/ipvs/types.js';
import type { VirtualServer } from '../netfilter/ipvs/types.js';
import type { NodeNetworkConfig, ProxySnapshot } from '../sync/backend.js';
import type { KernelObject } from './explain.js';

/** What --programmed compares besides the real servers: the scheduler, and persistence with its timeout. */
export function ipvsServiceText(vs: Pick<VirtualServer, 'scheduler' | 'flags' | 'timeout'>): string {
  return (vs.flags & IPVS_FLAG_PERSISTENT) !== 0 ? `${vs.scheduler} persistent ${vs.timeout}` : vs.scheduler;
}

export function ipvsPortObjects(
  sp: ServicePort,
  snapshot: ProxySnapshot,
  node: NodeNetworkConfig,
  scheduler = DEFAULT_IPVS_SCHEDULER,
): KernelObject[] {
  const one: ProxySnapshot = {
    serviceMap: new Map([[sp.key, sp]]),
    endpointsMap: new Map([[sp.key, snapshot.endpointsMap.get(sp.key) ?? []]]),
    topology: snapshot.topology,
  };
  const plan = planIpvs(one, node, { scheduler, nodeAddresses: localNodeAddresses(node) });
  const out: KernelObject[] = [];
  for (const [key, planned] of [...plan.virtualServers].sort(([a], [b]) => (a < b ? -1 : 1))) {
    out.push({
      object: ipvsadmLines(planned).join('\n'),
      check: {
        kind: 'ipvs-virtual-server',
        key,
        service: ipvsServiceText(planned.virtualServer),
        realServers: planned.realServers.map((rs) => `${realServerKey(rs)} w${rs.weight}`).sort(),
      },
    });
  }
  for (const s of KUBE_IPSETS) {
    // KUBE-IPVS-IPS and the health-check set are node-wide: another port may need the same entry.
    const name = kubeIPSet(s.id, node.family).name;
    for (const entry of [...(plan.sets.get(s.id) ?? [])].sort())
      out.push({ object: `add ${name} ${entry}`, check: { kind: 'ipset-entry', set: name, entry } });
  }
  return out;
}
