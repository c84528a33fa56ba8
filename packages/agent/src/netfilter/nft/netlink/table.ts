// One table's own objects read over nf_tables netlink, without a single element: the table, its chains, its sets
// and maps, its rules, as `../json.ts` gives them from `nft --json --terse list table`. nft 1.0.6 fetches every
// element of the table for any listing of it, terse or not (81 s and 2.2 GiB at 100,000 flat Services); here the
// kernel is asked for the table (NFT_MSG_GETTABLE) and for dumps of its chains, sets and rules, and each reply is
// read for the few attributes the listing holds.
//
// What nft prints but the kernel does not hold as such is worked out the way nft does from what the kernel holds:
// a set's type text from the datatype numbers nft stores in the set (NFTA_SET_KEY_TYPE, NFTA_SET_DATA_TYPE; a
// concatenation packs one number per field, 6 bits each, the first field highest), flags from the kernel's flag
// bits, comments from libnftnl's userdata TLVs. Anything outside the small vocabulary below (a datatype or object
// type no kube-proxy table uses and the kernel test has not checked) makes the listing fail, naming it, rather
// than come out wrong: the caller can ask nft instead.
//
// Where this listing and nft 1.0.6's JSON differ, on purpose (the kernel test holds both sides to exactly these):
// - the table's and the chains' comments are given; nft 1.0.6's JSON leaves them out (its text listing prints
//   them, and they are what the table was declared with);
// - a set's `dynamic` flag is given; nft 1.0.6's JSON leaves it out (its text listing prints it, and our affinity
//   sets are declared `flags dynamic,timeout`).
import type { NftListedRule, NftListing } from '../executor.js';
import type { NftChain, NftChainType, NftFamily, NftHook, NftMap, NftSet } from '../objects.js';
import type { NetlinkMessageView } from './decode.js';
import { eachAttribute, text, udataString } from './decode.js';
import {
  HOST_LE,
  NFGENMSG_LEN,
  NLA_HDRLEN,
  NLMSG_HDRLEN,
  NLM_F_DUMP,
  NLM_F_REQUEST,
  align4,
  nftMessageType,
} from './protocol.js';

// linux/netfilter/nf_tables.h: the messages of a listing. A GET… asks; the kernel answers with NEW… messages.
const NFT_MSG_NEWTABLE = 0;
const NFT_MSG_GETTABLE = 1;
const NFT_MSG_NEWCHAIN = 3;
const NFT_MSG_GETCHAIN = 4;
const NFT_MSG_NEWRULE = 6;
const NFT_MSG_GETRULE = 7;
const NFT_MSG_NEWSET = 9;
const NFT_MSG_GETSET = 10;

// enum nft_table_attributes, nft_chain_attributes, nft_hook_attributes, nft_rule_attributes, nft_set_attributes.
// Every GET… of a listing names the table in its attribute 1 (NFTA_TABLE_NAME, NFTA_CHAIN_TABLE, NFTA_RULE_TABLE,
// NFTA_SET_TABLE), which is also where each answer says which table it is about.
const NFTA_TABLE_NAME = 1;
const NFTA_TABLE_USERDATA = 6;
const NFTA_CHAIN_TABLE = 1;
const NFTA_CHAIN_NAME = 3;
const NFTA_CHAIN_HOOK = 4;
const NFTA_CHAIN_TYPE = 7;
const NFTA_CHAIN_FLAGS = 10;
const NFTA_CHAIN_USERDATA = 12;
const NFTA_HOOK_HOOKNUM = 1;
const NFTA_HOOK_PRIORITY = 2;
const NFTA_RULE_TABLE = 1;
const NFTA_RULE_CHAIN = 2;
const NFTA_RULE_HANDLE = 3;
const NFTA_RULE_USERDATA = 7;
const NFTA_SET_TABLE = 1;
const NFTA_SET_NAME = 2;
const NFTA_SET_FLAGS = 3;
const NFTA_SET_KEY_TYPE = 4;
const NFTA_SET_DATA_TYPE = 6;
const NFTA_SET_TIMEOUT = 11;
const NFTA_SET_USERDATA = 13;
const NFTA_SET_OBJ_TYPE = 15;

