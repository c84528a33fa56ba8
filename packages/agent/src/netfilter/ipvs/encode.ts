// IPVS requests as generic netlink messages: nlmsghdr, genlmsghdr, then the command's attributes, a service and a
// destination each nested in one attribute (linux/ip_vs.h). Every request asks for an ACK, as ipvsadm's (libnl's)
// do, so that a change is answered even when it succeeds, and a dump ends with NLMSG_DONE.
//
// The messages are ipvsadm 1.31's, byte for byte, for adding and editing a service, a dump of services or of one
// service's destinations, the timeouts and a flush (checked against its messages, recorded with strace on Debian
// 12's kernel: test/netfilter/ipvs/recorded.ts), but for three differences that do not change what the kernel does:
//  - nlmsg_pid is 0 (the kernel's port for this socket is its own business: it fills it in);
//  - where the kernel reads only a service's identity (deleting it, and every destination command) we send only
//    that (family, protocol, address, port); ipvsadm fills in an empty scheduler, flags, timeout and netmask;
//  - a destination carries no tunnel attributes (IPVS_DEST_ATTR_TUN_*, zeros from ipvsadm; read only when the
//    forwarding is tunnelling, and unknown to kernels before 5.3), and deleting one carries only its identity.
import { parseIPSloppy } from '../../model/ip.js';
import {
  HOST_LE,
  NLA_F_NESTED,
  NLA_HDRLEN,
  NLMSG_HDRLEN,
  NLM_F_ACK,
  NLM_F_DUMP,
  NLM_F_REQUEST,
} from '../nft/netlink/protocol.js';
import {
  AF_INET,
  AF_INET6,
  CTRL_ATTR_FAMILY_NAME,
  CTRL_CMD_GETFAMILY,
  CTRL_VERSION,
  GENL_HDRLEN,
  GENL_ID_CTRL,
  IPPROTO,
  IPVS_CMD_ATTR_DEST,
  IPVS_CMD_ATTR_SERVICE,
  IPVS_CMD_ATTR_TIMEOUT_TCP,
  IPVS_CMD_ATTR_TIMEOUT_TCP_FIN,
  IPVS_CMD_ATTR_TIMEOUT_UDP,
  IPVS_CMD_FLUSH,
  IPVS_CMD_GET_CONFIG,
  IPVS_CMD_GET_DEST,
  IPVS_CMD_GET_SERVICE,
  IPVS_CMD_SET_CONFIG,
  IPVS_DEST_ATTR_ADDR,
  IPVS_DEST_ATTR_ADDR_FAMILY,
  IPVS_DEST_ATTR_FWD_METHOD,
  IPVS_DEST_ATTR_L_THRESH,
  IPVS_DEST_ATTR_PORT,
  IPVS_DEST_ATTR_U_THRESH,
  IPVS_DEST_ATTR_WEIGHT,
  IPVS_GENL_VERSION,
  IPVS_SVC_ATTR_ADDR,
  IPVS_SVC_ATTR_AF,
  IPVS_SVC_ATTR_FLAGS,
  IPVS_SVC_ATTR_NETMASK,
  IPVS_SVC_ATTR_PORT,
  IPVS_SVC_ATTR_PROTOCOL,
  IPVS_SVC_ATTR_SCHED_NAME,
  IPVS_SVC_ATTR_TIMEOUT,
  IP_VS_CONN_F_MASQ,
  IP_VS_SVC_F_HASHED,
  NETMASK_IPV4,
  NETMASK_IPV6,
} from './protocol.js';
import type { IpvsTimeouts, RealServer, VirtualServer } from './types.js';
import { IPVS_PROTOCOLS } from './types.js';

/** A request ready to send, or why the values asked for cannot be one (nothing was sent). */
export type Encoded =
  { readonly ok: true; readonly bytes: Buffer } | { readonly ok: false; readonly reason: string };

