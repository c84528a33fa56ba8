// One set of cases for a conntrack table behind a CommandRunner, run twice: against FakeConntrack
// (executor.test.ts) and against the real `conntrack` tool in a network namespace of the test's own
// (kernel.test.ts). The first group runs the executor's real code and asserts outcomes (the pass's result, the
// metric, which flows remain); the second pins the tool's behaviour the executor depends on, so the fake is
// proven to answer as the tool does. Addresses are in 198.18.0.0/15 and 2001:db8::/32.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CommandRunner } from '../../../packages/agent/src/netfilter/command.js';
import type { ConntrackReconcileResult } from '../../../packages/agent/src/netfilter/conntrack/executor.js';
import { reconcileConntrack } from '../../../packages/agent/src/netfilter/conntrack/executor.js';
import type { UdpFlowSpec } from '../../../packages/agent/src/netfilter/conntrack/fake.js';
import { parseConntrackListing } from '../../../packages/agent/src/netfilter/conntrack/flow.js';
import { deletionArgs } from '../../../packages/agent/src/netfilter/conntrack/reconcile.js';
import type { Endpoint } from '../../../packages/agent/src/model/endpoint.js';
import type { IPFamily } from '../../../packages/agent/src/model/ip.js';
import type { ServicePort } from '../../../packages/agent/src/model/service-port.js';
import { FakeClock, type Clock } from '../../../packages/agent/src/util/clock.js';
import { recordingLogger, type LogRecord } from '../../../packages/agent/src/util/logger.js';
import { endpoint, servicePort } from './fixtures.js';

/** A conntrack table to run a case on: the runner the executor gets, and a way to put a UDP flow in it. */
export interface ConntrackTable {
  readonly runner: CommandRunner;
  insert(flow: UdpFlowSpec): Promise<void>;
}

export interface ConntrackTableCase {
  readonly name: string;
  run(table: ConntrackTable): Promise<void>;
}

/** `conntrack -I` arguments for a flow (the family comes from the addresses: the tool refuses -f with -I). */
export function insertArgs(f: UdpFlowSpec): string[] {
  return [
    '-I',
    '-p',
    'udp',
    '-s',
    f.origSrc,
    '-d',
    f.origDst,
    '--sport',
    String(f.origSport),
    '--dport',
    String(f.origDport),
    '-r',
    f.replySrc,
    '-q',
    f.replyDst ?? f.origSrc,
    '--reply-port-src',
    String(f.replySport),
    '--reply-port-dst',
    String(f.replyDport ?? f.origSport),
    '-t',
    '300',
  ];
}

function l3(family: IPFamily): string {
  return family === 'IPv6' ? 'ipv6' : 'ipv4';
}

/** The family's UDP flows left in the table, as `client port→replying endpoint`, sorted. */
export async function remainingFlows(runner: CommandRunner, family: IPFamily): Promise<string[]> {
  const r = await runner.run('conntrack', ['-L', '-p', 'udp', '-f', l3(family), '-o', 'extended']);
  assert.equal(r.code, 0, r.stderr);
  const ep = (ip: string, port: number | undefined) =>
    ip.includes(':') ? `[${ip}]:${port}` : `${ip}:${port}`;
  return parseConntrackListing(r.stdout)
    .flows.map((f) => `${f.original.sport}→${ep(f.reply.src, f.reply.sport)}`)
    .sort();
}

interface Pass {
  readonly result: ConntrackReconcileResult;
  /** What the pass reported to kubeproxy_conntrack_reconciler_*: [family, seconds, deleted]. */
  readonly reports: readonly [IPFamily, number, number][];
  /** What the pass logged. */
  readonly logs: readonly LogRecord[];
}

