// IPVS programmed from this process over generic netlink, as ipvsadm does it, without ipvsadm: a NETLINK_GENERIC
// socket (../nft/netlink/socket.ts, libc through koffi) in the network namespace the process is in when it opens
// the handle, the family id of "IPVS" asked of the controller, then one request and its whole answer per call.
//
// Everything is on this thread and nothing waits: the kernel handles a generic netlink request inside the send
// that carries it, so its answer (or a dump's first part) is queued before the send returns, and each receive of a
// dump's part makes the next one before it returns. A receive that finds nothing before the answer is complete is
// a failure ("no answer"), never a wait.
import { NetfilterSocket, strerror } from '../nft/netlink/socket.js';
import type { SocketFailure } from '../nft/netlink/socket.js';
import type { Answer } from './decode.js';
import {
  absorbDatagram,
  decodeFamilyId,
  decodeRealServer,
  decodeTimeouts,
  decodeVirtualServer,
  newAnswer,
} from './decode.js';
import type { Encoded } from './encode.js';
import {
  addressFamily,
  flushRequest,
  getFamilyRequest,
  getTimeoutsRequest,
  listRealServersRequest,
  listVirtualServersRequest,
  realServerRequest,
  setTimeoutsRequest,
  virtualServerRequest,
} from './encode.js';
import {
  ERRNO,
  IPVS_CMD_DEL_DEST,
  IPVS_CMD_DEL_SERVICE,
  IPVS_CMD_NEW_DEST,
  IPVS_CMD_NEW_SERVICE,
  IPVS_CMD_SET_DEST,
  IPVS_CMD_SET_SERVICE,
  IPVS_GENL_NAME,
  NETLINK_GENERIC,
} from './protocol.js';
import type {
  IpvsFailure,
  IpvsHandle,
  IpvsListResult,
  IpvsResult,
  IpvsTimeouts,
  IpvsValueResult,
  RealServer,
  VirtualServer,
} from './types.js';
import { ipvsFailure, operations, schedulerNotFound } from './types.js';

/** Why there is no handle: no socket at all, no IPVS in this kernel, or the controller's answer went wrong. */
export interface IpvsOpenFailure {
  readonly error: string;
  readonly reason: 'no-socket' | 'no-family' | 'failed';
}

export const NO_IPVS_MESSAGE =
  'the kernel has no IPVS (generic netlink family IPVS not found; is the ip_vs module loaded?)';

/** Larger than any datagram the kernel sends (a dump's parts are at most 32 KiB). */
const DATAGRAM_BYTES = 64 * 1024;

type Exchanged = Answer | { readonly transport: SocketFailure };

/** One socket and its sequence numbers: a request out, its whole answer in. */
class GenlConnection {
  readonly #socket: NetfilterSocket;
  readonly #buf = Buffer.alloc(DATAGRAM_BYTES);
  #seq = 0;

  constructor(socket: NetfilterSocket) {
    this.#socket = socket;
  }

  nextSeq(): number {
    this.#seq = this.#seq >= 0x7fffffff ? 1 : this.#seq + 1;
    return this.#seq;
  }

  exchange(request: Buffer, seq: number): Exchanged {
    this.#drain();
    const sent = this.#socket.send(request);
    if (!('bytes' in sent)) return { transport: sent };
    const answer = newAnswer();
    while (!answer.done) {
      const r = this.#socket.receive(this.#buf);
      if (!('bytes' in r)) return { transport: r };
      if (r.bytes === 0) return { transport: { errno: ERRNO.EAGAIN, message: 'no answer from the kernel' } };
      absorbDatagram(this.#buf, r.bytes, seq, answer);
    }
    return answer;
  }

  /** Throws away anything left from an earlier request (one that failed halfway), so it is not read as ours. */
  #drain(): void {
    for (;;) {
      const r = this.#socket.receive(this.#buf);
      if (!('bytes' in r) || r.bytes === 0) return;
    }
  }

  close(): void {
    this.#socket.close();
  }
}

/**
 * A handle on IPVS in this process's current network namespace, or why there is none. Asking the controller for
 * the family loads ip_vs where the kernel has it as a module (its alias net-pf-16-proto-16-family-IPVS): the kernel
 * does that itself; nothing here runs modprobe.
 */
export function openIpvs(): IpvsHandle | IpvsOpenFailure {
  const socket = NetfilterSocket.open(NETLINK_GENERIC);
  if ('error' in socket) {
    return { error: `no generic netlink socket: ${socket.error}`, reason: 'no-socket' };
  }
  const conn = new GenlConnection(socket);
  const family = resolveFamily(conn);
  if (typeof family !== 'number') {
    conn.close();
    return family;
  }
  return new NetlinkIpvs(conn, family);
}

function resolveFamily(conn: GenlConnection): number | IpvsOpenFailure {
  const seq = conn.nextSeq();
  const answer = conn.exchange(getFamilyRequest(IPVS_GENL_NAME, seq), seq);
  if ('transport' in answer) {
    return { error: `generic netlink controller: ${answer.transport.message}`, reason: 'failed' };
  }
  if (answer.errno === ERRNO.ENOENT) return { error: NO_IPVS_MESSAGE, reason: 'no-family' };
  if (answer.errno !== 0) {
    return { error: `generic netlink controller: ${strerror(answer.errno)}`, reason: 'failed' };
  }
  const id = answer.messages.length > 0 ? decodeFamilyId(answer.messages[0] as Buffer) : undefined;
  if (id === undefined)
    return { error: 'generic netlink controller: no family id for IPVS', reason: 'failed' };
  return id;
}