/** An address as IPVS carries it: its family and union nf_inet_addr (16 bytes, IPv4 in the first 4). */
interface InetAddress {
  readonly family: typeof AF_INET | typeof AF_INET6;
  readonly bytes: Buffer;
}

function inetAddress(text: string): InetAddress | undefined {
  const ip = parseIPSloppy(text);
  if (ip === undefined) return undefined;
  const bytes = Buffer.alloc(16);
  if (ip.family === 'IPv4') {
    ip.text.split('.').forEach((octet, i) => (bytes[i] = Number(octet)));
    return { family: AF_INET, bytes };
  }
  // Canonical text: at most one "::", no dotted tail (model/ip.ts prints IPv4-mapped addresses as IPv4).
  const [head = '', tail] = ip.text.split('::');
  const groups = (s: string | undefined): number[] => (s ? s.split(':').map((g) => parseInt(g, 16)) : []);
  const h = groups(head);
  const t = groups(tail);
  const all = tail === undefined ? h : [...h, ...new Array<number>(8 - h.length - t.length).fill(0), ...t];
  all.forEach((g, i) => bytes.writeUInt16BE(g, 2 * i));
  return { family: AF_INET6, bytes };
}

const isUint = (v: unknown, max: number): v is number =>
  typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= max;

/** Why `vs` cannot be sent as it is, or undefined. The fake refuses the same values. */
export function checkVirtualServer(vs: VirtualServer): string | undefined {
  if (inetAddress(vs.address) === undefined) return `address "${vs.address}" is not an IP address`;
  if (!isUint(vs.port, 0xffff)) return `port ${vs.port} is not a port number`;
  if (!IPVS_PROTOCOLS.includes(vs.protocol)) return `protocol "${vs.protocol}" is not TCP, UDP or SCTP`;
  if (typeof vs.scheduler !== 'string' || vs.scheduler.includes('\0')) return 'the scheduler is not a name';
  if (!isUint(vs.flags, 0xffffffff)) return `flags ${vs.flags} are not a 32-bit value`;
  if (!isUint(vs.timeout, 0xffffffff)) return `timeout ${vs.timeout} is not a number of seconds`;
  return undefined;
}

/** Why `rs` cannot be sent as it is, or undefined. */
export function checkRealServer(rs: RealServer): string | undefined {
  if (inetAddress(rs.address) === undefined) return `address "${rs.address}" is not an IP address`;
  if (!isUint(rs.port, 0xffff)) return `port ${rs.port} is not a port number`;
  if (!isUint(rs.weight, 0xffffffff)) return `weight ${rs.weight} is not a 32-bit value`;
  return undefined;
}

export function checkTimeouts(t: IpvsTimeouts): string | undefined {
  for (const [name, v] of Object.entries(t)) {
    if (!isUint(v, 0xffffffff)) return `timeout ${name} ${String(v)} is not a number of seconds`;
  }
  return undefined;
}

/** The family of an address the checks accepted. */
export function addressFamily(address: string): typeof AF_INET | typeof AF_INET6 {
  return (inetAddress(address) as InetAddress).family;
}

// One attribute: header (length without padding, type), payload, zero padding to 4 bytes.
function attr(type: number, payload: Buffer): Buffer {
  const len = NLA_HDRLEN + payload.length;
  const b = Buffer.alloc((len + 3) & ~3);
  writeU16(b, 0, len);
  writeU16(b, 2, type);
  payload.copy(b, NLA_HDRLEN);
  return b;
}

function nested(type: number, children: readonly Buffer[]): Buffer {
  return attr(type | NLA_F_NESTED, Buffer.concat(children));
}

function writeU16(b: Buffer, at: number, v: number): void {
  if (HOST_LE) b.writeUInt16LE(v, at);
  else b.writeUInt16BE(v, at);
}

function u16(v: number): Buffer {
  const b = Buffer.alloc(2);
  writeU16(b, 0, v);
  return b;
}

