// A netlink socket through libc, called with koffi (as libnftables.ts calls nft's library): NETLINK_NETFILTER unless
// the caller names another protocol (../../ipvs/ opens NETLINK_GENERIC). socket, bind,
// setsockopt, sendto, recv, close, and strerror for the kernel's errno as nft prints it. Sends and receives have a
// call on this thread and one on a koffi worker thread: the kernel applies a batch inside the sendto that carries
// it (≈ 0.3 s for a cold start's 126,000 elements), during which this thread can go on rendering.
//
// The socket lives in the network namespace this process is in when it is opened, for its whole life: it is only
// right for rules that belong in this process's own namespace (the agent on its node, a lab proxy inside its
// node's namespace), as libnftables' context is.
import { callAsync, cFunction, loadKoffi } from '../koffi.js';
import type { CFunction, KoffiModule } from '../koffi.js';
import { HOST_LE, NETLINK_CAP_ACK, NETLINK_EXT_ACK, NETLINK_NETFILTER, SOL_NETLINK } from './protocol.js';
import { errorMessage } from '../../../util/error-message.js';

const AF_NETLINK = 16;
const SOCK_RAW = 3;
const SOCK_CLOEXEC = 0o2000000;
const SOL_SOCKET = 1;
const SO_SNDBUF = 7;
const SO_RCVBUF = 8;
const SO_SNDBUFFORCE = 32;
const SO_RCVBUFFORCE = 33;
const SO_RCVTIMEO = 20;
const MSG_DONTWAIT = 0x40;
const MSG_TRUNC = 0x20;
const EINTR = 4;
const EAGAIN = 11;
const EMSGSIZE = 90;
/** The longest a blocking receive waits (the kernel answers a request before its send returns; this is a guard). */
const RECEIVE_TIMEOUT_S = 60n;

/** A failed call: errno and libc's text for it (what nft prints, e.g. "No such file or directory"). */
export interface SocketFailure {
  readonly errno: number;
  readonly message: string;
}

export type SocketResult = { readonly bytes: number } | SocketFailure;

interface Libc {
  readonly koffi: KoffiModule;
  socket: CFunction<[number, number, number], number>;
  bind: CFunction<[number, Buffer, number], number>;
  setsockopt: CFunction<[number, number, number, Buffer, number], number>;
  sendto: CFunction<[number, Buffer, number, number, Buffer, number], number>;
  recv: CFunction<[number, Buffer, number, number], number>;
  close: CFunction<[number], number>;
  strerror: CFunction<[number], string | null>;
}

let loaded: Libc | { error: string } | undefined;

/** libc's functions through koffi, loaded once; or why they cannot be. Never throws. */
function libc(): Libc | { error: string } {
  if (loaded !== undefined) return loaded;
  const koffi = loadKoffi();
  if ('error' in koffi) return (loaded = koffi);
  try {
    const lib = koffi.load('libc.so.6');
    loaded = {
      koffi,
      socket: cFunction(lib, 'int socket(int domain, int type, int protocol)'),
      bind: cFunction(lib, 'int bind(int fd, const void *addr, uint32_t len)'),
      setsockopt: cFunction(
        lib,
        'int setsockopt(int fd, int level, int name, const void *value, uint32_t len)',
      ),
      sendto: cFunction(
        lib,
        'intptr_t sendto(int fd, const void *buf, size_t len, int flags, const void *addr, uint32_t alen)',
      ),
      recv: cFunction(lib, 'intptr_t recv(int fd, void *buf, size_t len, int flags)'),
      close: cFunction(lib, 'int close(int fd)'),
      strerror: cFunction(lib, 'const char *strerror(int errnum)'),
    };
  } catch (e) {
    loaded = { error: `libc.so.6 did not load: ${errorMessage(e)}` };
  }
  return loaded;
}

/** libc's text for an errno ("No such file or directory"), or "errno N" without libc. */
export function strerror(errno: number): string {
  const c = libc();
  return ('error' in c ? undefined : c.strerror(errno)) ?? `errno ${errno}`;
}

function int32(v: number): Buffer {
  const b = Buffer.alloc(4);
  if (HOST_LE) b.writeInt32LE(v);
  else b.writeInt32BE(v);
  return b;
}

/** struct sockaddr_nl of the kernel (port 0, no groups), or of ourselves for bind (port 0: the kernel picks one). */
function sockaddrNl(): Buffer {
  const b = Buffer.alloc(12);
  if (HOST_LE) b.writeUInt16LE(AF_NETLINK, 0);
  else b.writeUInt16BE(AF_NETLINK, 0);
  return b;
}

function failure(c: Libc, errno: number): SocketFailure {
  return { errno, message: c.strerror(errno) ?? `errno ${errno}` };
}

/** One netlink socket (NETLINK_NETFILTER by default), bound, with extended ACKs on. */
export class NetfilterSocket {
  readonly #c: Libc;
  #fd: number;
  readonly #kernel = sockaddrNl();
  #sendBuffer = 0;
  #receiveBuffer = 0;

  private constructor(c: Libc, fd: number) {
    this.#c = c;
    this.#fd = fd;
  }

