// Reading the kernel's answers to IPVS requests: the messages of one request gathered from the datagrams that carry
// them (data messages, then an ACK or an error; or a dump's parts, then NLMSG_DONE), the controller's family id,
// and a service, a destination or the timeouts out of their messages. Walking messages and attributes and taking
// an error message apart are the nf_tables reader's (../nft/netlink/decode.ts): netlink is the same.
import { parseIPSloppy } from '../../model/ip.js';
import { eachAttribute, netlinkMessages, parseErrorReply, text } from '../nft/netlink/decode.js';
import {
  HOST_LE,
  NLMSGERR_ATTR_MSG,
  NLMSG_DONE,
  NLMSG_ERROR,
  NLMSG_HDRLEN,
  NLM_F_ACK_TLVS,
} from '../nft/netlink/protocol.js';
import {
  AF_INET,
  AF_INET6,
  CTRL_ATTR_FAMILY_ID,
  ERRNO,
  GENL_HDRLEN,
  IPPROTO,
  IPVS_CMD_ATTR_DEST,
  IPVS_CMD_ATTR_SERVICE,
  IPVS_CMD_ATTR_TIMEOUT_TCP,
  IPVS_CMD_ATTR_TIMEOUT_TCP_FIN,
  IPVS_CMD_ATTR_TIMEOUT_UDP,
  IPVS_DEST_ATTR_ACTIVE_CONNS,
  IPVS_DEST_ATTR_ADDR,
  IPVS_DEST_ATTR_ADDR_FAMILY,
  IPVS_DEST_ATTR_INACT_CONNS,
  IPVS_DEST_ATTR_PORT,
  IPVS_DEST_ATTR_WEIGHT,
  IPVS_SVC_ATTR_ADDR,
  IPVS_SVC_ATTR_AF,
  IPVS_SVC_ATTR_FLAGS,
  IPVS_SVC_ATTR_FWMARK,
  IPVS_SVC_ATTR_PORT,
  IPVS_SVC_ATTR_PROTOCOL,
  IPVS_SVC_ATTR_SCHED_NAME,
  IPVS_SVC_ATTR_TIMEOUT,
  IP_VS_SVC_F_HASHED,
} from './protocol.js';
import type { IpvsProtocol, IpvsTimeouts, RealServer, VirtualServer } from './types.js';

/** The answer to one request, as it is read: its data messages, and how it ended. */
export interface Answer {
  /** An ACK, an error, or a dump's NLMSG_DONE has been read. */
  done: boolean;
  /** A positive errno when the request failed, else 0. */
  errno: number;
  /** The kernel's own words for the error (extended ACK), when it gave some. */
  kernelText?: string;
  /** Each data message whole (from its nlmsghdr), copied out of the receive buffer. */
  readonly messages: Buffer[];
}

export function newAnswer(): Answer {
  return { done: false, errno: 0, messages: [] };
}

function u16(buf: Buffer, at: number): number {
  return HOST_LE ? buf.readUInt16LE(at) : buf.readUInt16BE(at);
}

function u32(buf: Buffer, at: number): number {
  return HOST_LE ? buf.readUInt32LE(at) : buf.readUInt32BE(at);
}

function i32(buf: Buffer, at: number): number {
  return HOST_LE ? buf.readInt32LE(at) : buf.readInt32BE(at);
}

/** An errno negated from the kernel's 0 is -0, which deep equality tells from 0. */
function noNegativeZero(errno: number): number {
  return errno === 0 ? 0 : errno;
}

/**
 * Adds what buf[0, length) holds for request `seq` to `answer`: messages of other requests (left over from an
 * earlier one) are skipped. A dump's NLMSG_DONE carries an int, its error (negative), and may carry extended ACK
 * attributes after it, as an error message does.
 */
