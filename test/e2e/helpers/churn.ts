// Seed 000's churn experiment, as the walkthrough runs it against a lab: minSyncPeriod 15s through the ConfigMap
// and a rollout restart, then a burst of endpoint changes (scale 3 → 12 → 3, every pod replaced); pending changes
// pile up between syncs and each sync clears them at once. Shared by the lab suite and the image suite, so that
// `lab up --image` is held to the same figures as the lab without it.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import type { Lab } from '../../../packages/lab/src/cluster/index.js';
import { fetchProxyMetrics, metricValue } from '../../../packages/lab/src/cluster/metrics.js';
import { delay, field, kubectlFor, podViews, run, waitFor, type PodView } from '../helpers.js';

export interface ChurnFigures {
  /** The pending gauge, sampled every 250 ms through the experiment. */
  readonly pending: readonly number[];
  readonly endpointChanges: number;
  readonly syncs: number;
  readonly serviceChanges: number;
}

/** The backlog the burst must build and one sync must clear. */
const BACKLOG = 5;

const mustRunner = { run: (cmd: string, args: readonly string[]) => run(cmd, args) };

/** Runs the experiment on `node` of `lab` (prefix: the lab's), asserts seed 000's figures, returns them. */
export async function churnExperiment(lab: Lab, prefix: string, node = 'worker'): Promise<ChurnFigures> {
  const k = kubectlFor(lab.kubeconfigPath);
  const netns = `${prefix}-${node}`;
  const webPods = async (): Promise<PodView[]> =>
    podViews(await k.json(['-n', 'svc', 'get', 'pods', '-l', 'app=web']));
  const metricsOf = (): Promise<string> =>
    waitFor(`metrics of ${node}`, 30_000, () => fetchProxyMetrics(mustRunner, netns));
  const starts = lab.nodes.map((n) => n.proxy.starts);
  await k.sh(
    `kubectl -n kube-system get configmap kube-proxy -o yaml | sed 's/minSyncPeriod: 1s/minSyncPeriod: 15s/' | kubectl replace -f - && ` +
      'kubectl -n kube-system rollout restart ds kube-proxy && kubectl -n kube-system rollout status ds kube-proxy --timeout=90s',
  );
  const conf = parse(readFileSync(lab.paths.nodeConfig('worker'), 'utf8')) as unknown;
  assert.equal(
    field(conf, 'nftables', 'minSyncPeriod'),
    '15s',
    'the node’s config file follows the ConfigMap',
  );
  await waitFor('proxies restarted with minSyncPeriod 15s and settled', 90_000, async () => {
    if (!lab.nodes.every((n, i) => n.proxy.starts > (starts[i] ?? 0) && n.proxy.running)) return undefined;
    const text = await fetchProxyMetrics(mustRunner, netns);
    if (!text) return undefined;
    const synced = (metricValue(text, 'kubeproxy_sync_proxy_rules_last_timestamp_seconds') ?? 0) > 0;
    return synced && metricValue(text, 'kubeproxy_sync_proxy_rules_endpoint_changes_pending') === 0
      ? true
      : undefined;
  });
  const read = async (): Promise<{ pending: number; total: number; syncs: number; services: number }> => {
    const text = await metricsOf();
    return {
      pending: metricValue(text, 'kubeproxy_sync_proxy_rules_endpoint_changes_pending') ?? NaN,
      total: metricValue(text, 'kubeproxy_sync_proxy_rules_endpoint_changes_total') ?? NaN,
      syncs: metricValue(text, 'kubeproxy_sync_proxy_rules_duration_seconds_count') ?? NaN,
      services: metricValue(text, 'kubeproxy_sync_proxy_rules_service_changes_total') ?? NaN,
    };
  };
  const before = await read();
  const startedAt = Date.now();
  type Point = Awaited<ReturnType<typeof read>>;
  const series: Point[] = [before];
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      series.push(await read());
      await delay(250); // the sampling interval of the series, not a wait for anything
    }
  })();
  try {
    await k.run(['-n', 'svc', 'scale', 'deployment', 'web', '--replicas=12']);
    await waitFor('12 ready web pods', 90_000, async () =>
      (await webPods()).filter((p) => p.ready && !p.terminating).length >= 12 ? true : undefined,
    );
    await k.run(['-n', 'svc', 'scale', 'deployment', 'web', '--replicas=3']);
    await k.run(['-n', 'svc', 'delete', 'pod', '-l', 'app=web', '--wait=false']);
    await waitFor('3 ready web pods and nothing terminating', 120_000, async () => {
      const pods = await webPods();
      return pods.length === 3 && pods.every((p) => p.ready) ? true : undefined;
    });
    // The last change waits up to minSyncPeriod before a sync takes it.
    await waitFor('no pending endpoint changes', 40_000, async () =>
      (await read()).pending === 0 ? true : undefined,
    );
  } finally {
    sampling = false;
    await sampler;
  }
  // The sampler may have stopped just before the last sync; the final reading belongs to the series too. The
  // gauge drops when a sync *starts* (checkout) and the sync counter moves when it *ends*: the sync that took the
  // last pending changes has ended once the counter passes its value in the last reading that still had some.
  const lastBusy = [...series].reverse().find((p) => p.pending > 0);
  const end = await waitFor('the sync that took the last changes to end', 40_000, async () => {
    const r = await read();
    return r.syncs > (lastBusy?.syncs ?? -1) ? r : undefined;
  });
  const elapsedS = (Date.now() - startedAt) / 1000;
  series.push(end);
  const pending = series.map((p) => p.pending);
  const peak = Math.max(...pending);
  console.log(
    `# churn on ${node}: pending series ${pending.join(',')}; endpoint changes +${end.total - before.total}, syncs +${end.syncs - before.syncs}, service changes +${end.services - before.services}`,
  );
  // How high it climbs depends on the machine's pace as much as the proxy's: on a busy machine the lab's
  // EndpointSlice controller folds more pod changes into each slice update (seen: peak 8 beside stress-ng, in
  // double figures on an idle machine). What the proxy promises is the batching itself, checked below.
  assert.ok(peak >= BACKLOG, `pending climbs to a backlog (peak ${peak})`);
  // Between syncs the gauge only grows. A sync checks out everything pending at once: a drop happens only across
  // a sync, and what is left after it can only be changes that arrived since the previous sample.
  let clearedBacklog = false;
  for (let i = 1; i < series.length; i++) {
    const [a, b] = [series[i - 1], series[i]];
    if (!a || !b || b.pending >= a.pending) continue;
    // The drop is a sync's checkout; that sync is counted when it finishes, in this sample or a later one.
    assert.ok(
      series.slice(i).some((later) => later.syncs > a.syncs),
      `pending fell from ${a.pending} to ${b.pending} without a sync`,
    );
    assert.ok(
      b.pending <= b.total - a.total,
      `pending fell from ${a.pending} to ${b.pending} but only ${b.total - a.total} changes arrived since: not all was cleared`,
    );
    if (a.pending >= BACKLOG) clearedBacklog = true;
  }
  assert.ok(clearedBacklog, `a backlog of ${BACKLOG} or more was cleared by one sync`);
  assert.equal(end.pending, 0);
  const changes = end.total - before.total;
  const syncs = end.syncs - before.syncs;
  assert.ok(syncs >= 1, 'at least one sync ran');
  // minSyncPeriod 15s: no two syncs closer than that, whatever the churn; so changes outnumber syncs.
  assert.ok(
    syncs <= Math.floor(elapsedS / 15) + 1,
    `${syncs} syncs in ${elapsedS.toFixed(0)} s: no more than minSyncPeriod 15s allows`,
  );
  assert.ok(changes >= 3 * syncs, `endpoint changes (${changes}) outnumber syncs (${syncs})`);
  assert.equal(end.services - before.services, 0, 'no Service changed');
  return {
    pending,
    endpointChanges: end.total - before.total,
    syncs: end.syncs - before.syncs,
    serviceChanges: end.services - before.services,
  };
}
