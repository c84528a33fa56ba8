// The soak's report from synthetic inputs: each request classified by outcome and by the eligibility timeline,
// per Service and churn kind; long-lived connections across a proxy restart; the guarantees; the picture.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { EligibilityTimeline } from '../../../packages/lab/src/soak/eligibility.js';
import {
  CONTROL_SERVICE,
  type LoadRecord,
  type LoadTarget,
  type LongTarget,
} from '../../../packages/lab/src/soak/load-generator.js';
import { NodeSeries } from '../../../packages/lab/src/soak/node-sampler.js';
import { soakSvg } from '../../../packages/lab/src/soak/plot.js';
import {
  buildReport,
  formatReport,
  restartSurvival,
  type LongHistory,
  type SoakInputs,
} from '../../../packages/lab/src/soak/report.js';

const T0 = 1_000_000;

function slice(service: string, pods: string[]): object {
  return {
    metadata: { name: `${service}-1`, namespace: 'soak', labels: { 'kubernetes.io/service-name': service } },
    endpoints: pods.map((p) => ({ targetRef: { name: p }, conditions: { ready: true } })),
  };
}

const targets: LoadTarget[] = [
  { service: 'steady', protocol: 'tcp', via: 'clusterIP', host: '198.19.0.10', port: 80 },
  { service: 'flappy', protocol: 'udp', via: 'clusterIP', host: '198.19.0.11', port: 80 },
];

function inputs(records: LoadRecord[], overrides: Partial<SoakInputs> = {}): SoakInputs {
  const timeline = new EligibilityTimeline();
  timeline.observe('ADDED', slice('steady', ['s1', 's2']), T0 - 1000);
  timeline.observe('ADDED', slice('flappy', ['f1', 'f2']), T0 - 1000);
  timeline.observe('MODIFIED', slice('flappy', ['f2']), T0 + 2000); // f1 set unready at 2 s
  return {
    settings: {
      mode: 'nftables',
      layout: 'upstream',
      durationSeconds: 5,
      services: 2,
      churnPerSecond: 1,
      ratePerSecond: 10,
      competingLockHolder: false,
    },
    startedAt: T0,
    endedAt: T0 + 5000,
    generators: [{ where: 'pod/c', targets, long: [], records }],
    churnOf: new Map([
      ['steady', 'graceful'],
      ['flappy', 'readiness'],
    ]),
    timeline,
    churn: [{ t: T0 + 2000, change: 'unready', target: 'f1' }],
    nodes: new Map(),
    restarts: [],
    apiOutages: [],
    apiOutageMs: 3000,
    staleUdpConntrack: { count: 0, evidence: [] },
    unexpectedProxyExits: 0,
    iptablesSave: {},
    ...overrides,
  };
}

const req = (i: number, at: number, r: LoadRecord['r'], pod?: string): LoadRecord => ({
  k: 'req',
  i,
  t0: T0 + at,
  t1: T0 + at + 5,
  r,
  ...(pod !== undefined ? { pod } : {}),
});