  /**
   * Opens a socket of netlink `protocol` in this process's current network namespace, or says why it cannot.
   */
  static open(protocol: number = NETLINK_NETFILTER): NetfilterSocket | { error: string } {
    const c = libc();
    if ('error' in c) return c;
    const fd = c.socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, protocol);
    if (fd < 0) return { error: `netlink socket: ${failure(c, c.koffi.errno()).message}` };
    const s = new NetfilterSocket(c, fd);
    const problem =
      (c.bind(fd, sockaddrNl(), 12) < 0 ? 'bind' : undefined) ??
      // The kernel's text and the offset of the bad attribute in each error (which element failed), and errors
      // that echo only the failing message's header, not the whole 64 KiB message.
      (c.setsockopt(fd, SOL_NETLINK, NETLINK_EXT_ACK, int32(1), 4) < 0 ? 'NETLINK_EXT_ACK' : undefined) ??
      (c.setsockopt(fd, SOL_NETLINK, NETLINK_CAP_ACK, int32(1), 4) < 0 ? 'NETLINK_CAP_ACK' : undefined);
    if (problem !== undefined) {
      const why = failure(c, c.koffi.errno()).message;
      s.close();
      return { error: `netlink socket ${problem}: ${why}` };
    }
    // A blocking receive never waits forever (a reply the kernel could not queue would otherwise hang us).
    // struct timeval { long tv_sec; long tv_usec; } on a 64-bit host.
    const timeout = Buffer.alloc(16);
    if (HOST_LE) timeout.writeBigInt64LE(RECEIVE_TIMEOUT_S, 0);
    else timeout.writeBigInt64BE(RECEIVE_TIMEOUT_S, 0);
    c.setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, timeout, 16);
    return s;
  }

  #live(): number {
    if (this.#fd < 0) throw new Error('netlink socket already closed');
    return this.#fd;
  }

  /**
   * Makes the kernel's send and receive buffers at least this large. A batch goes in one sendto, which the kernel
   * refuses when it is larger than the send buffer; the ACKs of all its messages are queued before the sendto
   * returns, and are lost past the receive buffer. nft too forces the send buffer to its batch's size (the
   * *FORCE options need CAP_NET_ADMIN, which writing nf_tables needs anyway; without it, the plain ones, capped by
   * net.core.[rw]mem_max).
   */
  reserve(send: number, receive: number): SocketFailure | undefined {
    const fd = this.#live();
    const c = this.#c;
    const set = (force: number, plain: number, bytes: number): SocketFailure | undefined => {
      // The kernel doubles the value it is given (for its own bookkeeping) and counts against the double.
      const v = int32(Math.min(Math.ceil(bytes / 2) + 4096, 0x7fffffff));
      if (c.setsockopt(fd, SOL_SOCKET, force, v, 4) === 0) return undefined;
      if (c.setsockopt(fd, SOL_SOCKET, plain, v, 4) === 0) return undefined;
      return failure(c, c.koffi.errno());
    };
    if (send > this.#sendBuffer) {
      const f = set(SO_SNDBUFFORCE, SO_SNDBUF, send);
      if (f) return f;
      this.#sendBuffer = send;
    }
    if (receive > this.#receiveBuffer) {
      const f = set(SO_RCVBUFFORCE, SO_RCVBUF, receive);
      if (f) return f;
      this.#receiveBuffer = receive;
    }
    return undefined;
  }

  /** Sends `buf` to the kernel on this thread (for a batch: returns once the kernel has applied it). */
  send(buf: Buffer): SocketResult {
    const fd = this.#live();
    for (;;) {
      const n = this.#c.sendto(fd, buf, buf.length, 0, this.#kernel, 12);
      if (n >= 0) return { bytes: n };
      const errno = this.#c.koffi.errno();
      if (errno !== EINTR) return failure(this.#c, errno);
    }
  }

  /** The same on a koffi worker thread (koffi hands the worker's errno back to this thread with the result). */
  async sendAsync(buf: Buffer): Promise<SocketResult> {
    const fd = this.#live();
    for (;;) {
      const n = await callAsync(this.#c.sendto, fd, buf, buf.length, 0, this.#kernel, 12);
      if (n >= 0) return { bytes: n };
      const errno = this.#c.koffi.errno();
      if (errno !== EINTR) return failure(this.#c, errno);
    }
  }

  /**
   * Receives one datagram (one or more netlink messages) into `buf` without waiting: bytes 0 when none is
   * queued. A datagram larger than `buf` is an error (EMSGSIZE), not a silent cut.
   */
  receive(buf: Buffer): SocketResult {
    const fd = this.#live();
    for (;;) {
      const n = this.#c.recv(fd, buf, buf.length, MSG_DONTWAIT | MSG_TRUNC);
      if (n > buf.length) return failure(this.#c, EMSGSIZE);
      if (n >= 0) return { bytes: n };
      const errno = this.#c.koffi.errno();
      if (errno === EAGAIN) return { bytes: 0 };
      if (errno !== EINTR) return failure(this.#c, errno);
    }
  }

  /** Waits for one datagram on a koffi worker thread (up to RECEIVE_TIMEOUT_S; then EAGAIN). */
  async receiveAsync(buf: Buffer): Promise<SocketResult> {
    const fd = this.#live();
    for (;;) {
      const n = await callAsync(this.#c.recv, fd, buf, buf.length, MSG_TRUNC);
      if (n > buf.length) return failure(this.#c, EMSGSIZE);
      if (n >= 0) return { bytes: n };
      const errno = this.#c.koffi.errno();
      if (errno !== EINTR) return failure(this.#c, errno);
    }
  }

  close(): void {
    if (this.#fd < 0) return;
    this.#c.close(this.#fd);
    this.#fd = -1;
  }
}
