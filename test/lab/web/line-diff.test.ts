// The ruleset diff: exact edit scripts (checked against the longest common subsequence on random inputs), and the
// fallback when the texts have little in common (a mode switch).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { diffLines } from '../../../packages/lab/src/web/line-diff.js';

function lcsLength(a: readonly string[], b: readonly string[]): number {
  const dp = Array.from({ length: a.length + 1 }, () => new Array<number>(b.length + 1).fill(0));
  for (let i = 1; i <= a.length; i++)
    for (let j = 1; j <= b.length; j++)
      dp[i]![j] = a[i - 1] === b[j - 1] ? dp[i - 1]![j - 1]! + 1 : Math.max(dp[i - 1]![j]!, dp[i]![j - 1]!);
  return dp[a.length]![b.length]!;
}

test('one rule rewritten in a chain shows as that line removed and its new text added, at its place', () => {
  const before = [
    'table ip kube-proxy {',
    '  chain svc {',
    '    dnat to numgen random mod 3 map { … }',
    '  }',
    '}',
  ];
  const after = [
    'table ip kube-proxy {',
    '  chain svc {',
    '    dnat to numgen random mod 4 map { … }',
    '  }',
    '}',
  ];
  const d = diffLines(before, after);
  assert.deepEqual(d.added, [2]);
  assert.deepEqual(d.removed, [{ before: 2, old: 2, line: '    dnat to numgen random mod 3 map { … }' }]);
  assert.equal(d.exact, true);
});

test('an unchanged text has no changes; an empty one is all added', () => {
  assert.deepEqual(diffLines(['a', 'b'], ['a', 'b']), { added: [], removed: [], exact: true });
  assert.deepEqual(diffLines([], ['a', 'b']).added, [0, 1]);
  assert.deepEqual(
    diffLines(['a', 'b'], []).removed.map((r) => r.old),
    [0, 1],
  );
});

test('on random texts the script is minimal and takes the old text to the new one', () => {
  let seed = 7;
  const rand = (n: number): number => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed % n;
  };
  for (let round = 0; round < 500; round++) {
    const a = Array.from({ length: rand(14) }, () => 'xyz'[rand(3)] ?? 'x');
    const b = Array.from({ length: rand(14) }, () => 'xyz'[rand(3)] ?? 'x');
    const d = diffLines(a, b);
    assert.equal(d.exact, true);
    assert.equal(
      d.added.length + d.removed.length,
      a.length + b.length - 2 * lcsLength(a, b),
      `${a.join('')} → ${b.join('')}`,
    );
    const removed = new Set(d.removed.map((r) => r.old));
    const added = new Set(d.added);
    assert.deepEqual(
      a.filter((_, i) => !removed.has(i)),
      b.filter((_, i) => !added.has(i)),
      'what is kept is the same on both sides',
    );
    for (const r of d.removed) assert.equal(r.line, a[r.old]);
  }
});

test('past the edit bound (a mode switch replaces everything) lines are compared as multisets', () => {
  const before = ['table ip kube-proxy {', 'x', 'y', 'z', '}'];
  const after = ['*nat', ':KUBE-SERVICES - [0:0]', 'y', 'COMMIT'];
  const d = diffLines(before, after, 2);
  assert.equal(d.exact, false);
  assert.deepEqual(d.added, [0, 1, 3]);
  assert.deepEqual(
    d.removed.map((r) => r.line),
    ['table ip kube-proxy {', 'x', 'z', '}'],
  );
});