/** One reconcile pass with the executor's real code over the table's runner. */
export async function pass(
  runner: CommandRunner,
  family: IPFamily,
  services: readonly ServicePort[],
  endpoints: readonly (readonly Endpoint[])[],
  deletedServicePorts: readonly ServicePort[] = [],
  clock: Clock = new FakeClock(),
): Promise<Pass> {
  const reports: [IPFamily, number, number][] = [];
  const logger = recordingLogger();
  const result = await reconcileConntrack(
    {
      runner,
      clock,
      logger,
      metrics: { conntrackReconcile: (f, s, d) => reports.push([f, s, d]) },
    },
    family,
    new Map(services.map((sp) => [sp.key, sp])),
    new Map(services.map((sp, i) => [sp.key, endpoints[i] ?? []])),
    deletedServicePorts,
  );
  return { result, reports, logs: logger.records };
}

const CLIENT = '198.18.0.1';
const NODE_IPS = ['198.18.0.1', '198.18.0.5'];
const DNS_VIP = '198.18.100.10';
const OLD_EP = '198.18.1.7';
const NEW_EP = '198.18.1.2';

/** A client's UDP flow to `dst:dport`, DNATed to `ep:5353`. */
function flow(sport: number, dst: string, dport: number, ep: string, src = CLIENT): UdpFlowSpec {
  return { origSrc: src, origDst: dst, origSport: sport, origDport: dport, replySrc: ep, replySport: 5353 };
}

const DNS = servicePort('kube-system', 'dns', { clusterIP: DNS_VIP, port: 53, nodePort: 30053 });

