// Seed 003's remedies side by side: each soak report becomes one row (drops: failures to always-ready Services,
// the flipping Services apart, lock waits summed over the nodes, the slowest node's sync and iptables-save), the
// table in Markdown and one bar per remedy in each of the picture's panels.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { remediesSvg, remediesTable, remedyRow } from '../../../packages/lab/src/soak/compare.js';
import type { SoakReport } from '../../../packages/lab/src/soak/report.js';

const tally = (refused: number, timeout: number, wrongEndpoint: number) => ({
  sent: 400,
  succeeded: 400 - refused - timeout - wrongEndpoint,
  failed: { refused, timeout, reset: 0, wrongEndpoint, other: 0 },
});

/** The parts of a report the comparison reads. */
function report(o: {
  mode: string;
  minSyncPeriod?: string;
  refused: number;
  wrong: number;
  lockMs: [number, number];
  saves?: [number, number];
  ok: boolean;
}): SoakReport {
  return {
    settings: {
      mode: o.mode,
      ...(o.minSyncPeriod !== undefined ? { minSyncPeriod: o.minSyncPeriod, syncPeriod: '30s' } : {}),
      durationSeconds: 60,
      services: 20,
      churnPerSecond: 2,
      ratePerSecond: 20,
      competingLockHolder: true,
    },
    requests: {
      sent: 1200,
      byChurn: {
        graceful: tally(o.refused, 1, 0),
        none: tally(0, 0, 1),
        readiness: tally(7, 2, o.wrong),
      },
    },
    control: tally(0, 2, 0),
    programmingLatencyMs: { count: 10, p50: 1234, p99: 5678, max: 8000, byNode: {} },
    syncs: {
      a: { count: 5, p50: 400, metricsUnanswered: 0 },
      b: { count: 5, p50: 900, metricsUnanswered: 0 },
    },
    lockWaits: { a: { count: 3, totalMs: o.lockMs[0] }, b: { count: 3, totalMs: o.lockMs[1] } },
    iptablesSave: o.saves
      ? {
          a: { count: 12, failed: 0, p50Ms: o.saves[0], maxMs: 90, maxLines: 300 },
          b: { count: 12, failed: 0, p50Ms: o.saves[1], maxMs: 95, maxLines: 320 },
        }
      : {},
    churn: { changes: 100, perSecond: 1.7, failedWrites: 0, byKind: {} },
    guarantees: { ok: o.ok, failedToAlwaysReadyServices: o.ok ? 0 : 3 },
  } as unknown as SoakReport;
}

describe('soak remedies side by side', () => {
  const rows = [
    remedyRow({
      label: 'iptables, minSyncPeriod 1 s',
      report: report({
        mode: 'iptables',
        minSyncPeriod: '1s',
        refused: 4,
        wrong: 50,
        lockMs: [3500, 2600],
        saves: [42.5, 61],
        ok: false,
      }),
    }),
    remedyRow({
      label: 'nftables',
      report: report({ mode: 'nftables', refused: 0, wrong: 20, lockMs: [0, 0], ok: true }),
    }),
  ];

  test('a row: drops are every failure to always-ready Services, flips apart, lock waits summed, the slowest node', () => {
    assert.deepEqual(rows[0], {
      label: 'iptables, minSyncPeriod 1 s',
      setting: 'iptables, minSyncPeriod 1s, syncPeriod 30s',
      churnPerSecond: 1.7,
      sent: 1200,
      dropped: 6,
      failedToAlwaysReady: 3,
      flipsFailed: 9,
      wrongEndpoint: 50,
      controlFailed: 2,
      lockWaitSeconds: 6.1,
      programmingP50s: 1.23,
      programmingP99s: 5.68,
      syncP50ms: 900,
      iptablesSaveP50ms: 61,
      iptablesSaveLines: 320,
      guaranteesHeld: false,
    });
    assert.equal(rows[1]?.iptablesSaveP50ms, undefined, 'not measured stays unmeasured');
  });

  test('the table: one line per remedy, unmeasured as –', () => {
    const lines = remediesTable(rows).trimEnd().split('\n');
    assert.equal(lines.length, 4);
    assert.match(
      lines[2] ?? '',
      /^\| iptables, minSyncPeriod 1 s \| iptables, minSyncPeriod 1s, syncPeriod 30s \| 1\.7\/s \| 1,200 \| 6 \| 3 \| 9 \/ 50 \| 2 \| 6\.1 s \| 1\.23 \/ 5\.68 s \| 900 ms \| 61 ms \(320\) \| NOT held \|$/,
    );
    assert.match(lines[3] ?? '', /\| 0 s \| .* \| – \| held \|$/);
  });

  test('the picture: a bar per remedy and measure, none for what was not measured', () => {
    const svg = remediesSvg(rows, 'seed 003');
    assert.match(svg, /^<svg [^>]*>/);
    assert.match(svg, /<\/svg>\n$/);
    // Four panels × two remedies, less the nftables iptables-save bar (not measured).
    assert.equal((svg.match(/class="bar"/g) ?? []).length, 7);
    assert.match(svg, /<title>iptables, minSyncPeriod 1 s: 6\.1 s, all nodes<\/title>/);
    assert.match(svg, /<title>nftables: 2 failed requests<\/title>/);
  });
});