/** A binding chain is a rule's anonymous `jump { … }` body: part of that rule, not listed as a chain by nft. */
const NFT_CHAIN_BINDING = 0x4;

// enum nft_set_flags
const NFT_SET_ANONYMOUS = 0x1;
const NFT_SET_MAP = 0x8;
const NFT_SET_OBJECT = 0x40;
/**
 * The flags a declaration can carry, by bit, in the order nft's text listing prints them (and our layouts declare
 * them: `flags dynamic,timeout`). CONCAT and EXPR are nft's own doing, not declared.
 */
const SET_FLAG_NAMES: readonly (readonly [number, string])[] = [
  [0x2, 'constant'],
  [0x4, 'interval'],
  [0x20, 'dynamic'],
  [0x10, 'timeout'],
];

/** A verdict map's data type (NFT_DATA_VERDICT): the kernel's number, not one of nft's datatypes. */
const NFT_DATA_VERDICT = 0xffffff00;

// libnftnl's userdata TLV types (one byte type, one byte length, value). A comment is stored with its NUL.
const UDATA_TABLE_COMMENT = 0;
const UDATA_CHAIN_COMMENT = 0;
const UDATA_RULE_COMMENT = 0;
const UDATA_SET_COMMENT = 7;

/**
 * nft's datatype numbers (they are nft's, stored by nft in the set and read back by nft), for the types a set
 * key or map value of ours, or the kernel test's, is made of. Each is checked there against nft's own listing.
 */
const DATATYPE_NAMES: ReadonlyMap<number, string> = new Map([
  [1, 'verdict'],
  [4, 'integer'],
  [7, 'ipv4_addr'],
  [8, 'ipv6_addr'],
  [9, 'ether_addr'],
  [12, 'inet_proto'],
  [13, 'inet_service'],
  [19, 'mark'],
  [20, 'iface_index'],
  [41, 'ifname'],
]);
/** A concatenation packs one datatype number per field into NFTA_SET_KEY_TYPE, 6 bits each. */
const DATATYPE_BITS = 6;

/** An object map's value (NFTA_SET_OBJ_TYPE, enum nft_object types) as nft names it. */
const OBJECT_TYPE_NAMES: ReadonlyMap<number, string> = new Map([
  [1, 'counter'],
  [2, 'quota'],
  [4, 'limit'],
]);

/** Hook numbers of the ip, ip6 and inet families (enum nf_inet_hooks) and the names nft gives them. */
const HOOK_NAMES: readonly NftHook[] = ['prerouting', 'input', 'forward', 'output', 'postrouting', 'ingress'];
const CHAIN_TYPES: ReadonlySet<string> = new Set<NftChainType>(['filter', 'nat', 'route']);

/** NFPROTO_* of the families a table can be listed for (their hooks are the ones above). */
export const LISTING_FAMILIES: Readonly<Partial<Record<NftFamily, number>>> = { ip: 2, ip6: 10, inet: 1 };

/** The parts of a listing, in the order they are asked for: rules after chains, to know the binding chains. */
export const LISTING_PARTS = ['table', 'chains', 'sets', 'rules'] as const;
export type ListingPart = (typeof LISTING_PARTS)[number];

const REQUESTS: Readonly<Record<ListingPart, { readonly msg: number; readonly flags: number }>> = {
  // The table alone, not a dump: a missing table is an ENOENT answer, as nft reports it.
  table: { msg: NFT_MSG_GETTABLE, flags: NLM_F_REQUEST },
  chains: { msg: NFT_MSG_GETCHAIN, flags: NLM_F_REQUEST | NLM_F_DUMP },
  sets: { msg: NFT_MSG_GETSET, flags: NLM_F_REQUEST | NLM_F_DUMP },
  rules: { msg: NFT_MSG_GETRULE, flags: NLM_F_REQUEST | NLM_F_DUMP },
};

