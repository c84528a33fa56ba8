// The upstream e2e runner's scheduling, against a fake kubectl: at most --parallel tests at once, [Serial] tests
// alone and after the others, results in the registry's order, and not-ported lists that drop what is ported.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readySchedulableNodes, runTests } from './runner.js';
import { NOT_PORTED_TESTS, PORTED_TESTS } from './registry.js';
import { mergeByMode, resultsTable } from './results-table.js';
import type { Kube } from './kube.js';
import type { PortedTest } from './registry-types.js';
import { skipf } from './framework.js';

const READY_NODE = {
  metadata: { name: 'n1' },
  spec: {},
  status: {
    conditions: [{ type: 'Ready', status: 'True' }],
    addresses: [{ type: 'InternalIP', address: '198.18.0.2' }],
  },
};

function fakeKube(): Kube {
  const ok = { code: 0, stdout: '', stderr: '' };
  return {
    list: () => Promise.resolve([READY_NODE]),
    mustRun: () => Promise.resolve(ok),
    run: () => Promise.resolve(ok),
  } as unknown as Kube;
}

/** Tests that record how many run at once; each finishes when the test releases it. */
function recordingTests(n: number, serial: ReadonlySet<number>) {
  let running = 0;
  const seen: { name: string; concurrent: number; serialRunning: boolean }[] = [];
  let serialActive = false;
  const gates: (() => void)[] = [];
  const tests: PortedTest[] = Array.from({ length: n }, (_, i) => ({
    name: `t${i}`,
    conformance: false,
    file: 'service.go',
    ...(serial.has(i) ? { serial: true } : {}),
    run: async () => {
      running += 1;
      if (serial.has(i)) serialActive = true;
      seen.push({ name: `t${i}`, concurrent: running, serialRunning: serialActive });
      // Finish in reverse start order within a batch: later-started tests end first.
      await new Promise<void>((resolve) => gates.push(resolve));
      running -= 1;
      if (serial.has(i)) serialActive = false;
    },
  }));
  const release = (): void => {
    for (const g of gates.splice(0).reverse()) g();
  };
  return { tests, seen, release };
}

test('the runner runs at most --parallel tests at once, [Serial] ones alone and last, and reports in order', async () => {
  const { tests, seen, release } = recordingTests(6, new Set([1, 4]));
  const timer = setInterval(release, 1); // releases whatever has started: the pace of the fake, not a wait
  try {
    const results = await runTests(fakeKube(), tests, { signal: new AbortController().signal, parallel: 3 });
    assert.deepEqual(
      results.map((r) => [r.name, r.outcome]),
      tests.map((t) => [t.name, 'passed']),
    );
  } finally {
    clearInterval(timer);
  }
  assert.ok(Math.max(...seen.map((s) => s.concurrent)) <= 3, 'never more than 3 at once');
  assert.ok(Math.max(...seen.map((s) => s.concurrent)) >= 2, 'more than one at once when parallel');
  const order = seen.map((s) => s.name);
  assert.deepEqual(order.slice(-2), ['t1', 't4'], 'serial tests run after every other');
  for (const s of seen.filter((x) => x.name === 't1' || x.name === 't4')) assert.equal(s.concurrent, 1);
});

test('the runner runs one test at a time by default', async () => {
  const { tests, seen, release } = recordingTests(3, new Set());
  const timer = setInterval(release, 1); // as above
  try {
    await runTests(fakeKube(), tests, { signal: new AbortController().signal });
  } finally {
    clearInterval(timer);
  }
  assert.deepEqual(
    seen.map((s) => s.concurrent),
    [1, 1, 1],
  );
});

test('a test both ported and listed as not ported is reported once, as ported', () => {
  const ported = new Set(PORTED_TESTS.map((t) => t.name));
  assert.equal(ported.size, PORTED_TESTS.length, 'each ported name once');
  for (const t of NOT_PORTED_TESTS) assert.ok(!ported.has(t.name), `${t.name} is ported and not ported`);
  const notPorted = new Set(NOT_PORTED_TESTS.map((t) => t.name));
  assert.equal(notPorted.size, NOT_PORTED_TESTS.length, 'each not-ported name once');
});

