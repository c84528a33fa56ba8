// What the agent asks of IPVS, in upstream's words (kubernetes pkg/proxy/ipvs/util: VirtualServer, RealServer, the
// service flags), the handle that does it (the kernel through client.ts, or FakeIpvs), and its results: every
// failure is a value naming the errno and what was asked, never an exception.
import { parseIPSloppy } from '../../model/ip.js';
import { ERRNO } from './protocol.js';

export type IpvsProtocol = 'TCP' | 'UDP' | 'SCTP';
export const IPVS_PROTOCOLS = ['TCP', 'UDP', 'SCTP'] as const satisfies readonly IpvsProtocol[];

/** A virtual server: one service address, port and protocol, with its scheduler. */
export interface VirtualServer {
  /** IPv4 or IPv6; listings give it canonical (IPv6 lower case, compressed). */
  readonly address: string;
  readonly port: number;
  readonly protocol: IpvsProtocol;
  /** The scheduler's name: rr, wrr, lc, sh, … (the kernel module ip_vs_<name>). */
  readonly scheduler: string;
  /** IPVS_FLAG_* bits; a listing leaves out IPVS_FLAG_HASHED, which the kernel sets on every service. */
  readonly flags: number;
  /** The persistence timeout, in seconds (what session affinity's timeout becomes). */
  readonly timeout: number;
}

/** A real server of a virtual server, reached by masquerading. */
export interface RealServer {
  readonly address: string;
  readonly port: number;
  readonly weight: number;
  /** Connections the kernel counts for it (listings only). */
  readonly activeConnections?: number;
  readonly inactiveConnections?: number;
}

// Upstream's utilipvs FlagPersistent, FlagHashed, FlagSourceHash (IP_VS_SVC_F_PERSISTENT, _HASHED, _SCHED_SH_PORT).
export const IPVS_FLAG_PERSISTENT = 0x1;
export const IPVS_FLAG_HASHED = 0x2;
export const IPVS_FLAG_SOURCE_HASH = 0x10;

/** The kernel's connection timeouts, in seconds (what `ipvsadm --set tcp tcpfin udp` sets). */
export interface IpvsTimeouts {
  tcp: number;
  tcpFin: number;
  udp: number;
}

/** What was asked (`operation`), the kernel's errno, and a sentence for a log line. */
export interface IpvsFailure {
  readonly ok: false;
  readonly errno: number;
  readonly message: string;
  readonly operation: string;
}

export type IpvsResult = { readonly ok: true } | IpvsFailure;
export type IpvsListResult<T> = { readonly ok: true; readonly value: readonly T[] } | IpvsFailure;
export type IpvsValueResult<T> = { readonly ok: true; readonly value: T } | IpvsFailure;

/**
 * IPVS in one network namespace. Each call is one request and its answer, on this thread; a failure is returned,
 * never thrown (a closed handle answers EBADF).
 */
export interface IpvsHandle {
  listVirtualServers(): IpvsListResult<VirtualServer>;
  addVirtualServer(vs: VirtualServer): IpvsResult;
  /** Sets the scheduler, flags and timeout of the virtual server with vs's identity (virtualServerKey). */
  updateVirtualServer(vs: VirtualServer): IpvsResult;
  deleteVirtualServer(vs: VirtualServer): IpvsResult;
  /** The real servers of `vs`; the kernel lists none (no error) for a virtual server it does not have. */
  listRealServers(vs: VirtualServer): IpvsListResult<RealServer>;
  addRealServer(vs: VirtualServer, rs: RealServer): IpvsResult;
  updateRealServer(vs: VirtualServer, rs: RealServer): IpvsResult;
  deleteRealServer(vs: VirtualServer, rs: RealServer): IpvsResult;
  /** Deletes every virtual server (and so every real server) of the namespace. */
  flush(): IpvsResult;
  getTimeouts(): IpvsValueResult<IpvsTimeouts>;
  /** A zero leaves that timeout as it is (the kernel's rule). */
  setTimeouts(t: IpvsTimeouts): IpvsResult;
  close(): void;
}

