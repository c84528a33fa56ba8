// The one place that writes nft syntax: one fully-qualified line per operation, exactly as knftables writes it
// (objects.go writeOperation), so the text piped to `nft -f -`, the fake's dump and golden files all agree.
import type { NftFamily, NftOperation } from './objects.js';
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
    case 'element': {
      let line = `${head} ${object.set} { ${object.key.join(' . ')}`;
      if (writesBody(verb)) {
        if (object.comment !== undefined) line += ` comment ${quoteComment(object.comment)}`;
        if (object.value && object.value.length > 0) line += ` : ${object.value.join(' . ')}`;
      }
      return line + ' }';
    }
  }
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