describe('soak report', () => {
  test('classifies answers against the eligibility timeline and failures by kind', () => {
    const r = buildReport(
      inputs([
        req(0, 100, 'ok', 's1'),
        req(0, 200, 'ok', 's2'),
        req(1, 300, 'ok', 'f1'), // f1 still eligible
        req(1, 2500, 'ok', 'f1'), // 500 ms after it left: wrong endpoint
        req(1, 2600, 'ok', 'f2'),
        req(1, 2700, 'timeout'),
        req(0, 3000, 'refused'),
        req(0, 3100, 'ok', 'stranger'), // never an endpoint of steady
      ]),
    );
    assert.equal(r.requests.sent, 8);
    assert.equal(r.requests.succeeded, 4);
    assert.deepEqual(r.requests.failed, { refused: 1, timeout: 1, reset: 0, wrongEndpoint: 2, other: 0 });
    assert.equal(r.requests.byChurn.graceful.sent, 4);
    assert.equal(r.requests.byChurn.readiness.failed.wrongEndpoint, 1);
    assert.equal(r.requests.wrongEndpointLagMaxMs, 500);
    assert.equal(r.requests.byService.steady?.alwaysReady, true);
    // Failures to the always-ready, gracefully churned Service break the guarantee; the flips' do not.
    assert.equal(r.guarantees.failedToAlwaysReadyServices, 2);
    assert.equal(r.guarantees.ok, false);
    assert.equal(r.perSecond.length, 5);
    assert.deepEqual(
      r.perSecond.map((p) => [p.sent, p.failed]),
      [
        [3, 0],
        [0, 0],
        [3, 2],
        [2, 2],
        [0, 0],
      ],
    );
    // Failures that break a guarantee first, then the others, each in time order.
    assert.deepEqual(
      r.requests.failureSamples.map((f) => `${f.at} ${f.service} ${f.kind}`),
      ['3 steady refused', '3.1 steady wrongEndpoint', '2.5 flappy wrongEndpoint', '2.7 flappy timeout'],
    );
    assert.deepEqual(r.requests.failureSamples[2], {
      at: 2.5,
      from: 'pod/c',
      service: 'flappy',
      to: 'udp 198.19.0.11:80 (clusterIP)',
      kind: 'wrongEndpoint',
      pod: 'f1',
      leftMsBefore: 500, // f1 was set unready at 2 s
    });
    const text = formatReport(r);
    assert.match(text, /answered by f1 \(it had left 500 ms before\)/);
    assert.match(
      text,
      /requests: 8 sent, 4 succeeded, 4 failed \(refused 1, timeout 1, reset 0, wrong endpoint 2, other 0\)/,
    );
    assert.match(text, /guarantees: NOT held: 2 failed requests to always-ready Services/);
    assert.doesNotMatch(text, /iptables-save/, 'no timings, no line');
  });

  test('the running mode, its sync periods and each node’s iptables-save are reported as given', () => {
    const base = inputs([req(0, 100, 'ok', 's1')]);
    const r = buildReport({
      ...base,
      settings: {
        mode: 'iptables',
        iptables: 'legacy',
        minSyncPeriod: '10s',
        syncPeriod: '1m0s',
        durationSeconds: 5,
        services: 2,
        churnPerSecond: 1,
        ratePerSecond: 10,
        competingLockHolder: true,
      },
      iptablesSave: {
        a: { count: 4, failed: 0, p50Ms: 31.5, maxMs: 80, maxLines: 412 },
        b: { count: 0, failed: 4 },
      },
    });
    assert.equal(r.iptablesSave.a?.p50Ms, 31.5);
    const text = formatReport(r);
    assert.match(text, /^soak: iptables \(iptables-legacy\) minSyncPeriod 10s, syncPeriod 1m0s, /);
    assert.match(text, /\n {2}a: p50 31\.5 ms, max 80 ms \(4\), 412 lines at most\n/);
    assert.match(text, /\n {2}b: not measured, 4 failed\n/);
  });

  test("a failure within 2 s of a failed control request is the machine's, not the rules'", () => {
    const withControl: LoadTarget[] = [
      ...targets,
      { service: CONTROL_SERVICE, protocol: 'tcp', via: 'podIP', host: '198.18.10.5', port: 8080 },
    ];
    const records = [
      req(0, 1000, 'timeout'),
      req(2, 2500, 'timeout'),
      req(0, 4900, 'refused'),
      req(2, 300, 'ok'),
    ];
    const base = inputs(records);
    const r = buildReport({
      ...base,
      generators: [{ where: 'pod/c', targets: withControl, long: [], records }],
    });
    assert.deepEqual(r.control, {
      sent: 2,
      succeeded: 1,
      failed: { refused: 0, timeout: 1, reset: 0, wrongEndpoint: 0, other: 0 },
    });
    assert.equal(r.requests.sent, 2, 'control requests are not Service requests');
    assert.equal(r.requests.failedNearControlFailure, 2, 'seconds 1 and 4 are within 2 s of second 2');
    assert.equal(r.guarantees.failedToAlwaysReadyServices, 0);
    const far = [req(0, 100, 'timeout'), req(2, 3500, 'timeout')];
    const r2 = buildReport({
      ...base,
      generators: [{ where: 'pod/c', targets: withControl, long: [], records: far }],
    });
    assert.equal(r2.guarantees.failedToAlwaysReadyServices, 1, 'second 0 is 3 s before the control failure');
  });

  test("failures while the path's node had its proxy down are the restart's cost, counted apart", () => {
    const onWorker: LoadTarget[] = targets.map((t) => ({ ...t, node: 'worker' }));
    const records = [req(0, 2500, 'timeout'), req(0, 4500, 'timeout')];
    const r = buildReport({
      ...inputs(records),
      generators: [{ where: 'pod/c', targets: onWorker, long: [], records }],
      restarts: [{ node: 'worker', signal: 'SIGTERM', at: T0 + 1000, pid: 7, syncedAt: T0 + 3000 }],
    });
    assert.equal(
      r.requests.failedWhileProxyDown,
      1,
      'the one at 2.5 s; 4.5 s is past the resync and a second',
    );
    assert.equal(r.guarantees.failedToAlwaysReadyServices, 1);
    assert.equal(r.proxyRestarts.unmeasured, 1, 'no long-lived connection answered after the resync');
  });

  test("failures while the path's node had not heard the API server again after an outage are counted apart", () => {
    // Outage at 1 s for 3 s; the worker's EndpointSlice changes stand still until 7 s, and it syncs at 7.4 s.
    const worker = new NodeSeries();
    const sample = (changes: number, lastSyncS: number): string =>
      `kubeproxy_sync_proxy_rules_endpoint_changes_total ${changes}\n` +
      `kubeproxy_sync_proxy_rules_last_timestamp_seconds ${(T0 + lastSyncS * 1000) / 1000}\n`;
    [10, 20, 20, 20, 20, 20, 20, 35, 36].forEach((n, i) =>
      worker.add(T0 + i * 1000, sample(n, i < 7 ? 0.9 : 7.4)),
    );
    const onWorker: LoadTarget[] = targets.map((t) => ({ ...t, node: 'worker' }));
    const records = [req(0, 6500, 'timeout'), req(0, 8300, 'refused'), req(0, 8500, 'timeout')];
    const r = buildReport({
      ...inputs(records, { endedAt: T0 + 9000 }),
      generators: [{ where: 'pod/c', targets: onWorker, long: [], records }],
      nodes: new Map([['worker', worker]]),
      apiOutages: [T0 + 1000],
    });
    assert.deepEqual(r.outageRecoveries, [
      { node: 'worker', at: 1, heardAfterMs: 6000, syncedAfterMs: 6400 },
    ]);
    assert.equal(
      r.requests.failedWhileNodeDeaf,
      2,
      'the one at 6.5 s and the one at 8.3 s, within a second of the sync',
    );
    assert.equal(r.guarantees.failedToAlwaysReadyServices, 1, 'the one at 8.5 s');
    assert.equal(r.guarantees.nodesNotBackAfterOutages, 0);
    const text = formatReport(r);
    assert.match(text, /API server outages: 1; nodes heard it again after 6\.0 s to 6\.0 s/);
    assert.match(text, /at 1\.0 s: worker heard again after 6\.0 s, synced after 6\.4 s/);
    assert.match(
      text,
      /2 failures to always-ready Services while their node had not heard the API server again/,
    );
  });

  test('a node that has not heard the API server again a minute after an outage breaks a guarantee', () => {
    const worker = new NodeSeries();
    for (let i = 0; i <= 70; i++)
      worker.add(T0 + i * 1000, `kubeproxy_sync_proxy_rules_endpoint_changes_total ${i === 0 ? 1 : 2}\n`);
    const r = buildReport({
      ...inputs([], { endedAt: T0 + 70_000 }),
      nodes: new Map([['worker', worker]]),
      apiOutages: [T0 + 1000],
    });
    assert.deepEqual(r.outageRecoveries, [{ node: 'worker', at: 1 }]);
    assert.equal(r.guarantees.nodesNotBackAfterOutages, 1);
    assert.equal(r.guarantees.ok, false);
    assert.match(formatReport(r), /worker not heard again/);
    assert.match(formatReport(r), /1 nodes not back a minute after an outage/);
  });

  test('all guarantees hold when only readiness flips cost answers', () => {
    const r = buildReport(inputs([req(0, 100, 'ok', 's1'), req(1, 2500, 'ok', 'f1')]));
    assert.equal(r.requests.failed.wrongEndpoint, 1);
    assert.equal(r.guarantees.failedToAlwaysReadyServices, 0);
    assert.equal(r.guarantees.ok, true);
    assert.match(formatReport(r), /guarantees: all held/);
  });

  test('a long-lived connection survives a restart when it answers after the resync without failing', () => {
    // Each generator ends on its own clock: a connection that kept answering until its load ended, before a late
    // resync, was neither lost nor shown to survive. (CI saw 12 of 16 "survived": one generator's connections.)
    let n = 0;
    const h = (points: [number, boolean][]): LongHistory => ({
      label: `c${n++}`,
      points: points.map(([t, ok]) => ({ t, r: ok ? 'ok' : 'timeout' })),
    });
    const histories = [
      h([
        [100, true],
        [900, true],
        [1500, true],
        [2500, true],
      ]), // survives
      h([
        [100, true],
        [1200, false],
      ]), // open, broken by the restart
      h([
        [100, true],
        [900, true],
        [1100, true],
      ]), // open, answering until its load ended before the resync: unmeasured
      h([
        [100, true],
        [900, true],
        [6100, false],
      ]), // open, then a timeout recorded after the resync with no answer between: lost
      h([
        [1500, true],
        [2500, true],
      ]), // opened after the stop: not counted
    ];
    const lost = [
      { connection: 'c1', outcome: 'timeout', failedAfterMs: 200, lastAnswerAfterMs: -900 },
      { connection: 'c3', outcome: 'timeout', failedAfterMs: 5100, lastAnswerAfterMs: -100 },
    ];
    assert.deepEqual(restartSurvival(histories, 1000, 2000), { open: 3, survived: 1, unmeasured: 1, lost });
    assert.deepEqual(restartSurvival(histories, 1000, undefined), {
      open: 2,
      survived: 0,
      unmeasured: 2,
      lost,
    });
  });

  test("a late resync between two generators' ends loses nothing: the earlier one's connections are unmeasured", () => {
    const long = (c: number, ts: number[]): LoadRecord[] =>
      ts.map((t) => ({ k: 'long', i: 0, c, t: T0 + t, r: 'ok', pod: 'a' }) as const);
    const client = [...long(0, [100, 1500, 2800]), ...long(1, [100, 1500, 2800])]; // its load ended at 2.8 s
    const pod = [...long(0, [300, 1700, 3400]), ...long(1, [300, 1700, 3400])]; // this one's at 3.4 s
    const anchor: LongTarget = {
      service: 'anchor',
      via: 'clusterIP',
      host: '198.19.0.9',
      port: 80,
      connections: 2,
    };
    const r = buildReport(
      inputs([...client, ...pod], {
        generators: [
          { where: 'client', targets: [], long: [anchor], records: client },
          { where: 'pod/c', targets: [], long: [anchor], records: pod },
        ],
        restarts: [{ node: 'worker', signal: 'SIGKILL', at: T0 + 1000, pid: 42, syncedAt: T0 + 3000 }],
      }),
    );
    assert.equal(r.proxyRestarts.connectionsOpen, 2, "the pod's two, measured across the resync");
    assert.equal(r.proxyRestarts.connectionsSurvived, 2);
    assert.equal(r.proxyRestarts.restarts[0]?.connectionsUnmeasured, 2, "the client's two");
    assert.equal(r.guarantees.connectionsLostToProxyRestarts, 0);
    assert.match(formatReport(r), /2\/2 connections survived \(2 ended with the load before the resync\)/);
  });

  test('restarts are counted with the connections open and surviving, and marked on the picture', () => {
    const longs: LoadRecord[] = [
      { k: 'long', i: 0, c: 0, t: T0 + 100, r: 'ok', pod: 'a' },
      { k: 'long', i: 0, c: 0, t: T0 + 3500, r: 'ok', pod: 'a' },
      { k: 'long', i: 0, c: 1, t: T0 + 100, r: 'ok', pod: 'a' },
      { k: 'long', i: 0, c: 1, t: T0 + 1500, r: 'reset' },
    ];
    const node = new NodeSeries();
    node.add(T0 + 500, 'kubeproxy_sync_proxy_rules_endpoint_changes_pending 12\n');
    node.add(T0 + 1500, 'kubeproxy_sync_proxy_rules_endpoint_changes_pending 0\n');
    const r = buildReport(
      inputs(longs, {
        generators: [
          {
            where: 'client',
            targets: [],
            long: [{ service: 'anchor', via: 'nodePort', host: '198.18.0.10', port: 30080, connections: 2 }],
            records: longs,
          },
        ],
        restarts: [{ node: 'worker', signal: 'SIGKILL', at: T0 + 1000, pid: 42, syncedAt: T0 + 3000 }],
        nodes: new Map([['worker', node]]),
      }),
    );
    assert.equal(r.proxyRestarts.count, 1);
    assert.equal(r.proxyRestarts.connectionsOpen, 2);
    assert.equal(r.proxyRestarts.connectionsSurvived, 1);
    assert.equal(r.guarantees.connectionsLostToProxyRestarts, 1);
    assert.deepEqual(r.proxyRestarts.restarts[0]?.connectionsLost, [
      {
        connection: 'client → anchor via nodePort 198.18.0.10:30080 #1',
        outcome: 'reset',
        failedAfterMs: 500,
        lastAnswerAfterMs: -900,
      },
    ]);
    assert.match(
      formatReport(r),
      /lost: client → anchor via nodePort 198\.18\.0\.10:30080 #1: reset 0\.5 s after the stop/,
    );
    assert.match(formatReport(r), /at 1\.0 s: SIGKILL worker \(pid 42\): synced again after 2\.0 s/);
    assert.deepEqual(
      r.perSecond.map((p) => p.pending.worker),
      [12, 0, undefined, undefined, undefined],
    );
    const svg = soakSvg(r);
    assert.match(svg, /^<svg [^>]*>/);
    assert.match(svg, /<\/svg>\n$/);
    assert.equal((svg.match(/class="mark"/g) ?? []).length, 1, 'one restart mark');
    assert.match(svg, /<title>SIGKILL kube-proxy on worker<\/title>/);
    assert.match(svg, /class="pending" data-node="worker"/);
  });
});
