// Narrowing helpers for objects that arrive from the API: the typed shapes in src/api/objects.ts are what we
// expect, not what we are guaranteed, so the model reads every field through these.

export type UnknownRecord = Readonly<Record<string, unknown>>;

export function isRecord(v: unknown): v is UnknownRecord {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function field(v: unknown, key: string): unknown {
  return isRecord(v) ? v[key] : undefined;
}

export function stringField(v: unknown, key: string): string | undefined {
  const f = field(v, key);
  return typeof f === 'string' ? f : undefined;
}

export function arrayField(v: unknown, key: string): readonly unknown[] | undefined {
  const f = field(v, key);
  return Array.isArray(f) ? f : undefined;
}

export function isPortNumber(v: unknown): v is number {
  return typeof v === 'number' && Number.isInteger(v) && v >= 1 && v <= 65535;
}

/** A short, safe rendering of a bad value for a log line. */
export function describeValue(v: unknown): string {
  if (v === undefined) return 'undefined';
  let s: string;
  try {
    s = JSON.stringify(v) ?? String(v);
  } catch {
    s = Object.prototype.toString.call(v);
  }
  return s.length > 80 ? `${s.slice(0, 77)}...` : s;
}

/** "ns/name" of an object's metadata, when both are non-empty strings. */
export function objectName(obj: unknown): { namespace: string; name: string } | undefined {
  const meta = field(obj, 'metadata');
  const namespace = stringField(meta, 'namespace');
  const name = stringField(meta, 'name');
  if (namespace === undefined || name === undefined || namespace === '' || name === '') return undefined;
  return { namespace, name };
}
