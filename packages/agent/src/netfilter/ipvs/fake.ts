// IPVS in memory, with the client's interface, failing where the kernel does (ip_vs_ctl.c's generic netlink
// handlers, Linux 6.1) and wording its failures as the client does: the same operation names and errnos. The same
// scenario runs against this fake and against the kernel in test/vm/ipvs-netlink.test.ts, which compares them.
//
// Simplifications (none seen by a caller that uses the handle as the agent does):
//  - Schedulers are the names of the kernel's ip_vs_* scheduler modules (rr wrr lc wlc lblc lblcr dh sh sed nq mh
//    fo ovf twos): any other is ENOENT, as a kernel without that module answers; a kernel built without one of
//    these answers ENOENT where the fake accepts.
//  - Listings are in the order things were added (the kernel's follow its hash tables); connection counters are 0
//    unless a test sets them (setConnections).
//  - Timeouts above INT_MAX / 1000 seconds are EINVAL (the kernel's bound is INT_MAX / HZ, HZ 100 to 1000).
//  - Persistence netmasks, firewall-mark services, tunnel forwarding and sync daemons do not exist here.
import { addressFamily, checkRealServer, checkTimeouts, checkVirtualServer } from './encode.js';
import { ERRNO } from './protocol.js';
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
import {
  IPVS_FLAG_HASHED,
  ipvsFailure,
  operations,
  realServerKey,
  schedulerNotFound,
  virtualServerKey,
} from './types.js';
import { parseIPSloppy } from '../../model/ip.js';

export const KERNEL_SCHEDULERS: ReadonlySet<string> = new Set([
  'rr',
  'wrr',
  'lc',
  'wlc',
  'lblc',
  'lblcr',
  'dh',
  'sh',
  'sed',
  'nq',
  'mh',
  'fo',
  'ovf',
  'twos',
]);

/** A fresh namespace's timeouts (tcp 15 minutes, tcpfin 2 minutes, udp 5 minutes). */
export const DEFAULT_TIMEOUTS: Readonly<IpvsTimeouts> = { tcp: 900, tcpFin: 120, udp: 300 };

const MAX_TIMEOUT = Math.floor(0x7fffffff / 1000);
const OK: IpvsResult = { ok: true };

interface Entry {
  vs: VirtualServer;
  readonly reals: Map<string, RealServer>;
}

/** What the kernel keeps of a virtual server: canonical address, no HASHED in what it lists. */
function stored(vs: VirtualServer): VirtualServer {
  const address = parseIPSloppy(vs.address)?.text ?? vs.address;
  return { ...vs, address, flags: (vs.flags & ~IPVS_FLAG_HASHED) >>> 0 };
}

function storedReal(rs: RealServer): RealServer {
  const address = parseIPSloppy(rs.address)?.text ?? rs.address;
  return { address, port: rs.port, weight: rs.weight, activeConnections: 0, inactiveConnections: 0 };
}

export class FakeIpvs implements IpvsHandle {
  readonly #services = new Map<string, Entry>();
  #timeouts: IpvsTimeouts = { ...DEFAULT_TIMEOUTS };
  #closed = false;

  /** The operations asked so far, by name (for tests that count what a backend did). */
  readonly calls: string[] = [];

  #begin(operation: string, problem?: string): IpvsFailure | undefined {
    this.calls.push(operation);
    if (this.#closed) return ipvsFailure(operation, ERRNO.EBADF, 'the IPVS handle is closed');
    if (problem !== undefined) return ipvsFailure(operation, ERRNO.EINVAL, problem);
    return undefined;
  }