test('the results table: one row per test in each mode, not-ported reasons, and counts that keep API-only apart', () => {
  const row = (name: string, outcome: string, extra: object = {}) => ({
    name,
    file: 'service.go',
    conformance: false,
    outcome,
    ...extra,
  });
  const table = resultsTable([
    {
      mode: 'nftables',
      results: [
        row('a', 'passed'),
        row('b', 'passed', { apiOnly: true }),
        row('c', 'not-ported', { message: 'no cloud' }),
        { ...row('own', 'passed'), file: 'kube-proxy-ts' },
      ],
    },
    {
      mode: 'iptables',
      results: [
        row('a', 'failed', { message: 'timed out | twice' }),
        row('b', 'passed', { apiOnly: true }),
        row('c', 'not-ported', { message: 'no cloud' }),
      ],
    },
  ]);
  assert.match(table, /^\| a \| PASS \| FAIL: timed out \\\| twice \|$/m);
  assert.match(table, /^\| b \(API only\) \| PASS \| PASS \|$/m);
  assert.match(table, /^\| c \| no cloud \|$/m);
  assert.match(table, /^\| nftables \| 1 \| 1 \| 0 \| 0 \| 1 \| 1 \|$/m);
  assert.match(table, /^\| iptables \| 0 \| 1 \| 1 \| 0 \| 1 \| 0 \|$/m);
});

/**
 * A fake kubectl whose nodes are `nodes`, whose ServiceCIDRs are `cidrs` and whose kube-proxy ConfigMap holds
 * `proxyConfig` (none when undefined); it records the namespaces created.
 */
function clusterKube(
  nodes: readonly object[],
  cidrs: readonly string[],
  proxyConfig?: string,
): { kube: Kube; namespaces: string[] } {
  const namespaces: string[] = [];
  const ok = { code: 0, stdout: '', stderr: '' };
  const kube = {
    list: (_ns: string, resource: string) =>
      Promise.resolve(
        resource === 'nodes'
          ? nodes
          : [{ spec: { cidrs } }].filter(() => resource.startsWith('servicecidrs')),
      ),
    json: () => Promise.reject(new Error('no dry run here')),
    get: (ns: string, resource: string, name: string) =>
      proxyConfig !== undefined && `${ns}/${resource}/${name}` === 'kube-system/configmap/kube-proxy'
        ? Promise.resolve({ data: { 'config.conf': proxyConfig } })
        : Promise.reject(new Error('not found')),
    mustRun: (args: readonly string[]) => {
      if (args[0] === 'create' && args[1] === 'namespace') namespaces.push(String(args[2]));
      return Promise.resolve('');
    },
    run: () => Promise.resolve(ok),
  } as unknown as Kube;
  return { kube, namespaces };
}

function node(name: string, ips: readonly string[], zone?: string, controlPlane = false): object {
  const labels: Record<string, string> = {};
  if (zone !== undefined) labels['topology.kubernetes.io/zone'] = zone;
  if (controlPlane) labels['node-role.kubernetes.io/control-plane'] = '';
  return {
    metadata: { name, labels },
    spec: {},
    status: {
      conditions: [{ type: 'Ready', status: 'True' }],
      addresses: ips.map((address) => ({ type: 'InternalIP', address })),
    },
  };
}

function requiring(
  name: string,
  requires: PortedTest['requires'],
  ran: string[],
  file = 'service.go',
): PortedTest {
  return {
    name,
    conformance: false,
    file,
    ...(requires ? { requires } : {}),
    run: () => {
      ran.push(name);
      return Promise.resolve();
    },
  };
}

