// What changed between two captures of a ruleset, line by line: Myers' shortest edit script (the algorithm behind
// `diff`), so a sync that rewrote one chain shows as those lines, not as a shuffled table. A capture has one line
// per rule or element, and a sync changes few of them, so the edit distance D is small and O((N+M)·D) is cheap.
// Past `maxEdits` (a mode switch replaces everything) the script is not worth its cost: every line of the new
// text that the old text did not hold (counted as a multiset) is marked added, and the rest removed.

export interface LineDiff {
  /** Indices into the new text's lines that the old one did not have. */
  readonly added: readonly number[];
  /** Lines of the old text that are gone, each with the index in the new text it stood before. */
  readonly removed: readonly { readonly before: number; readonly old: number; readonly line: string }[];
  /** Whether the edit script was exact (false: too many edits, compared as multisets). */
  readonly exact: boolean;
}

export function diffLines(before: readonly string[], after: readonly string[], maxEdits = 2000): LineDiff {
  // Common head and tail first: most of a ruleset is untouched, and Myers then works on the middle only.
  let head = 0;
  while (head < before.length && head < after.length && before[head] === after[head]) head++;
  let tail = 0;
  while (
    tail < before.length - head &&
    tail < after.length - head &&
    before[before.length - 1 - tail] === after[after.length - 1 - tail]
  )
    tail++;
  const a = before.slice(head, before.length - tail);
  const b = after.slice(head, after.length - tail);
  const script = myers(a, b, maxEdits);
  if (script === undefined) return multisetDiff(a, b, head);
  const added: number[] = [];
  const removed: { before: number; old: number; line: string }[] = [];
  for (const op of script) {
    if (op.kind === 'add') added.push(head + op.b);
    else removed.push({ before: head + op.b, old: head + op.a, line: a[op.a] ?? '' });
  }
  return { added, removed, exact: true };
}

type Edit =
  | { readonly kind: 'add'; readonly b: number }
  | { readonly kind: 'del'; readonly a: number; readonly b: number };

/** The edit script from a to b, in order; undefined when it needs more than maxEdits edits. */
function myers(a: readonly string[], b: readonly string[], maxEdits: number): Edit[] | undefined {
  const n = a.length;
  const m = b.length;
  if (n === 0) return b.map((_, i) => ({ kind: 'add', b: i }));
  if (m === 0) return a.map((_, i) => ({ kind: 'del', a: i, b: 0 }));
  const max = Math.min(n + m, maxEdits);
  const offset = max + 1;
  let v = new Int32Array(2 * max + 3);
  const trace: Int32Array[] = [];
  for (let d = 0; d <= max; d++) {
    trace.push(v.slice());
    const next = v.slice();
    for (let k = -d; k <= d; k += 2) {
      const down = k === -d || (k !== d && (v[offset + k - 1] ?? 0) < (v[offset + k + 1] ?? 0));
      let x = down ? (v[offset + k + 1] ?? 0) : (v[offset + k - 1] ?? 0) + 1;
      let y = x - k;
      while (x < n && y < m && a[x] === b[y]) {
        x++;
        y++;
      }
      next[offset + k] = x;
      if (x >= n && y >= m) return backtrack(trace, next, offset, n, m, d);
    }
    v = next;
  }
  return undefined;
}

function backtrack(
  trace: readonly Int32Array[],
  last: Int32Array,
  offset: number,
  n: number,
  m: number,
  dEnd: number,
): Edit[] {
  const edits: Edit[] = [];
  let x = n;
  let y = m;
  for (let d = dEnd; d > 0; d--) {
    const v = trace[d] ?? last;
    const k = x - y;
    const down = k === -d || (k !== d && (v[offset + k - 1] ?? 0) < (v[offset + k + 1] ?? 0));
    const prevK = down ? k + 1 : k - 1;
    const prevX = v[offset + prevK] ?? 0;
    const prevY = prevX - prevK;
    while (x > prevX && y > prevY) {
      x--;
      y--;
    }
    if (down) edits.push({ kind: 'add', b: prevY });
    else edits.push({ kind: 'del', a: prevX, b: prevY });
    x = prevX;
    y = prevY;
  }
  return edits.reverse();
}

function multisetDiff(a: readonly string[], b: readonly string[], head: number): LineDiff {
  const left = new Map<string, number>();
  for (const line of a) left.set(line, (left.get(line) ?? 0) + 1);
  const added: number[] = [];
  b.forEach((line, i) => {
    const c = left.get(line) ?? 0;
    if (c > 0) left.set(line, c - 1);
    else added.push(head + i);
  });
  const removed: { before: number; old: number; line: string }[] = [];
  a.forEach((line, i) => {
    const c = left.get(line) ?? 0;
    if (c > 0) {
      left.set(line, c - 1);
      removed.push({ before: head + b.length, old: head + i, line });
    }
  });
  return { added, removed, exact: false };
}