  listVirtualServers(): IpvsListResult<VirtualServer> {
    const refused = this.#begin(operations.listVirtualServers());
    if (refused) return refused;
    return { ok: true, value: [...this.#services.values()].map((e) => e.vs) };
  }

  addVirtualServer(vs: VirtualServer): IpvsResult {
    const operation = operations.addVirtualServer(vs);
    const refused = this.#begin(operation, checkVirtualServer(vs));
    if (refused) return refused;
    const key = virtualServerKey(vs);
    if (this.#services.has(key)) return ipvsFailure(operation, ERRNO.EEXIST);
    if (!KERNEL_SCHEDULERS.has(vs.scheduler)) {
      return ipvsFailure(operation, ERRNO.ENOENT, schedulerNotFound(vs.scheduler));
    }
    this.#services.set(key, { vs: stored(vs), reals: new Map() });
    return OK;
  }

  updateVirtualServer(vs: VirtualServer): IpvsResult {
    const operation = operations.updateVirtualServer(vs);
    const refused = this.#begin(operation, checkVirtualServer(vs));
    if (refused) return refused;
    const entry = this.#services.get(virtualServerKey(vs));
    if (entry === undefined) return ipvsFailure(operation, ERRNO.ESRCH);
    if (!KERNEL_SCHEDULERS.has(vs.scheduler)) {
      return ipvsFailure(operation, ERRNO.ENOENT, schedulerNotFound(vs.scheduler));
    }
    entry.vs = stored(vs);
    return OK;
  }

  deleteVirtualServer(vs: VirtualServer): IpvsResult {
    const operation = operations.deleteVirtualServer(vs);
    const refused = this.#begin(operation, checkVirtualServer(vs));
    if (refused) return refused;
    if (!this.#services.delete(virtualServerKey(vs))) return ipvsFailure(operation, ERRNO.ESRCH);
    return OK;
  }

  listRealServers(vs: VirtualServer): IpvsListResult<RealServer> {
    const refused = this.#begin(operations.listRealServers(vs), checkVirtualServer(vs));
    if (refused) return refused;
    // The kernel's dump of a service it does not have is empty, not an error.
    const entry = this.#services.get(virtualServerKey(vs));
    return { ok: true, value: entry === undefined ? [] : [...entry.reals.values()] };
  }

  /** The entry a destination command is about, or the kernel's failure for it. */
  #destTarget(operation: string, vs: VirtualServer, rs: RealServer, full: boolean): Entry | IpvsFailure {
    const refused = this.#begin(operation, checkVirtualServer(vs) ?? checkRealServer(rs));
    if (refused) return refused;
    const entry = this.#services.get(virtualServerKey(vs));
    if (entry === undefined) return ipvsFailure(operation, ERRNO.ESRCH);
    // A real server of another family than its service's needs tunnelling; masquerading cannot reach it.
    if (full && addressFamily(rs.address) !== addressFamily(entry.vs.address)) {
      return ipvsFailure(operation, ERRNO.EINVAL);
    }
    // The kernel keeps the weight in an int: a larger u32 reads as negative, which it refuses.
    if (full && rs.weight > 0x7fffffff) return ipvsFailure(operation, ERRNO.ERANGE);
    return entry;
  }

  addRealServer(vs: VirtualServer, rs: RealServer): IpvsResult {
    const operation = operations.addRealServer(vs, rs);
    const entry = this.#destTarget(operation, vs, rs, true);
    if (!('reals' in entry)) return entry;
    const key = realServerKey(rs);
    if (entry.reals.has(key)) return ipvsFailure(operation, ERRNO.EEXIST);
    entry.reals.set(key, storedReal(rs));
    return OK;
  }

  updateRealServer(vs: VirtualServer, rs: RealServer): IpvsResult {
    const operation = operations.updateRealServer(vs, rs);
    const entry = this.#destTarget(operation, vs, rs, true);
    if (!('reals' in entry)) return entry;
    const key = realServerKey(rs);
    const before = entry.reals.get(key);
    if (before === undefined) return ipvsFailure(operation, ERRNO.ENOENT);
    // A new weight leaves the kernel's connection counts as they were.
    entry.reals.set(key, {
      ...storedReal(rs),
      activeConnections: before.activeConnections,
      inactiveConnections: before.inactiveConnections,
    });
    return OK;
  }

  /**
   * Test hook, as traffic would: the kernel's connection counts of one real server (graceful termination waits
   * for them to reach 0). False when there is no such real server.
   */
  setConnections(
    vs: VirtualServer,
    rs: Pick<RealServer, 'address' | 'port'>,
    active: number,
    inactive: number,
  ): boolean {
    const real = this.#services.get(virtualServerKey(vs))?.reals.get(realServerKey(rs));
    if (real === undefined) return false;
    this.#services
      .get(virtualServerKey(vs))
      ?.reals.set(realServerKey(rs), { ...real, activeConnections: active, inactiveConnections: inactive });
    return true;
  }

  deleteRealServer(vs: VirtualServer, rs: RealServer): IpvsResult {
    const operation = operations.deleteRealServer(vs, rs);
    const entry = this.#destTarget(operation, vs, rs, false);
    if (!('reals' in entry)) return entry;
    if (!entry.reals.delete(realServerKey(rs))) return ipvsFailure(operation, ERRNO.ENOENT);
    return OK;
  }

  flush(): IpvsResult {
    const refused = this.#begin(operations.flush());
    if (refused) return refused;
    this.#services.clear();
    return OK;
  }

  getTimeouts(): IpvsValueResult<IpvsTimeouts> {
    const refused = this.#begin(operations.getTimeouts());
    if (refused) return refused;
    return { ok: true, value: { ...this.#timeouts } };
  }

  setTimeouts(t: IpvsTimeouts): IpvsResult {
    const operation = operations.setTimeouts(t);
    const refused = this.#begin(operation, checkTimeouts(t));
    if (refused) return refused;
    if (t.tcp > MAX_TIMEOUT || t.tcpFin > MAX_TIMEOUT || t.udp > MAX_TIMEOUT) {
      return ipvsFailure(operation, ERRNO.EINVAL);
    }
    // A zero leaves that timeout as it was.
    this.#timeouts = {
      tcp: t.tcp || this.#timeouts.tcp,
      tcpFin: t.tcpFin || this.#timeouts.tcpFin,
      udp: t.udp || this.#timeouts.udp,
    };
    return OK;
  }

  close(): void {
    this.#closed = true;
  }
}