test('a test whose requirement the cluster does not meet is skipped with the reason, never run, never passed', async () => {
  const ipv4Zoned = clusterKube(
    [node('a', ['198.18.0.10'], 'zone-a', true), node('b', ['198.18.0.11'], 'zone-b')],
    ['198.19.0.0/16'],
  );
  const ran: string[] = [];
  const tests = [
    requiring('plain', undefined, ran),
    requiring('dual', ['dual-stack'], ran),
    requiring('zoned', ['zones'], ran),
    requiring('three', ['three-zones'], ran),
    requiring('hints', ['zones', 'worker-zones'], ran),
  ];
  const results = await runTests(ipv4Zoned.kube, tests, { signal: new AbortController().signal });
  assert.deepEqual(
    results.map((r) => [r.name, r.outcome]),
    [
      ['plain', 'passed'],
      ['dual', 'skipped'],
      ['zoned', 'passed'],
      ['three', 'skipped'],
      ['hints', 'skipped'],
    ],
  );
  assert.deepEqual(ran, ['plain', 'zoned']);
  assert.match(results[1]?.message ?? '', /dual-stack/);
  assert.match(results[3]?.message ?? '', /at least 3 zones, the cluster has 2/);
  assert.match(results[4]?.message ?? '', /control-plane/);
});

test('a dual-stack cluster (both families on nodes and in the ServiceCIDRs) runs dual-stack tests', async () => {
  const ran: string[] = [];
  const dual = clusterKube(
    [
      node('a', ['198.18.0.10', '2001:db8::10'], 'zone-a'),
      node('b', ['198.18.0.11', '2001:db8::11'], 'zone-b'),
    ],
    ['198.19.0.0/16', '2001:db8:ff::/112'],
  );
  const results = await runTests(
    dual.kube,
    [requiring('dual', ['dual-stack'], ran), requiring('hints', ['worker-zones'], ran)],
    {
      signal: new AbortController().signal,
    },
  );
  assert.deepEqual(
    results.map((r) => r.outcome),
    ['passed', 'passed'],
  );
  // Nodes of both families but a single-family Service range (and no dry run to say otherwise): not dual-stack.
  const halfway = clusterKube([node('a', ['198.18.0.10', '2001:db8::10'])], ['198.19.0.0/16']);
  const [r] = await runTests(halfway.kube, [requiring('dual', ['dual-stack'], [])], {
    signal: new AbortController().signal,
  });
  assert.equal(r?.outcome, 'skipped');
});

/** `node(…)` with taints on its spec, as `kubectl taint` leaves them. */
function tainted(n: object, taints: readonly { key: string; effect: string; value?: string }[]): object {
  return { ...n, spec: { taints } };
}

const CONTROL_PLANE_NOSCHEDULE = { key: 'node-role.kubernetes.io/control-plane', effect: 'NoSchedule' };

test('the ready schedulable nodes leave out NoSchedule and NoExecute taints, cordoned and not-ready nodes', async () => {
  const notReady = node('f', ['198.18.0.15']) as { status: object };
  const { kube } = clusterKube(
    [
      tainted(node('a', ['198.18.0.10'], 'zone-a', true), [CONTROL_PLANE_NOSCHEDULE]),
      node('b', ['198.18.0.11'], 'zone-b'),
      tainted(node('c', ['198.18.0.12'], 'zone-a'), [{ key: 'soft', effect: 'PreferNoSchedule' }]),
      tainted(node('d', ['198.18.0.13'], 'zone-a'), [{ key: 'gone', value: 'yes', effect: 'NoExecute' }]),
      { ...node('e', ['198.18.0.14']), spec: { unschedulable: true } },
      { ...notReady, status: { ...notReady.status, conditions: [{ type: 'Ready', status: 'False' }] } },
    ],
    [],
  );
  const nodes = await readySchedulableNodes(kube);
  // PreferNoSchedule only steers the scheduler: upstream keeps such a node.
  assert.deepEqual(
    nodes.map((n) => n.name),
    ['b', 'c'],
  );
  assert.deepEqual(nodes[0], {
    name: 'b',
    internalIP: '198.18.0.11',
    internalIPs: ['198.18.0.11'],
    zone: 'zone-b',
  });
});