/** The request for one part of the listing of `table` in `family` (an NFPROTO_* number). */
export function listingRequest(part: ListingPart, family: number, table: string, seq: number): Buffer {
  const { msg, flags } = REQUESTS[part];
  const attrLength = NLA_HDRLEN + Buffer.byteLength(table) + 1;
  const length = NLMSG_HDRLEN + NFGENMSG_LEN + align4(attrLength);
  const b = Buffer.alloc(length);
  const u16 = (v: number, at: number): number => (HOST_LE ? b.writeUInt16LE(v, at) : b.writeUInt16BE(v, at));
  const u32 = (v: number, at: number): number => (HOST_LE ? b.writeUInt32LE(v, at) : b.writeUInt32BE(v, at));
  u32(length, 0);
  u16(nftMessageType(msg), 4);
  u16(flags, 6);
  u32(seq, 8);
  b[NLMSG_HDRLEN] = family;
  const at = NLMSG_HDRLEN + NFGENMSG_LEN;
  u16(attrLength, at);
  // Attribute 1 of every part's message: the table's name.
  u16(1, at + 2);
  b.write(table, at + NLA_HDRLEN, 'utf8');
  return b;
}

/** A 32-bit attribute in network order; undefined when it is not 4 bytes. */
function be32(buf: Buffer, from: number, to: number): number | undefined {
  return to - from === 4 ? buf.readUInt32BE(from) : undefined;
}

/** A key or value type as nft prints it (`ipv4_addr . inet_proto . inet_service`), or why it cannot be. */
function datatypeText(packed: number): { text: string } | { unknown: number } {
  const names: string[] = [];
  // The last field is in the lowest bits; a single type is one field.
  for (let rest = packed; rest !== 0; rest >>>= DATATYPE_BITS) {
    const id = rest & ((1 << DATATYPE_BITS) - 1);
    const name = DATATYPE_NAMES.get(id);
    if (name === undefined) return { unknown: id };
    names.unshift(name);
  }
  if (names.length === 0) return { unknown: 0 };
  return { text: names.join(' . ') };
}

/**
 * Collects the answers of a listing's requests (listingRequest) for one table into an NftListing. `read` takes
 * every nf_tables message of the answers; messages about another family or table are counted and left out. The
 * kernel filters set and rule dumps by the table named in the request, but not chain dumps (6.18 sends every
 * chain of the family), so every answer is checked here.
 */
export class TableListingReader {
  readonly #family: number;
  readonly #table: string;
  #sawTable = false;
  #tableComment: string | undefined;
  readonly #chains: NftChain[] = [];
  readonly #bindingChains = new Set<string>();
  readonly #sets: NftSet[] = [];
  readonly #maps: NftMap[] = [];
  readonly #rules: NftListedRule[] = [];
  #generation: number | undefined;
  #mixedGenerations = false;
  #foreign = 0;

  constructor(family: number, table: string) {
    this.#family = family;
    this.#table = table;
  }

  /** Whether the table's own answer came (no table: the kernel answers ENOENT instead). */
  get sawTable(): boolean {
    return this.#sawTable;
  }

  /**
   * Whether the answers came from more than one generation of the ruleset: every nf_tables message carries the
   * 16 low bits of the generation it was made in (nfgenmsg.res_id), and a change between two of the requests
   * (which NLM_F_DUMP_INTR, inside one dump, does not see) shows as two of them.
   */
  get mixedGenerations(): boolean {
    return this.#mixedGenerations;
  }

  /** Messages about another table or family that were left out. */
  get foreignMessages(): number {
    return this.#foreign;
  }

