// stale-udp-conntrack: UDP conntrack entries DNATed to an address that is no longer an endpoint of their
// Service. Such a flow keeps its old destination for as long as packets keep coming (a DNS client resending
// every second never gets a new one), so the Service is blackholed for it. The planner is the reconciler's own
// (src/netfilter/conntrack/reconcile.ts), over the cluster's Services and endpoints as the API has them now.
import { parseConntrackListing } from '../../../netfilter/conntrack/flow.js';
import { deletionArgs, planStaleFlowDeletions } from '../../../netfilter/conntrack/reconcile.js';
import type { DoctorCheck } from '../types.js';
import { finding, skipped } from '../types.js';

export const staleUdpConntrack: DoctorCheck = {
  id: 'stale-udp-conntrack',
  title: 'UDP conntrack entries DNATed to addresses that are no longer endpoints',
  async run(ctx) {
    if ('unavailable' in ctx.cluster) return skipped(ctx.cluster.unavailable);
    const evidence: string[] = [`the cluster from ${ctx.cluster.source}`];
    const commands: string[] = [];
    let stale = 0;
    for (const f of ctx.cluster.families) {
      const l3 = f.family === 'IPv6' ? 'ipv6' : 'ipv4';
      const r = await ctx.runner.run('conntrack', ['-L', '-p', 'udp', '-f', l3, '-o', 'extended']);
      if (r.code !== 0) {
        evidence.push(`conntrack -L -p udp -f ${l3}: exit ${r.code}: ${r.stderr.trim()}`);
        continue;
      }
      const listing = parseConntrackListing(r.stdout);
      const plan = planStaleFlowDeletions(f.family, f.serviceMap, f.endpointsMap, listing.flows);
      evidence.push(`${f.family}: ${listing.flows.length} UDP entries, ${plan.staleFlows} stale`);
      stale += plan.staleFlows;
      for (const d of plan.deletions) {
        const sp = [...f.serviceMap.values()].find(
          (s) =>
            s.protocol === 'UDP' &&
            (d.origDst === undefined
              ? s.nodePort === d.origDstPort
              : s.clusterIP === d.origDst && s.port === d.origDstPort),
        );
        const to = d.origDst !== undefined ? `${d.origDst}:${d.origDstPort}` : `NodePort ${d.origDstPort}`;
        const now = (f.endpointsMap.get(sp?.key ?? '') ?? []).filter((e) => e.serving).map((e) => e.endpoint);
        evidence.push(
          `udp to ${to}${sp ? ` (${sp.nameString})` : ''} answered by ${d.replySrc}:${d.replySrcPort}, which is not an endpoint (now: ${now.join(', ') || 'none'})`,
        );
        commands.push(`conntrack ${deletionArgs(d).join(' ')}`);
      }
    }
    if (stale === 0) return finding('ok', 'no stale UDP conntrack entry', evidence);
    return finding(
      'warn',
      `${stale} UDP conntrack entr${stale === 1 ? 'y is' : 'ies are'} DNATed to addresses that are no longer endpoints`,
      evidence,
      `Delete them (kube-proxy does after each sync that changes a UDP Service's endpoints; these survived): ${commands.join('; ')}`,
    );
  },
};