test('with the control-plane node tainted (a kubeadm cluster, `--control-plane-taint`) the hints test runs', async () => {
  const ran: string[] = [];
  const hints = (): PortedTest => requiring('hints', ['zones', 'worker-zones'], ran, 'topology_hints.go');
  const signal = new AbortController().signal;
  const cp = node('control-plane', ['198.18.0.10'], 'zone-a', true);
  const workers = [node('worker', ['198.18.0.11'], 'zone-b'), node('worker2', ['198.18.0.12'], 'zone-a')];
  const untaintedLab = clusterKube([cp, ...workers], []);
  const [skipped] = await runTests(untaintedLab.kube, [hints()], { signal });
  assert.equal(skipped?.outcome, 'skipped');
  assert.match(skipped?.message ?? '', /--control-plane-taint/);
  const taintedLab = clusterKube([tainted(cp, [CONTROL_PLANE_NOSCHEDULE]), ...workers], []);
  const [passed] = await runTests(taintedLab.kube, [hints()], { signal });
  assert.equal(passed?.outcome, 'passed');
  assert.deepEqual(ran, ['hints']);
  // Tainted, but its one worker leaves a single zone: still skipped.
  const oneWorker = clusterKube([tainted(cp, [CONTROL_PLANE_NOSCHEDULE]), workers[0] as object], []);
  const [single] = await runTests(oneWorker.kube, [hints()], { signal });
  assert.equal(single?.outcome, 'skipped');
  assert.match(single?.message ?? '', /in at least 2 zones/);
});

test("a test that finds the cluster lacking (upstream's Skipf) is reported skipped; namespaces are valid names", async () => {
  const { kube, namespaces } = clusterKube([node('a', ['198.18.0.10'])], []);
  const skipping: PortedTest = {
    name: 'skips',
    conformance: false,
    file: 'traffic_distribution.go',
    run: () => skipf('need at least 3 zones'),
  };
  const [r] = await runTests(kube, [skipping], { signal: new AbortController().signal });
  assert.deepEqual([r?.outcome, r?.message], ['skipped', 'need at least 3 zones']);
  assert.match(namespaces[0] ?? '', /^traffic-distribution-[0-9a-f]{4}$/);
});

test('localhost NodePort tests run only where kube-proxy is configured for iptables mode with localhostNodePorts', async () => {
  const nodes = [node('a', ['198.18.0.10'])];
  const outcome = async (proxyConfig?: string): Promise<string | undefined> => {
    const { kube } = clusterKube(nodes, [], proxyConfig);
    const [r] = await runTests(kube, [requiring('lnp', ['localhost-nodeports'], [])], {
      signal: new AbortController().signal,
    });
    return r?.outcome;
  };
  assert.equal(await outcome('kind: KubeProxyConfiguration\nmode: iptables\n'), 'passed');
  assert.equal(await outcome('kind: KubeProxyConfiguration\nmode: ""\n'), 'passed');
  assert.equal(await outcome('kind: KubeProxyConfiguration\nmode: nftables\n'), 'skipped');
  assert.equal(await outcome('mode: iptables\niptables:\n  localhostNodePorts: false\n'), 'skipped');
  assert.equal(await outcome(undefined), 'skipped');
});

test('every API-only ending names a ported test, and the proxy-dependent ones are the rest', () => {
  const apiOnly = PORTED_TESTS.filter((t) => t.apiOnly === true);
  assert.equal(apiOnly.length, 16, apiOnly.map((t) => t.name).join('\n'));
  assert.ok(
    PORTED_TESTS.some((t) => t.apiOnly !== true && /should serve a basic endpoint from pods/.test(t.name)),
  );
});

test('reports of one mode merge: a later narrow run replaces the results of the tests it ran', () => {
  const row = (name: string, outcome: string) => ({ name, file: 'service.go', conformance: false, outcome });
  const merged = mergeByMode([
    { mode: 'nftables', results: [row('a', 'failed'), row('b', 'passed'), row('c', 'skipped')] },
    { mode: 'iptables', results: [row('a', 'passed')] },
    { mode: 'nftables', results: [row('a', 'passed'), row('c', 'passed'), row('b', 'not-ported')] },
  ]);
  assert.deepEqual(
    merged.map((m) => [m.mode, m.results.map((r) => `${r.name}:${r.outcome}`)]),
    [
      ['nftables', ['a:passed', 'b:passed', 'c:passed']],
      ['iptables', ['a:passed']],
    ],
  );
});
