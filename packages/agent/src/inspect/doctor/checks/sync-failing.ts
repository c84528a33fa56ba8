// sync-failing: transactions the kernel refused since start (nftables sync failures, iptables-restore failures),
// and whether the latest attempt failed (changes queued after the last success).
import { max, sum } from '../../prometheus.js';
import type { DoctorCheck } from '../types.js';
import { finding } from '../types.js';
import { metricsCheck, seconds } from './metrics-input.js';

const FAILURE_COUNTERS = [
  'kubeproxy_sync_proxy_rules_nftables_sync_failures_total',
  'kubeproxy_sync_proxy_rules_iptables_restore_failures_total',
  'kubeproxy_sync_proxy_rules_iptables_partial_restore_failures_total',
  'kubeproxy_sync_proxy_rules_nftables_cleanup_failures_total',
];

export const syncFailing: DoctorCheck = metricsCheck(
  'sync-failing',
  'sync and restore failures since start, and whether the last attempt failed',
  (m, ctx) => {
    const evidence: string[] = [];
    let failures = 0;
    for (const name of FAILURE_COUNTERS) {
      const v = sum(m, name);
      if (v !== undefined && v > 0) {
        failures += v;
        evidence.push(`${name} = ${v}`);
      }
    }
    const last = max(m, 'kubeproxy_sync_proxy_rules_last_timestamp_seconds') ?? 0;
    const queued = max(m, 'kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds') ?? 0;
    const pending =
      (sum(m, 'kubeproxy_sync_proxy_rules_endpoint_changes_pending') ?? 0) +
      (sum(m, 'kubeproxy_sync_proxy_rules_service_changes_pending') ?? 0);
    const unhealthy = !('error' in ctx.healthz) && ctx.healthz.status !== 200;
    const mode = ctx.settings?.mode ?? 'nftables';
    const inspect = {
      nftables: `nft list table ip kube-proxy   # an object of the wrong type or a foreign rule in kube-proxy's table blocks every transaction`,
      iptables: `if xtables-lock-contention fails too, the lock is the cause; else iptables-save | grep -c KUBE- and the restore's failed line in the log`,
      ipvs: `ipvsadm -Ln, ipset list -n and ip addr show kube-ipvs0 against the failing step the log names (virtual server, ipset or iptables-restore)`,
    }[mode];
    const remedy =
      `Read the refusal in the agent's log: kubectl -n kube-system logs ds/kube-proxy | grep 'sync failed'; ` +
      `then ${inspect}. If another program wrote into kube-proxy's table, stop it and run kube-proxy-ts --cleanup ` +
      `(or delete the table) so that the next full sync rebuilds it.`;
    if (failures === 0)
      return finding('ok', 'no sync failure since start', ['every failure counter is 0 or absent']);
    evidence.push(
      `last successful sync at ${last > 0 ? new Date(last * 1000).toISOString() : 'never'}, last change queued at ${queued > 0 ? new Date(queued * 1000).toISOString() : 'never'}; ${pending} changes pending`,
    );
    // The pending gauges drop at checkout even when the sync then fails, so "not programmed" is read from the
    // timestamps: a change queued after the last success, and older than a sync or two would take.
    const minSync = ctx.settings?.minSyncPeriodSeconds ?? 1;
    const stale = queued > last && ctx.now / 1000 - queued > Math.max(2, 2 * minSync);
    if (unhealthy || stale || last === 0) {
      evidence.push('the proxy logs the tool’s own words for each refusal, on a line with "sync failed"');
      return finding(
        'fail',
        `${failures} sync failure(s) and the latest changes are not programmed`,
        evidence,
        remedy,
      );
    }
    return finding(
      'warn',
      `${failures} sync failure(s) since start; the proxy has synced successfully since ${seconds(ctx.now / 1000 - last)} ago`,
      evidence,
      remedy,
    );
  },
);
