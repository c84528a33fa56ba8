// The datapath bench's pure parts (bench/datapath-plan.ts): the address plan that lets two pod namespaces answer
// for every endpoint of 30,000 Services, the seeded ClusterIP draw, the percentiles and the table. The timing
// itself is the bench's business, not a test's.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { DatapathRow, TrafficStats } from '../../bench/datapath-plan.js';
import {
  DATAPATH_ENDPOINTS_PER_SERVICE,
  DATAPATH_PLAN,
  datapathCells,
  datapathMarkdown,
  inPrefix,
  MAX_DATAPATH_SERVICES,
  percentile,
  podFor,
  pooled,
  serviceTargets,
  trafficStats,
} from '../../bench/datapath-plan.js';
import { benchService, benchSlice } from '../../bench/workload.js';

describe('datapath address plan', () => {
  test('inPrefix matches by prefix length', () => {
    assert.equal(inPrefix('198.19.127.255', '198.19.0.0/17'), true);
    assert.equal(inPrefix('198.19.128.0', '198.19.0.0/17'), false);
    assert.equal(inPrefix('198.19.235.255', '198.19.232.0/22'), true);
    assert.equal(inPrefix('198.19.236.0', '198.19.232.0/22'), false);
  });

  test('every endpoint of every Service up to the largest size is some pod’s own address', () => {
    for (let i = 0; i < 30_000; i++) {
      for (const ep of benchSlice(i, DATAPATH_ENDPOINTS_PER_SERVICE, 0).endpoints ?? []) {
        const address = ep.addresses?.[0] ?? '';
        assert.notEqual(podFor(DATAPATH_PLAN, address), undefined, `Service ${i}'s endpoint ${address}`);
      }
    }
  });

  test('no pod owns the links’ addresses, the direct target or a ClusterIP', () => {
    const links = [
      DATAPATH_PLAN.client.address,
      DATAPATH_PLAN.client.nodeAddress,
      ...DATAPATH_PLAN.pods.flatMap((p) => [p.podAddress, p.nodeAddress]),
      DATAPATH_PLAN.directTarget,
      benchService(0).spec?.clusterIP ?? '',
      benchService(MAX_DATAPATH_SERVICES - 1).spec?.clusterIP ?? '',
    ];
    for (const address of links) assert.equal(podFor(DATAPATH_PLAN, address), undefined, address);
  });

  test('the pods’ prefixes do not overlap, so each endpoint has one route', () => {
    const prefixes = DATAPATH_PLAN.pods.flatMap((p) => p.localPrefixes);
    for (const a of prefixes)
      for (const b of prefixes)
        if (a !== b) assert.equal(inPrefix(a.split('/')[0] ?? '', b), false, `${a} in ${b}`);
  });

  test('the direct target is a pod’s own link address, and no Service’s endpoint', () => {
    assert.ok(DATAPATH_PLAN.pods.some((p) => p.podAddress === DATAPATH_PLAN.directTarget));
    for (let i = 0; i < 30_000; i++) {
      const endpoints = benchSlice(i, DATAPATH_ENDPOINTS_PER_SERVICE, 0).endpoints ?? [];
      const addresses = endpoints.flatMap((e) => e.addresses ?? []);
      assert.ok(!addresses.includes(DATAPATH_PLAN.directTarget));
    }
  });
});

describe('datapath ClusterIP draw', () => {
  test('draws only the first N Services’ ClusterIPs, all of them over enough draws', () => {
    const ips = new Set(Array.from({ length: 100 }, (_, i) => benchService(i).spec?.clusterIP));
    const drawn = serviceTargets(100, 2000);
    assert.equal(drawn.length, 2000);
    for (const ip of drawn) assert.ok(ips.has(ip), ip);
    assert.equal(new Set(drawn).size, 100);
  });

  test('is the same for every mode at a size, and differs between sizes', () => {
    assert.deepEqual(serviceTargets(1000, 50), serviceTargets(1000, 50));
    assert.notDeepEqual(serviceTargets(1000, 50), serviceTargets(10_000, 50));
  });

  test('refuses sizes whose ClusterIPs leave the service range', () => {
    assert.throws(() => serviceTargets(MAX_DATAPATH_SERVICES + 1, 1), /stop at/);
  });
});

describe('datapath statistics', () => {
  const oneToHundred = Array.from({ length: 100 }, (_, i) => 100 - i);

  test('percentiles by nearest rank, whatever the order', () => {
    assert.equal(percentile(oneToHundred, 50), 50);
    assert.equal(percentile(oneToHundred, 99), 99);
    assert.equal(percentile(oneToHundred, 100), 100);
    assert.equal(percentile([7], 99), 7);
    assert.equal(percentile([3, 1, 2], 50), 2);
    assert.throws(() => percentile([], 50), /no samples/);
  });

  test('pooled runs: every sample once, wall times added', () => {
    const p = pooled([
      { connectUs: [3, 1], elapsedMs: 10 },
      { connectUs: [2], elapsedMs: 5 },
    ]);
    assert.deepEqual([...p.connectUs].sort(), [1, 2, 3]);
    assert.equal(p.elapsedMs, 15);
    assert.equal(trafficStats(p).connPerSec, 200);
  });

  test('connections per second over the run’s wall time', () => {
    const s = trafficStats({ connectUs: oneToHundred, elapsedMs: 50 });
    assert.deepEqual(s, { p50Us: 50, p99Us: 99, connPerSec: 2000 });
  });
});

describe('datapath table', () => {
  const stats = (p50Us: number): TrafficStats => ({ p50Us, p99Us: p50Us * 3, connPerSec: 1e6 / p50Us });
  const row = (mode: string, services: number, p50: number): DatapathRow => ({
    mode,
    services,
    loadMs: services,
    service: stats(p50),
    baseline: stats(16),
    nonService: stats(p50 / 2),
  });
  const rows = [
    row('flat', 100, 20),
    row('flat', 30_000, 22),
    row('iptables', 1000, 40),
    row('iptables', 100, 20),
  ];

  test('each row’s ratio is to the same mode’s smallest size', () => {
    const cells = datapathCells(rows);
    const ratio = (mode: string, services: number): string | undefined =>
      cells.find((c) => c[0] === mode && c[1] === String(services))?.at(-1);
    assert.equal(ratio('flat', 100), '1.00×');
    assert.equal(ratio('flat', 30_000), '1.10×');
    assert.equal(ratio('iptables', 1000), '2.00×');
  });

  test('every row prints its baseline and its non-Service traffic', () => {
    const [header = [], ...body] = datapathCells(rows);
    const at = (name: string): number => header.indexOf(name);
    for (const cells of body) {
      assert.equal(cells[at('baseline p50 µs')], '16.0');
      assert.equal(Number(cells[at('non-Service p50 µs')]) * 2, Number(cells[at('p50 µs')]));
    }
  });

  test('Markdown: a header, an alignment line, a line per row', () => {
    const lines = datapathMarkdown(rows).split('\n');
    assert.equal(lines.length, 2 + rows.length);
    assert.match(lines[1] ?? '', /^\| ---: \|/);
    assert.match(lines[3] ?? '', /^\| flat \| 30000 \| 30\.00 \| 22\.0 \|/);
  });
});
