// The node agent restarted under traffic (issue 28): a client in the node's namespace opens a new connection to a
// ClusterIP again and again (a pod namespace behind it answers HTTP) while the agent is stopped with SIGTERM and a
// new agent process starts; the new agent's first sync is a full one on the live table, which it flushes and
// refills atomically without reading an element back, or, given --nftables-state-dir, adopts as the first agent
// left it (the ruleset generation and the elements' digest unchanged: no element written). Every request must be answered: none refused, reset or timed
// out, in particular none while the refill is applied. Afterwards the table is what `render` gives. Each new
// connection meets the rules of that moment (conntrack only keeps the NAT of connections already made), so a
// moment without rules for that ClusterIP fails a request: with no rule, nobody answers for the address.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { describe, test } from 'node:test';
import { hostCommandRunner } from '../../packages/agent/src/netfilter/command.js';
import { createNamespace, deleteNamespace } from '../../packages/netns/src/index.js';
import { addVethPair } from '../../packages/netns/src/link.js';
import type { PodServerHandle } from '../../packages/netns/src/pod-process.js';
import { startPodServerIn } from '../../packages/netns/src/pod-process.js';
import type { NftablesLayoutName } from '../../packages/agent/src/config/nftables-layout.js';
import { kernelOptions } from '../helpers/kernel.js';
import { AgentLab } from './helpers/agent-lab.js';
import type { AgentLogRecord, AgentProcess } from './helpers/agent-process.js';
import { PATHS, serviceObject, sliceObject } from './helpers/agent-objects.js';
import { inNs } from './helpers/agent-table.js';
import { until } from './helpers/agent-wait.js';

const KERNEL = kernelOptions(['ip', 'nft', 'curl']);

const WEB_IP = '198.19.200.10';
/** The pod behind WEB_IP, in POD_CIDR (agent-objects.ts), on a veth from the node namespace. */
const POD_IP = '198.18.10.20';
const POD_GATEWAY = '198.18.10.1';
const SERVICE_RANGE = '198.19.0.0/16';
/** Concurrent request loops in the client: more requests in flight during the few milliseconds of a refill. */
const CLIENT_LOOPS = 4;

/**
 * The client, run by `node --input-type=module -e` in the node namespace: CLIENT_LOOPS loops of one request at a
 * time on a new connection each (agent: false), paced 5 ms apart so that a minute of it stays far from the
 * ephemeral port range. One JSON line per request: start and end (ms since the epoch), ok, and the error.
 */
const CLIENT = `
import { request } from 'node:http';
const [host, port, loops] = [process.argv[1], Number(process.argv[2]), Number(process.argv[3])];
let stopping = false;
process.on('SIGTERM', () => (stopping = true));
const once = () => new Promise((resolve) => {
  const t0 = Date.now();
  const done = (ok, error) => resolve({ t0, t1: Date.now(), ok, ...(error ? { error } : {}) });
  const req = request({ host, port, path: '/', agent: false, timeout: 5000 }, (res) => {
    let body = '';
    res.setEncoding('utf8');
    res.on('data', (d) => (body += d));
    res.on('end', () => done(res.statusCode === 200 && body.startsWith('pod=web-1'), 'status ' + res.statusCode));
    res.on('error', (e) => done(false, e.code ?? e.message));
  });
  req.on('timeout', () => req.destroy(Object.assign(new Error('timed out'), { code: 'TIMEOUT' })));
  req.on('error', (e) => done(false, e.code ?? e.message));
  req.end();
});
const loop = async () => {
  while (!stopping) {
    const r = await once();
    process.stdout.write(JSON.stringify(r) + '\\n');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
};
await Promise.all(Array.from({ length: loops }, loop));
`;

interface Outcome {
  readonly t0: number;
  readonly t1: number;
  readonly ok: boolean;
  readonly error?: string;
}

