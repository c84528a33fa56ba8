// Checks an operation before it is written, so that no input can change the meaning of the nft text: names are
// nft identifiers, rule text holds no statement separator or comment start, element fields are plain tokens.
// Comments need no check here: the serializer quotes them safely.
import type { NftOperation } from './objects.js';
import { VERBS_BY_KIND } from './objects.js';

/** nft's NAME_MAXLEN is 256 including the terminating NUL. */
export const NAME_LENGTH_MAX = 255;

// nft's lexer `string` token: ({letter}|[_.])({letter}|{digit}|[/\-_\.])*
const IDENTIFIER = /^[A-Za-z_.][A-Za-z0-9/\-_.]*$/;
// Element key/value fields: addresses, CIDRs, ports, protocols, verdicts (`goto <chain>`), numbers.
const FIELD_TOKEN = '[A-Za-z0-9_.:/-]+';
const ELEMENT_FIELD = new RegExp(`^${FIELD_TOKEN}( [A-Za-z0-9_./-]+)?$`);
const SET_TYPE = /^[a-z0-9_]+( \. [a-z0-9_]+)*( : [a-z0-9_]+)?$/;
// `typeof` expressions: selectors, keywords and numbers joined by ` . `, then ` : ` and the value's.
const TYPEOF_PART = '[a-z0-9_]+(?: [a-z0-9_]+)*';
const SET_TYPEOF = new RegExp(
  `^${TYPEOF_PART}( \\. ${TYPEOF_PART})* : ${TYPEOF_PART}( \\. ${TYPEOF_PART})*$`,
);
const FLAG = /^[a-z]+$/;
// A newline or `;` would start another command, `#` a comment, `"` an unbalanced string.
const RULE_FORBIDDEN = /[\n\r;#"\\]/;

// The values of an element run (backends/nftables/element-ledger.ts): one element's value per line, each value
// one or more plain fields joined by ` . ` (a concatenation), no field holding a space.
const RUN_VALUE = `${FIELD_TOKEN}(?: \\. ${FIELD_TOKEN})*`;
const RUN_VALUES = new RegExp(`^${RUN_VALUE}(?:\\n${RUN_VALUE})*$`);

/**
 * Names already found valid. The same few set and chain names come back in nearly every operation (at 100,000
 * Services a full sync checks ≈ 400,000 elements against a dozen set names), so each is tested once; the memo is
 * dropped when it grows past a bound, so names from the cluster (per-port chains) cannot make it grow for ever.
 */
const validNames = new Set<string>();
const VALID_NAMES_MAX = 4096;

function checkName(what: string, name: string): string | undefined {
  if (validNames.has(name)) return undefined;
  if (name.length === 0) return `${what} has an empty name`;
  if (name.length > NAME_LENGTH_MAX) return `${what} name is longer than ${NAME_LENGTH_MAX} characters`;
  if (!IDENTIFIER.test(name)) return `${what} name ${JSON.stringify(name)} is not a valid nft identifier`;
  if (validNames.size >= VALID_NAMES_MAX) validNames.clear();
  validNames.add(name);
  return undefined;
}

/**
 * Why the values of an element run cannot be written (one value per line, `a . b` fields as an element's value),
 * or undefined: one test of the whole text, where checking each value as an element of its own made and tested
 * an object per endpoint.
 */
export function runValuesProblem(set: string, values: string): string | undefined {
  const bad = checkName('element set', set);
  if (bad) return bad;
  if (!RUN_VALUES.test(values)) return `element in ${set}: invalid values ${JSON.stringify(values)}`;
  return undefined;
}

/** Returns why the operation is invalid, or undefined when it may be written. */
export function validateOperation(op: NftOperation): string | undefined {
  const { verb, object } = op;
  if (!VERBS_BY_KIND[object.kind].has(verb)) return `verb ${verb} is not valid for a ${object.kind}`;
  switch (object.kind) {
    case 'table':
      return undefined;
    case 'chain':
      if (object.base && !Number.isInteger(object.base.priority))
        return `chain ${object.name}: priority is not an integer`;
      return checkName('chain', object.name);
    case 'rule': {
      const bad = checkName('rule chain', object.chain);
      if (bad) return bad;
      if ((verb === 'replace' || verb === 'delete' || verb === 'destroy') && object.handle === undefined) {
        return `${verb} rule in ${object.chain} needs a handle`;
      }
      if (object.handle !== undefined && !(Number.isInteger(object.handle) && object.handle > 0)) {
        return `rule in ${object.chain}: handle must be a positive integer`;
      }
      if (verb === 'add' || verb === 'insert' || verb === 'replace') {
        if (object.rule.trim().length === 0) return `rule in ${object.chain} is empty`;
        if (RULE_FORBIDDEN.test(object.rule)) return `rule in ${object.chain} contains a forbidden character`;
      }
      return undefined;
    }
    case 'set':
    case 'map': {
      const bad = checkName(object.kind, object.name);
      if (bad) return bad;
      if ((verb === 'add' || verb === 'create') && object.kind === 'map' && object.typeof !== undefined) {
        if (!SET_TYPEOF.test(object.typeof))
          return `map ${object.name}: invalid typeof ${JSON.stringify(object.typeof)}`;
      } else if (verb === 'add' || verb === 'create') {
        const type = object.type ?? '';
        if (!SET_TYPE.test(type))
          return `${object.kind} ${object.name}: invalid type ${JSON.stringify(type)}`;
        if ((object.kind === 'map') !== type.includes(' : ')) {
          return `${object.kind} ${object.name}: ${object.kind === 'map' ? 'a map type needs' : 'a set type cannot have'} a ' : ' value type`;
        }
        for (const flag of object.flags ?? []) {
          if (!FLAG.test(flag)) return `${object.kind} ${object.name}: invalid flag ${JSON.stringify(flag)}`;
        }
        if (
          object.kind === 'set' &&
          object.timeout !== undefined &&
          !(Number.isInteger(object.timeout) && object.timeout > 0)
        ) {
          return `set ${object.name}: timeout must be a positive integer`;
        }
      }
      return undefined;
    }
    case 'element': {
      const bad = checkName('element set', object.set);
      if (bad) return bad;
      if (object.key.length === 0) return `element in ${object.set} has no key`;
      for (const field of object.key) {
        if (!ELEMENT_FIELD.test(field) || field.includes(' ')) {
          return `element in ${object.set}: invalid key field ${JSON.stringify(field)}`;
        }
      }
      for (const field of object.value ?? []) {
        if (!ELEMENT_FIELD.test(field))
          return `element in ${object.set}: invalid value ${JSON.stringify(field)}`;
      }
      return undefined;
    }
  }
}