export const RECONCILE_CASES: readonly ConntrackTableCase[] = [
  {
    // upstream kubernetes/kubernetes#139628, fixed by #139629
    name: 'scaled to zero: the ClusterIP flow and the DNATed NodePort flow to the removed endpoint go',
    async run(t) {
      await t.insert(flow(40000, DNS_VIP, 53, OLD_EP));
      await t.insert(flow(40001, NODE_IPS[0]!, 30053, OLD_EP, '198.18.0.20'));
      await t.insert({ ...flow(40002, '198.18.77.1', 30053, '198.18.77.1'), replySport: 30053 }); // not DNATed
      const { result } = await pass(t.runner, 'IPv4', [DNS], [[]]);
      assert.equal(result.error, undefined);
      assert.equal(result.deleted, 2);
      assert.deepEqual(await remainingFlows(t.runner, 'IPv4'), ['40002→198.18.77.1:30053']);
    },
  },
  {
    // upstream kubernetes/kubernetes#141371
    name: 'a deleted Service: its flows go, given as a deleted port; a live Service’s stay',
    async run(t) {
      const gone = servicePort('ns', 'statsd', { clusterIP: '198.18.100.40', port: 8125 });
      await t.insert(flow(40000, '198.18.100.40', 8125, OLD_EP));
      await t.insert(flow(40001, DNS_VIP, 53, NEW_EP));
      const { result } = await pass(t.runner, 'IPv4', [DNS], [[endpoint(NEW_EP, 5353)]], [gone]);
      assert.equal(result.error, undefined);
      assert.equal(result.deleted, 1);
      assert.deepEqual(await remainingFlows(t.runner, 'IPv4'), [`40001→${NEW_EP}:5353`]);
    },
  },
  {
    name: 'a stale flow to a ClusterIP goes; the live one stays; the pass is reported',
    async run(t) {
      await t.insert(flow(40000, DNS_VIP, 53, NEW_EP));
      await t.insert(flow(40001, DNS_VIP, 53, OLD_EP)); // OLD_EP was removed from the Service
      const { result, reports } = await pass(t.runner, 'IPv4', [DNS], [[endpoint(NEW_EP, 5353)]]);
      assert.equal(result.error, undefined);
      assert.equal(result.listed, 2);
      assert.equal(result.deletions.length, 1);
      assert.equal(result.deleted, 1);
      assert.deepEqual(reports, [['IPv4', 0, 1]]);
      assert.deepEqual(await remainingFlows(t.runner, 'IPv4'), [`40000→${NEW_EP}:5353`]);
    },
  },
  {
    name: 'every flow one stale filter matches goes, and each is counted',
    async run(t) {
      await t.insert(flow(40000, DNS_VIP, 53, OLD_EP));
      await t.insert(flow(40001, DNS_VIP, 53, OLD_EP, '198.18.0.9'));
      await t.insert(flow(40002, DNS_VIP, 53, NEW_EP));
      const { result, reports } = await pass(t.runner, 'IPv4', [DNS], [[endpoint(NEW_EP, 5353)]]);
      assert.equal(result.deletions.length, 1, 'one filter: same VIP, same removed endpoint');
      assert.equal(result.deleted, 2, 'the count is what the tool echoed');
      assert.deepEqual(reports, [['IPv4', 0, 2]]);
      assert.deepEqual(await remainingFlows(t.runner, 'IPv4'), [`40002→${NEW_EP}:5353`]);
    },
  },
  {
    name: 'NodePort flows are deleted by port alone, whatever node IP they were sent to',
    async run(t) {
      await t.insert(flow(40000, NODE_IPS[0]!, 30053, OLD_EP, '198.18.0.20'));
      await t.insert(flow(40001, NODE_IPS[1]!, 30053, OLD_EP, '198.18.0.20'));
      await t.insert(flow(40002, NODE_IPS[0]!, 30053, NEW_EP, '198.18.0.20'));
      await t.insert(flow(40003, NODE_IPS[0]!, 30054, OLD_EP, '198.18.0.20')); // no Service's port
      const { result } = await pass(t.runner, 'IPv4', [DNS], [[endpoint(NEW_EP, 5353)]]);
      assert.equal(result.error, undefined);
      assert.equal(result.deletions.length, 1);
      assert.equal(result.deletions[0]!.origDst, undefined);
      assert.equal(result.deleted, 2);
      assert.deepEqual(await remainingFlows(t.runner, 'IPv4'), [
        `40002→${NEW_EP}:5353`,
        `40003→${OLD_EP}:5353`,
      ]);
    },
  },
  {
    name: 'IPv6: the family’s stale flow goes; IPv4 flows are not the pass’s to touch',
    async run(t) {
      const v6 = servicePort('kube-system', 'dns6', {
        family: 'IPv6',
        clusterIP: '2001:db8:100::10',
        port: 53,
      });
      await t.insert({ ...flow(40000, '2001:db8:100::10', 53, '2001:db8:1::7'), origSrc: '2001:db8::1' });
      await t.insert({ ...flow(40001, '2001:db8:100::10', 53, '2001:db8:1::2'), origSrc: '2001:db8::1' });
      await t.insert(flow(40002, DNS_VIP, 53, OLD_EP)); // stale for IPv4, but this is the IPv6 pass
      const { result, reports } = await pass(
        t.runner,
        'IPv6',
        [v6, DNS],
        [[endpoint('2001:db8:1::2', 5353)], [endpoint(NEW_EP, 5353)]],
      );
      assert.equal(result.error, undefined);
      assert.equal(result.family, 'IPv6');
      assert.equal(result.listed, 2);
      assert.equal(result.deleted, 1);
      assert.deepEqual(reports, [['IPv6', 0, 1]]);
      assert.deepEqual(await remainingFlows(t.runner, 'IPv6'), ['40001→[2001:db8:1::2]:5353']);
      assert.deepEqual(await remainingFlows(t.runner, 'IPv4'), [`40002→${OLD_EP}:5353`]);
    },
  },
  {
    name: 'nothing stale: nothing is deleted, and the pass is still reported',
    async run(t) {
      await t.insert(flow(40000, DNS_VIP, 53, NEW_EP));
      await t.insert(flow(40001, '198.18.100.20', 53, OLD_EP)); // no Service there
      const { result, reports } = await pass(t.runner, 'IPv4', [DNS], [[endpoint(NEW_EP, 5353)]]);
      assert.equal(result.error, undefined);
      assert.equal(result.listed, 2);
      assert.deepEqual(result.deletions, []);
      assert.equal(result.deleted, 0);
      assert.deepEqual(reports, [['IPv4', 0, 0]]);
      assert.deepEqual(await remainingFlows(t.runner, 'IPv4'), [
        `40000→${NEW_EP}:5353`,
        `40001→${OLD_EP}:5353`,
      ]);
    },
  },
];

