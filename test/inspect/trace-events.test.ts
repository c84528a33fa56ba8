// The trace parser and interpretation on real captured output (test/fixtures/trace/README.md says how it was made).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import {
  parseTraceLine,
  parseTraceText,
  parseXtablesTraceText,
} from '../../packages/agent/src/inspect/trace/events.js';
import { assemblePackets } from '../../packages/agent/src/inspect/trace/packets.js';
import { interpretPacket } from '../../packages/agent/src/inspect/trace/interpret.js';
import type { FrontendIndex } from '../../packages/agent/src/inspect/trace/frontends.js';
import {
  TraceUnavailableError,
  iptablesTraceable,
  runTrace,
} from '../../packages/agent/src/inspect/trace/session.js';
import type { CommandRunner } from '../../packages/agent/src/netfilter/command.js';

const fixture = (name: string): string =>
  readFileSync(new URL(`../fixtures/trace/${name}`, import.meta.url), 'utf8');
const TABLE = 'kpts-trace';

/** Asserts that `actual` has `expected`'s fields, with its values (the others are not compared). */
function assertFields<T extends object>(actual: T | undefined, expected: Partial<T>, message?: string): void {
  const picked = Object.fromEntries(Object.keys(expected).map((k) => [k, actual?.[k as keyof T]]));
  assert.deepEqual(picked, expected, message);
}

test('parses every line of a captured trace, with packet headers and verdicts', () => {
  const { events, skipped } = parseTraceText(fixture('nftables-node0.trace'));
  assert.deepEqual(skipped, []);
  assert.ok(events.length > 100);
  const dnat = events.find((e) => e.chain === 'service-GLEXRXEO-dataplane/web/tcp/http');
  assert.equal(dnat?.kind, 'rule');
  assert.equal(dnat?.verdict, 'accept');
  assert.match(dnat?.text ?? '', /^meta l4proto tcp dnat ip to numgen random mod 2 map/);
  const first = events[0];
  assert.equal(first?.kind, 'packet');
  assert.deepEqual(first?.packet, {
    iif: 'cbr0',
    saddr: '198.18.10.10',
    daddr: '198.19.0.10',
    protocol: 'tcp',
    sport: 34070,
    dport: 80,
    ipId: 4277,
    tcpFlags: 'syn',
  });
  const udp = parseTraceLine(
    'trace id aee27e91 ip kpts-trace trace-prerouting packet: iif "cbr0" ip saddr 198.18.10.10 ip daddr 198.19.0.13 ip id 54464 ip length 32 udp sport 41358 udp dport 53 udp length 12 @th,64,32 0x70696e67 ',
  );
  assert.ok(udp.ok);
  assert.equal(udp.event.packet?.protocol, 'udp');
  assert.equal(udp.event.packet?.dport, 53);
  assert.equal(parseTraceLine('Error: no such file').ok, false);
});

test('groups events into packets across a trace id that changes on routing and ids reused later', () => {
  const packets = assemblePackets(parseTraceText(fixture('nftables-node0.trace')).events, TABLE);
  // web: SYN, ACK, data, ACK, FIN (5); empty: SYN (1); NodePort: SYN, ACK, data, ACK, FIN (5); dns: 1.
  assert.equal(packets.length, 12);
  const empty = packets[5];
  // The SYN to the Service without endpoints changed trace id at FORWARD (4cded809 → 573c4473): still one packet.
  assert.deepEqual([...new Set(empty?.events.map((e) => e.id))], ['4cded809', '573c4473']);
});

