// The IPVS client (packages/agent/src/netfilter/ipvs/) on Debian 12's kernel, in a guest: one scenario of adds,
// updates, deletes, failures, timeouts and a flush, through openIpvs() in the guest's own namespace, with the
// kernel's state read back by ipvsadm at each stage and compared with what the scenario wrote; and the same
// scenario run here against FakeIpvs, which must answer every step as the kernel did. One guest boot, one child
// process for the whole file; the guest is stopped whatever happens.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { sweepGuests } from '../../packages/lab/src/vm/cleanup.js';
import { startGuest, type Guest } from '../../packages/lab/src/vm/guest.js';
import { FakeIpvs } from '../../packages/agent/src/netfilter/ipvs/fake.js';
import type { RealServer, VirtualServer } from '../../packages/agent/src/netfilter/ipvs/types.js';
import { IPVS_FLAG_PERSISTENT } from '../../packages/agent/src/netfilter/ipvs/types.js';
import { SOURCE_FLAGS, SYSTEM_PATH } from '../helpers/cli.js';
import { kernelOptions } from '../helpers/kernel.js';
import { expectedState, runScenario } from '../netfilter/ipvs/scenario.js';
import type { ScenarioReport, State } from '../netfilter/ipvs/scenario.js';
import { GUEST_TOOLS } from './guest-tools.js';

const options = kernelOptions([...GUEST_TOOLS, 'ipvsadm']);
const REPO_ROOT = new URL('../..', import.meta.url).pathname;
const CHILD = new URL('./ipvs-netlink-child.ts', import.meta.url).pathname;
/** Node.js with tsx starts in ~10 s under emulation, minutes on a loaded machine: a ceiling, not an expectation. */
const CHILD_TIMEOUT_MS = 480_000;

interface GuestReport extends Partial<ScenarioReport> {
  readonly loadedBefore: boolean;
  readonly loadedAfter: boolean;
  readonly openError?: { error: string; reason: string };
}

const FLAG = { TCP: '-t', UDP: '-u', SCTP: '--sctp-service' } as const;

function hostPort(address: string, port: number): string {
  return address.includes(':') ? `[${address}]:${port}` : `${address}:${port}`;
}

/** A virtual server as `ipvsadm -S -n` prints it (ipvsadm.c, print_service_entry with FMT_RULE). */
function saveLine(vs: VirtualServer): string {
  let line = `-A ${FLAG[vs.protocol]} ${hostPort(vs.address, vs.port)} -s ${vs.scheduler}`;
  if (vs.flags & IPVS_FLAG_PERSISTENT) line += ` -p ${vs.timeout}`;
  // The scheduler flags of sh: 0x8 sh-fallback, 0x10 sh-port.
  const sh = [vs.flags & 0x8 ? 'sh-fallback' : '', vs.flags & 0x10 ? 'sh-port' : ''].filter((s) => s !== '');
  if (sh.length > 0) line += ` -b ${sh.join(',')}`;
  return line;
}

/** A real server as `ipvsadm -S -n` prints it: masquerading (-m), its weight. */
function saveRealLine(vs: VirtualServer, rs: RealServer): string {
  return `-a ${FLAG[vs.protocol]} ${hostPort(vs.address, vs.port)} -r ${hostPort(rs.address, rs.port)} -m -w ${rs.weight}`;
}

function saved(state: State): string[] {
  return state.flatMap((e) => [saveLine(e.vs), ...e.reals.map((r) => saveRealLine(e.vs, r))]).sort();
}

function lines(text: string | undefined): string[] {
  return (text ?? '')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .sort();
}

/** The listing a step holds, with the connection counters a listing adds (0 on a guest without traffic). */
function withCounters(state: State): State {
  return state.map((e) => ({
    vs: e.vs,
    reals: e.reals.map((r) => ({ ...r, activeConnections: 0, inactiveConnections: 0 })),
  }));
}