function u32(...values: number[]): Buffer {
  const b = Buffer.alloc(4 * values.length);
  values.forEach((v, i) => (HOST_LE ? b.writeUInt32LE(v, 4 * i) : b.writeUInt32BE(v, 4 * i)));
  return b;
}

/** A port in network order (the kernel copies it into a __be16). */
function be16(v: number): Buffer {
  const b = Buffer.alloc(2);
  b.writeUInt16BE(v);
  return b;
}

function nulString(s: string): Buffer {
  return Buffer.from(`${s}\0`, 'utf8');
}

/** nlmsghdr (pid 0: the kernel's to fill) + genlmsghdr + attributes. */
function message(
  type: number,
  flags: number,
  seq: number,
  cmd: number,
  version: number,
  attrs: Buffer[],
): Buffer {
  const body = Buffer.concat(attrs);
  const b = Buffer.alloc(NLMSG_HDRLEN + GENL_HDRLEN + body.length);
  const w32 = (at: number, v: number): number => (HOST_LE ? b.writeUInt32LE(v, at) : b.writeUInt32BE(v, at));
  w32(0, b.length);
  writeU16(b, 4, type);
  writeU16(b, 6, flags);
  w32(8, seq);
  b[NLMSG_HDRLEN] = cmd;
  b[NLMSG_HDRLEN + 1] = version;
  body.copy(b, NLMSG_HDRLEN + GENL_HDRLEN);
  return b;
}

const REQUEST = NLM_F_REQUEST | NLM_F_ACK;

/** The controller's GETFAMILY for `name` ("IPVS"): its answer carries the family's id. */
export function getFamilyRequest(name: string, seq: number): Buffer {
  return message(GENL_ID_CTRL, REQUEST, seq, CTRL_CMD_GETFAMILY, CTRL_VERSION, [
    attr(CTRL_ATTR_FAMILY_NAME, nulString(name)),
  ]);
}

/** A service's identity: what the kernel looks it up by. */
function serviceIdentity(vs: VirtualServer): Buffer[] {
  const a = inetAddress(vs.address) as InetAddress;
  return [
    attr(IPVS_SVC_ATTR_AF, u16(a.family)),
    attr(IPVS_SVC_ATTR_PROTOCOL, u16(IPPROTO[vs.protocol])),
    attr(IPVS_SVC_ATTR_ADDR, a.bytes),
    attr(IPVS_SVC_ATTR_PORT, be16(vs.port)),
  ];
}

/** A whole service, as adding or editing one needs it (the kernel wants all four of these). */
function serviceFull(vs: VirtualServer): Buffer[] {
  const family = addressFamily(vs.address);
  return [
    ...serviceIdentity(vs),
    attr(IPVS_SVC_ATTR_SCHED_NAME, nulString(vs.scheduler)),
    // The mask says which bits we set: all of them, but HASHED is the kernel's (a service added with it set is
    // never put in the kernel's table), so it is cleared here whatever the caller passed.
    attr(IPVS_SVC_ATTR_FLAGS, u32((vs.flags & ~IP_VS_SVC_F_HASHED) >>> 0, 0xffffffff)),
    attr(IPVS_SVC_ATTR_TIMEOUT, u32(vs.timeout)),
    // Upstream's netmask: persistence per client address, not per subnet.
    attr(IPVS_SVC_ATTR_NETMASK, u32(family === AF_INET ? NETMASK_IPV4 : NETMASK_IPV6)),
  ];
}

function destIdentity(rs: RealServer): Buffer[] {
  const a = inetAddress(rs.address) as InetAddress;
  return [
    attr(IPVS_DEST_ATTR_ADDR_FAMILY, u16(a.family)),
    attr(IPVS_DEST_ATTR_ADDR, a.bytes),
    attr(IPVS_DEST_ATTR_PORT, be16(rs.port)),
  ];
}