export function absorbDatagram(buf: Buffer, length: number, seq: number, answer: Answer): void {
  for (const m of netlinkMessages(buf, length)) {
    if (m.seq !== seq || answer.done) continue;
    if (m.type === NLMSG_ERROR) {
      const reply = parseErrorReply(buf, m);
      answer.done = true;
      // A reply too short to read is a protocol error, not a success.
      answer.errno = reply === undefined ? ERRNO.EPROTO : noNegativeZero(reply.errno);
      if (reply?.text !== undefined) answer.kernelText = reply.text;
    } else if (m.type === NLMSG_DONE) {
      answer.done = true;
      const at = m.offset + NLMSG_HDRLEN;
      if (m.length >= NLMSG_HDRLEN + 4) answer.errno = noNegativeZero(-i32(buf, at));
      if (m.flags & NLM_F_ACK_TLVS) {
        eachAttribute(buf, at + 4, m.offset + m.length, (type, from, to) => {
          if (type === NLMSGERR_ATTR_MSG) answer.kernelText = text(buf, from, to);
        });
      }
    } else {
      answer.messages.push(Buffer.from(buf.subarray(m.offset, m.offset + m.length)));
    }
  }
}

/** The generic netlink attributes of one whole message: after its nlmsghdr and genlmsghdr. */
function eachTopAttribute(msg: Buffer, visit: (type: number, from: number, to: number) => void): void {
  eachAttribute(msg, NLMSG_HDRLEN + GENL_HDRLEN, Math.min(u32(msg, 0), msg.length), visit);
}

/** The family id in the controller's answer to GETFAMILY. */
export function decodeFamilyId(msg: Buffer): number | undefined {
  let id: number | undefined;
  eachTopAttribute(msg, (type, from, to) => {
    if (type === CTRL_ATTR_FAMILY_ID && to - from >= 2) id = u16(msg, from);
  });
  return id;
}

/** An address out of union nf_inet_addr (16 bytes, IPv4 in the first 4), in model/ip.ts's canonical text. */
function inetText(buf: Buffer, from: number, to: number, family: number): string | undefined {
  if (family === AF_INET && to - from >= 4)
    return `${buf[from]}.${buf[from + 1]}.${buf[from + 2]}.${buf[from + 3]}`;
  if (family !== AF_INET6 || to - from < 16) return undefined;
  const groups: string[] = [];
  for (let i = 0; i < 8; i++) groups.push(buf.readUInt16BE(from + 2 * i).toString(16));
  return parseIPSloppy(groups.join(':'))?.text;
}

const PROTOCOL_NAMES: ReadonlyMap<number, IpvsProtocol> = new Map(
  Object.entries(IPPROTO).map(([name, n]) => [n, name as IpvsProtocol]),
);

/** A service, or why it is not one this client lists (`skip`), or why it cannot be read (`problem`). */
export type DecodedService = VirtualServer | { readonly skip: string } | { readonly problem: string };

interface ServiceFields {
  af?: number;
  protocol?: number;
  fwmark?: number;
  addr?: [number, number];
  port?: number;
  scheduler?: string;
  flags?: number;
  timeout?: number;
}

function serviceFields(msg: Buffer, from: number, to: number): ServiceFields {
  const f: ServiceFields = {};
  eachAttribute(msg, from, to, (type, a, b) => {
    if (type === IPVS_SVC_ATTR_AF && b - a >= 2) f.af = u16(msg, a);
    else if (type === IPVS_SVC_ATTR_PROTOCOL && b - a >= 2) f.protocol = u16(msg, a);
    else if (type === IPVS_SVC_ATTR_FWMARK && b - a >= 4) f.fwmark = u32(msg, a);
    else if (type === IPVS_SVC_ATTR_ADDR) f.addr = [a, b];
    else if (type === IPVS_SVC_ATTR_PORT && b - a >= 2) f.port = msg.readUInt16BE(a);
    else if (type === IPVS_SVC_ATTR_SCHED_NAME) f.scheduler = text(msg, a, b);
    else if (type === IPVS_SVC_ATTR_FLAGS && b - a >= 4) f.flags = u32(msg, a);
    else if (type === IPVS_SVC_ATTR_TIMEOUT && b - a >= 4) f.timeout = u32(msg, a);
  });
  return f;
}

