import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { formatGoDuration, parseGoDuration } from '../../packages/agent/src/config/duration.js';

// Expected values are Go's: time.ParseDuration and Duration.String.
describe('parseGoDuration', () => {
  const valid: ReadonlyArray<readonly [string, number]> = [
    ['15s', 15_000],
    ['1m30s', 90_000],
    ['500ms', 500],
    ['1h0m0s', 3_600_000],
    ['0s', 0],
    ['0', 0],
    ['1.5h', 5_400_000],
    ['.5s', 500],
    ['1.s', 1_000],
    ['-1s', -1_000],
    ['+2m', 120_000],
    ['1us', 0.001],
    ['1\u00b5s', 0.001],
    ['1\u03bcs', 0.001],
    ['1000ns', 0.001],
    ['24h', 86_400_000],
    ['1h2m3s4ms', 3_723_004],
  ];
  for (const [text, ms] of valid) {
    test(`${JSON.stringify(text)} is ${ms} ms`, () => {
      assert.deepEqual(parseGoDuration(text), { ok: true, ms });
    });
  }
  const invalid = ['', '1', '5x', 's', '.', '-', '1.2.3s', '30 s', ' 30s', '1sec', '3000000h'];
  for (const text of invalid) {
    test(`${JSON.stringify(text)} is refused with a reason`, () => {
      const r = parseGoDuration(text);
      assert.equal(r.ok, false);
      if (!r.ok) assert.match(r.error, /duration/);
    });
  }
});

describe('formatGoDuration', () => {
  const cases: ReadonlyArray<readonly [number, string]> = [
    [0, '0s'],
    [500, '500ms'],
    [1_000, '1s'],
    [1_500, '1.5s'],
    [15_000, '15s'],
    [60_000, '1m0s'],
    [90_000, '1m30s'],
    [900_000, '15m0s'],
    [3_600_000, '1h0m0s'],
    [86_400_000, '24h0m0s'],
    [0.001, '1\u00b5s'],
    [1.5, '1.5ms'],
    [0.000_001, '1ns'],
    [-1_000, '-1s'],
  ];
  for (const [ms, text] of cases) {
    test(`${ms} ms is ${text}`, () => {
      assert.equal(formatGoDuration(ms), text);
      const back = parseGoDuration(text);
      assert.deepEqual(back, { ok: true, ms });
    });
  }
});
