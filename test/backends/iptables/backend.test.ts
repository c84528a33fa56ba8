// IptablesBackend on the fake: partial syncs and the render cache, large-cluster mode, IPv6, the canary, metrics,
// no-local-endpoint counts, lock handling, cleanup. Inputs are plain objects through the real model.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { IptablesBackend } from '../../../packages/agent/src/backends/iptables/backend.js';
import { cleanupIptables } from '../../../packages/agent/src/backends/iptables/cleanup.js';
import { renderIptablesRestore } from '../../../packages/agent/src/backends/iptables/render-cache.js';
import type { EndpointSlice, Service } from '../../../packages/agent/src/api/objects.js';
import { FakeIptables } from '../../../packages/agent/src/netfilter/iptables/fake.js';
import type { NodeNetworkConfig } from '../../../packages/agent/src/sync/backend.js';
import type { ProxyMetrics } from '../../../packages/agent/src/sync/metrics.js';
import { NO_PROXY_METRICS } from '../../../packages/agent/src/sync/metrics.js';
import { FakeClock } from '../../../packages/agent/src/util/clock.js';
import { ModelCluster } from '../../helpers/model-cluster.js';
import { testNode } from '../../helpers/model-values.js';

function node6(): NodeNetworkConfig {
  return testNode({ family: 'IPv6', nodeIPs: ['2001:db8::2'], clusterCIDRs: ['2001:db8:1::/64'] });
}

function svc(ns: string, name: string, ip: string, extra: Record<string, unknown> = {}): Service {
  return {
    metadata: { namespace: ns, name },
    spec: { clusterIP: ip, ports: [{ name: 'p80', port: 80, protocol: 'TCP' }], ...extra },
  };
}

function slice(
  ns: string,
  svcName: string,
  ips: readonly string[],
  nodeName?: string,
  family = 'IPv4',
): EndpointSlice {
  return {
    metadata: { namespace: ns, name: `${svcName}-1`, labels: { 'kubernetes.io/service-name': svcName } },
    addressType: family,
    endpoints: ips.map((ip) => ({ addresses: [ip], ...(nodeName ? { nodeName } : {}) })),
    ports: [{ name: 'p80', port: 80, protocol: 'TCP' }],
  };
}

interface Recorded {
  rules: Map<string, [number, number]>;
  lockWaits: number[];
  restoreDurations: number;
  failures: number;
  partialFailures: number;
}

function recordingMetrics(): ProxyMetrics & { rec: Recorded } {
  const rec: Recorded = {
    rules: new Map(),
    lockWaits: [],
    restoreDurations: 0,
    failures: 0,
    partialFailures: 0,
  };
  return {
    ...NO_PROXY_METRICS,
    rec,
    iptablesRules: (_f, table, total, last) => void rec.rules.set(table, [total, last]),
    iptablesLockWait: (_f, s) => void rec.lockWaits.push(s),
    iptablesRestoreDuration: () => void rec.restoreDurations++,
    iptablesRestoreFailure: () => void rec.failures++,
    iptablesPartialRestoreFailure: () => void rec.partialFailures++,
  };
}

const EXTRAS = {
  localhostNodePorts: true,
  nfacctCounters: [],
  randomFully: true,
  conntrackTCPBeLiberal: false,
  variant: 'auto' as const,
};

/** Service ns/name at ClusterIP `ip` (port 80), with a slice of the endpoints `ips` (no node). */
function putService(model: ModelCluster, ns: string, name: string, ip: string, ips: readonly string[]): void {
  model.upsertService(svc(ns, name, ip));
  model.upsertSlice(slice(ns, name, ips));
}

function setup(
  options: {
    node?: NodeNetworkConfig;
    fake?: FakeIptables;
    clock?: FakeClock;
    syncPeriodMs?: number;
  } = {},
) {
  const clock = options.clock ?? new FakeClock();
  const fake = options.fake ?? new FakeIptables({ clock });
  const metrics = recordingMetrics();
  const node = options.node ?? testNode();
  const backend = new IptablesBackend({
    node,
    commands: fake,
    clock,
    metrics,
    iptables: { ...EXTRAS, syncPeriodMs: options.syncPeriodMs },
  });
  const model = new ModelCluster(node.family, 'node-a');
  const sync = async (full = false) => {
    const { snapshot, changedServices } = model.checkout();
    return backend.sync(snapshot, { full, changedServices });
  };
  return { clock, fake, metrics, backend, model, sync };
}

