// nftables objects as plain readonly data (after knftables' types.go). Every object lives in one table, so the
// family and table name are not part of an object: a transaction or an executor is bound to one table.

export const NFT_FAMILIES = ['ip', 'ip6', 'inet'] as const;
export type NftFamily = (typeof NFT_FAMILIES)[number];

/** The nft verbs we write. `destroy` needs nft ≥ 1.0.8 (not on every node), so the backend never uses it. */
export const NFT_VERBS = ['add', 'create', 'insert', 'replace', 'delete', 'destroy', 'flush'] as const;
export type NftVerb = (typeof NFT_VERBS)[number];

export type NftChainType = 'filter' | 'nat' | 'route';
export type NftHook = 'prerouting' | 'input' | 'forward' | 'output' | 'postrouting' | 'ingress';

export interface NftTable {
  readonly kind: 'table';
  readonly comment?: string;
}

export interface NftChain {
  readonly kind: 'chain';
  readonly name: string;
  /** Base chains only: type, hook and numeric priority go together. */
  readonly base?: { readonly type: NftChainType; readonly hook: NftHook; readonly priority: number };
  readonly comment?: string;
}

export interface NftRule {
  readonly kind: 'rule';
  readonly chain: string;
  /** The rule's statements (everything but the comment), e.g. `ip daddr @cluster-ips reject`. */
  readonly rule: string;
  readonly comment?: string;
  /** Kernel handle: required by replace and delete, optional position for insert/add. */
  readonly handle?: number;
}

export interface NftSet {
  readonly kind: 'set';
  readonly name: string;
  /** `ipv4_addr`, or a concatenation `ipv4_addr . inet_proto . inet_service`; needed by add/create only. */
  readonly type?: string;
  readonly flags?: readonly string[];
  /** Default element timeout, seconds. */
  readonly timeout?: number;
  readonly comment?: string;
}

export interface NftMap {
  readonly kind: 'map';
  readonly name: string;
  /** `key-type : value-type`, e.g. `inet_proto . inet_service : verdict`; needed by add/create only. */
  readonly type?: string;
  /**
   * Instead of `type`: the key and value as expressions (`ip daddr . numgen random mod 2 : ip daddr . th dport`).
   * nft derives the types from them, and only so accepts a `numgen` inside a concatenated key (a `type … .
   * integer` key has no length, a `mark` key would need the slot in the packet mark).
   */
  readonly typeof?: string;
  readonly flags?: readonly string[];
  readonly comment?: string;
}

export interface NftElement {
  readonly kind: 'element';
  /** Name of the set or map the element belongs to. */
  readonly set: string;
  /**
   * Key fields, joined with ` . ` when written (one field for a plain set). Code that keeps keys as text may pass
   * the joined text as one entry (the flat layout's element ledger does, for operations it made from elements it
   * had validated): the line is the same.
   */
  readonly key: readonly string[];
  /** Map value fields (a verdict such as `goto chain`, or `drop`); absent for set elements. Joined like `key`. */
  readonly value?: readonly string[];
  readonly comment?: string;
}

export type NftObject = NftTable | NftChain | NftRule | NftSet | NftMap | NftElement;
export type NftObjectKind = NftObject['kind'];
export const NFT_OBJECT_KINDS = [
  'table',
  'chain',
  'rule',
  'set',
  'map',
  'element',
] as const satisfies readonly NftObjectKind[];

export interface NftOperation {
  readonly verb: NftVerb;
  readonly object: NftObject;
}

/** Which verbs nft accepts for each kind (`{ [K in kind]: … }`, so a new kind without an entry does not compile). */
export const VERBS_BY_KIND: { readonly [K in NftObjectKind]: ReadonlySet<NftVerb> } = {
  table: new Set(['add', 'create', 'delete', 'destroy', 'flush']),
  chain: new Set(['add', 'create', 'delete', 'destroy', 'flush']),
  rule: new Set(['add', 'insert', 'replace', 'delete', 'destroy']),
  set: new Set(['add', 'create', 'delete', 'destroy', 'flush']),
  map: new Set(['add', 'create', 'delete', 'destroy', 'flush']),
  element: new Set(['add', 'create', 'delete', 'destroy']),
};

/** A short human name for an object, used in error messages ("chain services", "element in service-ips"). */
export function describeObject(object: NftObject): string {
  switch (object.kind) {
    case 'table':
      return 'table';
    case 'chain':
    case 'set':
    case 'map':
      return `${object.kind} ${object.name}`;
    case 'rule':
      return `rule in chain ${object.chain}`;
    case 'element':
      return `element { ${object.key.join(' . ')} } in ${object.set}`;
  }
}
