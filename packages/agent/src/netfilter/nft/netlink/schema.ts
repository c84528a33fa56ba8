// What an element of one set or map looks like on the wire, derived from its declaration (`type …` or `typeof …`):
// the key's fields, the value's fields or a verdict, and their byte lengths. nft works this out from its datatypes
// when it sends an element; the netlink writer (encode.ts) and reader (decode.ts) need it to turn element text into
// bytes and back. Only what the kube-proxy tables declare is known here; anything else (an interval set, a field
// type we have not checked byte for byte against nft) is reported as unsupported, and its elements stay with nft.
import type { NftMap, NftSet } from '../objects.js';
import { NFT_DATA_VALUE_MAXLEN, align4 } from './protocol.js';

/**
 * A field of a key or value. Sizes and byte order as nft's datatypes give them: addresses and ports in network
 * order; `numgen` is the value of `numgen random mod N` (nft's `integer` datatype, 32 bits in host byte order).
 */
export type ElementFieldType = 'ipv4_addr' | 'ipv6_addr' | 'inet_proto' | 'inet_service' | 'numgen';

export const FIELD_SIZE: Readonly<Record<ElementFieldType, number>> = {
  ipv4_addr: 4,
  ipv6_addr: 16,
  inet_proto: 1,
  inet_service: 2,
  numgen: 4,
};

export interface ElementSchema {
  readonly container: 'set' | 'map';
  readonly key: readonly ElementFieldType[];
  /** Bytes of the key as the kernel holds it (NFTA_SET_KEY_LEN). */
  readonly keyLength: number;
  /** A map's value: its fields, or a verdict (`goto chain`, `drop`, …); absent for a set. */
  readonly value?: readonly ElementFieldType[] | 'verdict';
  /** Bytes of a field value (NFTA_SET_DATA_LEN); 0 for a set or a verdict map. */
  readonly valueLength: number;
}

export interface UnsupportedSchema {
  readonly unsupported: string;
}

/**
 * Bytes of a key or value made of `fields`. A concatenation pads every field to 4 bytes (nft gives each field a
 * 32-bit register of its own: `inet_proto . inet_service` is 8 bytes, not 3); a single field is its own size.
 */
export function fieldsLength(fields: readonly ElementFieldType[]): number {
  if (fields.length === 1) return FIELD_SIZE[fields[0] as ElementFieldType];
  let n = 0;
  for (const f of fields) n += align4(FIELD_SIZE[f]);
  return n;
}

/** Datatype names of a `type` declaration. `integer` has no length of its own and so cannot be a set type. */
const TYPE_NAMES: ReadonlyMap<string, ElementFieldType> = new Map([
  ['ipv4_addr', 'ipv4_addr'],
  ['ipv6_addr', 'ipv6_addr'],
  ['inet_proto', 'inet_proto'],
  ['inet_service', 'inet_service'],
]);

/** Expressions of a `typeof` declaration and the datatype nft derives from each. */
const TYPEOF_EXPRESSIONS: ReadonlyMap<string, ElementFieldType> = new Map([
  ['ip daddr', 'ipv4_addr'],
  ['ip saddr', 'ipv4_addr'],
  ['ip6 daddr', 'ipv6_addr'],
  ['ip6 saddr', 'ipv6_addr'],
  ['meta l4proto', 'inet_proto'],
  ['th dport', 'inet_service'],
  ['th sport', 'inet_service'],
  ['tcp dport', 'inet_service'],
  ['udp dport', 'inet_service'],
  ['sctp dport', 'inet_service'],
]);

const NUMGEN = /^numgen (?:random|inc) mod [1-9][0-9]*$/;

function fieldsOf(
  text: string,
  lookup: (part: string) => ElementFieldType | undefined,
): ElementFieldType[] | string {
  const out: ElementFieldType[] = [];
  for (const raw of text.split(' . ')) {
    const part = raw.trim();
    const t = lookup(part);
    if (t === undefined) return `field ${JSON.stringify(part)} is not one the netlink writer knows`;
    out.push(t);
  }
  return out;
}

function typeofField(part: string): ElementFieldType | undefined {
  return TYPEOF_EXPRESSIONS.get(part) ?? (NUMGEN.test(part) ? 'numgen' : undefined);
}

/**
 * The element schema of a set or map declaration, or why its elements must go through nft. Never throws: a
 * declaration we cannot read is unsupported, not an error.
 */
export function elementSchema(container: NftSet | NftMap): ElementSchema | UnsupportedSchema {
  const name = `${container.kind} ${container.name}`;
  if (container.flags && container.flags.length > 0) {
    // interval: elements are ranges that nft splits into start/end elements (and merges); timeout, dynamic:
    // elements carry their own lifetimes. Neither is written here.
    return { unsupported: `${name}: flags ${container.flags.join(',')}` };
  }
  if (container.kind === 'set' && container.timeout !== undefined) {
    return { unsupported: `${name}: a default element timeout` };
  }
  const typeofText = container.kind === 'map' ? container.typeof : undefined;
  const declared = typeofText ?? container.type;
  if (declared === undefined) return { unsupported: `${name}: no type or typeof` };
  const lookup = typeofText !== undefined ? typeofField : (p: string) => TYPE_NAMES.get(p);

  const colon = declared.indexOf(' : ');
  if (container.kind === 'set' && colon >= 0) return { unsupported: `${name}: a set with a value type` };
  if (container.kind === 'map' && colon < 0) return { unsupported: `${name}: a map without a value type` };
  const keyText = colon >= 0 ? declared.slice(0, colon) : declared;
  const key = fieldsOf(keyText, lookup);
  if (typeof key === 'string') return { unsupported: `${name}: key ${key}` };
  const keyLength = fieldsLength(key);
  if (keyLength > NFT_DATA_VALUE_MAXLEN) return { unsupported: `${name}: key longer than the kernel allows` };
  if (container.kind === 'set') return { container: 'set', key, keyLength, valueLength: 0 };

  const valueText = declared.slice(colon + 3).trim();
  if (typeofText === undefined && valueText === 'verdict') {
    return { container: 'map', key, keyLength, value: 'verdict', valueLength: 0 };
  }
  const value = fieldsOf(valueText, lookup);
  if (typeof value === 'string') return { unsupported: `${name}: value ${value}` };
  const valueLength = fieldsLength(value);
  if (valueLength > NFT_DATA_VALUE_MAXLEN)
    return { unsupported: `${name}: value longer than the kernel allows` };
  return { container: 'map', key, keyLength, value, valueLength };
}

export function isSupportedSchema(s: ElementSchema | UnsupportedSchema): s is ElementSchema {
  return !('unsupported' in s);
}

/** The schemas of the supported containers among `containers`, by name (what apply and canApply take). */
export function elementSchemas(containers: Iterable<NftSet | NftMap>): Map<string, ElementSchema> {
  const out = new Map<string, ElementSchema>();
  for (const c of containers) {
    const s = elementSchema(c);
    if (isSupportedSchema(s)) out.set(c.name, s);
  }
  return out;
}
