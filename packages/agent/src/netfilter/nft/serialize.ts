// The one place that writes nft syntax: one fully-qualified line per operation, exactly as knftables writes it
// (objects.go writeOperation), so render's output, the fake's dump and golden files all agree. What the executor
// pipes to `nft -f -` is the same operations with runs of elements on one line (serializeTransaction): nft's cost
// is mostly per command.
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

/** At most this many elements on one line: long enough that nft's per-command cost vanishes, short to read. */
export const ELEMENTS_PER_LINE = 1000;

/** Text for `nft -f -` and, for an error nft reports at a line and column, which operation is there. */
export interface TransactionText {
  readonly text: string;
  /** The index in `ops` of the operation at nft's 1-based line and column, when there is one. */
  operationAt(line: number, column: number): number | undefined;
}

function sameElementRun(a: NftOperation | undefined, b: NftOperation): boolean {
  return (
    a !== undefined &&
    a.object.kind === 'element' &&
    b.object.kind === 'element' &&
    a.verb === b.verb &&
    a.object.set === b.object.set
  );
}

/**
 * The text the executor gives nft: like serializeOperations, but a run of element operations with the same verb
 * and set is one command, `add element … SET { e1, e2, … }` (up to ELEMENTS_PER_LINE). nft applies them in the
 * same order in the same transaction, so the result is the same; what changes is nft's cost, which is mostly per
 * command (a cold start at 10,000 Services: a third less CPU, 40% less memory, measured with nft 1.0.6). nft
 * reports an error inside such a list at the element's column, which operationAt maps back.
 */
export function serializeTransaction(ref: NftTableRef, ops: readonly NftOperation[]): TransactionText {
  const lines: string[] = [];
  /** Index of the first operation of each line. */
  const firstOp: number[] = [];
  for (let i = 0; i < ops.length;) {
    const op = ops[i] as NftOperation;
    firstOp.push(i);
    if (op.object.kind !== 'element') {
      lines.push(writeOperation(ref, op));
      i++;
      continue;
    }
    const parts: string[] = [];
    let j = i;
    do {
      const e = (ops[j] as NftOperation).object as NftElement;
      parts.push(elementText(op.verb, e));
      j++;
    } while (j < ops.length && j - i < ELEMENTS_PER_LINE && sameElementRun(op, ops[j] as NftOperation));
    lines.push(`${elementHead(ref, op)} { ${parts.join(', ')} }`);
    i = j;
  }
  lines.push('');
  return {
    text: lines.join('\n'),
    operationAt(line, column) {
      const start = firstOp[line - 1];
      if (start === undefined) return undefined;
      const end = firstOp[line] ?? ops.length;
      const first = ops[start] as NftOperation;
      if (end - start === 1 || first.object.kind !== 'element') return start;
      // Walk the elements' columns on this line (1-based; each is followed by ", ").
      let at = elementHead(ref, first).length + ' { '.length + 1;
      for (let k = start; k < end; k++) {
        const width = elementText(first.verb, (ops[k] as NftOperation).object as NftElement).length;
        if (column < at + width + ', '.length) return k;
        at += width + ', '.length;
      }
      return end - 1;
    },
  };
}

function elementHead(ref: NftTableRef, op: NftOperation): string {
  const set = op.object.kind === 'element' ? op.object.set : '';
  return `${op.verb} element ${ref.family} ${ref.table} ${set}`;
}