function destFull(rs: RealServer): Buffer[] {
  return [
    ...destIdentity(rs),
    attr(IPVS_DEST_ATTR_FWD_METHOD, u32(IP_VS_CONN_F_MASQ)),
    attr(IPVS_DEST_ATTR_WEIGHT, u32(rs.weight)),
    // No connection thresholds (0: unlimited), as upstream.
    attr(IPVS_DEST_ATTR_U_THRESH, u32(0)),
    attr(IPVS_DEST_ATTR_L_THRESH, u32(0)),
  ];
}

/** NEW_SERVICE or SET_SERVICE (`full`: the whole service) or DEL_SERVICE (its identity). */
export function virtualServerRequest(
  familyId: number,
  cmd: number,
  vs: VirtualServer,
  seq: number,
  full: boolean,
): Encoded {
  const problem = checkVirtualServer(vs);
  if (problem !== undefined) return { ok: false, reason: problem };
  const service = nested(IPVS_CMD_ATTR_SERVICE, full ? serviceFull(vs) : serviceIdentity(vs));
  return { ok: true, bytes: message(familyId, REQUEST, seq, cmd, IPVS_GENL_VERSION, [service]) };
}

/** NEW_DEST or SET_DEST (`full`) or DEL_DEST (the destination's identity), on the service `vs` names. */
export function realServerRequest(
  familyId: number,
  cmd: number,
  vs: VirtualServer,
  rs: RealServer,
  seq: number,
  full: boolean,
): Encoded {
  const problem = checkVirtualServer(vs) ?? checkRealServer(rs);
  if (problem !== undefined) return { ok: false, reason: problem };
  const attrs = [
    nested(IPVS_CMD_ATTR_SERVICE, serviceIdentity(vs)),
    nested(IPVS_CMD_ATTR_DEST, full ? destFull(rs) : destIdentity(rs)),
  ];
  return { ok: true, bytes: message(familyId, REQUEST, seq, cmd, IPVS_GENL_VERSION, attrs) };
}

/** A dump of every service of the namespace. */
export function listVirtualServersRequest(familyId: number, seq: number): Buffer {
  return message(familyId, REQUEST | NLM_F_DUMP, seq, IPVS_CMD_GET_SERVICE, IPVS_GENL_VERSION, []);
}

/** A dump of the destinations of the service `vs` names. */
export function listRealServersRequest(familyId: number, vs: VirtualServer, seq: number): Encoded {
  const problem = checkVirtualServer(vs);
  if (problem !== undefined) return { ok: false, reason: problem };
  const service = nested(IPVS_CMD_ATTR_SERVICE, serviceIdentity(vs));
  return {
    ok: true,
    bytes: message(familyId, REQUEST | NLM_F_DUMP, seq, IPVS_CMD_GET_DEST, IPVS_GENL_VERSION, [service]),
  };
}

export function setTimeoutsRequest(familyId: number, t: IpvsTimeouts, seq: number): Encoded {
  const problem = checkTimeouts(t);
  if (problem !== undefined) return { ok: false, reason: problem };
  const attrs = [
    attr(IPVS_CMD_ATTR_TIMEOUT_TCP, u32(t.tcp)),
    attr(IPVS_CMD_ATTR_TIMEOUT_TCP_FIN, u32(t.tcpFin)),
    attr(IPVS_CMD_ATTR_TIMEOUT_UDP, u32(t.udp)),
  ];
  return { ok: true, bytes: message(familyId, REQUEST, seq, IPVS_CMD_SET_CONFIG, IPVS_GENL_VERSION, attrs) };
}

export function getTimeoutsRequest(familyId: number, seq: number): Buffer {
  return message(familyId, REQUEST, seq, IPVS_CMD_GET_CONFIG, IPVS_GENL_VERSION, []);
}

export function flushRequest(familyId: number, seq: number): Buffer {
  return message(familyId, REQUEST, seq, IPVS_CMD_FLUSH, IPVS_GENL_VERSION, []);
}
