// Plain JSON values and the few helpers every part of the API server uses to read untrusted objects.

export type JsonObject = { [key: string]: unknown };

export function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A structural copy of a JSON value (objects stored by the server are never shared with callers). */
export function cloneJson<T>(value: T): T {
  return structuredClone(value);
}

/** Field `key` of `obj` when it is an object, else an empty object (for reading optional nested fields). */
export function child(obj: unknown, key: string): JsonObject {
  if (!isObject(obj)) return {};
  const v = obj[key];
  return isObject(v) ? v : {};
}

export function str(obj: unknown, key: string): string | undefined {
  if (!isObject(obj)) return undefined;
  const v = obj[key];
  return typeof v === 'string' ? v : undefined;
}

export function num(obj: unknown, key: string): number | undefined {
  if (!isObject(obj)) return undefined;
  const v = obj[key];
  return typeof v === 'number' ? v : undefined;
}

export function arr(obj: unknown, key: string): unknown[] {
  if (!isObject(obj)) return [];
  const v = obj[key];
  return Array.isArray(v) ? v : [];
}

export function stringMap(obj: unknown, key: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(child(obj, key))) if (typeof v === 'string') out[k] = v;
  return out;
}

/** Deep equality of JSON values (key order does not matter). */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    return a.every((x, i) => jsonEqual(x, b[i]));
  }
  if (isObject(a)) {
    if (!isObject(b)) return false;
    const ka = Object.keys(a).filter((k) => a[k] !== undefined);
    const kb = Object.keys(b).filter((k) => b[k] !== undefined);
    if (ka.length !== kb.length) return false;
    return ka.every((k) => jsonEqual(a[k], b[k]));
  }
  return false;
}
