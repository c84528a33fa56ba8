// The numbers of the nf_tables netlink protocol that the element writer and reader use, named as the kernel's uapi
// headers name them (linux/netlink.h, linux/netfilter/nfnetlink.h, linux/netfilter/nf_tables.h), and the host byte
// order: netlink's own headers (message and attribute lengths and types) are in the host's order, nf_tables' values
// in network order unless a field says otherwise.
import { endianness } from 'node:os';

/** Whether this host is little-endian (netlink headers and nft's host-order integers are written in its order). */
export const HOST_LE = endianness() === 'LE';

// linux/netlink.h
export const NETLINK_NETFILTER = 12;
export const NLMSG_HDRLEN = 16;
export const NLMSG_ERROR = 2;
export const NLMSG_DONE = 3;
export const NLM_F_REQUEST = 0x1;
export const NLM_F_MULTI = 0x2;
export const NLM_F_ACK = 0x4;
/** A dump was interrupted by a change of the ruleset: its parts may not fit together, so it is read again. */
export const NLM_F_DUMP_INTR = 0x10;
export const NLM_F_DUMP = 0x300;
export const NLM_F_EXCL = 0x200;
export const NLM_F_CREATE = 0x400;
/** On an error message: the echoed request is its header only (NETLINK_CAP_ACK), and TLVs follow it. */
export const NLM_F_CAPPED = 0x100;
export const NLM_F_ACK_TLVS = 0x200;
export const NLA_HDRLEN = 4;
export const NLA_F_NESTED = 0x8000;
export const NLA_TYPE_MASK = 0x3fff;
export const NLMSGERR_ATTR_MSG = 1;
export const NLMSGERR_ATTR_OFFS = 2;
export const SOL_NETLINK = 270;
export const NETLINK_CAP_ACK = 10;
export const NETLINK_EXT_ACK = 11;

// linux/netfilter/nfnetlink.h
export const NFNL_MSG_BATCH_BEGIN = 16;
export const NFNL_MSG_BATCH_END = 17;
export const NFNL_SUBSYS_NFTABLES = 10;
/** Size of struct nfgenmsg (family, version, res_id), after the netlink header of every nfnetlink message. */
export const NFGENMSG_LEN = 4;

// linux/netfilter/nf_tables.h: messages
export const NFT_MSG_NEWSETELEM = 12;
export const NFT_MSG_GETSETELEM = 13;
export const NFT_MSG_DELSETELEM = 14;

/** The nlmsg_type of an nf_tables message. */
export function nftMessageType(msg: number): number {
  return (NFNL_SUBSYS_NFTABLES << 8) | msg;
}

// enum nft_set_elem_list_attributes
export const NFTA_SET_ELEM_LIST_TABLE = 1;
export const NFTA_SET_ELEM_LIST_SET = 2;
export const NFTA_SET_ELEM_LIST_ELEMENTS = 3;
export const NFTA_SET_ELEM_LIST_SET_ID = 4;
// enum nft_list_attributes
export const NFTA_LIST_ELEM = 1;
// enum nft_set_elem_attributes
export const NFTA_SET_ELEM_KEY = 1;
export const NFTA_SET_ELEM_DATA = 2;
export const NFTA_SET_ELEM_FLAGS = 3;
export const NFTA_SET_ELEM_USERDATA = 6;
// enum nft_set_elem_flags
export const NFT_SET_ELEM_INTERVAL_END = 0x1;
export const NFT_SET_ELEM_CATCHALL = 0x2;
// enum nft_data_attributes
export const NFTA_DATA_VALUE = 1;
export const NFTA_DATA_VERDICT = 2;
// enum nft_verdict_attributes
export const NFTA_VERDICT_CODE = 1;
export const NFTA_VERDICT_CHAIN = 2;

/** Verdict codes (NF_DROP, NF_ACCEPT from linux/netfilter.h; the rest enum nft_verdicts), as signed 32-bit. */
export const VERDICT_CODES = {
  drop: 0,
  accept: 1,
  continue: -1,
  jump: -3,
  goto: -4,
  return: -5,
} as const;
export type VerdictName = keyof typeof VERDICT_CODES;

/** NFPROTO_* of the table families we write (nfgenmsg.nfgen_family). */
export const NFPROTO = { ip: 2, ip6: 10 } as const;

/**
 * Element userdata is libnftnl's TLV list (one byte type, one byte length, value); type 0 is the element's comment,
 * stored with its terminating NUL. nft reads its own comments back from it, so we write it the same way.
 */
export const UDATA_SET_ELEM_COMMENT = 0;

/** The kernel's limit on a set element's key or data (NFT_DATA_VALUE_MAXLEN), bytes. */
export const NFT_DATA_VALUE_MAXLEN = 64;

/** Netlink attributes are padded to 4 bytes. */
export function align4(n: number): number {
  return (n + 3) & ~3;
}