describe('partial syncs and the render cache', () => {
  test('only changed services are rendered and written; unchanged chains stay in the kernel', async () => {
    const { fake, backend, model, sync } = setup();
    for (let i = 1; i <= 5; i++) {
      putService(model, `ns${i}`, 'web', `198.18.100.${i}`, [`198.19.0.${i}`, `198.19.1.${i}`]);
    }
    await sync(true);
    assert.equal(backend.lastSyncStats?.rendered, 5);
    assert.equal(backend.lastSyncStats?.written, 5);

    model.upsertSlice(slice('ns3', 'web', ['198.19.0.3', '198.19.1.3', '198.19.2.3']));
    await sync();
    assert.deepEqual(
      { ...backend.lastSyncStats, staleChains: undefined },
      {
        full: false,
        rendered: 1,
        written: 1,
        staleChains: undefined,
        scanned: true,
        lines: backend.lastSyncStats?.lines,
      },
    );
    const input = fake.lastRestore ?? '';
    // KUBE-SERVICES still lists every service; only ns3's SVC chain is rewritten.
    assert.equal((input.match(/-A KUBE-SERVICES .*cluster IP/g) ?? []).length, 5);
    assert.equal((input.match(/^:KUBE-SVC-/gm) ?? []).length, 1);
    assert.ok(input.includes('ns3/web:p80 -> 198.19.2.3:80'));
    // The kernel still holds all five services' chains.
    const svcChains = [...fake.chains('IPv4', 'nat').keys()].filter((c) => c.startsWith('KUBE-SVC-'));
    assert.equal(svcChains.length, 5);

    await sync();
    assert.equal(backend.lastSyncStats?.rendered, 0);
    assert.equal(backend.lastSyncStats?.written, 0);

    // A full sync rewrites every chain but reuses the cached rendering.
    await sync(true);
    assert.equal(backend.lastSyncStats?.rendered, 0);
    assert.equal(backend.lastSyncStats?.written, 5);
  });

  test('rule counts: total counts unchanged services too, last only what was written', async () => {
    const { metrics, model, sync } = setup();
    putService(model, 'a', 'web', '198.18.100.1', ['198.19.0.1']);
    putService(model, 'b', 'web', '198.18.100.2', ['198.19.0.2']);
    await sync(true);
    // nat per service: KUBE-SERVICES 1 + SVC 2 + SEP 2 = 5; static: nodeports jump 1, MARK-MASQ 1, POSTROUTING 3.
    assert.deepEqual(metrics.rec.rules.get('nat'), [15, 15]);
    // filter: KUBE-FIREWALL 1 (IPv4 localhost NodePorts) + KUBE-FORWARD 3.
    assert.deepEqual(metrics.rec.rules.get('filter'), [4, 4]);
    await sync();
    assert.deepEqual(metrics.rec.rules.get('nat'), [15, 7]);
  });
});