/** The service in one message of a GET_SERVICE dump (IPVS_CMD_NEW_SERVICE with IPVS_CMD_ATTR_SERVICE). */
export function decodeVirtualServer(msg: Buffer): DecodedService {
  let f: ServiceFields | undefined;
  eachTopAttribute(msg, (type, from, to) => {
    if (type === IPVS_CMD_ATTR_SERVICE) f = serviceFields(msg, from, to);
  });
  if (f === undefined) return { problem: 'a message without a service' };
  // A firewall-mark service has no address or port: nothing kube-proxy makes, and nothing a VirtualServer says.
  if (f.fwmark !== undefined && f.fwmark !== 0) return { skip: `firewall-mark service ${f.fwmark}` };
  const protocol = f.protocol === undefined ? undefined : PROTOCOL_NAMES.get(f.protocol);
  if (protocol === undefined) return { skip: `a service of IP protocol ${f.protocol ?? '(none)'}` };
  const address = f.addr === undefined || f.af === undefined ? undefined : inetText(msg, ...f.addr, f.af);
  if (address === undefined) return { problem: `a service without a readable address (family ${f.af})` };
  if (f.port === undefined || f.scheduler === undefined || f.flags === undefined || f.timeout === undefined) {
    return { problem: `service ${protocol} ${address} lacks its port, scheduler, flags or timeout` };
  }
  // Every service in the kernel's table has HASHED; upstream leaves it out of what it lists, and so do we.
  const flags = (f.flags & ~IP_VS_SVC_F_HASHED) >>> 0;
  return { address, port: f.port, protocol, scheduler: f.scheduler, flags, timeout: f.timeout };
}

interface DestFields {
  af?: number;
  addr?: [number, number];
  port?: number;
  weight?: number;
  active?: number;
  inactive?: number;
}

function destFields(msg: Buffer, from: number, to: number): DestFields {
  const f: DestFields = {};
  eachAttribute(msg, from, to, (type, a, b) => {
    if (type === IPVS_DEST_ATTR_ADDR_FAMILY && b - a >= 2) f.af = u16(msg, a);
    else if (type === IPVS_DEST_ATTR_ADDR) f.addr = [a, b];
    else if (type === IPVS_DEST_ATTR_PORT && b - a >= 2) f.port = msg.readUInt16BE(a);
    else if (type === IPVS_DEST_ATTR_WEIGHT && b - a >= 4) f.weight = u32(msg, a);
    else if (type === IPVS_DEST_ATTR_ACTIVE_CONNS && b - a >= 4) f.active = u32(msg, a);
    else if (type === IPVS_DEST_ATTR_INACT_CONNS && b - a >= 4) f.inactive = u32(msg, a);
  });
  return f;
}

/**
 * The destination in one message of a GET_DEST dump. `serviceFamily` is the family of its service, which kernels
 * before 3.18 (no IPVS_DEST_ATTR_ADDR_FAMILY) give every destination.
 */
export function decodeRealServer(
  msg: Buffer,
  serviceFamily: number,
): RealServer | { readonly problem: string } {
  let f: DestFields | undefined;
  eachTopAttribute(msg, (type, from, to) => {
    if (type === IPVS_CMD_ATTR_DEST) f = destFields(msg, from, to);
  });
  if (f === undefined) return { problem: 'a message without a destination' };
  const address = f.addr === undefined ? undefined : inetText(msg, ...f.addr, f.af ?? serviceFamily);
  if (address === undefined) return { problem: `a destination without a readable address (family ${f.af})` };
  if (f.port === undefined || f.weight === undefined) {
    return { problem: `destination ${address} lacks its port or weight` };
  }
  return {
    address,
    port: f.port,
    weight: f.weight,
    activeConnections: f.active ?? 0,
    inactiveConnections: f.inactive ?? 0,
  };
}

/** The timeouts in the answer to GET_CONFIG (a kernel without TCP or UDP support leaves those out: 0). */
export function decodeTimeouts(msg: Buffer): IpvsTimeouts {
  const t: IpvsTimeouts = { tcp: 0, tcpFin: 0, udp: 0 };
  eachTopAttribute(msg, (type, from, to) => {
    if (to - from < 4) return;
    if (type === IPVS_CMD_ATTR_TIMEOUT_TCP) t.tcp = u32(msg, from);
    else if (type === IPVS_CMD_ATTR_TIMEOUT_TCP_FIN) t.tcpFin = u32(msg, from);
    else if (type === IPVS_CMD_ATTR_TIMEOUT_UDP) t.udp = u32(msg, from);
  });
  return t;
}
