// sync-slow: how long syncs take (kubeproxy_sync_proxy_rules_duration_seconds p50/p99) against minSyncPeriod, the
// shortest time between two syncs: a sync longer than that means changes queue behind the one running, which is
// seed 003's first symptom. The size beside it (rules in iptables mode, changes seen) says whether the cost is
// the cluster's size or something else (a held lock, a slow kernel).
import { histogram, sum } from '../../prometheus.js';
import type { DoctorCheck } from '../types.js';
import { finding } from '../types.js';
import { metricsCheck, seconds } from './metrics-input.js';

export const syncSlow: DoctorCheck = metricsCheck(
  'sync-slow',
  'sync duration p50/p99 against minSyncPeriod and the cluster size',
  (m, ctx) => {
    const h = histogram(m, 'kubeproxy_sync_proxy_rules_duration_seconds');
    if (!h || h.count === 0)
      return finding('ok', 'no sync measured yet', [
        'kubeproxy_sync_proxy_rules_duration_seconds has no observation',
      ]);
    const minSync = ctx.settings?.minSyncPeriodSeconds ?? 1;
    // A sync longer than minSyncPeriod makes changes queue behind it; below 1 s (upstream's default
    // minSyncPeriod) nobody notices, so a tiny minSyncPeriod does not turn every sync into a warning.
    const limit = Math.max(minSync, 1);
    const evidence = [
      `${h.count} syncs: p50 ${seconds(h.p50)}, p99 ${seconds(h.p99)}, mean ${seconds(h.sum / h.count)} (kubeproxy_sync_proxy_rules_duration_seconds)`,
      `minSyncPeriod ${seconds(minSync)} (limit ${seconds(limit)})`,
    ];
    const rules = sum(m, 'kubeproxy_sync_proxy_rules_iptables_total');
    if (rules !== undefined)
      evidence.push(`${rules} iptables rules programmed (kubeproxy_sync_proxy_rules_iptables_total)`);
    const restore = histogram(m, 'kubeproxy_iptables_restore_duration_seconds');
    if (restore && restore.count > 0)
      evidence.push(`iptables-restore alone: p50 ${seconds(restore.p50)}, p99 ${seconds(restore.p99)}`);
    const changes =
      (sum(m, 'kubeproxy_sync_proxy_rules_endpoint_changes_total') ?? 0) +
      (sum(m, 'kubeproxy_sync_proxy_rules_service_changes_total') ?? 0);
    evidence.push(`${changes} Service and endpoint changes seen since start`);
    if (!('unavailable' in ctx.cluster)) {
      const ports = ctx.cluster.families.reduce((n, f) => n + f.serviceMap.size, 0);
      const endpoints = ctx.cluster.families.reduce(
        (n, f) => n + [...f.endpointsMap.values()].reduce((m, eps) => m + eps.length, 0),
        0,
      );
      evidence.push(
        `cluster size: ${ports} service ports, ${endpoints} endpoints (from ${ctx.cluster.source})`,
      );
    }
    const remedy =
      ctx.settings?.mode === 'iptables'
        ? 'If the lock check below shows waits, find the other writer first. Otherwise: raise minSyncPeriod (e.g. ' +
          'kubectl -n kube-system edit configmap kube-proxy → iptables.minSyncPeriod: 10s) to batch churn, or move to ' +
          'nftables mode (mode: nftables), whose syncs cost what changed, not what exists.'
        : ctx.settings?.mode === 'ipvs'
          ? 'Raise minSyncPeriod to batch churn (kubectl -n kube-system edit configmap kube-proxy → ipvs.minSyncPeriod); ' +
            'ipvs mode is deprecated upstream: nftables mode syncs what changed, in one transaction.'
          : 'Raise minSyncPeriod to batch churn (kubectl -n kube-system edit configmap kube-proxy → nftables.minSyncPeriod), ' +
            'and compare with kube-proxy-ts render -f <dump> | nft -c -f - for the kernel’s own time.';
    if ((h.p50 ?? 0) > limit)
      return finding(
        'fail',
        `half of all syncs take longer than minSyncPeriod (p50 ${seconds(h.p50)})`,
        evidence,
        remedy,
      );
    if ((h.p99 ?? 0) > limit)
      return finding(
        'warn',
        `the slowest syncs take longer than minSyncPeriod (p99 ${seconds(h.p99)})`,
        evidence,
        remedy,
      );
    return finding('ok', `syncs take p99 ${seconds(h.p99)}, within ${seconds(limit)}`, evidence);
  },
);
