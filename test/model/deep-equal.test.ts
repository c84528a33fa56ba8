import { test } from 'node:test';
import assert from 'node:assert/strict';
import { deepEqual } from '../../packages/agent/src/model/deep-equal.js';
import { parseRFC3339 } from '../../packages/agent/src/model/rfc3339.js';

test('deepEqual: structural, key order ignored, types distinguished', () => {
  const cases: readonly [unknown, unknown, boolean][] = [
    [{ a: 1, b: [1, { c: 'x' }] }, { b: [1, { c: 'x' }], a: 1 }, true],
    [{ a: 1 }, { a: 1, b: 2 }, false],
    [{ a: 1, b: undefined }, { a: 1 }, true],
    [[1, 2], [2, 1], false],
    [[1, 2], { 0: 1, 1: 2 }, false],
    [null, {}, false],
    [null, null, true],
    [1, '1', false],
    [NaN, NaN, true],
    [new Map([['k', { x: 1 }]]), new Map([['k', { x: 1 }]]), true],
    [new Map([['k', { x: 1 }]]), new Map([['k', { x: 2 }]]), false],
    [new Map([['k', 1]]), { k: 1 }, false],
    [new Set(['a', 'b']), new Set(['b', 'a']), true],
    [new Set(['a']), new Set(['a', 'b']), false],
    [{ m: { labels: { a: 'x', b: 'y' } } }, { m: { labels: { b: 'y', a: 'x' } } }, true],
  ];
  for (const [a, b, want] of cases) {
    assert.equal(deepEqual(a, b), want, `${String(JSON.stringify(a))} vs ${String(JSON.stringify(b))}`);
    assert.equal(deepEqual(b, a), want);
  }
});

test('parseRFC3339: Go RFC3339Nano layouts, offsets, invalid values', () => {
  assert.equal(parseRFC3339('2025-01-01T12:00:00Z'), Date.UTC(2025, 0, 1, 12));
  assert.equal(parseRFC3339('2025-01-01T12:00:00.123456789Z'), Date.UTC(2025, 0, 1, 12, 0, 0, 123));
  assert.equal(parseRFC3339('2025-01-01T13:30:00+01:30'), Date.UTC(2025, 0, 1, 12));
  assert.equal(parseRFC3339('2025-01-01T10:00:00-02:00'), Date.UTC(2025, 0, 1, 12));
  assert.equal(
    parseRFC3339('0001-01-01T00:00:00Z'),
    new Date('0001-01-01T00:00:00Z').getTime(), // Go's zero time: parses, and is before any tracker's creation
  );
  for (const bad of [
    '',
    '2025-01-01',
    '2025-01-01 12:00:00Z',
    '2025-02-30T00:00:00Z',
    '2025-01-01T24:00:00Z',
    '2025-01-01T12:00:00',
    5,
    null,
  ]) {
    assert.equal(parseRFC3339(bad), undefined, String(bad));
  }
});
