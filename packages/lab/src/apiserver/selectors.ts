// Label and field selectors as the API server parses them from query strings. Parsing returns a value or an error
// message; matching is a pure function of the selector and the object.
import { child, isObject, type JsonObject } from './json.js';

export type LabelRequirement =
  | { readonly op: 'eq' | 'neq'; readonly key: string; readonly value: string }
  | { readonly op: 'in' | 'notin'; readonly key: string; readonly values: readonly string[] }
  | { readonly op: 'exists' | 'notexists'; readonly key: string };

export type LabelSelector = readonly LabelRequirement[];

const KEY =
  /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

/** Splits on commas that are not inside parentheses. */
function splitTop(text: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '(') depth++;
    else if (c === ')') depth--;
    else if (c === ',' && depth === 0) {
      parts.push(text.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(text.slice(start));
  return parts.map((p) => p.trim()).filter((p) => p !== '');
}

function checkKey(key: string): string | undefined {
  return KEY.test(key) && key.length <= 317 ? undefined : `invalid label key "${key}"`;
}
function checkValue(value: string): string | undefined {
  return VALUE.test(value) && value.length <= 63 ? undefined : `invalid label value: "${value}"`;
}

export function parseLabelSelector(text: string): { selector: LabelSelector } | { error: string } {
  const reqs: LabelRequirement[] = [];
  for (const part of splitTop(text)) {
    let m = /^!\s*(\S+)$/.exec(part);
    if (m) {
      const key = m[1] ?? '';
      const e = checkKey(key);
      if (e) return { error: e };
      reqs.push({ op: 'notexists', key });
      continue;
    }
    m = /^(\S+)\s+(in|notin)\s*\(([^)]*)\)$/.exec(part);
    if (m) {
      const key = m[1] ?? '';
      const values = (m[3] ?? '')
        .split(',')
        .map((v) => v.trim())
        .filter((v, i, all) => v !== '' || all.length === 1);
      const e = checkKey(key) ?? values.map(checkValue).find((x) => x !== undefined);
      if (e) return { error: e };
      reqs.push({ op: m[2] === 'in' ? 'in' : 'notin', key, values });
      continue;
    }
    m = /^([^=!\s]+)\s*(==|=|!=)\s*(\S*)$/.exec(part);
    if (m) {
      const key = m[1] ?? '';
      const value = m[3] ?? '';
      const e = checkKey(key) ?? checkValue(value);
      if (e) return { error: e };
      reqs.push({ op: m[2] === '!=' ? 'neq' : 'eq', key, value });
      continue;
    }
    if (/^\S+$/.test(part)) {
      const e = checkKey(part);
      if (e) return { error: e };
      reqs.push({ op: 'exists', key: part });
      continue;
    }
    return { error: `unable to parse requirement: "${part}"` };
  }
  return { selector: reqs };
}

export function matchesLabels(selector: LabelSelector, labels: Readonly<Record<string, string>>): boolean {
  return selector.every((r) => {
    const has = Object.prototype.hasOwnProperty.call(labels, r.key);
    const v = labels[r.key];
    switch (r.op) {
      case 'eq':
        return has && v === r.value;
      case 'neq':
        return !has || v !== r.value;
      case 'in':
        return has && v !== undefined && r.values.includes(v);
      case 'notin':
        return !has || v === undefined || !r.values.includes(v);
      case 'exists':
        return has;
      case 'notexists':
        return !has;
    }
  });
}

/** A map selector (Service.spec.selector, Deployment matchLabels): every pair must match. */
export function matchesMap(
  selector: Readonly<Record<string, string>>,
  labels: Readonly<Record<string, string>>,
): boolean {
  return Object.entries(selector).every(([k, v]) => labels[k] === v);
}

export interface FieldRequirement {
  readonly field: string;
  readonly op: 'eq' | 'neq';
  readonly value: string;
}
export type FieldSelector = readonly FieldRequirement[];

/** Reads a dotted field path ("spec.clusterIP") as a string ("" when absent), the way field selectors see it. */
export function fieldValue(obj: JsonObject, path: string): string {
  let cur: unknown = obj;
  for (const part of path.split('.')) cur = isObject(cur) ? cur[part] : undefined;
  if (typeof cur === 'string') return cur;
  if (typeof cur === 'number' || typeof cur === 'boolean') return String(cur);
  return '';
}

export function parseFieldSelector(
  text: string,
  supported: readonly string[],
): { selector: FieldSelector } | { error: string } {
  const reqs: FieldRequirement[] = [];
  for (const part of splitTop(text)) {
    const m = /^([^=!\s]+)\s*(==|=|!=)\s*(.*)$/.exec(part);
    if (!m) return { error: `invalid selector: '${text}'; can't understand '${part}'` };
    const field = m[1] ?? '';
    if (!supported.includes(field)) return { error: `field label not supported: ${field}` };
    reqs.push({ field, op: m[2] === '!=' ? 'neq' : 'eq', value: (m[3] ?? '').trim() });
  }
  return { selector: reqs };
}

export function matchesFields(selector: FieldSelector, obj: JsonObject): boolean {
  return selector.every((r) => (fieldValue(obj, r.field) === r.value) === (r.op === 'eq'));
}

export function labelsOf(obj: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(child(child(obj, 'metadata'), 'labels')))
    if (typeof v === 'string') out[k] = v;
  return out;
}

/** The selectors a list or a watch names (`?labelSelector=…&fieldSelector=…`); absent ones select everything. */
export interface ObjectSelectors {
  readonly labelSelector?: LabelSelector;
  readonly fieldSelector?: FieldSelector;
}

export function selectsObject(selectors: ObjectSelectors, obj: JsonObject): boolean {
  return (
    (!selectors.labelSelector || matchesLabels(selectors.labelSelector, labelsOf(obj))) &&
    (!selectors.fieldSelector || matchesFields(selectors.fieldSelector, obj))
  );
}
