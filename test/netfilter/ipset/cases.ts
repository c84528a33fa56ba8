// One scenario for the ipset client over a CommandRunner, run against FakeIPSet (fake.test.ts) and against the real
// `ipset` in a network namespace of the test's own (kernel.test.ts), which also runs each case on a fresh fake and
// asserts that both observed the same. Each case asserts its outcome itself and returns what it observed (saved
// sets, errors), without what differs by nature (the kernel's initval, its hash order). Addresses are in
// 198.18.0.0/15 and 2001:db8::/32.
import assert from 'node:assert/strict';
import type { CommandRunner } from '../../../packages/agent/src/netfilter/command.js';
import {
  checkMinVersion,
  IPSetClient,
  IPSetError,
  ipsetReason,
} from '../../../packages/agent/src/netfilter/ipset/client.js';
import type { IPSetOperation } from '../../../packages/agent/src/netfilter/ipset/restore.js';
import {
  diffSets,
  restoreText,
  syncOperations,
} from '../../../packages/agent/src/netfilter/ipset/restore.js';
import type { IPFamily } from '../../../packages/agent/src/model/ip.js';
import type { IPSetEntry, IPSetSpec, IPSetType } from '../../../packages/agent/src/netfilter/ipset/sets.js';
import {
  allKubeIPSetNames,
  entryText,
  kubeIPSet,
  kubeIPSets,
  validateEntry,
} from '../../../packages/agent/src/netfilter/ipset/sets.js';

export interface IPSetCase {
  readonly name: string;
  run(runner: CommandRunner): Promise<unknown>;
}

const ALL_SETS: readonly IPSetSpec[] = [...kubeIPSets('IPv4'), ...kubeIPSets('IPv6')];

/** Typed entries per type and family, several spelled the way the kernel will not print them back. */
function sampleEntries(type: IPSetType, family: IPFamily): IPSetEntry[] {
  const six = family === 'IPv6';
  const ip = six ? '2001:DB8:0:0:0:0:0:1' : '198.18.0.1';
  const other = six ? '2001:db8:0:1:0:0:0:2' : '198.18.0.2';
  const net = six ? '2001:db8:1::5/64' : '198.18.5.7/24';
  const host = six ? '2001:db8:1::5/128' : '198.18.5.7/32';
  const table: { [K in IPSetType]: IPSetEntry<K>[] } = {
    'hash:ip': [{ ip }, { ip: other }],
    'hash:ip,port': [
      { ip, protocol: 'tcp', port: 80 },
      { ip, protocol: 'udp', port: 53 },
      { ip: other, protocol: 'sctp', port: 0 },
    ],
    'hash:ip,port,ip': [
      { ip, protocol: 'tcp', port: 8080, ip2: ip },
      { ip: other, protocol: 'udp', port: 65535, ip2: ip },
    ],
    'hash:ip,port,net': [
      { ip, protocol: 'tcp', port: 443, net },
      { ip, protocol: 'tcp', port: 443, net: host },
    ],
    'bitmap:port': [{ port: 30001 }, { port: 0 }, { port: 65535 }],
  };
  return table[type];
}

/** Each set's entries as text (entryText), after checking that validateEntry accepts them. */
function desiredOf(specs: readonly IPSetSpec[]): Map<string, Set<string>> {
  const desired = new Map<string, Set<string>>();
  for (const set of specs) {
    const entries = sampleEntries(set.type, set.family);
    for (const e of entries) assert.equal(validateEntry(set, e), undefined);
    desired.set(set.name, new Set(entries.map((e) => entryText(set.type, e))));
  }
  return desired;
}

/** What `save` reports of the catalogue's sets, without the kernel's hash order and initval. */
async function observeSaved(client: IPSetClient): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {};
  for (const [name, s] of await client.save()) {
    out[name] = {
      type: s.type,
      family: s.family,
      hashSize: s.hashSize,
      maxElem: s.maxElem,
      portRange: s.portRange,
      entries: [...s.entries].sort(),
    };
  }
  return out;
}

async function entriesOf(client: IPSetClient): Promise<Map<string, Set<string>>> {
  return new Map([...(await client.save())].map(([name, s]) => [name, s.entries]));
}

/** The restore's failure as a value: which line, its text, and ipset's reason. */
async function restoreFailure(client: IPSetClient, text: string): Promise<Record<string, unknown>> {
  const e = await client.restore(text).then(
    () => assert.fail('the restore should have failed'),
    (err: unknown) => err,
  );
  assert.ok(e instanceof IPSetError, String(e));
  assert.equal(e.kind, 'restore');
  return { line: e.failedLine, text: e.failedText, reason: ipsetReason(e.stderr), exit: e.code };
}

const create = (...specs: IPSetSpec[]): string =>
  restoreText(specs.map((set): IPSetOperation => ({ verb: 'create', set })));

