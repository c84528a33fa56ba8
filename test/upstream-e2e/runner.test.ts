// The upstream e2e runner's scheduling, against a fake kubectl: at most --parallel tests at once, [Serial] tests
// alone and after the others, results in the registry's order, and not-ported lists that drop what is ported.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runTests } from './runner.js';
import { NOT_PORTED_TESTS, PORTED_TESTS } from './registry.js';
import { resultsTable } from './results-table.js';
import type { Kube } from './kube.js';
import type { PortedTest } from './registry-types.js';

const READY_NODE = {
  metadata: { name: 'n1' },
  spec: {},
  status: {
    conditions: [{ type: 'Ready', status: 'True' }],
    addresses: [{ type: 'InternalIP', address: '198.18.0.2' }],
  },
};

function fakeKube(): Kube {
  const ok = { code: 0, stdout: '', stderr: '' };
  return {
    list: () => Promise.resolve([READY_NODE]),
    mustRun: () => Promise.resolve(ok),
    run: () => Promise.resolve(ok),
  } as unknown as Kube;
}

/** Tests that record how many run at once; each finishes when the test releases it. */
function recordingTests(n: number, serial: ReadonlySet<number>) {
  let running = 0;
  const seen: { name: string; concurrent: number; serialRunning: boolean }[] = [];
  let serialActive = false;
  const gates: (() => void)[] = [];
  const tests: PortedTest[] = Array.from({ length: n }, (_, i) => ({
    name: `t${i}`,
    conformance: false,
    file: 'service.go',
    ...(serial.has(i) ? { serial: true } : {}),
    run: async () => {
      running += 1;
      if (serial.has(i)) serialActive = true;
      seen.push({ name: `t${i}`, concurrent: running, serialRunning: serialActive });
      // Finish in reverse start order within a batch: later-started tests end first.
      await new Promise<void>((resolve) => gates.push(resolve));
      running -= 1;
      if (serial.has(i)) serialActive = false;
    },
  }));
  const release = (): void => {
    for (const g of gates.splice(0).reverse()) g();
  };
  return { tests, seen, release };
}

test('the runner runs at most --parallel tests at once, [Serial] ones alone and last, and reports in order', async () => {
  const { tests, seen, release } = recordingTests(6, new Set([1, 4]));
  const timer = setInterval(release, 1); // releases whatever has started: the pace of the fake, not a wait
  try {
    const results = await runTests(fakeKube(), tests, { signal: new AbortController().signal, parallel: 3 });
    assert.deepEqual(
      results.map((r) => [r.name, r.outcome]),
      tests.map((t) => [t.name, 'passed']),
    );
  } finally {
    clearInterval(timer);
  }
  assert.ok(Math.max(...seen.map((s) => s.concurrent)) <= 3, 'never more than 3 at once');
  assert.ok(Math.max(...seen.map((s) => s.concurrent)) >= 2, 'more than one at once when parallel');
  const order = seen.map((s) => s.name);
  assert.deepEqual(order.slice(-2), ['t1', 't4'], 'serial tests run after every other');
  for (const s of seen.filter((x) => x.name === 't1' || x.name === 't4')) assert.equal(s.concurrent, 1);
});

test('the runner runs one test at a time by default', async () => {
  const { tests, seen, release } = recordingTests(3, new Set());
  const timer = setInterval(release, 1); // as above
  try {
    await runTests(fakeKube(), tests, { signal: new AbortController().signal });
  } finally {
    clearInterval(timer);
  }
  assert.deepEqual(
    seen.map((s) => s.concurrent),
    [1, 1, 1],
  );
});

test('a test both ported and listed as not ported is reported once, as ported', () => {
  const ported = new Set(PORTED_TESTS.map((t) => t.name));
  assert.equal(ported.size, PORTED_TESTS.length, 'each ported name once');
  for (const t of NOT_PORTED_TESTS) assert.ok(!ported.has(t.name), `${t.name} is ported and not ported`);
  const notPorted = new Set(NOT_PORTED_TESTS.map((t) => t.name));
  assert.equal(notPorted.size, NOT_PORTED_TESTS.length, 'each not-ported name once');
});

test('the results table: one row per test in each mode, not-ported reasons, and counts that keep API-only apart', () => {
  const row = (name: string, outcome: string, extra: object = {}) => ({
    name,
    file: 'service.go',
    conformance: false,
    outcome,
    ...extra,
  });
  const table = resultsTable([
    {
      mode: 'nftables',
      results: [
        row('a', 'passed'),
        row('b', 'passed', { apiOnly: true }),
        row('c', 'not-ported', { message: 'no cloud' }),
      ],
    },
    {
      mode: 'iptables',
      results: [
        row('a', 'failed', { message: 'timed out | twice' }),
        row('b', 'passed', { apiOnly: true }),
        row('c', 'not-ported', { message: 'no cloud' }),
      ],
    },
  ]);
  assert.match(table, /^\| a \| PASS \| FAIL: timed out \\\| twice \|$/m);
  assert.match(table, /^\| b \(API only\) \| PASS \| PASS \|$/m);
  assert.match(table, /^\| c \| no cloud \|$/m);
  assert.match(table, /^\| nftables \| 1 \| 1 \| 0 \| 0 \| 1 \|$/m);
  assert.match(table, /^\| iptables \| 0 \| 1 \| 1 \| 0 \| 1 \|$/m);
});
