// The virtual and real servers: what this backend last applied, the difference a plan asks for, and graceful
// termination (upstream graceful_termination.go): a TCP real server that leaves is first given weight 0, so that
// no new connection goes to it while its own drain, and is deleted once the kernel counts no connection to it.
// UDP and SCTP ones go at once (expire_nodest_conn drops their flows on the next packet).
import { parseIPSloppy } from '../../model/ip.js';
import type { IPFamily } from '../../model/ip.js';
import { realServerKey, virtualServerKey } from '../../netfilter/ipvs/types.js';
import type { IpvsHandle, IpvsResult, RealServer, VirtualServer } from '../../netfilter/ipvs/types.js';
import type { Logger } from '../../util/logger.js';
import type { IpvsPlan } from './plan.js';

export interface IpvsServersOptions {
  readonly family: IPFamily;
  /** Addresses in excludeCIDRs: their virtual servers are someone else's and never removed. */
  readonly excluded: (address: string) => boolean;
  readonly now: () => number;
  readonly logger: Logger;
}

interface Applied {
  vs: VirtualServer;
  /** By realServerKey. */
  readonly real: Map<string, RealServer>;
}

/** A real server at weight 0, waiting for its connections to end. */
interface Draining {
  readonly vs: VirtualServer;
  readonly rs: RealServer;
  readonly since: number;
}

export class IpvsServerError extends Error {}

function must(r: IpvsResult): void {
  if (!r.ok) throw new IpvsServerError(r.message);
}

function sameService(a: VirtualServer, b: VirtualServer): boolean {
  return a.scheduler === b.scheduler && a.flags === b.flags && a.timeout === b.timeout;
}

function gracefulNeeded(vs: VirtualServer): boolean {
  return vs.protocol === 'TCP';
}

export class IpvsServers {
  private applied = new Map<string, Applied>();
  /** By "<vs key>/<rs key>". */
  private readonly draining = new Map<string, Draining>();

  constructor(
    private readonly ipvs: IpvsHandle,
    private readonly o: IpvsServersOptions,
  ) {}

  private mine(vs: VirtualServer): boolean {
    return parseIPSloppy(vs.address)?.family === this.o.family;
  }

  /** Replaces what is known with the kernel's listing of this family's virtual servers. */
  readKernel(): void {
    const listed = this.ipvs.listVirtualServers();
    if (!listed.ok) throw new IpvsServerError(listed.message);
    const applied = new Map<string, Applied>();
    for (const vs of listed.value) {
      if (!this.mine(vs)) continue;
      const real = this.ipvs.listRealServers(vs);
      if (!real.ok) throw new IpvsServerError(real.message);
      applied.set(virtualServerKey(vs), {
        vs,
        real: new Map(real.value.map((rs) => [realServerKey(rs), rs])),
      });
    }
    this.applied = applied;
  }

  /** Adds and updates what the plan has; real servers that left start draining. Returns the operations made. */
  apply(plan: IpvsPlan, full: boolean): number {
    let ops = 0;
    for (const [key, want] of plan.virtualServers) {
      let have = this.applied.get(key);
      if (have === undefined) {
        must(this.ipvs.addVirtualServer(want.virtualServer));
        have = { vs: want.virtualServer, real: new Map() };
        this.applied.set(key, have);
        ops++;
      } else if (!sameService(have.vs, want.virtualServer)) {
        must(this.ipvs.updateVirtualServer(want.virtualServer));
        have.vs = want.virtualServer;
        ops++;
      }
      ops += this.applyReal(key, have, want.realServers, full);
    }
    ops += this.drainCheck();
    return ops;
  }

  private applyReal(key: string, have: Applied, want: readonly RealServer[], full: boolean): number {
    let ops = 0;
    const wanted = new Set<string>();
    for (const rs of want) {
      const rk = realServerKey(rs);
      wanted.add(rk);
      const current = have.real.get(rk);
      const wasDraining = this.draining.delete(`${key}/${rk}`);
      if (current === undefined) {
        must(this.ipvs.addRealServer(have.vs, rs));
        ops++;
      } else if (current.weight !== rs.weight && (full || wasDraining)) {
        // A weight changed behind our back is put right on full syncs (upstream: the first one).
        must(this.ipvs.updateRealServer(have.vs, rs));
        ops++;
      }
      have.real.set(rk, rs);
    }
    for (const [rk, rs] of have.real) {
      if (wanted.has(rk) || this.draining.has(`${key}/${rk}`)) continue;
      ops += this.retire(key, have, rk, rs);
    }
    return ops;
  }

  /** A real server no longer wanted: drained first when its protocol allows, else deleted. */
  private retire(key: string, have: Applied, rk: string, rs: RealServer): number {
    if (gracefulNeeded(have.vs)) {
      must(this.ipvs.updateRealServer(have.vs, { ...rs, weight: 0 }));
      have.real.set(rk, { ...rs, weight: 0 });
      this.draining.set(`${key}/${rk}`, { vs: have.vs, rs, since: this.o.now() });
    } else {
      must(this.ipvs.deleteRealServer(have.vs, rs));
      have.real.delete(rk);
    }
    return 1;
  }

  /** Deletes draining real servers whose connections have ended (the kernel's counts). */
  drainCheck(): number {
    let ops = 0;
    const byService = new Map<string, Draining[]>();
    for (const d of this.draining.values()) {
      const k = virtualServerKey(d.vs);
      byService.set(k, [...(byService.get(k) ?? []), d]);
    }
    for (const [key, list] of byService) {
      const listed = this.ipvs.listRealServers(list[0]!.vs);
      if (!listed.ok) throw new IpvsServerError(listed.message);
      const counts = new Map(listed.value.map((rs) => [realServerKey(rs), rs]));
      for (const d of list) {
        const rk = realServerKey(d.rs);
        const now = counts.get(rk);
        if (now !== undefined && (now.activeConnections ?? 0) + (now.inactiveConnections ?? 0) > 0) continue;
        if (now !== undefined) must(this.ipvs.deleteRealServer(d.vs, d.rs));
        this.draining.delete(`${key}/${rk}`);
        this.applied.get(key)?.real.delete(rk);
        ops++;
      }
    }
    return ops;
  }

  /** Deletes this family's virtual servers the plan no longer has (but excluded ones). */
  removeStale(plan: IpvsPlan): number {
    let ops = 0;
    for (const [key, have] of this.applied) {
      if (plan.virtualServers.has(key) || this.o.excluded(have.vs.address)) continue;
      must(this.ipvs.deleteVirtualServer(have.vs));
      this.applied.delete(key);
      for (const dk of [...this.draining.keys()]) if (dk.startsWith(`${key}/`)) this.draining.delete(dk);
      ops++;
    }
    return ops;
  }

  /** Real servers still draining, for logs and tests. */
  drainingCount(): number {
    return this.draining.size;
  }
}
