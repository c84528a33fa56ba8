// The ruleset's generation: a number the kernel raises by one on every nf_tables transaction it commits in this
// network namespace, whoever sends it (nft, iptables-nft, a CNI, us). Asked with NFT_MSG_GETGEN; the answer,
// NFT_MSG_NEWGEN, holds it in NFTA_GEN_ID (32 bits, network order). Two reads that give the same number saw the
// same ruleset: nothing was committed between them (nftables/state.ts builds a restart on that).
import type { NetlinkMessageView } from './decode.js';
import { eachAttribute } from './decode.js';
import { HOST_LE, NFGENMSG_LEN, NLMSG_HDRLEN, NLM_F_REQUEST, nftMessageType } from './protocol.js';

// linux/netfilter/nf_tables.h
const NFT_MSG_NEWGEN = 15;
const NFT_MSG_GETGEN = 16;
const NFTA_GEN_ID = 1;

/** The request: a bare nfgenmsg (AF_UNSPEC), not a dump. */
export function generationRequest(seq: number): Buffer {
  const length = NLMSG_HDRLEN + NFGENMSG_LEN;
  const b = Buffer.alloc(length);
  if (HOST_LE) {
    b.writeUInt32LE(length, 0);
    b.writeUInt16LE(nftMessageType(NFT_MSG_GETGEN), 4);
    b.writeUInt16LE(NLM_F_REQUEST, 6);
    b.writeUInt32LE(seq, 8);
  } else {
    b.writeUInt32BE(length, 0);
    b.writeUInt16BE(nftMessageType(NFT_MSG_GETGEN), 4);
    b.writeUInt16BE(NLM_F_REQUEST, 6);
    b.writeUInt32BE(seq, 8);
  }
  return b;
}

/** The generation in an answer, or why the message is not one. */
export function readGeneration(buf: Buffer, m: NetlinkMessageView): number | string {
  if (m.type !== nftMessageType(NFT_MSG_NEWGEN)) return `an answer of type ${m.type} to a generation request`;
  let id: number | undefined;
  eachAttribute(buf, m.offset + NLMSG_HDRLEN + NFGENMSG_LEN, m.offset + m.length, (type, from, to) => {
    if (type === NFTA_GEN_ID && to - from === 4) id = buf.readUInt32BE(from);
  });
  return id ?? 'a generation answer without NFTA_GEN_ID';
}