test('interprets each packet: frontend, endpoint, masquerade, reject and drop', () => {
  const index: FrontendIndex = new Map([
    [
      '198.19.0.11 . tcp . 80',
      [
        {
          map: 'no-endpoint-services',
          key: ['198.19.0.11', 'tcp', '80'],
          value: 'goto reject-chain',
          servicePort: 'dataplane/empty:http',
        },
      ],
    ],
  ]);
  const packets = assemblePackets(parseTraceText(fixture('nftables-node0.trace')).events, TABLE);
  const m = packets.map((p) => interpretPacket(p, { mode: 'nftables', traceTable: TABLE, index }));
  assertFields(
    m[0],
    {
      outcome: 'sent-to-endpoint',
      servicePort: 'dataplane/web:http',
      frontend: '198.19.0.10:80/tcp',
      endpoint: '198.18.10.10:8080',
      masqueraded: true,
      masqueradedTo: '198.18.10.1',
    },
    'a pod reaching itself is masqueraded (hairpin)',
  );
  assert.equal(m[1]?.outcome, 'follows-conntrack', 'the ACK after the SYN follows the conntrack entry');
  assert.equal(m[5]?.outcome, 'rejected');
  assert.equal(m[5]?.servicePort, 'dataplane/empty:http');
  assert.match(
    m[5]?.why[0] ?? '',
    /has no ready endpoints: no-endpoint-services holds 198\.19\.0\.11 \. tcp \. 80 : goto reject-chain/,
  );
  assertFields(
    m[6],
    {
      outcome: 'sent-to-endpoint',
      frontend: 'NodePort 30080/tcp on 198.18.0.10',
      servicePort: 'dataplane/local:http',
      endpoint: '198.18.10.10:8080',
      masqueraded: false,
    },
    'externalTrafficPolicy Local keeps the client address',
  );
  assertFields(m[11], { servicePort: 'dataplane/dns:dns', endpoint: '198.18.11.10:5353' });

  const node1 = assemblePackets(parseTraceText(fixture('nftables-node1.trace')).events, TABLE);
  const drop = interpretPacket(node1[0]!, { mode: 'nftables', traceTable: TABLE });
  assert.equal(drop.outcome, 'dropped');
  assert.equal(drop.servicePort, 'dataplane/local:http');
  assert.match(drop.why[0] ?? '', /externalTrafficPolicy: Local/);
  assert.ok(drop.path.some((s) => s.chain === 'nodeport-endpoints-check' && s.verdict === 'drop'));
});

test('xtables-monitor --trace: the same events in iptables words, interpreted alike', () => {
  const { events, skipped } = parseXtablesTraceText(fixture('iptables-nft-node0.xtables-monitor'));
  assert.deepEqual(skipped, []);
  const jump = events.find((e) => e.chain === 'KUBE-SERVICES' && e.kind === 'rule');
  assert.equal(jump?.table, 'nat');
  assert.equal(jump?.verdict, 'jump KUBE-SVC-ZEKCSM6PWAJVEW5G');
  assert.match(jump?.text ?? '', /--comment "dataplane\/web:http cluster IP"/);
  const first = events[0];
  assert.equal(first?.kind, 'packet');
  assert.equal(first?.chain, 'trace-prerouting', 'a PACKET line belongs to the chain of the next TRACE line');
  assert.deepEqual(first?.packet, {
    iif: 'cbr0',
    saddr: '198.18.10.10',
    daddr: '198.19.0.10',
    protocol: 'tcp',
    sport: 45778,
    dport: 80,
    ipId: 16212,
    tcpFlags: 'syn',
  });
  const packets = assemblePackets(events, TABLE);
  const m = packets.map((p) => interpretPacket(p, { mode: 'iptables', traceTable: TABLE }));
  assertFields(m[0], {
    outcome: 'sent-to-endpoint',
    servicePort: 'dataplane/web:http',
    endpoint: '198.18.10.10:8080',
    masqueraded: true,
  });
  const rejected = m.find((x) => x.outcome === 'rejected');
  assert.equal(rejected?.servicePort, 'dataplane/empty:http');
  assert.match(
    rejected?.why[0] ?? '',
    /^rejected: dataplane\/empty:http has no endpoints \(filter KUBE-SERVICES\)/,
  );

  const node1 = assemblePackets(
    parseXtablesTraceText(fixture('iptables-nft-node1.xtables-monitor')).events,
    TABLE,
  );
  const drop = interpretPacket(node1[0]!, { mode: 'iptables', traceTable: TABLE });
  assert.equal(drop.outcome, 'dropped');
  assert.match(drop.why[0] ?? '', /dataplane\/local:http has no local endpoints/);
});

test('iptables mode on legacy iptables: trace says it cannot trace, and why', async () => {
  const version = (text: string): CommandRunner => ({
    run: async () => ({ code: 0, stdout: text, stderr: '' }),
  });
  assert.equal(await iptablesTraceable(version('iptables v1.8.9 (nf_tables)\n'), 'IPv4'), undefined);
  assert.match(
    (await iptablesTraceable(version('iptables v1.8.9 (legacy)\n'), 'IPv4')) ?? '',
    /^iptables v1\.8\.9 \(legacy\) is the legacy back end: its rules live outside nf_tables/,
  );
  await assert.rejects(
    runTrace({
      target: { family: 'IPv4', to: { address: '198.19.0.10' } },
      mode: 'iptables',
      runner: version('iptables v1.8.9 (legacy)\n'),
      streams: { stream: () => assert.fail('no monitor is started') },
      timeoutMs: 1000,
    }),
    (e: unknown) =>
      e instanceof TraceUnavailableError && /cannot trace in iptables mode here/.test(e.message),
  );
});
