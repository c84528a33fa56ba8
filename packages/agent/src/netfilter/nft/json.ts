// Reads `nft --json` listings into typed objects. The JSON comes from another program, so every field is checked;
// a listing we cannot understand is an error value (a string), never an exception.
import type { NftListedRule, NftListing } from './executor.js';
import type { NftChain, NftChainType, NftElement, NftHook, NftMap, NftSet } from './objects.js';
import { errorMessage } from '../../util/error-message.js';

type Json = unknown;

function isRecord(v: Json): v is Record<string, Json> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function str(v: Json): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

function entries(text: string): Json[] | string {
  let doc: Json;
  try {
    doc = JSON.parse(text);
  } catch (e) {
    return `invalid JSON: ${errorMessage(e)}`;
  }
  if (!isRecord(doc) || !Array.isArray(doc.nftables)) return 'no "nftables" array in the JSON output';
  return doc.nftables;
}

function typeText(v: Json): string | undefined {
  if (typeof v === 'string') return v;
  if (Array.isArray(v) && v.every((x) => typeof x === 'string')) return v.join(' . ');
  return undefined;
}

const CHAIN_TYPES: ReadonlySet<string> = new Set(['filter', 'nat', 'route']);
const HOOKS: ReadonlySet<string> = new Set([
  'prerouting',
  'input',
  'forward',
  'output',
  'postrouting',
  'ingress',
]);

function chainFrom(c: Record<string, Json>): NftChain | undefined {
  const name = str(c.name);
  if (name === undefined) return undefined;
  const comment = str(c.comment);
  const type = str(c.type);
  const hook = str(c.hook);
  const base =
    type !== undefined &&
    hook !== undefined &&
    CHAIN_TYPES.has(type) &&
    HOOKS.has(hook) &&
    typeof c.prio === 'number'
      ? { type: type as NftChainType, hook: hook as NftHook, priority: c.prio }
      : undefined;
  return { kind: 'chain', name, ...(base ? { base } : {}), ...(comment !== undefined ? { comment } : {}) };
}

function flagsFrom(v: Json): string[] | undefined {
  return Array.isArray(v) && v.length > 0 && v.every((x) => typeof x === 'string')
    ? (v as string[])
    : undefined;
}

/** Parses `nft --json --terse list table …`. */
export function parseTableJson(text: string): NftListing | string {
  const list = entries(text);
  if (typeof list === 'string') return list;
  return listingFrom(list);
}

/**
 * Parses the outputs of `nft --json --terse list chains|sets|maps FAMILY` as one listing of `table`'s own
 * objects, without rules (entries of other tables are left out); undefined when none of them is the table's (it
 * does not exist, or holds nothing of these: `list table` is cheap then). The table's comment is not known.
 */
export function parseObjectListsJson(
  texts: readonly string[],
  table: string,
): NftListing | string | undefined {
  const own: Json[] = [];
  for (const text of texts) {
    const list = entries(text);
    if (typeof list === 'string') return list;
    for (const entry of list) {
      if (!isRecord(entry)) continue;
      const object = entry.chain ?? entry.set ?? entry.map;
      if (isRecord(object) && str(object.table) === table) own.push(entry);
    }
  }
  return own.length > 0 ? listingFrom([{ table: { name: table } }, ...own]) : undefined;
}

/**
 * Parses `nft --json list table …` (elements included): the listing and the elements of every named set and map,
 * from one run of nft. nft fetches every element of the table for any listing of it (`--terse` only leaves them
 * out of its output), so reading the table this way costs about what one large map's listing does.
 */
export function parseTableWithElementsJson(
  text: string,
): { readonly listing: NftListing; readonly elements: Map<string, NftElement[]> } | string {
  const list = entries(text);
  if (typeof list === 'string') return list;
  const listing = listingFrom(list);
  if (typeof listing === 'string') return listing;
  const elements = new Map<string, NftElement[]>();
  for (const entry of list) {
    if (!isRecord(entry)) continue;
    const container = isRecord(entry.set) ? entry.set : isRecord(entry.map) ? entry.map : undefined;
    const name = container ? str(container.name) : undefined;
    if (!container || name === undefined) continue;
    const out: NftElement[] = [];
    const problem = elementsFrom(container, isRecord(entry.map), name, out);
    if (problem !== undefined) return problem;
    elements.set(name, out);
  }
  return { listing, elements };
}

