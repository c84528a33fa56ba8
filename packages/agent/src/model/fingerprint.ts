// A compact stand-in for keeping a whole object around only to compare it with the next version of itself.
// Upstream's EndpointSliceCache keeps every slice and compares whole objects (metadata included) with
// reflect.DeepEqual to decide whether an event changes anything. Holding every raw slice just for that costs more
// than the endpoints built from it, so the cache keeps a SHA-256 of a canonical serialisation instead: two values
// get the same fingerprint exactly when deepEqual (deep-equal.ts) calls them equal (barring a hash collision).
import { createHash } from 'node:crypto';

/**
 * Canonical text of a JSON-like value, injective up to deepEqual: object keys sorted, keys whose value is
 * undefined left out, -0 written as 0, NaN as NaN. Every value is self-delimiting (strings quoted and escaped,
 * containers bracketed, atoms free of `,:]}`), so no two different values share a text. Maps and Sets are written
 * with their entries sorted. Functions and symbols, which deepEqual compares by identity and which no decoded
 * API object holds, are written by type alone.
 */
export function canonicalText(value: unknown): string {
  return appendCanonical('', value);
}

// Only these need JSON.stringify's escaping (quote, backslash, control characters, surrogates, which it escapes
// when unpaired); any other string quotes as it is, without a call into JSON.
// eslint-disable-next-line no-control-regex -- control characters are what JSON must escape
const NEEDS_ESCAPE = /["\\\u0000-\u001f\ud800-\udfff]/;

function quoted(s: string): string {
  return NEEDS_ESCAPE.test(s) ? JSON.stringify(s) : `"${s}"`;
}

// One accumulator threaded through the walk: V8 appends to it as a rope, flattened once when it is hashed.
function appendCanonical(out: string, value: unknown): string {
  switch (typeof value) {
    case 'string':
      return out + quoted(value);
    case 'number':
      return out + String(value); // String(-0) is "0", as -0 === 0 in deepEqual
    case 'boolean':
      return out + (value ? 'true' : 'false');
    case 'undefined':
      return out + 'undefined';
    case 'bigint':
      return `${out}${value}n`;
    case 'function':
      return out + 'function';
    case 'symbol':
      return out + 'symbol';
    case 'object':
      return value === null ? out + 'null' : appendObject(out, value);
  }
}

function appendObject(out: string, o: object): string {
  if (Array.isArray(o)) {
    out += '[';
    for (let i = 0; i < o.length; i++) out = appendCanonical(i === 0 ? out : out + ',', o[i] as unknown);
    return out + ']';
  }
  if (o instanceof Map) {
    const entries: string[] = [];
    for (const [k, v] of o) entries.push(appendCanonical(appendCanonical('', k) + ':', v));
    return `${out}Map{${entries.sort().join(',')}}`;
  }
  if (o instanceof Set) {
    const members: string[] = [];
    for (const v of o) members.push(canonicalText(v));
    return `${out}Set[${members.sort().join(',')}]`;
  }
  const rec = o as Readonly<Record<string, unknown>>;
  // Object.keys: own enumerable string keys, the same keys deepEqual walks.
  const keys = Object.keys(rec);
  if (keys.length > 1) keys.sort();
  out += '{';
  let first = true;
  for (const k of keys) {
    const v = rec[k];
    if (v === undefined) continue; // absent and undefined compare equal
    out = appendCanonical(`${first ? out : out + ','}${quoted(k)}:`, v);
    first = false;
  }
  return out + '}';
}

/**
 * SHA-256 of canonicalText(value), as a 32-character one-byte string (each char one digest byte): the
 * smallest string V8 can hold it in. Throws only on values no API object can be (cycles, throwing getters).
 */
export function fingerprint(value: unknown): string {
  // 'binary' is Node's older name for latin1: one char per byte.
  return createHash('sha256').update(canonicalText(value)).digest('binary');
}