describe('large-cluster mode (> 1000 endpoints)', () => {
  test('no per-endpoint comments, and iptables-save read at most once per syncPeriod', async () => {
    const { clock, fake, backend, model, sync } = setup({ syncPeriodMs: 30_000 });
    const ips = Array.from({ length: 1001 }, (_, i) => `198.19.${Math.floor(i / 250)}.${(i % 250) + 1}`);
    putService(model, 'big', 'web', '198.18.100.1', ips);
    putService(model, 'small', 'web', '198.18.100.2', ['198.19.9.1']);
    await sync(true);
    assert.equal(backend.largeClusterMode, true);
    const input = fake.lastRestore ?? '';
    assert.ok(!input.includes(' -> '), 'no "svc -> endpoint" comments');
    assert.match(input, /^-A KUBE-SEP-\S+ -s 198\.19\.9\.1 -j KUBE-MARK-MASQ$/m);
    assert.match(input, /-A KUBE-SERVICES -m comment --comment "big\/web:p80 cluster IP"/);
    const saves = () => fake.calls.filter((c) => c.cmd === 'iptables-save').length;
    assert.equal(saves(), 1);
    await sync();
    assert.equal(saves(), 1);
    assert.equal(backend.lastSyncStats?.scanned, false);
    clock.advance(30_000);
    await sync();
    assert.equal(saves(), 2);
  });

  test('below the threshold every sync scans and comments are written', async () => {
    const { fake, backend, model, sync } = setup();
    putService(model, 'a', 'web', '198.18.100.1', ['198.19.0.1', '198.19.0.2']);
    await sync(true);
    await sync();
    assert.equal(backend.largeClusterMode, false);
    assert.equal(fake.calls.filter((c) => c.cmd === 'iptables-save').length, 2);
    assert.ok((fake.lastRestore ?? '') !== '');
  });
});

describe('IPv6', () => {
  test('ip6tables, bracketed DNAT, no localhost NodePorts, no KUBE-FIREWALL', async () => {
    const { fake, model, sync } = setup({ node: node6() });
    model.upsertService(
      svc('ns', 'web', '2001:db8:ff::10', {
        type: 'NodePort',
        ports: [{ name: 'p80', port: 80, protocol: 'TCP', nodePort: 30080 }],
      }),
    );
    model.upsertSlice(slice('ns', 'web', ['2001:db8:1::5'], undefined, 'IPv6'));
    await sync(true);
    assert.equal(fake.restores.at(-1)?.family, 'IPv6');
    const input = fake.lastRestore ?? '';
    assert.match(input, /-j DNAT --to-destination \[2001:db8:1::5\]:80$/m);
    assert.match(input, /--dst-type LOCAL ! -d ::1\/128 -j KUBE-NODEPORTS$/m);
    assert.match(input, /! -s 2001:db8:1::\/64 -j KUBE-MARK-MASQ$/m);
    assert.ok(!input.includes('KUBE-FIREWALL'));
    assert.ok(!input.includes('127.0.0.0/8'));
    // The jumps went into the IPv6 tables (through ip6tables-restore, never the IPv4 tools).
    assert.deepEqual(fake.chains('IPv6', 'nat').get('PREROUTING'), [
      ['-m', 'comment', '--comment', 'kubernetes service portals', '-j', 'KUBE-SERVICES'],
    ]);
    assert.ok(fake.calls.every((c) => !/^iptables/.test(c.cmd)));
  });
});

describe('no local endpoints', () => {
  test('eTP=Local without a local endpoint: DROP rules and a count; iTP=Local likewise', async () => {
    const { fake, model, sync } = setup();
    model.upsertService(
      svc('ns', 'ext', '198.18.100.1', {
        type: 'NodePort',
        externalTrafficPolicy: 'Local',
        ports: [{ name: 'p80', port: 80, protocol: 'TCP', nodePort: 30080 }],
      }),
    );
    model.upsertSlice(slice('ns', 'ext', ['198.19.0.1'], 'other-node'));
    model.upsertService(svc('ns', 'int', '198.18.100.2', { internalTrafficPolicy: 'Local' }));
    model.upsertSlice(slice('ns', 'int', ['198.19.0.2'], 'other-node'));
    const result = await sync(true);
    assert.equal(result.noLocalEndpointsExternal, 1);
    assert.equal(result.noLocalEndpointsInternal, 1);
    const input = fake.lastRestore ?? '';
    assert.match(
      input,
      /-A KUBE-EXTERNAL-SERVICES -m comment --comment "ns\/ext:p80 has no local endpoints" .*--dport 30080 -j DROP/,
    );
    assert.match(
      input,
      /-A KUBE-SERVICES -m comment --comment "ns\/int:p80 has no local endpoints" .*-d 198\.18\.100\.2 .*-j DROP/,
    );
  });
});