const STALE = {
  family: 'IPv4',
  protocol: 'udp',
  origDst: DNS_VIP,
  origDstPort: 53,
  replySrc: OLD_EP,
  replySrcPort: 5353,
} as const;
const GONE = { ...STALE, origDst: '198.18.100.99' } as const;

/** What the executor relies on the tool for, beyond a plain pass. */
export const TOOL_CASES: readonly ConntrackTableCase[] = [
  {
    name: '-L -o extended lists what is in the table, read back as it was put in',
    async run(t) {
      const spec = flow(40000, DNS_VIP, 53, OLD_EP);
      await t.insert(spec);
      const r = await t.runner.run('conntrack', ['-L', '-p', 'udp', '-f', 'ipv4', '-o', 'extended']);
      assert.equal(r.code, 0);
      assert.match(r.stderr, /\b1 flow entries have been shown/);
      const listing = parseConntrackListing(r.stdout);
      assert.deepEqual(listing.skipped, []);
      assert.deepEqual(listing.flows, [
        {
          family: 'IPv4',
          protocol: 'udp',
          original: { src: CLIENT, dst: DNS_VIP, sport: 40000, dport: 53 },
          reply: { src: OLD_EP, dst: CLIENT, sport: 5353, dport: 40000 },
        },
      ]);
    },
  },
  {
    name: '-D echoes each deleted flow; a filter that matches nothing exits 1 with "0 flow entries"',
    async run(t) {
      await t.insert(flow(40000, DNS_VIP, 53, OLD_EP));
      const hit = await t.runner.run('conntrack', deletionArgs(STALE));
      assert.equal(hit.code, 0);
      assert.equal(parseConntrackListing(hit.stdout).flows.length, 1);
      const miss = await t.runner.run('conntrack', deletionArgs(STALE));
      assert.equal(miss.code, 1);
      assert.equal(miss.stdout, '');
      assert.match(miss.stderr, /\b0 flow entries have been deleted/);
    },
  },
  {
    name: '-R runs every line; a line that matches nothing is no error',
    async run(t) {
      await t.insert(flow(40000, DNS_VIP, 53, OLD_EP));
      await t.insert(flow(40001, DNS_VIP, 53, NEW_EP));
      const r = await withBatch([deletionArgs(GONE), deletionArgs(STALE)], (file) =>
        t.runner.run('conntrack', ['-R', file]),
      );
      assert.equal(r.code, 0, r.stderr);
      assert.equal(parseConntrackListing(r.stdout).flows.length, 1);
      assert.deepEqual(await remainingFlows(t.runner, 'IPv4'), [`40001→${NEW_EP}:5353`]);
    },
  },
  {
    name: '-R with an unreadable line fails as a whole: nothing is deleted',
    async run(t) {
      await t.insert(flow(40000, DNS_VIP, 53, OLD_EP));
      const r = await withBatch([deletionArgs(STALE), ['-D', '-p', 'udp', '--bogus']], (file) =>
        t.runner.run('conntrack', ['-R', file]),
      );
      assert.notEqual(r.code, 0);
      assert.match(r.stderr, /unknown option `--bogus'/);
      assert.deepEqual(await remainingFlows(t.runner, 'IPv4'), [`40000→${OLD_EP}:5353`]);
    },
  },
  {
    name: 'a filter address of the other family is refused',
    async run(t) {
      const r = await t.runner.run('conntrack', deletionArgs({ ...STALE, origDst: '2001:db8:100::10' }));
      assert.equal(r.code, 2);
      assert.match(r.stderr, /mismatched address family/);
    },
  },
];

async function withBatch<T>(lines: readonly string[][], use: (file: string) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(join(tmpdir(), 'kpts-ct-case-'));
  try {
    const file = join(dir, 'batch');
    await writeFile(file, lines.map((l) => l.join(' ')).join('\n') + '\n');
    return await use(file);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