export const IPSET_CASES: readonly IPSetCase[] = [
  {
    name: 'version: ipset 7, at least upstream’s minimum 6.0',
    async run(runner) {
      const v = await new IPSetClient({ commands: runner }).version();
      assert.equal(v.major, 7);
      assert.ok(checkMinVersion(v.text));
      return v;
    },
  },
  {
    name: 'every catalogue set, both families, created with entries of its type; save prints entryText back',
    async run(runner) {
      const client = new IPSetClient({ commands: runner });
      const desired = desiredOf(ALL_SETS);
      await client.restore(restoreText(syncOperations(ALL_SETS, desired, new Map())));
      const saved = await client.save();
      assert.deepEqual([...saved.keys()].sort(), [...allKubeIPSetNames()].sort());
      for (const set of ALL_SETS) {
        const s = saved.get(set.name);
        assert.ok(s, set.name);
        assert.equal(s.type, set.type, set.name);
        assert.equal(s.family, set.type === 'bitmap:port' ? undefined : set.family, set.name);
        assert.deepEqual([s.hashSize, s.maxElem, s.portRange], [set.hashSize, set.maxElem, set.portRange]);
        assert.deepEqual(
          s.entries,
          desired.get(set.name),
          `${set.name}: the kernel prints what entryText gave`,
        );
      }
      assert.deepEqual(diffSets(desired, await entriesOf(client)), [], 'nothing left to do');
      assert.deepEqual((await client.listNames()).sort(), [...allKubeIPSetNames()].sort());
      return observeSaved(client);
    },
  },
  {
    name: 'spellings the tool reads differently come back as entryText of the same values',
    async run(runner) {
      const client = new IPSetClient({ commands: runner });
      const [port4, net4, port6, loop6] = [
        kubeIPSet('clusterIP', 'IPv4'),
        kubeIPSet('loadBalancerSourceCIDR', 'IPv4'),
        kubeIPSet('clusterIP', 'IPv6'),
        kubeIPSet('loopBack', 'IPv6'),
      ];
      const raw: [IPSetSpec, string, IPSetEntry][] = [
        [port4, '198.18.0.1,80', { ip: '198.18.0.1', protocol: 'tcp', port: 80 }],
        [port4, '198.18.0.2,TCP:443', { ip: '198.18.0.2', protocol: 'tcp', port: 443 }],
        [
          net4,
          '198.18.0.1,udp:53,198.18.5.7/16',
          { ip: '198.18.0.1', protocol: 'udp', port: 53, net: '198.18.5.7/16' },
        ],
        [
          net4,
          '198.18.0.1,tcp:1,198.18.9.9/32',
          { ip: '198.18.0.1', protocol: 'tcp', port: 1, net: '198.18.9.9/32' },
        ],
        [port6, '2001:DB8:0:0:0:0:0:1,sctp:9', { ip: '2001:db8::1', protocol: 'sctp', port: 9 }],
        [
          loop6,
          '2001:db8::1,tcp:80,2001:0db8::0:1',
          { ip: '2001:db8::1', protocol: 'tcp', port: 80, ip2: '2001:db8::1' },
        ],
      ];
      const lines = raw.map(([set, text]) => `add ${set.name} ${text}`);
      await client.restore(create(port4, net4, port6, loop6) + lines.join('\n') + '\n');
      const saved = await entriesOf(client);
      for (const set of [port4, net4, port6, loop6]) {
        const want = raw.filter(([s]) => s === set).map(([, , e]) => entryText(set.type, e));
        assert.deepEqual([...(saved.get(set.name) ?? [])].sort(), want.sort(), set.name);
      }
      return observeSaved(client);
    },
  },
  {
    name: 'create -exist of an existing set with the same options is a no-op; other options clash',
    async run(runner) {
      const client = new IPSetClient({ commands: runner });
      const cluster = kubeIPSet('clusterIP', 'IPv4');
      const nodePort = kubeIPSet('nodePortTCP', 'IPv4');
      await client.restore(create(cluster, nodePort) + `add ${cluster.name} 198.18.0.1,tcp:80\n`);
      await client.restore(create(cluster, nodePort));
      assert.deepEqual(
        await entriesOf(client),
        new Map([
          [cluster.name, new Set(['198.18.0.1,tcp:80'])],
          [nodePort.name, new Set()],
        ]),
      );
      const clashes = {
        type: await restoreFailure(client, create({ ...cluster, type: 'hash:ip' })),
        maxelem: await restoreFailure(client, create(nodePort, { ...cluster, maxElem: 1000 })),
        range: await restoreFailure(
          client,
          create({ ...nodePort, portRange: { first: 30000, last: 32767 } }),
        ),
      };
      assert.deepEqual(clashes.maxelem, {
        line: 2,
        text: 'create KUBE-CLUSTER-IP hash:ip,port family inet hashsize 1024 maxelem 1000',
        reason: 'Set cannot be created: set with the same name already exists',
        exit: 1,
      });
      // The kernel's quirk, pinned: neither the family nor the hash size is compared.
      await client.restore(create({ ...cluster, family: 'IPv6', hashSize: 4096 }));
      assert.equal((await client.save()).get(cluster.name)?.family, 'IPv4');
      return { clashes, saved: await observeSaved(client) };
    },
  },
  {
    name: 'a diff is applied as adds and deletes; a second diff is empty',
    async run(runner) {
      const client = new IPSetClient({ commands: runner });
      const sets = [
        kubeIPSet('clusterIP', 'IPv4'),
        kubeIPSet('nodePortUDP', 'IPv4'),
        kubeIPSet('ipvsIPs', 'IPv6'),
      ];
      const [cluster, udp, ips] = sets.map((s) => s.name) as [string, string, string];
      const before = new Map([
        [cluster, new Set(['198.18.0.1,tcp:80', '198.18.0.2,tcp:80'])],
        [udp, new Set(['30053'])],
        [ips, new Set(['2001:db8::a', '2001:db8::b'])],
      ]);
      await client.restore(restoreText(syncOperations(sets, before, new Map())));
      const after = new Map([
        [cluster, new Set(['198.18.0.2,tcp:80', '198.18.0.3,udp:53'])],
        [udp, new Set<string>()],
        [ips, new Set(['2001:db8::a', '2001:db8::b'])],
      ]);
      const ops = diffSets(after, await entriesOf(client));
      assert.deepEqual(restoreText(ops).split('\n'), [
        `add ${cluster} 198.18.0.3,udp:53`,
        `del ${cluster} 198.18.0.1,tcp:80`,
        `del ${udp} 30053`,
        '',
      ]);
      await client.restore(restoreText(syncOperations(sets, after, await entriesOf(client))));
      assert.deepEqual(await entriesOf(client), after);
      assert.deepEqual(diffSets(after, await entriesOf(client)), []);
      return observeSaved(client);
    },
  },
  {
    name: 'a bad line: the error names it and its text; what ipset had sent stays, its unsent run is lost',
    async run(runner) {
      const client = new IPSetClient({ commands: runner });
      const [cluster, ips, src, node] = [
        kubeIPSet('clusterIP', 'IPv4'),
        kubeIPSet('ipvsIPs', 'IPv4'),
        kubeIPSet('loadBalancerSourceCIDR', 'IPv4'),
        kubeIPSet('nodePortTCP', 'IPv4'),
      ];
      await client.restore(create(cluster, ips, src, node));
      const family = await restoreFailure(
        client,
        `add ${cluster.name} 198.18.0.1,tcp:80\nadd ${ips.name} 198.18.0.9\nadd ${ips.name} 2001:db8::1\n`,
      );
      assert.deepEqual(family, {
        line: 3,
        text: `add ${ips.name} 2001:db8::1`,
        reason: 'Syntax error: cannot parse 2001:db8::1: resolving to IPv4 address failed',
        exit: 1,
      });
      const missing = await restoreFailure(client, 'add KUBE-NO-SUCH-SET 198.18.0.1\n');
      assert.deepEqual(missing.reason, 'The set with the given name does not exist');
      // The kernel refuses a /0 net: the lines of its run before it were sent with it and stay.
      const zero = await restoreFailure(
        client,
        `add ${src.name} 198.18.0.1,tcp:80,198.18.0.0/15\nadd ${src.name} 198.18.0.1,tcp:80,0.0.0.0/0\n`,
      );
      assert.equal(zero.line, 2);
      // A bad port is reported without a line number.
      const port = await restoreFailure(client, `add ${node.name} 30001\nadd ${node.name} 70000\n`);
      assert.equal(port.line, undefined);
      assert.match(String(port.reason), /'70000' is out of range 0-65535/);
      // maxelem reached: the kernel refuses the line; the one before it stays.
      const tiny = { ...ips, name: 'KUBE-TEST-TINY', maxElem: 1 };
      const full = await restoreFailure(
        client,
        create(tiny) + `add ${tiny.name} 198.18.0.1\nadd ${tiny.name} 198.18.0.2\n`,
      );
      assert.deepEqual([full.line, full.reason], [3, 'Hash is full, cannot add more elements']);
      assert.deepEqual((await client.save([tiny.name])).get(tiny.name)?.entries, new Set(['198.18.0.1']));
      const saved = await entriesOf(client);
      assert.deepEqual(saved.get(cluster.name), new Set(['198.18.0.1,tcp:80']));
      assert.deepEqual(saved.get(ips.name), new Set());
      assert.deepEqual(saved.get(src.name), new Set(['198.18.0.1,tcp:80,198.18.0.0/15']));
      assert.deepEqual(saved.get(node.name), new Set());
      return { family, missing, zero, port, full, saved: await observeSaved(client) };
    },
  },
  {
    name: 'destroy: the set goes; destroying a missing set is not an error',
    async run(runner) {
      const client = new IPSetClient({ commands: runner });
      const [a, b] = [kubeIPSet('loadBalancer', 'IPv6'), kubeIPSet('healthCheckNodePort', 'IPv6')];
      await client.restore(create(a, b) + `add ${b.name} 10256\n`);
      assert.equal(await client.destroy(b.name), true);
      assert.equal(await client.destroy(b.name), false);
      assert.deepEqual(await client.listNames(), [a.name]);
      return { names: await client.listNames(), saved: await observeSaved(client) };
    },
  },
];