describe('canary', () => {
  test('an external flush is detected and the next (partial-requested) sync repairs everything', async () => {
    const { fake, backend, model, sync } = setup();
    putService(model, 'ns', 'web', '198.18.100.1', ['198.19.0.1']);
    await sync(true);
    assert.equal(await backend.checkCanary(), true);
    const before = fake.dump('IPv4', 'nat');

    fake.inject('IPv4', '-t nat -F');
    assert.equal(await backend.checkCanary(), false);
    await sync(false);
    assert.equal(backend.lastSyncStats?.full, true);
    assert.equal(fake.dump('IPv4', 'nat'), before);
    assert.equal(await backend.checkCanary(), true);

    // Deleting the canary chain (a table replaced wholesale) is detected too.
    fake.inject('IPv4', '-t mangle -X KUBE-PROXY-CANARY');
    assert.equal(await backend.checkCanary(), false);
    await sync(false);
    assert.equal(await backend.checkCanary(), true);
  });
});

describe('failures and the xtables lock', () => {
  test('a lock held past the wait fails the sync, counts it, and the next (full) sync succeeds', async () => {
    const clock = new FakeClock();
    const fake = new FakeIptables({ backend: 'legacy', clock });
    const { backend, metrics, model, sync } = setup({ fake, clock });
    putService(model, 'ns', 'web', '198.18.100.1', ['198.19.0.1']);
    await sync(true);
    model.upsertSlice(slice('ns', 'web', ['198.19.0.1', '198.19.0.2']));
    fake.holdLock(2500);
    await sync();
    assert.deepEqual(metrics.rec.lockWaits, [0, 2.5]);

    model.upsertSlice(slice('ns', 'web', ['198.19.0.2']));
    fake.holdLock(60_000);
    await assert.rejects(sync(), /partial sync: .*lock-timeout/);
    assert.equal(metrics.rec.failures, 1);
    assert.equal(metrics.rec.partialFailures, 1);
    assert.equal(metrics.rec.lockWaits.at(-1), 5);

    fake.holdLock(0);
    await sync();
    assert.equal(backend.lastSyncStats?.full, true);
    assert.ok((fake.lastRestore ?? '').includes('-> 198.19.0.2:80'));
    assert.equal(metrics.rec.failures, 1);
  });
});

describe('cleanupIptables', () => {
  test('removes every chain and jump it made, in both families', async () => {
    const { fake, model, sync } = setup();
    putService(model, 'ns', 'web', '198.18.100.1', ['198.19.0.1']);
    await sync(true);
    fake.inject('IPv4', '-t nat -N OTHER');
    const result = await cleanupIptables(fake);
    assert.deepEqual(result.errors, []);
    assert.ok(result.deletedChains.includes('IPv4 nat KUBE-SERVICES'));
    for (const table of ['nat', 'filter', 'mangle'] as const) {
      for (const [chain, rules] of fake.chains('IPv4', table)) {
        assert.ok(!chain.startsWith('KUBE-'), `${table} ${chain} left behind`);
        for (const r of rules)
          assert.ok(!r.some((a) => a.startsWith('KUBE-')), `${table} ${chain}: ${r.join(' ')}`);
      }
    }
    assert.ok(fake.chains('IPv4', 'nat').has('OTHER'));
  });
});

