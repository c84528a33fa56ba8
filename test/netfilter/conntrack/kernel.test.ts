// Real kernel: UDP flows DNATed by an nft rule inside a network namespace of our own, then one reconcile pass with
// the real `conntrack` tool; and the cases of table-cases.ts, which executor.test.ts runs against FakeConntrack,
// here against the tool over flows it inserts itself (`conntrack -I`), one fresh namespace per case.
// Addresses are in 198.18.0.0/15 and 2001:db8::/32; nothing leaves the namespaces.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { netnsCommandRunner } from '../../../packages/agent/src/netfilter/command.js';
import { parseConntrackListing } from '../../../packages/agent/src/netfilter/conntrack/flow.js';
import { reconcileConntrack } from '../../../packages/agent/src/netfilter/conntrack/executor.js';
import type { Endpoint } from '../../../packages/agent/src/model/endpoint.js';
import type { ServicePort } from '../../../packages/agent/src/model/service-port.js';
import { recordingLogger } from '../../../packages/agent/src/util/logger.js';
import { kernelOptions, runPrefix } from '../../helpers/kernel.js';
import { FakeClock } from '../../../packages/agent/src/util/clock.js';
import { endpoint, servicePort } from './fixtures.js';
import type { ConntrackTableCase } from './table-cases.js';
import { insertArgs, RECONCILE_CASES, TOOL_CASES } from './table-cases.js';

const NODE_IP = '198.18.0.1';
const OLD_EP = '198.18.0.2';
const NEW_EP = '198.18.0.3';
const DNS_VIP = '198.18.100.10';
const OTHER_VIP = '198.18.100.20';

// Each client source port is steered to a fixed backend, so one send creates exactly the flows we want:
// 40000 → DNS VIP via the removed endpoint (stale), 40001 → DNS VIP via the current one (live),
// 40002 → the other Service's VIP via its (still serving) endpoint, 40003 → the DNS NodePort via the removed one.
const RULES = `
table ip kpts_ct_test {
  chain out {
    type nat hook output priority -100; policy accept;
    udp sport 40000 ip daddr ${DNS_VIP} udp dport 53 dnat to ${OLD_EP}:5353
    udp sport 40001 ip daddr ${DNS_VIP} udp dport 53 dnat to ${NEW_EP}:5353
    udp sport 40002 ip daddr ${OTHER_VIP} udp dport 53 dnat to ${OLD_EP}:5353
    udp sport 40003 ip daddr ${NODE_IP} udp dport 30053 dnat to ${OLD_EP}:5353
  }
}
`;

const SEND = `
const dgram = require('node:dgram');
const sends = [[40000, '${DNS_VIP}', 53], [40001, '${DNS_VIP}', 53], [40002, '${OTHER_VIP}', 53], [40003, '${NODE_IP}', 30053]];
let left = sends.length;
for (const [sport, dst, dport] of sends) {
  const s = dgram.createSocket('udp4');
  s.on('error', (e) => { console.error(e.message); process.exitCode = 1; });
  s.bind({ address: '${NODE_IP}', port: sport }, () => s.send('q', dport, dst, (e) => {
    if (e) { console.error(e.message); process.exitCode = 1; }
    s.close();
    if (--left === 0) setTimeout(() => {}, 0); // one more tick for the last close, then exit: not a wait
  }));
}
`;

function sh(args: string[]): void {
  execFileSync(args[0]!, args.slice(1), { stdio: ['ignore', 'ignore', 'pipe'], timeout: 10_000 });
}

function sweep(prefix: string): void {
  const list = spawnSync('ip', ['netns', 'list'], { encoding: 'utf8' }).stdout ?? '';
  for (const line of list.split('\n')) {
    const name = line.split(' ')[0];
    if (name && name.startsWith(prefix)) spawnSync('ip', ['netns', 'del', name]);
  }
}

