// pending-stuck: changes waiting for a sync for longer than a sync period. The pending gauges drop to zero when
// a sync checks them out; a gauge above zero long after the last successful sync means syncs are not starting
// (blocked behind a lock, or the runner is wedged).
import { max, sum } from '../../prometheus.js';
import type { DoctorCheck } from '../types.js';
import { finding } from '../types.js';
import { metricsCheck, seconds } from './metrics-input.js';

export const pendingStuck: DoctorCheck = metricsCheck(
  'pending-stuck',
  'changes pending longer than a sync period',
  (m, ctx) => {
    const endpoints = sum(m, 'kubeproxy_sync_proxy_rules_endpoint_changes_pending') ?? 0;
    const services = sum(m, 'kubeproxy_sync_proxy_rules_service_changes_pending') ?? 0;
    const last = max(m, 'kubeproxy_sync_proxy_rules_last_timestamp_seconds') ?? 0;
    const queued = max(m, 'kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds') ?? 0;
    const period = ctx.settings?.syncPeriodSeconds ?? 30;
    const waiting = queued > 0 ? ctx.now / 1000 - queued : undefined;
    const evidence = [
      `${endpoints} endpoint and ${services} service changes pending`,
      `last change queued ${seconds(waiting)} ago, last successful sync ${last > 0 ? `${seconds(ctx.now / 1000 - last)} ago` : 'never'}`,
      `syncPeriod ${seconds(period)}`,
    ];
    if (endpoints + services === 0) return finding('ok', 'no change is waiting', evidence);
    if (waiting !== undefined && waiting > period && queued > last) {
      return finding(
        'fail',
        `${endpoints + services} changes have waited ${seconds(waiting)} (> syncPeriod)`,
        evidence,
        'Syncs are not starting or not finishing: see xtables-lock-contention and sync-slow; if neither explains it, ' +
          'restart the agent (kubectl -n kube-system delete pod -l k8s-app=kube-proxy --field-selector spec.nodeName=$NODE) ' +
          'and keep its log.',
      );
    }
    return finding(
      'ok',
      `${endpoints + services} changes pending, queued ${seconds(waiting)} ago (a sync is due)`,
      evidence,
    );
  },
);