/** The KUBE-* chains (bar the canary) of one table, sorted by name, with their rules in order. */
function ourChains(fake: FakeIptables, table: 'nat' | 'filter'): [string, string[][]][] {
  return [...fake.chains('IPv4', table)]
    .filter(([name]) => name.startsWith('KUBE-') && name !== 'KUBE-PROXY-CANARY')
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

describe('base chains and jumps on full syncs', () => {
  test('a first full sync creates every chain, jump and canary in one restore, in upstream order', async () => {
    const { fake, backend, model, sync } = setup();
    putService(model, 'ns', 'a', '198.18.100.1', ['198.19.0.1']);
    await sync(true);
    // No per-rule commands: one save of every table, one restore for the base chains, one for the rules.
    assert.deepEqual(
      fake.calls.map((c) => c.cmd).filter((c) => c !== 'flock'),
      ['iptables-save', 'iptables', 'iptables-restore', 'iptables-restore'],
    );
    // The one plain iptables call asks for the version (wait flags); no -N, -C or -I.
    assert.deepEqual(fake.calls.find((c) => c.cmd === 'iptables')?.args, ['--version']);
    assert.deepEqual(fake.calls.find((c) => c.cmd === 'iptables-save')?.args, []);
    // Each jump prepended in list order, as upstream's -C/-I sequence leaves them: the last listed comes first.
    const jumps = (chain: string) => (fake.chains('IPv4', 'filter').get(chain) ?? []).map((r) => r.at(-1));
    assert.deepEqual(jumps('INPUT'), [
      'KUBE-FIREWALL',
      'KUBE-PROXY-FIREWALL',
      'KUBE-NODEPORTS',
      'KUBE-EXTERNAL-SERVICES',
    ]);
    assert.deepEqual(jumps('FORWARD'), [
      'KUBE-PROXY-FIREWALL',
      'KUBE-FORWARD',
      'KUBE-SERVICES',
      'KUBE-EXTERNAL-SERVICES',
    ]);
    assert.deepEqual(jumps('OUTPUT'), ['KUBE-FIREWALL', 'KUBE-PROXY-FIREWALL', 'KUBE-SERVICES']);
    for (const table of ['mangle', 'nat', 'filter'] as const)
      assert.ok(fake.chains('IPv4', table).has('KUBE-PROXY-CANARY'));
    assert.equal(await backend.checkCanary(), true);
  });

  test('a full sync with everything in place runs no base-chain command; a lost jump is put back alone', async () => {
    const { fake, model, sync } = setup();
    putService(model, 'ns', 'a', '198.18.100.1', ['198.19.0.1']);
    await sync(true);
    const filterBefore = fake.dump('IPv4', 'filter');
    fake.calls.length = 0;
    await sync(true);
    assert.deepEqual(
      fake.calls.map((c) => c.cmd).filter((c) => c !== 'flock'),
      ['iptables-save', 'iptables-restore'],
    );
    assert.equal(fake.dump('IPv4', 'filter'), filterBefore, 'no jump was duplicated');

    fake.inject(
      'IPv4',
      '-t nat -D PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES',
    );
    fake.calls.length = 0;
    await sync(true);
    const ensure = fake.restores.at(-2)?.input ?? '';
    assert.equal(
      ensure,
      '*nat\n-I PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES\nCOMMIT\n',
    );
    assert.deepEqual(fake.chains('IPv4', 'nat').get('PREROUTING'), [
      ['-m', 'comment', '--comment', 'kubernetes service portals', '-j', 'KUBE-SERVICES'],
    ]);
  });

  test('when iptables-save fails, the base chains are still ensured one command at a time', async () => {
    const clock = new FakeClock();
    const inner = new FakeIptables({ clock });
    const failingSave = {
      run: (cmd: string, args: readonly string[], options?: { stdin?: string }) =>
        cmd === 'iptables-save' && args.length === 0
          ? Promise.resolve({ code: 1, stdout: '', stderr: 'boom' })
          : inner.run(cmd, args, options),
    };
    const node = testNode();
    const backend = new IptablesBackend({ node, commands: failingSave, clock, iptables: EXTRAS });
    const model = new ModelCluster('IPv4', 'node-a');
    putService(model, 'ns', 'a', '198.18.100.1', ['198.19.0.1']);
    const { snapshot, changedServices } = model.checkout();
    await backend.sync(snapshot, { full: true, changedServices });
    assert.ok(inner.calls.some((c) => c.cmd === 'iptables' && c.args.includes('-I')));
    assert.equal(await backend.checkCanary(), true);
  });
});

describe('the text cache', () => {
  /** A small deterministic PRNG, so a failing sequence can be replayed. */
  function lcg(seed: number): () => number {
    let x = seed;
    return () => {
      x = (Math.imul(x, 1103515245) + 12345) >>> 0;
      return x / 2 ** 32;
    };
  }

  test('partial syncs through adds, deletes, renames of order, endpoint and Service changes leave the kernel exactly as a fresh full sync would', async () => {
    const { fake, model, sync } = setup();
    const rand = lcg(7);
    const live = new Set<number>();
    // Names chosen so that new Services sort between existing ones (svc-00 … svc-29, added in random order).
    const name = (i: number): string => `svc-${String(i).padStart(2, '0')}`;
    const upsert = (i: number, variant: number): void => {
      const nodePort = variant % 3 === 0;
      model.upsertService(
        svc('ns', name(i), `198.18.100.${i + 1 + (variant % 2) * 100}`, {
          type: nodePort ? 'NodePort' : 'ClusterIP',
          ports: [{ name: 'p80', port: 80, protocol: 'TCP', ...(nodePort ? { nodePort: 30000 + i } : {}) }],
          ...(variant % 4 === 1 ? { externalIPs: [`198.18.200.${i + 1}`] } : {}),
        }),
      );
    };
    const setEndpoints = (i: number, n: number): void => {
      const ips = Array.from({ length: n }, (_, e) => `198.19.${i}.${e + 1 + Math.floor(rand() * 3) * 10}`);
      model.upsertSlice(slice('ns', name(i), ips, 'node-a'));
    };
    for (let i = 0; i < 30; i += 3) {
      upsert(i, 0);
      setEndpoints(i, 2);
      live.add(i);
    }
    await sync(true);

    for (let step = 0; step < 60; step++) {
      const i = Math.floor(rand() * 30);
      const r = rand();
      if (!live.has(i)) {
        upsert(i, Math.floor(rand() * 8));
        setEndpoints(i, Math.floor(rand() * 3));
        live.add(i);
      } else if (r < 0.25) {
        model.deleteService(`ns/${name(i)}`);
        setEndpoints(i, 0);
        live.delete(i);
      } else if (r < 0.6) {
        setEndpoints(i, Math.floor(rand() * 4));
      } else {
        upsert(i, Math.floor(rand() * 8));
      }
      await sync(false);

      // The reference: the pure renderer's whole ruleset for the same snapshot (its own sort, no cache), restored
      // into an empty fake. Our chains must hold exactly the same rules in the same order.
      const ref = new FakeIptables();
      const { snapshot } = model.checkout();
      const text = renderIptablesRestore(snapshot, testNode(), EXTRAS);
      const applied = await ref.run('iptables-restore', ['--noflush', '--counters'], { stdin: text });
      assert.equal(applied.code, 0, applied.stderr);
      for (const table of ['nat', 'filter'] as const) {
        assert.deepEqual(ourChains(fake, table), ourChains(ref, table), `step ${step}: ${table}`);
      }
    }
  });

  test('a Service whose ClusterIP changes gets its KUBE-SERVICES rule rewritten by a partial sync', async () => {
    const { fake, model, sync } = setup();
    putService(model, 'ns', 'a', '198.18.100.1', ['198.19.0.1']);
    putService(model, 'ns', 'b', '198.18.100.2', ['198.19.0.2']);
    await sync(true);
    model.upsertService(svc('ns', 'a', '198.18.100.9'));
    await sync();
    const input = fake.lastRestore ?? '';
    assert.match(
      input,
      /-A KUBE-SERVICES -m comment --comment "ns\/a:p80 cluster IP" -m tcp -p tcp -d 198\.18\.100\.9 --dport 80 -j KUBE-SVC-/,
    );
    assert.ok(!input.includes('198.18.100.1 '), input);
    assert.match(input, /-d 198\.18\.100\.2 --dport 80 -j KUBE-SVC-/);
  });

  test('kernel phases: jump commands only on full syncs, iptables-save only when scanning', async () => {
    const { backend, model, sync } = setup({ syncPeriodMs: 30_000 });
    putService(model, 'ns', 'a', '198.18.100.1', ['198.19.0.1']);
    await sync(true);
    assert.ok((backend.lastKernelPhases?.jumpsMs ?? 0) > 0);
    assert.ok((backend.lastKernelPhases?.saveMs ?? 0) > 0);
    await sync();
    assert.equal(backend.lastKernelPhases?.jumpsMs, 0);
  });
});
