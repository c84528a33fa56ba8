// The three patch formats kubectl and controllers send: JSON merge patch (RFC 7386), JSON patch (RFC 6902) and
// Kubernetes' strategic merge patch, where lists of named things (containers, ports, env, …) merge by a key
// instead of being replaced. Each returns the patched object or an error message; none mutates its inputs.
import { cloneJson, isObject, jsonEqual, type JsonObject } from './json.js';

export type PatchResult = { readonly value: unknown } | { readonly error: string };

export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return cloneJson(patch);
  const out: JsonObject = isObject(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

function parsePointer(path: string): string[] | undefined {
  if (path === '') return [];
  if (!path.startsWith('/')) return undefined;
  return path
    .slice(1)
    .split('/')
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
}

type Container = JsonObject | unknown[];

function walk(
  root: unknown,
  parts: readonly string[],
): { parent: Container; key: string } | { error: string } {
  let cur: unknown = root;
  for (let i = 0; i < parts.length - 1; i++) {
    const p = parts[i] ?? '';
    if (Array.isArray(cur)) cur = cur[Number(p)];
    else if (isObject(cur)) cur = cur[p];
    else return { error: `path /${parts.slice(0, i + 1).join('/')} does not exist` };
  }
  if (!Array.isArray(cur) && !isObject(cur))
    return { error: `parent of /${parts.join('/')} is not a container` };
  return { parent: cur, key: parts[parts.length - 1] ?? '' };
}

function getAt(root: unknown, parts: readonly string[]): { value: unknown } | { error: string } {
  let cur: unknown = root;
  for (const p of parts) {
    if (Array.isArray(cur) && /^\d+$/.test(p) && Number(p) < cur.length) cur = cur[Number(p)];
    else if (isObject(cur) && Object.prototype.hasOwnProperty.call(cur, p)) cur = cur[p];
    else return { error: `path /${parts.join('/')} does not exist` };
  }
  return { value: cur };
}

function removeAt(root: unknown, parts: readonly string[]): { value: unknown } | { error: string } {
  const w = walk(root, parts);
  if ('error' in w) return w;
  const { parent, key } = w;
  if (Array.isArray(parent)) {
    const i = Number(key);
    if (!/^\d+$/.test(key) || i >= parent.length) return { error: `index ${key} out of range` };
    return { value: parent.splice(i, 1)[0] };
  }
  if (!Object.prototype.hasOwnProperty.call(parent, key))
    return { error: `path /${parts.join('/')} does not exist` };
  const v = parent[key];
  delete parent[key];
  return { value: v };
}

function addAt(
  root: unknown,
  parts: readonly string[],
  value: unknown,
  replace: boolean,
): { error: string } | undefined {
  const w = walk(root, parts);
  if ('error' in w) return w;
  const { parent, key } = w;
  if (Array.isArray(parent)) {
    const i = key === '-' ? parent.length : Number(key);
    if (!(key === '-' || /^\d+$/.test(key)) || i > parent.length || (replace && i >= parent.length))
      return { error: `index ${key} out of range` };
    if (replace) parent[i] = value;
    else parent.splice(i, 0, value);
    return undefined;
  }
  if (replace && !Object.prototype.hasOwnProperty.call(parent, key))
    return { error: `path /${parts.join('/')} does not exist` };
  parent[key] = value;
  return undefined;
}

export function jsonPatch(target: unknown, ops: unknown): PatchResult {
  if (!Array.isArray(ops)) return { error: 'a JSON patch must be a list of operations' };
  let doc = cloneJson(target);
  for (const [i, raw] of ops.entries()) {
    if (!isObject(raw) || typeof raw.op !== 'string' || typeof raw.path !== 'string')
      return { error: `operation ${i}: needs "op" and "path"` };
    const path = parsePointer(raw.path);
    if (!path) return { error: `operation ${i}: invalid path "${raw.path}"` };
    const from = typeof raw.from === 'string' ? parsePointer(raw.from) : undefined;
    let err: { error: string } | undefined;
    switch (raw.op) {
      case 'add':
      case 'replace':
        if (!('value' in raw)) return { error: `operation ${i}: "${raw.op}" needs "value"` };
        if (path.length === 0) doc = cloneJson(raw.value);
        else err = addAt(doc, path, cloneJson(raw.value), raw.op === 'replace');
        break;
      case 'remove': {
        const r = removeAt(doc, path);
        if ('error' in r) err = r;
        break;
      }
      case 'move':
      case 'copy': {
        if (!from) return { error: `operation ${i}: "${raw.op}" needs a valid "from"` };
        const r = raw.op === 'move' ? removeAt(doc, from) : getAt(doc, from);
        if ('error' in r) err = r;
        else err = addAt(doc, path, cloneJson(r.value), false);
        break;
      }
      case 'test': {
        const r = getAt(doc, path);
        if ('error' in r) err = r;
        else if (!jsonEqual(r.value, raw.value)) err = { error: `test failed at ${raw.path}` };
        break;
      }
      default:
        return { error: `operation ${i}: unknown op "${raw.op}"` };
    }
    if (err) return { error: `operation ${i} (${raw.op} ${raw.path}): ${err.error}` };
  }
  return { value: doc };
}

// Merge keys of the lists that strategic merge patch merges by key, for the kinds this server serves. The path is
// the field names from the object's root, list indexes left out. Suffix rules cover pod specs wherever they sit
// (a Pod's spec, a Deployment's spec.template.spec).
const MERGE_KEY_SUFFIXES: readonly (readonly [string, string])[] = [
  ['containers.ports', 'containerPort'],
  ['initContainers.ports', 'containerPort'],
  ['containers', 'name'],
  ['initContainers', 'name'],
  ['ephemeralContainers', 'name'],
  ['env', 'name'],
  ['volumeMounts', 'mountPath'],
  ['volumeDevices', 'devicePath'],
  ['volumes', 'name'],
  ['imagePullSecrets', 'name'],
  ['hostAliases', 'ip'],
  ['metadata.ownerReferences', 'uid'],
  ['status.conditions', 'type'],
  ['status.addresses', 'type'],
  ['spec.taints', 'key'],
];
const MERGE_KEY_EXACT: Readonly<Record<string, string>> = { 'spec.ports': 'port' };
const MERGED_PRIMITIVE_LISTS = new Set(['metadata.finalizers']);

export function mergeKeyFor(kind: string, path: readonly string[]): string | undefined {
  const joined = path.join('.');
  if (kind === 'Service' && MERGE_KEY_EXACT[joined]) return MERGE_KEY_EXACT[joined];
  if (kind === 'EndpointSlice') return undefined;
  for (const [suffix, key] of MERGE_KEY_SUFFIXES)
    if (joined === suffix || joined.endsWith(`.${suffix}`)) return key;
  return undefined;
}

const DIRECTIVE = '$patch';
const RETAIN_KEYS = '$retainKeys';
const SET_ORDER = '$setElementOrder/';
const DELETE_PRIMITIVE = '$deleteFromPrimitiveList/';

function stripDirectives(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(stripDirectives);
  if (!isObject(value)) return value;
  const out: JsonObject = {};
  for (const [k, v] of Object.entries(value)) {
    if (k === DIRECTIVE || k === RETAIN_KEYS || k.startsWith(SET_ORDER) || k.startsWith(DELETE_PRIMITIVE))
      continue;
    if (v === null) continue;
    out[k] = stripDirectives(v);
  }
  return out;
}

function mergeList(kind: string, path: readonly string[], original: unknown, patch: unknown[]): unknown[] {
  const orig = Array.isArray(original) ? original : [];
  const key = mergeKeyFor(kind, path);
  if (patch.some((p) => isObject(p) && p[DIRECTIVE] === 'replace'))
    return patch.filter((p) => !(isObject(p) && p[DIRECTIVE] === 'replace')).map(stripDirectives);
  if (!key) {
    if (MERGED_PRIMITIVE_LISTS.has(path.join('.'))) {
      const out = [...orig];
      for (const p of patch) if (!out.some((o) => jsonEqual(o, p))) out.push(p);
      return out;
    }
    return patch.map(stripDirectives);
  }
  const out: unknown[] = orig.map((o) => cloneJson(o));
  for (const p of patch) {
    if (!isObject(p)) continue;
    const idx = out.findIndex((o) => isObject(o) && jsonEqual(o[key], p[key]));
    if (p[DIRECTIVE] === 'delete') {
      if (idx >= 0) out.splice(idx, 1);
      continue;
    }
    if (idx >= 0) out[idx] = strategicMerge(kind, path, out[idx], p);
    else out.push(stripDirectives(p));
  }
  return out;
}

function applyOrder(list: unknown[], order: unknown, key: string | undefined): unknown[] {
  if (!Array.isArray(order)) return list;
  const rank = (item: unknown): number =>
    order.findIndex((o) =>
      key ? isObject(o) && isObject(item) && jsonEqual(o[key], item[key]) : jsonEqual(o, item),
    );
  const ranked = list.map((item, i) => ({ item, i, r: rank(item) }));
  // Items the order names come first, in its order; the others keep their relative place after them.
  ranked.sort((a, b) => (a.r < 0 ? Infinity : a.r) - (b.r < 0 ? Infinity : b.r) || a.i - b.i);
  return ranked.map((x) => x.item);
}

export function strategicMerge(
  kind: string,
  path: readonly string[],
  original: unknown,
  patch: unknown,
): unknown {
  if (!isObject(patch)) return cloneJson(patch);
  if (patch[DIRECTIVE] === 'replace') return stripDirectives(patch);
  if (patch[DIRECTIVE] === 'delete') return undefined;
  const out: JsonObject = isObject(original) ? { ...original } : {};
  const retain = patch[RETAIN_KEYS];
  for (const [k, v] of Object.entries(patch)) {
    if (k === DIRECTIVE || k === RETAIN_KEYS) continue;
    if (k.startsWith(SET_ORDER) || k.startsWith(DELETE_PRIMITIVE)) continue;
    const sub = [...path, k];
    if (v === null) delete out[k];
    else if (Array.isArray(v)) out[k] = mergeList(kind, sub, out[k], v);
    else if (isObject(v)) {
      const merged = strategicMerge(kind, sub, out[k], v);
      if (merged === undefined) delete out[k];
      else out[k] = merged;
    } else out[k] = v;
  }
  for (const [k, v] of Object.entries(patch)) {
    if (k.startsWith(DELETE_PRIMITIVE)) {
      const field = k.slice(DELETE_PRIMITIVE.length);
      const cur = out[field];
      if (Array.isArray(cur) && Array.isArray(v))
        out[field] = cur.filter((x) => !v.some((d) => jsonEqual(d, x)));
    } else if (k.startsWith(SET_ORDER)) {
      const field = k.slice(SET_ORDER.length);
      const cur = out[field];
      if (Array.isArray(cur)) out[field] = applyOrder(cur, v, mergeKeyFor(kind, [...path, field]));
    }
  }
  if (Array.isArray(retain)) {
    for (const k of Object.keys(out)) if (!retain.includes(k)) delete out[k];
  }
  return out;
}

export type PatchType = 'merge' | 'json' | 'strategic';

export function patchTypeOf(contentType: string): PatchType | undefined {
  const base = (contentType.split(';')[0] ?? '').trim().toLowerCase();
  if (base === 'application/merge-patch+json') return 'merge';
  if (base === 'application/json-patch+json') return 'json';
  if (base === 'application/strategic-merge-patch+json') return 'strategic';
  return undefined;
}

export function applyPatch(type: PatchType, kind: string, target: JsonObject, patch: unknown): PatchResult {
  switch (type) {
    case 'merge':
      if (!isObject(patch)) return { error: 'a merge patch must be a JSON object' };
      return { value: mergePatch(target, patch) };
    case 'json':
      return jsonPatch(target, patch);
    case 'strategic':
      if (!isObject(patch)) return { error: 'a strategic merge patch must be a JSON object' };
      return { value: strategicMerge(kind, [], target, patch) };
  }
}
