// `kube-proxy-ts render --proxy-mode ipvs`: what a node in ipvs mode programs, one section per kernel tool, each
// section valid input to that tool: kube-ipvs0 (`ip -batch`), the ipsets (`ipset restore -exist`), the virtual
// and real servers (`ipvsadm --restore`), the glue rules (`iptables-restore --noflush`).
import { kubeIPSet, KUBE_IPSETS } from '../../netfilter/ipset/sets.js';
import { restoreText } from '../../netfilter/ipset/restore.js';
import type { IPSetOperation } from '../../netfilter/ipset/restore.js';
import { serializeRestore } from '../../netfilter/iptables/serialize.js';
import { ipvsadmReal, ipvsadmService } from '../../netfilter/ipvs/ipvsadm-text.js';
import type { NodeNetworkConfig, ProxySnapshot } from '../../sync/backend.js';
import { IPVS_JUMPS, ipvsRestoreInput } from './iptables.js';
import type { IpvsIptablesOptions } from './iptables.js';
import { DUMMY_DEVICE, localNodeAddresses, planIpvs } from './plan.js';
import type { IpvsPlan, PlannedVirtualServer } from './plan.js';
import { DEFAULT_IPVS_SCHEDULER } from './requirements.js';

export interface IpvsRenderOptions extends IpvsIptablesOptions {
  readonly scheduler?: string;
}

export function renderIpvs(
  snapshot: ProxySnapshot,
  node: NodeNetworkConfig,
  options: IpvsRenderOptions,
): string {
  const plan = planIpvs(snapshot, node, {
    scheduler: options.scheduler || DEFAULT_IPVS_SCHEDULER,
    nodeAddresses: localNodeAddresses(node),
  });
  return [
    `# kube-ipvs0 (ip -batch -)\n${dummyText(plan)}`,
    `# ipsets (ipset restore -exist)\n${ipsetText(plan)}`,
    `# IPVS virtual and real servers (ipvsadm --restore)\n${ipvsadmText(plan)}`,
    `# iptables (iptables-restore --noflush), then the jumps into its chains:\n${jumpComments(node)}` +
      serializeRestore(ipvsRestoreInput(plan, node, options)),
  ].join('');
}

function dummyText(plan: IpvsPlan): string {
  const prefix = plan.family === 'IPv6' ? 128 : 32;
  const lines = [`link add ${DUMMY_DEVICE} type dummy`];
  for (const a of plan.boundAddresses) lines.push(`address add ${a}/${prefix} dev ${DUMMY_DEVICE}`);
  return lines.map((l) => l + '\n').join('');
}

function ipsetText(plan: IpvsPlan): string {
  const ops: IPSetOperation[] = KUBE_IPSETS.map((s) => ({
    verb: 'create',
    set: kubeIPSet(s.id, plan.family),
  }));
  for (const s of KUBE_IPSETS) {
    const name = kubeIPSet(s.id, plan.family).name;
    for (const entry of [...(plan.sets.get(s.id) ?? [])].sort()) ops.push({ verb: 'add', name, entry });
  }
  return restoreText(ops);
}

/** One virtual server and its real servers as `ipvsadm --restore` reads them (and `ipvsadm -Sn` prints them). */
export function ipvsadmLines(planned: PlannedVirtualServer): string[] {
  const { virtualServer: vs, realServers } = planned;
  return [ipvsadmService('-A', vs), ...realServers.map((rs) => ipvsadmReal('-a', vs, rs))];
}

function ipvsadmText(plan: IpvsPlan): string {
  const keys = [...plan.virtualServers.keys()].sort();
  const lines = keys.flatMap((key) => ipvsadmLines(plan.virtualServers.get(key)!));
  return lines.map((l) => l + '\n').join('');
}

function jumpComments(node: NodeNetworkConfig): string {
  const cmd = node.family === 'IPv6' ? 'ip6tables' : 'iptables';
  return IPVS_JUMPS.map(
    (j) => `# ${cmd} -t ${j.table} -I ${j.from} -m comment --comment "${j.comment}" -j ${j.to}\n`,
  ).join('');
}