/** The client process: its outcomes as they arrive, and a stop that resolves once it has exited. */
function startClient(ns: string): {
  readonly outcomes: Outcome[];
  readonly failures: () => Outcome[];
  stop(): Promise<void>;
} {
  const child = spawn(
    'ip',
    [
      'netns',
      'exec',
      ns,
      process.execPath,
      '--input-type=module',
      '-e',
      CLIENT,
      WEB_IP,
      '80',
      `${CLIENT_LOOPS}`,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const outcomes: Outcome[] = [];
  let rest = '';
  let stderr = '';
  child.stdout.on('data', (b: Buffer) => {
    const lines = (rest + b.toString('utf8')).split('\n');
    rest = lines.pop() ?? '';
    for (const l of lines) if (l.trim() !== '') outcomes.push(JSON.parse(l) as Outcome);
  });
  child.stderr.on('data', (b: Buffer) => (stderr += b.toString('utf8')));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    outcomes,
    failures: () => outcomes.filter((o) => !o.ok),
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
      if (stderr.trim() !== '' && outcomes.length === 0) throw new Error(`client failed: ${stderr}`);
    },
  };
}

/** A pod namespace on a veth from the node, answering HTTP on 8080 (the lab's pod server). */
async function startPod(lab: AgentLab): Promise<{ pod: PodServerHandle; ns: string }> {
  const ns = `${lab.prefix}-pod`;
  await createNamespace(hostCommandRunner, ns);
  await addVethPair(
    hostCommandRunner,
    { namespace: lab.node, name: 'vpod' },
    { namespace: ns, name: 'eth0' },
  );
  for (const [where, args] of [
    [lab.node, ['addr', 'add', `${POD_GATEWAY}/24`, 'dev', 'vpod']],
    // A route for the service range, as a node's default route is: a local connect() needs one before the nat
    // output hook DNATs it. Without a rule, a packet to a ClusterIP is sent here and nobody answers for it.
    [lab.node, ['route', 'add', SERVICE_RANGE, 'dev', 'vpod']],
    [ns, ['addr', 'add', `${POD_IP}/24`, 'dev', 'eth0']],
    [ns, ['link', 'set', 'lo', 'up']],
    [ns, ['route', 'add', 'default', 'via', POD_GATEWAY]],
  ] as const) {
    const r = await inNs(where, 'ip', args);
    if (r.code !== 0) throw new Error(`ip ${args.join(' ')} in ${where}: ${r.stderr}`);
  }
  const pod = await startPodServerIn(hostCommandRunner, ns, {
    name: 'web-1',
    tcpPorts: [8080],
    udpPorts: [],
    stateDir: lab.dir,
  });
  return { pod, ns };
}

/** `count` Services of three endpoints each (addresses nobody answers on; only their rules matter). */
function putFillerServices(lab: AgentLab, count: number): void {
  for (let i = 0; i < count; i++) {
    const name = `filler-${i}`;
    const clusterIP = `198.19.${Math.floor(i / 250)}.${(i % 250) + 1}`;
    const base = 12 + (i % 4);
    const addresses = [0, 1, 2].map((k) => `198.18.${base}.${((i * 3 + k) % 250) + 1}`);
    lab.put(
      PATHS.services,
      serviceObject({ name, clusterIP, ports: [{ name: 'http', port: 80, targetPort: 8080 }] }),
    );
    lab.put(
      PATHS.endpointSlices,
      sliceObject({ service: name, addresses, ports: [{ name: 'http', port: 8080 }] }),
    );
  }
}

const isRefill = (r: AgentLogRecord): boolean => r.msg.startsWith('full sync on the live nftables table');
const isAdoptedSync = (r: AgentLogRecord): boolean =>
  r.msg.startsWith('full sync on the adopted nftables table');
const isAdoption = (r: AgentLogRecord): boolean => r.msg.startsWith('adopting the nftables table');
const isSynced = (r: AgentLogRecord): boolean => r.msg === 'synced proxy rules';
/** The log's time of a record, in ms since the epoch (the JSON log's `ts` is in seconds). */
const at = (r: AgentLogRecord): number => Number(r.ts) * 1000;

async function firstSync(proxy: AgentProcess): Promise<AgentLogRecord> {
  return proxy.waitForLog(isSynced, 'the first sync', 120_000);
}

interface Case {
  readonly layout: NftablesLayoutName;
  readonly services: number;
  readonly executor?: 'cli';
  /** Both agents given --nftables-state-dir: the second adopts the table instead of refilling it. */
  readonly adopt?: boolean;
}

const CASES: readonly Case[] = [
  // In-process (libnftables, netlink): the table's objects, then every element in one netlink transaction.
  { layout: 'flat', services: 3000 },
  // The same, the first agent leaving its state: the second writes the table's objects and no element.
  { layout: 'flat', services: 3000, adopt: true },
  // The nft command: everything in one transaction.
  { layout: 'flat', services: 3000, executor: 'cli' },
  // Upstream's layout: one transaction whatever the executor (a chain per Service: fewer, nft's load is larger).
  { layout: 'upstream', services: 1000 },
];