test(
  'conntrack reconcile against the kernel: the stale UDP flows go, the live ones stay',
  kernelOptions(['ip', 'nft', 'conntrack']),
  async () => {
    const prefix = runPrefix();
    const ns = `${prefix}-ct`;
    sweep(prefix);
    try {
      sh(['ip', 'netns', 'add', ns]);
      sh(['ip', '-n', ns, 'link', 'set', 'lo', 'up']);
      for (const ip of [NODE_IP, OLD_EP, NEW_EP])
        sh(['ip', '-n', ns, 'addr', 'add', `${ip}/32`, 'dev', 'lo']);
      // The VIPs need a route for the send to reach the nat OUTPUT hook; a veth pair kept inside the namespace.
      sh(['ip', '-n', ns, 'link', 'add', 'v0', 'type', 'veth', 'peer', 'name', 'v1']);
      sh(['ip', '-n', ns, 'link', 'set', 'v0', 'up']);
      sh(['ip', '-n', ns, 'link', 'set', 'v1', 'up']);
      sh(['ip', '-n', ns, 'route', 'add', '198.18.100.0/24', 'dev', 'v0']);
      execFileSync('ip', ['netns', 'exec', ns, 'nft', '-f', '-'], { input: RULES, timeout: 10_000 });
      const send = spawnSync('ip', ['netns', 'exec', ns, process.execPath, '-e', SEND], {
        encoding: 'utf8',
        timeout: 10_000,
      });
      assert.equal(send.status, 0, `send failed: ${send.stderr}`);

      const runner = netnsCommandRunner(ns);
      const before = parseConntrackListing(
        (await runner.run('conntrack', ['-L', '-p', 'udp', '-f', 'ipv4', '-o', 'extended'])).stdout,
      ).flows;
      assert.equal(before.length, 4, 'four UDP flows created by the DNAT rules');

      const dns = servicePort('kube-system', 'dns', { clusterIP: DNS_VIP, port: 53, nodePort: 30053 });
      const other = servicePort('ns', 'other', { clusterIP: OTHER_VIP, port: 53 });
      const services = new Map<string, ServicePort>([
        [dns.key, dns],
        [other.key, other],
      ]);
      const endpoints = new Map<string, readonly Endpoint[]>([
        [dns.key, [endpoint(NEW_EP, 5353)]], // OLD_EP was removed from this Service
        [other.key, [endpoint(OLD_EP, 5353)]],
      ]);
      const reports: number[] = [];
      const result = await reconcileConntrack(
        {
          runner,
          clock: new FakeClock(),
          logger: recordingLogger(),
          metrics: { conntrackReconcile: (_f, _s, deleted) => reports.push(deleted) },
        },
        'IPv4',
        services,
        endpoints,
      );
      assert.equal(result.error, undefined);
      assert.equal(result.listed, 4);
      assert.equal(result.deletions.length, 2);
      assert.equal(result.deleted, 2);
      assert.deepEqual(reports, [2]);

      const after = parseConntrackListing(
        (await runner.run('conntrack', ['-L', '-p', 'udp', '-f', 'ipv4', '-o', 'extended'])).stdout,
      ).flows;
      const remaining = after.map((f) => `${f.original.sport}→${f.reply.src}:${f.reply.sport}`).sort();
      assert.deepEqual(remaining, [`40001→${NEW_EP}:5353`, `40002→${OLD_EP}:5353`]);
    } finally {
      spawnSync('ip', ['netns', 'del', ns]);
      sweep(prefix);
    }
  },
);

/** Runs one shared case on the real tool, in a namespace of its own. */
async function onTheTool(c: ConntrackTableCase): Promise<void> {
  const prefix = runPrefix();
  const ns = `${prefix}-ct`;
  try {
    sh(['ip', 'netns', 'add', ns]);
    const runner = netnsCommandRunner(ns);
    await c.run({
      runner,
      insert: async (flow) => {
        const r = await runner.run('conntrack', insertArgs(flow));
        assert.equal(r.code, 0, `conntrack -I: ${r.stderr}`);
      },
    });
  } finally {
    spawnSync('ip', ['netns', 'del', ns]);
    sweep(prefix);
  }
}

describe('the conntrack tool answers as FakeConntrack does (cases shared with executor.test.ts)', () => {
  const options = kernelOptions(['ip', 'conntrack']);
  for (const c of TOOL_CASES) test(c.name, options, () => onTheTool(c));
});

describe('reconcileConntrack over the conntrack tool (cases shared with executor.test.ts)', () => {
  const options = kernelOptions(['ip', 'conntrack']);
  for (const c of RECONCILE_CASES) test(c.name, options, () => onTheTool(c));
});