async function runInGuest(guest: Guest): Promise<GuestReport> {
  const r = await guest.run([process.execPath, ...SOURCE_FLAGS, CHILD], {
    cwd: REPO_ROOT,
    env: { HOME: '/root', PATH: SYSTEM_PATH },
    timeoutMs: CHILD_TIMEOUT_MS,
  });
  assert.equal(r.code, 0, `ipvs-netlink-child.ts in the guest exited ${r.code}: ${r.stdout}${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').pop() ?? '') as GuestReport;
}

describe("the IPVS client on Debian's kernel, in a guest", options, () => {
  // Short: the control socket's path must fit a Unix socket address.
  const stateRoot = mkdtempSync('/tmp/kpts-vm-');
  let guest: Guest | undefined;
  let report: GuestReport | undefined;

  before(async () => {
    guest = await startGuest({ stateDir: join(stateRoot, 'i1'), hostname: 'kpts-ipvs', hostTmp: true });
    report = await runInGuest(guest);
    console.log(
      `# vm: kernel ${guest.release}, boot ${guest.bootMs} ms; ip_vs loaded before openIpvs: ` +
        `${report.loadedBefore}, after: ${report.loadedAfter}`,
    );
  });
  after(async () => {
    await guest?.stop();
    await sweepGuests(stateRoot, { all: true });
    rmSync(stateRoot, { recursive: true, force: true });
  });

  const scenario = (): ScenarioReport => {
    assert.ok(report, 'the guest ran the scenario');
    assert.equal(report.openError, undefined, `openIpvs in the guest: ${JSON.stringify(report.openError)}`);
    assert.ok(report.steps && report.reads, 'the child reported its steps');
    return { steps: report.steps, reads: report.reads };
  };
  const stepValue = (name: string): unknown => {
    const s = scenario().steps.find((x) => x.name === name);
    assert.ok(s?.ok, `${name}: ${JSON.stringify(s)}`);
    return s.value;
  };

  test('opening the handle loads ip_vs (the kernel asks for the family’s module itself)', () => {
    assert.equal(report?.loadedAfter, true);
  });

  test('ipvsadm reads back exactly what the client wrote, and so does the client', () => {
    const { reads } = scenario();
    console.log(
      `# ipvsadm -S -n after adds:\n${lines(reads['after adds'])
        .map((l) => `#   ${l}`)
        .join('\n')}`,
    );
    for (const stage of ['after adds', 'after deletes'] as const) {
      assert.deepEqual(lines(reads[stage]), saved(expectedState(stage)), `ipvsadm -S -n ${stage}`);
      assert.deepEqual(
        stepValue(`listing ${stage}`),
        withCounters(expectedState(stage)),
        `the client's listing ${stage}`,
      );
    }
    assert.deepEqual(lines(reads['after flush']), [], 'nothing after the flush');
    assert.deepEqual(stepValue('listing after flush'), []);
  });

  test('timeouts: the defaults, then what was set, as ipvsadm reads them', () => {
    const { reads } = scenario();
    assert.deepEqual(stepValue('timeouts at start'), { tcp: 900, tcpFin: 120, udp: 300 });
    assert.deepEqual(stepValue('timeouts after set'), { tcp: 901, tcpFin: 121, udp: 301 });
    assert.equal(reads['timeouts']?.trim(), 'Timeout (tcp tcpfin udp): 901 121 301');
    assert.deepEqual(stepValue('timeouts after a partial set'), { tcp: 901, tcpFin: 121, udp: 302 });
  });

  test('failures are values with the kernel’s errno', () => {
    const errno = (name: string): number | string => {
      const s = scenario().steps.find((x) => x.name === name);
      return s === undefined ? 'missing' : s.ok ? 0 : s.errno;
    };
    assert.deepEqual(
      {
        exists: errno('add an existing virtual server'),
        scheduler: errno('add with an unknown scheduler'),
        missingDelete: errno('delete a missing virtual server'),
        missingUpdate: errno('update a missing virtual server'),
        destOnMissing: errno('add a real server to a missing virtual server'),
        destExists: errno('add an existing real server'),
        destMissing: errno('delete a missing real server'),
        mixedFamily: errno('add an IPv6 real server to an IPv4 virtual server'),
        afterClose: errno('flush after close'),
      },
      {
        exists: 17,
        scheduler: 2,
        missingDelete: 3,
        missingUpdate: 3,
        destOnMissing: 3,
        destExists: 17,
        destMissing: 2,
        mixedFamily: 22,
        afterClose: 9,
      },
    );
  });

  test('FakeIpvs answers every step as the kernel did', () => {
    const kernel = scenario().steps;
    const fake = runScenario(new FakeIpvs(), () => '').steps;
    assert.deepEqual(
      fake.map((s) => s.name),
      kernel.map((s) => s.name),
    );
    for (const [i, k] of kernel.entries()) assert.deepEqual(fake[i], k, `step "${k.name}"`);
  });
});