function listingFrom(list: Json[]): NftListing | string {
  let tableComment: string | undefined;
  let sawTable = false;
  const chains: NftChain[] = [];
  const sets: NftSet[] = [];
  const maps: NftMap[] = [];
  const rules: NftListedRule[] = [];
  for (const entry of list) {
    if (!isRecord(entry)) continue;
    if (isRecord(entry.table)) {
      sawTable = true;
      tableComment = str(entry.table.comment);
    } else if (isRecord(entry.chain)) {
      const chain = chainFrom(entry.chain);
      if (chain) chains.push(chain);
    } else if (isRecord(entry.set) || isRecord(entry.map)) {
      const s = (isRecord(entry.set) ? entry.set : entry.map) as Record<string, Json>;
      const name = str(s.name);
      const keyType = typeText(s.type);
      if (name === undefined || keyType === undefined) continue;
      const comment = str(s.comment);
      const flags = flagsFrom(s.flags);
      if (isRecord(entry.map)) {
        const valueType = typeText(s.map);
        if (valueType === undefined) continue;
        maps.push({
          kind: 'map',
          name,
          type: `${keyType} : ${valueType}`,
          ...(flags ? { flags } : {}),
          ...(comment !== undefined ? { comment } : {}),
        });
      } else {
        sets.push({
          kind: 'set',
          name,
          type: keyType,
          ...(flags ? { flags } : {}),
          ...(typeof s.timeout === 'number' ? { timeout: s.timeout } : {}),
          ...(comment !== undefined ? { comment } : {}),
        });
      }
    } else if (isRecord(entry.rule)) {
      const chain = str(entry.rule.chain);
      const handle = entry.rule.handle;
      if (chain === undefined || typeof handle !== 'number') continue;
      const comment = str(entry.rule.comment);
      rules.push({ chain, handle, ...(comment !== undefined ? { comment } : {}) });
    }
  }
  if (!sawTable) return 'the listing holds no table';
  return {
    table: { kind: 'table', ...(tableComment !== undefined ? { comment: tableComment } : {}) },
    chains,
    sets,
    maps,
    rules,
  };
}

/** One key or value field as nft would write it back (`10.0.0.0/8`, `tcp`, `80`). */
function fieldText(v: Json): string | undefined {
  if (typeof v === 'string') return v;
  if (typeof v === 'number') return String(v);
  if (isRecord(v)) {
    if (isRecord(v.prefix)) {
      const addr = str(v.prefix.addr);
      return addr !== undefined && typeof v.prefix.len === 'number' ? `${addr}/${v.prefix.len}` : undefined;
    }
    if (Array.isArray(v.range) && v.range.length === 2) {
      const [a, b] = v.range.map(fieldText);
      return a !== undefined && b !== undefined ? `${a}-${b}` : undefined;
    }
  }
  return undefined;
}

function fieldsOf(v: Json): string[] | undefined {
  if (isRecord(v) && Array.isArray(v.concat)) {
    const parts = v.concat.map(fieldText);
    return parts.every((p): p is string => p !== undefined) ? parts : undefined;
  }
  const one = fieldText(v);
  return one === undefined ? undefined : [one];
}

/** A verdict or data value of a map element, as nft syntax (`goto chain`, `drop`). */
function valueOf(v: Json): string[] | undefined {
  if (isRecord(v)) {
    for (const verdict of ['goto', 'jump'] as const) {
      const target = v[verdict];
      if (isRecord(target) && typeof target.target === 'string') return [`${verdict} ${target.target}`];
    }
    for (const verdict of ['drop', 'accept', 'continue', 'return'] as const) {
      if (verdict in v) return [verdict];
    }
  }
  return fieldsOf(v);
}

function keyOf(v: Json): { key: string[]; comment?: string } | undefined {
  if (isRecord(v) && isRecord(v.elem)) {
    const key = fieldsOf(v.elem.val);
    const comment = str(v.elem.comment);
    return key ? { key, ...(comment !== undefined ? { comment } : {}) } : undefined;
  }
  const key = fieldsOf(v);
  return key ? { key } : undefined;
}

/** Parses `nft --json list set|map …` into elements of `name`. Elements we cannot read are an error. */
export function parseElementsJson(text: string, name: string): NftElement[] | string {
  const list = entries(text);
  if (typeof list === 'string') return list;
  const out: NftElement[] = [];
  for (const entry of list) {
    if (!isRecord(entry)) continue;
    const container = isRecord(entry.set) ? entry.set : isRecord(entry.map) ? entry.map : undefined;
    if (!container) continue;
    const problem = elementsFrom(container, isRecord(entry.map), name, out);
    if (problem !== undefined) return problem;
  }
  return out;
}

/** Appends the elements of one listed set or map to `out`; returns why one cannot be read. */
function elementsFrom(
  container: Record<string, Json>,
  isMap: boolean,
  name: string,
  out: NftElement[],
): string | undefined {
  if (!Array.isArray(container.elem)) return undefined;
  for (const raw of container.elem) {
    if (isMap) {
      if (!Array.isArray(raw) || raw.length !== 2) return `unreadable element in map ${name}`;
      const k = keyOf(raw[0]);
      const value = valueOf(raw[1]);
      if (!k || !value) return `unreadable element in map ${name}`;
      out.push({
        kind: 'element',
        set: name,
        key: k.key,
        value,
        ...(k.comment !== undefined ? { comment: k.comment } : {}),
      });
    } else {
      const k = keyOf(raw);
      if (!k) return `unreadable element in set ${name}`;
      out.push({
        kind: 'element',
        set: name,
        key: k.key,
        ...(k.comment !== undefined ? { comment: k.comment } : {}),
      });
    }
  }
  return undefined;
}
