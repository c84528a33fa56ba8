// One IPVS scenario for any IpvsHandle: the kernel's (through openIpvs, in a guest: test/vm/ipvs-netlink-child.ts)
// and FakeIpvs's (test/vm/ipvs-netlink.test.ts), so that every step's result can be compared between the two, and
// the kernel's state read back by ipvsadm at each stage compared with what the scenario wrote (expectedState).
// Addresses are in the benchmarking ranges (198.18.0.0/15, 2001:db8::/32); ports and weights are arbitrary.
import type {
  IpvsHandle,
  IpvsListResult,
  IpvsResult,
  IpvsValueResult,
  RealServer,
  VirtualServer,
} from '../../../packages/agent/src/netfilter/ipvs/types.js';
import {
  IPVS_FLAG_PERSISTENT,
  IPVS_FLAG_SOURCE_HASH,
  realServerKey,
  virtualServerKey,
} from '../../../packages/agent/src/netfilter/ipvs/types.js';

const vs = (
  protocol: VirtualServer['protocol'],
  address: string,
  port: number,
  scheduler: string,
  flags = 0,
  timeout = 0,
): VirtualServer => ({ address, port, protocol, scheduler, flags, timeout });

// Schedulers the guest's initramfs has (rr, wrr, sh, lc); TCP, UDP and SCTP; IPv4 and IPv6; persistence with
// upstream's default affinity timeout (10800 s); sh hashing the source port too (upstream's FlagSourceHash).
export const TCP4 = vs('TCP', '198.18.0.10', 80, 'rr');
export const UDP6 = vs('UDP', '2001:db8::10', 53, 'wrr', IPVS_FLAG_PERSISTENT, 10800);
export const SCTP4 = vs('SCTP', '198.18.0.11', 3868, 'sh', IPVS_FLAG_SOURCE_HASH);
export const TCP6 = vs('TCP', '2001:db8::11', 443, 'sh', IPVS_FLAG_SOURCE_HASH | IPVS_FLAG_PERSISTENT, 10800);
export const UDP4 = vs('UDP', '198.18.0.12', 53, 'lc');
export const SCTP6 = vs('SCTP', '2001:db8::12', 3868, 'rr', IPVS_FLAG_PERSISTENT, 10800);
const SERVICES = [TCP4, UDP6, SCTP4, TCP6, UDP4, SCTP6];

const rs = (address: string, port: number, weight: number): RealServer => ({ address, port, weight });
const REALS: readonly [VirtualServer, RealServer][] = [
  [TCP4, rs('198.18.1.1', 8080, 1)],
  [TCP4, rs('198.18.1.2', 8080, 2)],
  [UDP6, rs('2001:db8:1::1', 5353, 3)],
  [UDP6, rs('2001:db8:1::2', 5353, 0)],
  [SCTP4, rs('198.18.1.3', 3868, 1)],
  [TCP6, rs('2001:db8:1::3', 8443, 4)],
  [SCTP6, rs('2001:db8:1::4', 3868, 1)],
];

/** The changes made after the adds: one real server's weight, one service's scheduler and persistence. */
const REWEIGHED = rs('198.18.1.1', 8080, 5);
const UDP4_EDITED = { ...UDP4, scheduler: 'wrr', flags: IPVS_FLAG_PERSISTENT, timeout: 60 };

/** A state as a listing gives it: each virtual server (by key order) with its real servers (by key order). */
export type State = { readonly vs: VirtualServer; readonly reals: readonly RealServer[] }[];

function sortedState(entries: [VirtualServer, RealServer[]][]): State {
  const byKey =
    <T>(key: (t: T) => string) =>
    (a: T, b: T) =>
      key(a).localeCompare(key(b));
  return entries
    .map(([v, r]) => ({ vs: v, reals: [...r].sort(byKey(realServerKey)) }))
    .sort((a, b) => virtualServerKey(a.vs).localeCompare(virtualServerKey(b.vs)));
}

/** What the scenario has written by each stage at which ipvsadm reads the kernel. */
export function expectedState(stage: 'after adds' | 'after deletes'): State {
  const deleted = stage === 'after deletes';
  const entries: [VirtualServer, RealServer[]][] = [];
  for (const s of SERVICES) {
    if (deleted && s === SCTP6) continue;
    const reals = REALS.filter(([v, r]) => v === s && !(deleted && r.address === '198.18.1.2')).map(
      ([, r]) => (realServerKey(r) === realServerKey(REWEIGHED) ? REWEIGHED : r),
    );
    entries.push([s === UDP4 ? UDP4_EDITED : s, reals]);
  }
  return sortedState(entries);
}

/** One step's result, as JSON carries it: ok (with the value listed), or the errno and message of its failure. */
export type Step =
  | { readonly name: string; readonly ok: true; readonly value?: unknown }
  | { readonly name: string; readonly ok: false; readonly errno: number; readonly message: string };

