// The element operations whose netlink bytes were recorded from nft (test/fixtures/netlink/, made by
// test/fixtures/netlink/record-nft.ts from exactly these values) and are compared with the encoder's in
// encode.test.ts: every field type and key/value shape the kube-proxy tables use, for an IPv4 and an IPv6 table,
// with the edge values of each (port 0 and 65535, a slot past 16 bits, IPv6 written every way nft reads it),
// every verdict, comments that quote.ts rewrites, a run long enough for two messages, deletes and flushes.
import { readFileSync } from 'node:fs';
import type {
  NftChain,
  NftMap,
  NftOperation,
  NftSet,
} from '../../../../packages/agent/src/netfilter/nft/objects.js';
import { writeOperation } from '../../../../packages/agent/src/netfilter/nft/serialize.js';

export type VectorFamily = 'ip' | 'ip6';

/** A recording of test/fixtures/netlink/ (`file`: its name there), parsed. */
export function netlinkFixture<T>(file: string): T {
  return JSON.parse(readFileSync(new URL(`../../../fixtures/netlink/${file}`, import.meta.url), 'utf8')) as T;
}

/** One family's recording in nft-setelem-batches.json: the tables, the elements, and nft's batch (hex). */
export interface RecordedBatch {
  readonly tables: string;
  readonly elements: string;
  readonly batch: string;
}

/** nft-setelem-batches.json: what record-nft.ts recorded of nft (its version, and a batch per family). */
export function recordedBatches(): { nft: string } & Record<VectorFamily, RecordedBatch> {
  return netlinkFixture('nft-setelem-batches.json');
}

const W = {
  ip: { ip: 'ip', addr: 'ipv4_addr' },
  ip6: { ip: 'ip6', addr: 'ipv6_addr' },
} as const;

export function vectorContainers(family: VectorFamily): (NftSet | NftMap)[] {
  const { ip, addr } = W[family];
  return [
    { kind: 'set', name: 'cluster-ips', type: addr, comment: 'Active ClusterIPs' },
    { kind: 'set', name: 'hairpin-connections', type: `${addr} . ${addr} . inet_proto . inet_service` },
    { kind: 'set', name: 'firewall-frontends', type: `${addr} . inet_proto . inet_service` },
    { kind: 'set', name: 'ports', type: 'inet_service' },
    { kind: 'map', name: 'service-ips', type: `${addr} . inet_proto . inet_service : verdict` },
    { kind: 'map', name: 'service-nodeports', type: 'inet_proto . inet_service : verdict' },
    {
      kind: 'map',
      name: 'endpoints-tcp',
      typeof: `${ip} daddr . meta l4proto . th dport . numgen random mod 2 : ${ip} daddr . tcp dport`,
    },
    {
      kind: 'map',
      name: 'nodeport-endpoints-udp',
      typeof: `meta l4proto . th dport . numgen random mod 2 : ${ip} daddr . udp dport`,
    },
    { kind: 'map', name: 'addr-by-port', type: `inet_service : ${addr}` },
  ];
}

export const VECTOR_CHAINS: readonly NftChain[] = [
  { kind: 'chain', name: 'dispatch-tcp-10' },
  { kind: 'chain', name: 'external-cluster' },
  { kind: 'chain', name: 'service-ABCDEFGH-ns/svc/tcp/http' },
];

const ADDRS = {
  ip: {
    vip: (n: number): string => `198.18.128.${n}`,
    pod: (n: number): string => `198.19.0.${n}`,
    // Written as our code writes them; nft reads each the same.
    odd: ['198.19.255.254', '198.18.0.0', '198.19.255.255'],
  },
  ip6: {
    vip: (n: number): string => `2001:db8:ff::${n.toString(16)}`,
    pod: (n: number): string => `2001:db8:10::${n.toString(16)}`,
    // Uncompressed, upper case, two equal runs of zeros (the first is the one compressed), all groups, `::` last.
    odd: [
      '2001:db8:0:0:0:0:0:2',
      '2001:DB8::A',
      '2001:db8:0:0:1:0:0:1',
      '2001:db8:1:2:3:4:5:6',
      '2001:db8::',
    ],
  },
} as const;

/** A comment past nft's 128 bytes (quote.ts cuts it), and ones that quote.ts rewrites. */
const LONG_COMMENT = 'x'.repeat(140);