describe('the agent restarted under traffic to a ClusterIP', () => {
  for (const c of CASES) {
    const what = `${c.layout} layout${c.executor ? ` through the nft ${c.executor}` : ''}, ${c.services} Services`;
    const how = c.adopt ? 'adopts the table the first one left' : 'refills the live table';
    test(`${what}: every request is answered while a new agent ${how}`, KERNEL, async () => {
      await AgentLab.with(
        async (lab) => {
          const { pod, ns } = await startPod(lab);
          try {
            putFillerServices(lab, c.services);
            lab.put(
              PATHS.services,
              serviceObject({
                name: 'web',
                clusterIP: WEB_IP,
                ports: [{ name: 'http', port: 80, targetPort: 8080 }],
              }),
            );
            lab.put(
              PATHS.endpointSlices,
              sliceObject({ service: 'web', addresses: [POD_IP], ports: [{ name: 'http', port: 8080 }] }),
            );
            const flags = lab.flags(
              '--v=2',
              ...(c.executor ? ['--nft-executor', c.executor] : []),
              ...(c.adopt ? ['--nftables-state-dir', `${lab.dir}/state`] : []),
            );
            const first = lab.startProxy(flags);
            await firstSync(first);
            await lab.expectRules(first, 120_000);
            // A fresh node's first sync fills a table that did not exist: no refill.
            assert.deepEqual(first.matching(isRefill), []);

            const client = startClient(lab.node);
            try {
              await until(() => client.outcomes.length >= 20, '20 answers before the restart', 60_000);
              assert.deepEqual(client.failures(), [], 'requests failed before the restart');

              const stoppedAt = Date.now();
              const exit = await first.kill('SIGTERM');
              assert.equal(exit.code, 0, `the first agent's exit: ${JSON.stringify(exit)}\n${first.tail()}`);
              const second = lab.startProxy(flags);
              const synced = await firstSync(second);
              const refill = second.records.find(c.adopt ? isAdoptedSync : isRefill);
              assert.ok(
                refill,
                `the new agent's first sync was not ${c.adopt ? 'on the adopted table' : 'a refill of the live table'}\n${second.tail()}`,
              );
              assert.equal(refill.layout, c.layout);
              // In-process (libnftables, netlink) the flat layout's elements go in a netlink transaction of their
              // own; through the command, and in upstream's layout, it is all one transaction.
              assert.equal(refill.elementsApart, c.layout === 'flat' && c.executor === undefined);
              if (c.adopt) {
                assert.ok(first.records.some((r) => r.msg === 'left the nftables state for the next start'));
                assert.ok(second.records.some(isAdoption), second.tail());
                // The table's objects and the fixed setup's nodeport-ips: far fewer than the elements.
                assert.ok(Number(synced.operations) < 500, `${String(synced.operations)} operations`);
              } else assert.deepEqual(second.records.filter(isAdoption), []);
              assert.equal(synced.full, true, 'the first sync of the new agent was not full');
              assert.ok(second.records.indexOf(refill) < second.records.indexOf(synced));

              // Keep the traffic going a little past the sync, then look at every request of the whole run.
              const after = client.outcomes.length;
              await until(() => client.outcomes.length >= after + 20, '20 answers after the restart', 60_000);
              await client.stop();
              const failures = client.failures();
              assert.deepEqual(
                failures.slice(0, 10),
                [],
                `${failures.length} of ${client.outcomes.length} failed`,
              );
              const during = client.outcomes.filter((o) => o.t1 >= stoppedAt && o.t0 <= at(synced));
              assert.ok(during.length >= 10, `only ${during.length} requests while the agent restarted`);
              const inRefill = client.outcomes.filter((o) => o.t1 >= at(refill) && o.t0 <= at(synced));
              assert.ok(inRefill.length >= 1, 'no request was in flight while the refill was applied');

              await lab.expectRules(second, 120_000);
            } finally {
              await client.stop();
            }
          } finally {
            await pod.stop();
            await deleteNamespace(hostCommandRunner, ns);
          }
        },
        { layout: c.layout },
      );
    });
  }
});