function kernelFailure(operation: string, errno: number, kernelText?: string, hint?: string): IpvsFailure {
  const base = hint ?? strerror(errno);
  return ipvsFailure(operation, errno, kernelText === undefined ? base : `${base} (${kernelText})`);
}

class NetlinkIpvs implements IpvsHandle {
  readonly #conn: GenlConnection;
  readonly #family: number;
  #closed = false;

  constructor(conn: GenlConnection, family: number) {
    this.#conn = conn;
    this.#family = family;
  }

  /** Sends what `encode` makes for the next sequence number; the answer, or the failure of `operation`. */
  #ask(
    operation: string,
    encode: (seq: number) => Encoded,
    hint?: (errno: number) => string | undefined,
  ): Answer | IpvsFailure {
    if (this.#closed) return ipvsFailure(operation, ERRNO.EBADF, 'the IPVS handle is closed');
    const seq = this.#conn.nextSeq();
    const encoded = encode(seq);
    if (!encoded.ok) return ipvsFailure(operation, ERRNO.EINVAL, encoded.reason);
    const answer = this.#conn.exchange(encoded.bytes, seq);
    if ('transport' in answer)
      return ipvsFailure(operation, answer.transport.errno, answer.transport.message);
    if (answer.errno !== 0) {
      return kernelFailure(operation, answer.errno, answer.kernelText, hint?.(answer.errno));
    }
    return answer;
  }

  #change(operation: string, encode: (seq: number) => Encoded, scheduler?: string): IpvsResult {
    // ENOENT for a service's add or edit: the kernel found no such scheduler (nor a module to load for it).
    const hint = (errno: number): string | undefined =>
      errno === ERRNO.ENOENT && scheduler !== undefined ? schedulerNotFound(scheduler) : undefined;
    const r = this.#ask(operation, encode, hint);
    return 'messages' in r ? { ok: true } : r;
  }

  listVirtualServers(): IpvsListResult<VirtualServer> {
    const operation = operations.listVirtualServers();
    const r = this.#ask(operation, (seq) => ({
      ok: true,
      bytes: listVirtualServersRequest(this.#family, seq),
    }));
    if (!('messages' in r)) return r;
    const value: VirtualServer[] = [];
    for (const msg of r.messages) {
      const vs = decodeVirtualServer(msg);
      if ('problem' in vs) return ipvsFailure(operation, ERRNO.EPROTO, vs.problem);
      if (!('skip' in vs)) value.push(vs);
    }
    return { ok: true, value };
  }

  addVirtualServer(vs: VirtualServer): IpvsResult {
    return this.#change(
      operations.addVirtualServer(vs),
      (seq) => virtualServerRequest(this.#family, IPVS_CMD_NEW_SERVICE, vs, seq, true),
      vs.scheduler,
    );
  }

  updateVirtualServer(vs: VirtualServer): IpvsResult {
    return this.#change(
      operations.updateVirtualServer(vs),
      (seq) => virtualServerRequest(this.#family, IPVS_CMD_SET_SERVICE, vs, seq, true),
      vs.scheduler,
    );
  }

  deleteVirtualServer(vs: VirtualServer): IpvsResult {
    return this.#change(operations.deleteVirtualServer(vs), (seq) =>
      virtualServerRequest(this.#family, IPVS_CMD_DEL_SERVICE, vs, seq, false),
    );
  }

  listRealServers(vs: VirtualServer): IpvsListResult<RealServer> {
    const operation = operations.listRealServers(vs);
    const r = this.#ask(operation, (seq) => listRealServersRequest(this.#family, vs, seq));
    if (!('messages' in r)) return r;
    const family = addressFamily(vs.address);
    const value: RealServer[] = [];
    for (const msg of r.messages) {
      const rs = decodeRealServer(msg, family);
      if ('problem' in rs) return ipvsFailure(operation, ERRNO.EPROTO, rs.problem);
      value.push(rs);
    }
    return { ok: true, value };
  }

  addRealServer(vs: VirtualServer, rs: RealServer): IpvsResult {
    return this.#change(operations.addRealServer(vs, rs), (seq) =>
      realServerRequest(this.#family, IPVS_CMD_NEW_DEST, vs, rs, seq, true),
    );
  }

  updateRealServer(vs: VirtualServer, rs: RealServer): IpvsResult {
    return this.#change(operations.updateRealServer(vs, rs), (seq) =>
      realServerRequest(this.#family, IPVS_CMD_SET_DEST, vs, rs, seq, true),
    );
  }

  deleteRealServer(vs: VirtualServer, rs: RealServer): IpvsResult {
    return this.#change(operations.deleteRealServer(vs, rs), (seq) =>
      realServerRequest(this.#family, IPVS_CMD_DEL_DEST, vs, rs, seq, false),
    );
  }

  flush(): IpvsResult {
    return this.#change(operations.flush(), (seq) => ({ ok: true, bytes: flushRequest(this.#family, seq) }));
  }

  getTimeouts(): IpvsValueResult<IpvsTimeouts> {
    const operation = operations.getTimeouts();
    const r = this.#ask(operation, (seq) => ({ ok: true, bytes: getTimeoutsRequest(this.#family, seq) }));
    if (!('messages' in r)) return r;
    const msg = r.messages[0];
    if (msg === undefined) return ipvsFailure(operation, ERRNO.EPROTO, 'the kernel sent no timeouts');
    return { ok: true, value: decodeTimeouts(msg) };
  }

  setTimeouts(t: IpvsTimeouts): IpvsResult {
    return this.#change(operations.setTimeouts(t), (seq) => setTimeoutsRequest(this.#family, t, seq));
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#conn.close();
  }
}