export interface ScenarioReport {
  readonly steps: Step[];
  /** What `read(stage)` gave at each stage: ipvsadm's text in the guest. */
  readonly reads: Record<string, string>;
}

function step(name: string, r: IpvsResult | IpvsListResult<unknown> | IpvsValueResult<unknown>): Step {
  if (!r.ok) return { name, ok: false, errno: r.errno, message: r.message };
  return 'value' in r ? { name, ok: true, value: r.value } : { name, ok: true };
}

/** The handle's own listing of everything, in key order. */
function listing(h: IpvsHandle): IpvsValueResult<State> | IpvsListResult<never> {
  const all = h.listVirtualServers();
  if (!all.ok) return all;
  const entries: [VirtualServer, RealServer[]][] = [];
  for (const v of all.value) {
    const reals = h.listRealServers(v);
    if (!reals.ok) return reals;
    entries.push([v, [...reals.value]]);
  }
  return { ok: true, value: sortedState(entries) };
}

/** Failures the kernel answers with, each asked once the state holds what makes them fail. */
function failures(h: IpvsHandle): Step[] {
  const missing = vs('TCP', '198.18.0.99', 80, 'rr');
  return [
    step('add an existing virtual server', h.addVirtualServer({ ...TCP4, scheduler: 'wrr' })),
    step('add with an unknown scheduler', h.addVirtualServer(vs('TCP', '198.18.0.13', 80, 'nosuch'))),
    step('update with an unknown scheduler', h.updateVirtualServer({ ...TCP4, scheduler: 'nosuch' })),
    step('update a missing virtual server', h.updateVirtualServer(missing)),
    step('delete a missing virtual server', h.deleteVirtualServer(missing)),
    step('add a real server to a missing virtual server', h.addRealServer(missing, REWEIGHED)),
    step('list the real servers of a missing virtual server', h.listRealServers(missing)),
    step('add an existing real server', h.addRealServer(TCP4, { ...REWEIGHED, weight: 9 })),
    step('update a missing real server', h.updateRealServer(TCP4, rs('198.18.1.9', 8080, 1))),
    step('delete a missing real server', h.deleteRealServer(TCP4, rs('198.18.1.9', 8080, 1))),
    step(
      'add an IPv6 real server to an IPv4 virtual server',
      h.addRealServer(TCP4, rs('2001:db8:1::9', 80, 1)),
    ),
    step(
      'add a real server with a weight past INT_MAX',
      h.addRealServer(TCP4, rs('198.18.1.8', 80, 0x80000000)),
    ),
    step('add a virtual server that is no address', h.addVirtualServer(vs('TCP', '198.18.0', 80, 'rr'))),
  ];
}

/**
 * Runs the scenario on `h` (which must start empty), calling `read(stage)` where the kernel's state is to be read
 * by another tool. Closes `h`.
 */
export function runScenario(h: IpvsHandle, read: (stage: string) => string): ScenarioReport {
  const reads: Record<string, string> = {};
  const steps: Step[] = [step('timeouts at start', h.getTimeouts())];
  for (const s of SERVICES) steps.push(step(`add ${virtualServerKey(s)}`, h.addVirtualServer(s)));
  for (const [v, r] of REALS)
    steps.push(step(`add ${realServerKey(r)} to ${virtualServerKey(v)}`, h.addRealServer(v, r)));
  steps.push(step('reweigh a real server', h.updateRealServer(TCP4, REWEIGHED)));
  steps.push(step('edit a virtual server', h.updateVirtualServer(UDP4_EDITED)));
  steps.push(step('listing after adds', listing(h)));
  reads['after adds'] = read('after adds');
  steps.push(...failures(h));
  steps.push(step('delete a real server', h.deleteRealServer(TCP4, rs('198.18.1.2', 8080, 2))));
  steps.push(step('delete a virtual server with its real server', h.deleteVirtualServer(SCTP6)));
  steps.push(step('listing after deletes', listing(h)));
  reads['after deletes'] = read('after deletes');
  steps.push(step('set timeouts', h.setTimeouts({ tcp: 901, tcpFin: 121, udp: 301 })));
  steps.push(step('timeouts after set', h.getTimeouts()));
  reads['timeouts'] = read('timeouts');
  steps.push(step('set the UDP timeout alone', h.setTimeouts({ tcp: 0, tcpFin: 0, udp: 302 })));
  steps.push(step('timeouts after a partial set', h.getTimeouts()));
  steps.push(step('flush', h.flush()));
  steps.push(step('listing after flush', listing(h)));
  reads['after flush'] = read('after flush');
  h.close();
  steps.push(step('flush after close', h.flush()));
  return { steps, reads };
}