function hostPort(address: string, port: number): string {
  const a = parseIPSloppy(address)?.text ?? address;
  return a.includes(':') ? `[${a}]:${port}` : `${a}:${port}`;
}

/** The identity of a virtual server: "TCP/10.0.0.1:80", "UDP/[2001:db8::1]:53". */
export function virtualServerKey(vs: Pick<VirtualServer, 'protocol' | 'address' | 'port'>): string {
  return `${vs.protocol}/${hostPort(vs.address, vs.port)}`;
}

/** The identity of a real server within its virtual server: "10.0.0.1:8080", "[2001:db8::1]:8080". */
export function realServerKey(rs: Pick<RealServer, 'address' | 'port'>): string {
  return hostPort(rs.address, rs.port);
}

// glibc's strerror texts for the errnos IPVS answers with, so that the client and the fake word a failure alike
// (and the fake needs no libc).
const ERRNO_TEXT: Readonly<Record<number, string>> = {
  [ERRNO.EPERM]: 'Operation not permitted',
  [ERRNO.ENOENT]: 'No such file or directory',
  [ERRNO.ESRCH]: 'No such process',
  [ERRNO.EBADF]: 'Bad file descriptor',
  [ERRNO.EAGAIN]: 'Resource temporarily unavailable',
  [ERRNO.EEXIST]: 'File exists',
  [ERRNO.EINVAL]: 'Invalid argument',
  [ERRNO.ERANGE]: 'Numerical result out of range',
  [ERRNO.EPROTO]: 'Protocol error',
  [ERRNO.EAFNOSUPPORT]: 'Address family not supported by protocol',
};

export function errnoText(errno: number): string {
  return ERRNO_TEXT[errno] ?? `errno ${errno}`;
}

/**
 * A failure of `operation`: "add virtual server TCP/10.0.0.1:80 (rr): File exists". `detail` replaces the errno's
 * text when there is a better one (the kernel's extended ACK, or what an errno means for this request).
 */
export function ipvsFailure(operation: string, errno: number, detail?: string): IpvsFailure {
  return { ok: false, errno, operation, message: `${operation}: ${detail ?? errnoText(errno)}` };
}

/** What ENOENT means when a virtual server is added or changed: the kernel found no such scheduler. */
export function schedulerNotFound(scheduler: string): string {
  return `${errnoText(ERRNO.ENOENT)}: no scheduler "${scheduler}" (is the ip_vs_${scheduler} module available?)`;
}

// The names of what a handle is asked, shared by the client and the fake so that their failures read the same.
export const operations = {
  addVirtualServer: (vs: VirtualServer) => `add virtual server ${virtualServerKey(vs)} (${vs.scheduler})`,
  updateVirtualServer: (vs: VirtualServer) =>
    `update virtual server ${virtualServerKey(vs)} (${vs.scheduler})`,
  deleteVirtualServer: (vs: VirtualServer) => `delete virtual server ${virtualServerKey(vs)}`,
  listVirtualServers: () => 'list virtual servers',
  listRealServers: (vs: VirtualServer) => `list real servers of ${virtualServerKey(vs)}`,
  addRealServer: (vs: VirtualServer, rs: RealServer) =>
    `add real server ${realServerKey(rs)} (weight ${rs.weight}) to ${virtualServerKey(vs)}`,
  updateRealServer: (vs: VirtualServer, rs: RealServer) =>
    `update real server ${realServerKey(rs)} (weight ${rs.weight}) of ${virtualServerKey(vs)}`,
  deleteRealServer: (vs: VirtualServer, rs: RealServer) =>
    `delete real server ${realServerKey(rs)} from ${virtualServerKey(vs)}`,
  flush: () => 'flush virtual servers',
  getTimeouts: () => 'get timeouts',
  setTimeouts: (t: IpvsTimeouts) => `set timeouts (tcp ${t.tcp}, tcpfin ${t.tcpFin}, udp ${t.udp})`,
} as const;
