// proxy-health: /healthz, and the time since the last successful sync against syncPeriod (the agent calls
// itself unhealthy after 2 × syncPeriod with changes waiting; upstream's rule).
import { max } from '../../prometheus.js';
import type { DoctorCheck } from '../types.js';
import { finding } from '../types.js';
import { isFinding, metricsOrSkip, seconds } from './metrics-input.js';

export const proxyHealth: DoctorCheck = {
  id: 'proxy-health',
  title: '/healthz and the time since the last successful sync',
  async run(ctx) {
    const evidence: string[] = [];
    const remedy =
      'kubectl -n kube-system logs ds/kube-proxy --tail=100   # on the node: journalctl -u kube-proxy, or the pod log';
    if ('error' in ctx.healthz) {
      return finding(
        'fail',
        `the agent's health endpoint does not answer`,
        [`GET ${ctx.healthzURL}: ${ctx.healthz.error}`],
        `Is kube-proxy running on this node? kubectl -n kube-system get pods -l k8s-app=kube-proxy -o wide; ${remedy}`,
      );
    }
    evidence.push(`GET ${ctx.healthzURL}: ${ctx.healthz.status} ${ctx.healthz.body.trim().slice(0, 300)}`);
    const m = metricsOrSkip(ctx);
    if (!isFinding(m)) {
      const last = max(m, 'kubeproxy_sync_proxy_rules_last_timestamp_seconds');
      if (last !== undefined && last > 0) {
        const since = ctx.now / 1000 - last;
        evidence.push(
          `last successful sync ${seconds(since)} ago (kubeproxy_sync_proxy_rules_last_timestamp_seconds)`,
        );
      } else
        evidence.push(
          'no successful sync yet (kubeproxy_sync_proxy_rules_last_timestamp_seconds absent or 0)',
        );
    }
    const period = ctx.settings?.syncPeriodSeconds;
    if (period !== undefined) evidence.push(`syncPeriod ${seconds(period)}`);
    if (ctx.healthz.status !== 200) {
      return finding(
        'fail',
        `/healthz answers ${ctx.healthz.status}: the proxy is not keeping up, or the node is not eligible`,
        evidence,
        `See sync-failing and pending-stuck below; ${remedy}`,
      );
    }
    // A quiet cluster syncs rarely (nothing to do), so an old last sync alone is no symptom; changes waiting
    // behind it are, and pending-stuck reports those.
    return finding('ok', 'healthy', evidence);
  },
};
