// Structural equality for API objects and the model's own values (upstream uses reflect.DeepEqual). Key order
// does not matter, which is why JSON.stringify cannot stand in for it.

export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) {
    return typeof a === 'number' && typeof b === 'number' && Number.isNaN(a) && Number.isNaN(b);
  }
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!deepEqual(a[i], b[i])) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  if (a instanceof Map) {
    if (!(b instanceof Map) || a.size !== b.size) return false;
    for (const [k, v] of a) if (!b.has(k) || !deepEqual(v, b.get(k))) return false;
    return true;
  }
  if (a instanceof Set) {
    if (!(b instanceof Set) || a.size !== b.size) return false;
    // Sets in the model hold strings; membership is the meaningful comparison.
    for (const v of a) if (!b.has(v)) return false;
    return true;
  }
  if (b instanceof Map || b instanceof Set) return false;
  const ao = a as Record<string, unknown>;
  const bo = b as Record<string, unknown>;
  // Own enumerable keys, ignoring those whose value is undefined (absent and undefined read the same).
  let count = 0;
  for (const k in ao) {
    if (!Object.prototype.hasOwnProperty.call(ao, k) || ao[k] === undefined) continue;
    count++;
    if (!Object.prototype.hasOwnProperty.call(bo, k) || !deepEqual(ao[k], bo[k])) return false;
  }
  for (const k in bo) {
    if (Object.prototype.hasOwnProperty.call(bo, k) && bo[k] !== undefined) count--;
  }
  return count === 0;
}
