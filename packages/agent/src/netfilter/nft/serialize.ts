// The one place that writes nft syntax: one fully-qualified line per operation, exactly as knftables writes it
// (objects.go writeOperation), so the fake's dump, `diff` and golden files all agree. What nft is given (the
// executor's text, `render`'s, both layouts') is the same operations with a set's elements gathered into few
// statements (serializeTransaction): nft's cost is mostly per statement.
import type { NftElement, NftFamily, NftOperation } from './objects.js';
import { quoteComment } from './quote.js';

export interface NftTableRef {
  readonly family: NftFamily;
  readonly table: string;
}

/** Whether the verb writes an object's body (`{ type … ; }`, rule statements, element values). */
function writesBody(verb: NftOperation['verb']): boolean {
  return verb === 'add' || verb === 'create';
}

/** The nft line for one operation, without a trailing newline. */
export function writeOperation(ref: NftTableRef, op: NftOperation): string {
  const { verb, object } = op;
  const head = `${verb} ${object.kind} ${ref.family} ${ref.table}`;
  switch (object.kind) {
    case 'table': {
      const tableHead = `${verb} table ${ref.family} ${ref.table}`;
      if (writesBody(verb) && object.comment !== undefined) {
        return `${tableHead} { comment ${quoteComment(object.comment)} ; }`;
      }
      return tableHead;
    }
    case 'chain': {
      let line = `${head} ${object.name}`;
      if (writesBody(verb) && (object.base !== undefined || object.comment !== undefined)) {
        line += ' {';
        if (object.base) {
          line += ` type ${object.base.type} hook ${object.base.hook} priority ${object.base.priority} ;`;
        }
        if (object.comment !== undefined) line += ` comment ${quoteComment(object.comment)} ;`;
        line += ' }';
      }
      return line;
    }
    case 'rule': {
      let line = `${head} ${object.chain}`;
      if (object.handle !== undefined) line += ` handle ${object.handle}`;
      if (verb === 'add' || verb === 'create' || verb === 'insert' || verb === 'replace') {
        line += ` ${object.rule}`;
        if (object.comment !== undefined) line += ` comment ${quoteComment(object.comment)}`;
      }
      return line;
    }
    case 'set':
    case 'map': {
      let line = `${head} ${object.name}`;
      if (writesBody(verb)) {
        line +=
          object.kind === 'map' && object.typeof !== undefined
            ? ` { typeof ${object.typeof} ;`
            : ` { type ${object.type ?? ''} ;`;
        if (object.flags && object.flags.length > 0) line += ` flags ${object.flags.join(',')} ;`;
        if (object.kind === 'set' && object.timeout !== undefined) line += ` timeout ${object.timeout}s ;`;
        if (object.comment !== undefined) line += ` comment ${quoteComment(object.comment)} ;`;
        line += ' }';
      }
      return line;
    }
    case 'element':
      return `${head} ${object.set} { ${elementText(verb, object)} }`;
  }
}

/** One element inside `{ … }`: key, then (for add/create) its comment and value. */
function elementText(verb: NftOperation['verb'], e: NftElement): string {
  let text = e.key.join(' . ');
  if (writesBody(verb)) {
    if (e.comment !== undefined) text += ` comment ${quoteComment(e.comment)}`;
    if (e.value && e.value.length > 0) text += ` : ${e.value.join(' . ')}`;
  }
  return text;
}

/** The text for `nft -f -`: one line per operation, each ending in a newline. */
export function serializeOperations(ref: NftTableRef, ops: readonly NftOperation[]): string {
  // One join makes one flat string; `+=` would build a rope of 2 × ops pieces that is flattened (copied) again
  // when it is written to nft's stdin.
  const lines = new Array<string>(ops.length + 1);
  for (let i = 0; i < ops.length; i++) lines[i] = writeOperation(ref, ops[i] as NftOperation);
  lines[ops.length] = '';
  return lines.join('\n');
}

/**
 * At most this many elements in one statement. nft's cost is per statement, not per element: measured with nft
 * 1.0.6 on the flat layout at 10,000 Services (126,000 elements), 50 to 200,000 elements a statement all load in
 * the same CPU time (≈ 1.1 s, against 1.6 s for one statement per element, and 270 MiB of nft's memory against
 * 435). 1,000 keeps a line short enough to read and an error's column cheap to map back.
 */
export const ELEMENTS_PER_LINE = 1000;

/** Text for `nft -f -` and, for an error nft reports at a line and column, which operation is there. */
export interface TransactionText {
  readonly text: string;
  /** The index in `ops` of the operation at nft's 1-based line and column, when there is one. */
  operationAt(line: number, column: number): number | undefined;
}

/** Deletes of a set's elements are written before its adds (a key deleted and added back stays right). */
function isRemoval(verb: NftOperation['verb']): boolean {
  return verb === 'delete' || verb === 'destroy';
}

function keyText(e: NftElement): string {
  return e.key.length === 1 ? (e.key[0] as string) : e.key.join(' . ');
}

/** One set's element operations within a run of element operations: its removals, then its additions. */
class SetGroup {
  readonly removals: number[] = [];
  readonly additions: number[] = [];
  /** Keys added so far; made only once a removal follows an addition (never at a cold start). */
  added: Set<string> | undefined;
}

