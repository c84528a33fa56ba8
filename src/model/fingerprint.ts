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
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value);
    case 'number':
      return String(value); // String(-0) is "0", as -0 === 0 in deepEqual
    case 'boolean':
      return value ? 'true' : 'false';
    case 'undefined':
      return 'undefined';
    case 'bigint':
      return `${value}n`;
    case 'function':
      return 'function';
    case 'symbol':
      return 'symbol';
    case 'object':
      return value === null ? 'null' : objectText(value);
  }
}

function objectText(o: object): string {
  if (Array.isArray(o)) {
    let out = '[';
    for (let i = 0; i < o.length; i++) out += (i === 0 ? '' : ',') + canonicalText(o[i] as unknown);
    return out + ']';
  }
  if (o instanceof Map) {
    const entries: string[] = [];
    for (const [k, v] of o) entries.push(`${canonicalText(k)}:${canonicalText(v)}`);
    return `Map{${entries.sort().join(',')}}`;
  }
  if (o instanceof Set) {
    const members: string[] = [];
    for (const v of o) members.push(canonicalText(v));
    return `Set[${members.sort().join(',')}]`;
  }
  const rec = o as Readonly<Record<string, unknown>>;
  // Object.keys: own enumerable string keys, the same keys deepEqual walks.
  const keys = Object.keys(rec).sort();
  let out = '{';
  let first = true;
  for (const k of keys) {
    const v = rec[k];
    if (v === undefined) continue; // absent and undefined compare equal
    out += `${first ? '' : ','}${JSON.stringify(k)}:${canonicalText(v)}`;
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