  /** Reads one message; returns why it cannot be listed, or undefined (also for messages of no interest). */
  read(buf: Buffer, m: NetlinkMessageView): string | undefined {
    if (m.length < NLMSG_HDRLEN + NFGENMSG_LEN) return undefined;
    const type = m.type;
    const isListed =
      type === nftMessageType(NFT_MSG_NEWTABLE) ||
      type === nftMessageType(NFT_MSG_NEWCHAIN) ||
      type === nftMessageType(NFT_MSG_NEWSET) ||
      type === nftMessageType(NFT_MSG_NEWRULE);
    if (!isListed) return undefined;
    const start = m.offset + NLMSG_HDRLEN;
    const generation = buf.readUInt16BE(start + 2);
    if (this.#generation === undefined) this.#generation = generation;
    else if (generation !== this.#generation) this.#mixedGenerations = true;
    if (buf[start] !== this.#family) {
      this.#foreign++;
      return undefined;
    }
    const from = start + NFGENMSG_LEN;
    const to = m.offset + m.length;
    if (type === nftMessageType(NFT_MSG_NEWTABLE)) return this.#readTable(buf, from, to);
    if (type === nftMessageType(NFT_MSG_NEWCHAIN)) return this.#readChain(buf, from, to);
    if (type === nftMessageType(NFT_MSG_NEWSET)) return this.#readSet(buf, from, to);
    return this.#readRule(buf, from, to);
  }

  #readTable(buf: Buffer, from: number, to: number): string | undefined {
    let name: string | undefined;
    let comment: string | undefined;
    eachAttribute(buf, from, to, (t, a, b) => {
      if (t === NFTA_TABLE_NAME) name = text(buf, a, b);
      else if (t === NFTA_TABLE_USERDATA) comment = udataString(buf, a, b, UDATA_TABLE_COMMENT);
    });
    if (name !== this.#table) {
      this.#foreign++;
      return undefined;
    }
    this.#sawTable = true;
    this.#tableComment = comment;
    return undefined;
  }

  #readChain(buf: Buffer, from: number, to: number): string | undefined {
    let table: string | undefined;
    let name: string | undefined;
    let hook: number | undefined;
    let priority: number | undefined;
    let type: string | undefined;
    let flags = 0;
    let comment: string | undefined;
    eachAttribute(buf, from, to, (t, a, b) => {
      if (t === NFTA_CHAIN_TABLE) table = text(buf, a, b);
      else if (t === NFTA_CHAIN_NAME) name = text(buf, a, b);
      else if (t === NFTA_CHAIN_TYPE) type = text(buf, a, b);
      else if (t === NFTA_CHAIN_FLAGS) flags = be32(buf, a, b) ?? 0;
      else if (t === NFTA_CHAIN_USERDATA) comment = udataString(buf, a, b, UDATA_CHAIN_COMMENT);
      else if (t === NFTA_CHAIN_HOOK) {
        eachAttribute(buf, a, b, (ht, ha, hb) => {
          if (ht === NFTA_HOOK_HOOKNUM) hook = be32(buf, ha, hb);
          // Signed: priorities below 0 (dstnat, -110) are common.
          else if (ht === NFTA_HOOK_PRIORITY && hb - ha === 4) priority = buf.readInt32BE(ha);
        });
      }
    });
    if (table !== this.#table) {
      this.#foreign++;
      return undefined;
    }
    if (name === undefined) return 'a chain without a name';
    if (flags & NFT_CHAIN_BINDING) {
      this.#bindingChains.add(name);
      return undefined;
    }
    const hookName = hook === undefined ? undefined : HOOK_NAMES[hook];
    // A base chain as json.ts reads one: a known type and hook, and a priority; anything else lists as regular.
    const base =
      type !== undefined && CHAIN_TYPES.has(type) && hookName !== undefined && priority !== undefined
        ? { type: type as NftChainType, hook: hookName, priority }
        : undefined;
    this.#chains.push({
      kind: 'chain',
      name,
      ...(base ? { base } : {}),
      ...(comment !== undefined ? { comment } : {}),
    });
    return undefined;
  }

  #readSet(buf: Buffer, from: number, to: number): string | undefined {
    let table: string | undefined;
    let name: string | undefined;
    let flags = 0;
    let keyType: number | undefined;
    let dataType: number | undefined;
    let objectType: number | undefined;
    let timeoutMs: bigint | undefined;
    let comment: string | undefined;
    eachAttribute(buf, from, to, (t, a, b) => {
      if (t === NFTA_SET_TABLE) table = text(buf, a, b);
      else if (t === NFTA_SET_NAME) name = text(buf, a, b);
      else if (t === NFTA_SET_FLAGS) flags = be32(buf, a, b) ?? 0;
      else if (t === NFTA_SET_KEY_TYPE) keyType = be32(buf, a, b);
      else if (t === NFTA_SET_DATA_TYPE) dataType = be32(buf, a, b);
      else if (t === NFTA_SET_OBJ_TYPE) objectType = be32(buf, a, b);
      else if (t === NFTA_SET_TIMEOUT && b - a === 8) timeoutMs = buf.readBigUInt64BE(a);
      else if (t === NFTA_SET_USERDATA) comment = udataString(buf, a, b, UDATA_SET_COMMENT);
    });
    if (table !== this.#table) {
      this.#foreign++;
      return undefined;
    }
    if (name === undefined) return 'a set without a name';
    // A rule's inline `{ … }`: part of that rule, not listed by nft.
    if (flags & NFT_SET_ANONYMOUS) return undefined;
    const isMap = (flags & (NFT_SET_MAP | NFT_SET_OBJECT)) !== 0;
    const what = `${isMap ? 'map' : 'set'} ${name}`;
    const key = keyType === undefined ? { unknown: 0 } : datatypeText(keyType);
    if ('unknown' in key) return `${what}: key datatype ${key.unknown}, not one this reader knows`;
    const setFlags = SET_FLAG_NAMES.filter(([bit]) => flags & bit).map(([, n]) => n);
    const shared = {
      name,
      ...(setFlags.length > 0 ? { flags: setFlags } : {}),
    };
    if (!isMap) {
      this.#sets.push({
        kind: 'set',
        ...shared,
        type: key.text,
        // nft's JSON gives the default element timeout in whole seconds.
        ...(timeoutMs !== undefined ? { timeout: Number(timeoutMs / 1000n) } : {}),
        ...(comment !== undefined ? { comment } : {}),
      });
      return undefined;
    }
    let value: string | undefined;
    if (flags & NFT_SET_OBJECT) {
      value = objectType === undefined ? undefined : OBJECT_TYPE_NAMES.get(objectType);
      if (value === undefined) return `${what}: object type ${objectType}, not one this reader knows`;
    } else if (dataType === NFT_DATA_VERDICT) {
      value = 'verdict';
    } else {
      const data = dataType === undefined ? { unknown: 0 } : datatypeText(dataType);
      if ('unknown' in data) return `${what}: value datatype ${data.unknown}, not one this reader knows`;
      value = data.text;
    }
    this.#maps.push({
      kind: 'map',
      ...shared,
      type: `${key.text} : ${value}`,
      ...(comment !== undefined ? { comment } : {}),
    });
    return undefined;
  }

  #readRule(buf: Buffer, from: number, to: number): string | undefined {
    let table: string | undefined;
    let chain: string | undefined;
    let handle: bigint | undefined;
    let comment: string | undefined;
    eachAttribute(buf, from, to, (t, a, b) => {
      if (t === NFTA_RULE_TABLE) table = text(buf, a, b);
      else if (t === NFTA_RULE_CHAIN) chain = text(buf, a, b);
      else if (t === NFTA_RULE_HANDLE && b - a === 8) handle = buf.readBigUInt64BE(a);
      else if (t === NFTA_RULE_USERDATA) comment = udataString(buf, a, b, UDATA_RULE_COMMENT);
    });
    if (table !== this.#table) {
      this.#foreign++;
      return undefined;
    }
    if (chain === undefined || handle === undefined) return 'a rule without its chain or handle';
    // The body of a rule's `jump { … }`: nft lists it inside that rule.
    if (this.#bindingChains.has(chain)) return undefined;
    this.#rules.push({ chain, handle: Number(handle), ...(comment !== undefined ? { comment } : {}) });
    return undefined;
  }

  /** The listing, in the kernel's order of each kind (which is nft's). */
  listing(): NftListing {
    return {
      table: { kind: 'table', ...(this.#tableComment !== undefined ? { comment: this.#tableComment } : {}) },
      chains: this.#chains,
      sets: this.#sets,
      maps: this.#maps,
      rules: this.#rules,
    };
  }
}