/**
 * The element operations of ops[from, to) (all elements), grouped per set in the order the sets first appear,
 * each set's removals before its additions; the index of each operation, in written order, goes to `order`.
 * Reordering is only done where it cannot change the result: operations on different sets are independent, and
 * within a set, a removal moves before an addition only of another key (`delete k; add k` stays in that order, as
 * the planner writes a changed value). A removal of a key added earlier in the run ends the group there: what
 * came before is written first, and grouping starts again.
 */
function groupElements(ops: readonly NftOperation[], from: number, to: number, order: number[]): void {
  let groups = new Map<string, SetGroup>();
  const flush = (): void => {
    for (const g of groups.values()) {
      for (const i of g.removals) order.push(i);
      for (const i of g.additions) order.push(i);
    }
    groups = new Map();
  };
  for (let i = from; i < to; i++) {
    const op = ops[i] as NftOperation;
    const e = op.object as NftElement;
    let g = groups.get(e.set);
    if (g === undefined) groups.set(e.set, (g = new SetGroup()));
    if (!isRemoval(op.verb)) {
      g.additions.push(i);
      g.added?.add(keyText(e));
      continue;
    }
    if (g.additions.length > 0) {
      g.added ??= new Set(g.additions.map((k) => keyText((ops[k] as NftOperation).object as NftElement)));
      if (g.added.has(keyText(e))) {
        flush();
        groups.set(e.set, (g = new SetGroup()));
      }
    }
    g.removals.push(i);
  }
  flush();
}

/**
 * The text the executor gives nft, and `render` prints: the operations of serializeOperations, with the element
 * operations between two other operations grouped per set and written as few statements, `add element … SET {
 * e1, e2, … }` (up to ELEMENTS_PER_LINE each; groupElements says what may move). Every other operation keeps its
 * place, so a set exists before its elements and a chain before the verdicts that jump to it. nft's cost is mostly
 * per statement (see ELEMENTS_PER_LINE). nft reports an error inside such a list at the element's column, which
 * operationAt maps back.
 */
export function serializeTransaction(ref: NftTableRef, ops: readonly NftOperation[]): TransactionText {
  /** Operation indices in written order; line n (0-based) holds order[lineStart[n]] … order[lineStart[n+1] - 1]. */
  const order: number[] = [];
  const lineStart: number[] = [];
  const lines: string[] = [];
  for (let i = 0; i < ops.length;) {
    if ((ops[i] as NftOperation).object.kind !== 'element') {
      lineStart.push(order.length);
      order.push(i);
      lines.push(writeOperation(ref, ops[i] as NftOperation));
      i++;
      continue;
    }
    let end = i + 1;
    while (end < ops.length && (ops[end] as NftOperation).object.kind === 'element') end++;
    const from = order.length;
    groupElements(ops, i, end, order);
    writeElementLines(ref, ops, order, from, lineStart, lines);
    i = end;
  }
  lineStart.push(order.length);
  lines.push('');
  return {
    text: lines.join('\n'),
    operationAt: (line, column) => operationAt(ref, ops, order, lineStart, line, column),
  };
}

/** Writes order[from…] (element operations) as statements of one verb and set, ELEMENTS_PER_LINE at most. */
function writeElementLines(
  ref: NftTableRef,
  ops: readonly NftOperation[],
  order: readonly number[],
  from: number,
  lineStart: number[],
  lines: string[],
): void {
  for (let k = from; k < order.length;) {
    const first = ops[order[k] as number] as NftOperation;
    const parts: string[] = [];
    lineStart.push(k);
    do {
      parts.push(elementText(first.verb, (ops[order[k] as number] as NftOperation).object as NftElement));
      k++;
    } while (
      k < order.length &&
      parts.length < ELEMENTS_PER_LINE &&
      sameStatement(first, ops[order[k] as number] as NftOperation)
    );
    lines.push(`${elementHead(ref, first)} { ${parts.join(', ')} }`);
  }
}

function sameStatement(a: NftOperation, b: NftOperation): boolean {
  return (
    a.object.kind === 'element' &&
    b.object.kind === 'element' &&
    a.verb === b.verb &&
    a.object.set === b.object.set
  );
}

/** The operation at nft's 1-based line and column of serializeTransaction's text. */
function operationAt(
  ref: NftTableRef,
  ops: readonly NftOperation[],
  order: readonly number[],
  lineStart: readonly number[],
  line: number,
  column: number,
): number | undefined {
  const start = lineStart[line - 1];
  const end = lineStart[line];
  if (start === undefined || end === undefined || start === end) return undefined;
  const first = ops[order[start] as number] as NftOperation;
  if (end - start === 1 || first.object.kind !== 'element') return order[start];
  // Walk the elements' columns on this line (1-based; each is followed by ", ").
  let at = elementHead(ref, first).length + ' { '.length + 1;
  for (let k = start; k < end; k++) {
    const index = order[k] as number;
    const width = elementText(first.verb, (ops[index] as NftOperation).object as NftElement).length;
    if (column < at + width + ', '.length) return index;
    at += width + ', '.length;
  }
  return order[end - 1];
}

function elementHead(ref: NftTableRef, op: NftOperation): string {
  const set = op.object.kind === 'element' ? op.object.set : '';
  return `${op.verb} element ${ref.family} ${ref.table} ${set}`;
}