export function vectorOperations(family: VectorFamily): NftOperation[] {
  const a = ADDRS[family];
  const ops: NftOperation[] = [];
  const el = (
    verb: 'add' | 'create' | 'delete',
    set: string,
    key: string[],
    value?: string[],
    comment?: string,
  ): void =>
    void ops.push({
      verb,
      object: {
        kind: 'element',
        set,
        key,
        ...(value !== undefined ? { value } : {}),
        ...(comment !== undefined ? { comment } : {}),
      },
    });

  el('add', 'service-ips', [`${a.vip(0)} . tcp . 80`], ['goto dispatch-tcp-10'], 'ns/web:http');
  el('add', 'service-ips', [a.vip(1), 'udp', '53'], ['drop']);
  el('add', 'service-ips', [`${a.vip(2)} . sctp . 9`], ['accept'], '');
  el(
    'add',
    'service-ips',
    [`${a.vip(3)} . 6 . 443`],
    ['jump service-ABCDEFGH-ns/svc/tcp/http'],
    'a "q" \\ b',
  );
  el('add', 'service-ips', [`${a.vip(4)} . tcp . 0`], ['return'], LONG_COMMENT);
  el('add', 'service-ips', [`${a.vip(5)} . 17 . 65535`], ['continue'], 'café ✓');
  el('add', 'service-nodeports', ['tcp . 30080'], ['goto external-cluster']);
  el('add', 'service-nodeports', ['udp', '30053'], ['goto external-cluster'], 'ns/dns:dns');
  el('add', 'service-nodeports', ['132 . 1'], ['drop']);
  for (const addr of a.odd) el('add', 'cluster-ips', [addr]);
  el('create', 'cluster-ips', [a.vip(7)]);
  el('create', 'cluster-ips', [a.vip(8)], undefined, 'created');
  el('add', 'hairpin-connections', [`${a.pod(1)} . ${a.pod(1)} . tcp . 8080`]);
  el('add', 'firewall-frontends', [`${a.vip(9)} . tcp . 80`], undefined, 'ns/lb:http');
  el('add', 'ports', ['80']);
  el('add', 'ports', ['65535']);
  el('add', 'addr-by-port', ['53'], [a.pod(53)]);
  el('add', 'endpoints-tcp', [`${a.vip(0)} . tcp . 80 . 0`], [`${a.pod(1)} . 8080`]);
  el('add', 'endpoints-tcp', [`${a.vip(0)} . tcp . 80 . 1`], [`${a.pod(2)} . 8080`]);
  el('add', 'endpoints-tcp', [a.vip(0), 'tcp', '80', '65537'], [a.pod(3), '8080']);
  el('add', 'endpoints-tcp', [`${a.vip(0)} . tcp . 80 . 4294967295`], [`${a.pod(4)} . 1`]);
  el('add', 'nodeport-endpoints-udp', ['udp . 30053 . 0'], [`${a.pod(5)} . 53`]);
  if (family === 'ip') {
    // A run longer than one message holds (64 KiB of elements): nft starts a second message, and so must we.
    for (let i = 0; i < 1500; i++) {
      el(
        'add',
        'endpoints-tcp',
        [`198.18.${129 + (i >> 8)}.${i & 255} . tcp . ${1000 + i} . ${i % 7}`],
        [`198.19.${1 + (i >> 8)}.${i & 255} . 8080`],
      );
    }
  }
  // A delete writes the key only, whatever else the operation carries (as the serializer's text).
  el('delete', 'service-ips', [`${a.vip(1)} . udp . 53`], ['drop'], 'ignored');
  el('delete', 'cluster-ips', [a.odd[0]]);
  el('delete', 'endpoints-tcp', [`${a.vip(0)} . tcp . 80 . 1`]);
  ops.push({ verb: 'flush', object: { kind: 'set', name: 'ports' } });
  ops.push({ verb: 'flush', object: { kind: 'map', name: 'addr-by-port' } });
  return ops;
}

/**
 * The `nft -f` text of element operations with each run of one verb on one set as one command (the serializer's
 * text has at most 1,000 elements a line; nft then splits a long run into messages by size alone).
 */
export function elementText(family: VectorFamily, ops: readonly NftOperation[]): string {
  const ref = { family, table: 'kube-proxy' };
  const lines: string[] = [];
  let head = '';
  let parts: string[] = [];
  const flush = (): void => {
    if (parts.length > 0) lines.push(`${head} { ${parts.join(', ')} }`);
    parts = [];
    head = '';
  };
  for (const op of ops) {
    const line = writeOperation(ref, op);
    if (op.object.kind !== 'element') {
      flush();
      lines.push(line);
      continue;
    }
    const open = line.indexOf(' { ');
    const h = line.slice(0, open);
    if (h !== head) flush();
    head = h;
    parts.push(line.slice(open + 3, -2));
  }
  flush();
  return lines.map((l) => l + '\n').join('');
}
