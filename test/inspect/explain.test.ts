// `explain -o json`, end to end from manifests: the topology experiment's predictions (one Service, six endpoints
// over two nodes in two zones) under each traffic policy, with and without hints, and with only terminating
// endpoints; then bad input.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { explainCommand } from '../../packages/agent/src/cli/explain.js';
import { recordingFileIO } from '../helpers/command-io.js';

interface Endpoint6 {
  ip: string;
  node: 'node-a' | 'node-b';
  ready?: boolean;
  serving?: boolean;
  terminating?: boolean;
  zone?: string;
}

// Two nodes, two zones; endpoints 1.x on node-a (zone-a), 2.x on node-b (zone-b).
const SIX: Endpoint6[] = [
  { ip: '198.19.1.1', node: 'node-a', zone: 'zone-a' },
  { ip: '198.19.1.2', node: 'node-a', zone: 'zone-a' },
  { ip: '198.19.1.3', node: 'node-a', zone: 'zone-a', ready: false, serving: true, terminating: true },
  { ip: '198.19.2.1', node: 'node-b', zone: 'zone-b' },
  { ip: '198.19.2.2', node: 'node-b', zone: 'zone-b', ready: false, serving: false, terminating: false },
  { ip: '198.19.2.3', node: 'node-b', zone: 'zone-b' },
];

function node(name: string, zone: string, ip: string): object {
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name, labels: { 'topology.kubernetes.io/zone': zone } },
    status: { addresses: [{ type: 'InternalIP', address: ip }] },
  };
}

function state(opts: { spec?: Record<string, unknown>; endpoints?: Endpoint6[]; hints?: boolean }): string {
  const items = [
    node('node-a', 'zone-a', '198.18.0.2'),
    node('node-b', 'zone-b', '198.18.0.3'),
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { namespace: 'demo', name: 'web' },
      spec: {
        type: 'NodePort',
        clusterIP: '198.18.100.10',
        ports: [{ name: 'http', port: 80, protocol: 'TCP', nodePort: 30080 }],
        ...opts.spec,
      },
    },
    {
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: { namespace: 'demo', name: 'web-1', labels: { 'kubernetes.io/service-name': 'web' } },
      addressType: 'IPv4',
      ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
      endpoints: (opts.endpoints ?? SIX).map((e) => ({
        addresses: [e.ip],
        nodeName: e.node,
        zone: e.zone,
        conditions: {
          ready: e.ready ?? true,
          serving: e.serving ?? e.ready ?? true,
          terminating: e.terminating ?? false,
        },
        ...(opts.hints === true && e.zone !== undefined ? { hints: { forZones: [{ name: e.zone }] } } : {}),
      })),
    },
  ];
  return JSON.stringify({ apiVersion: 'v1', kind: 'List', items });
}

interface Explained {
  service: string;
  nodes: {
    node: string;
    ports: {
      internal: Direction;
      external?: Direction;
    }[];
  }[];
}
interface Direction {
  policy: string;
  endpoints: string[];
  excluded: { endpoint: string; reason: string }[];
  noEndpoints?: { verdict: string; why: string };
  notes: string[];
}

async function run(args: string[], manifest: string): Promise<{ code: number; out: string; err: string }> {
  const { io, printed } = recordingFileIO({ 'state.json': manifest }, 'test-host');
  const code = await explainCommand(args, { ...io, env: {} });
  return { code, out: printed.stdout, err: printed.stderr };
}

async function explainJSON(manifest: string, extra: string[] = []): Promise<Explained> {
  const r = await run(
    [
      'service',
      'web',
      '-n',
      'demo',
      '-f',
      'state.json',
      '-o',
      'json',
      '--cluster-cidr',
      '198.19.0.0/16',
      ...extra,
    ],
    manifest,
  );
  assert.equal(r.code, 0, r.err);
  return JSON.parse(r.out) as Explained;
}

/** One node's view: endpoints and excluded reasons per direction, as the prediction table writes them. */
function view(e: Explained, nodeName: string): { internal: Direction; external: Direction | undefined } {
  const n = e.nodes.find((x) => x.node === nodeName);
  assert.ok(n !== undefined, `node ${nodeName} explained`);
  const p = n.ports[0];
  assert.ok(p !== undefined);
  return { internal: p.internal, external: p.external };
}

const NOT_READY = 'not ready';
const TERMINATING = 'terminating (still serving), and ready endpoints exist';
const ELSEWHERE = 'on another node, and the traffic policy is Local';

describe('explain: the topology experiment, predicted per node and direction', () => {
  test('Cluster policies, no hints: every ready endpoint from both nodes', async () => {
    const e = await explainJSON(state({}));
    for (const n of ['node-a', 'node-b']) {
      const v = view(e, n);
      const expected = {
        endpoints: ['198.19.1.1:8080', '198.19.1.2:8080', '198.19.2.1:8080', '198.19.2.3:8080'],
        excluded: [
          { endpoint: '198.19.1.3:8080', reason: TERMINATING },
          { endpoint: '198.19.2.2:8080', reason: NOT_READY },
        ],
        notes: [],
        policy: 'Cluster',
      };
      assert.deepEqual(v.internal, expected, n);
      assert.deepEqual(v.external, expected, n);
    }
  });

  test('internalTrafficPolicy Local: ClusterIP traffic stays on the node, external traffic does not', async () => {
    const e = await explainJSON(state({ spec: { internalTrafficPolicy: 'Local' } }));
    assert.deepEqual(view(e, 'node-a').internal, {
      policy: 'Local',
      endpoints: ['198.19.1.1:8080', '198.19.1.2:8080'],
      excluded: [
        { endpoint: '198.19.1.3:8080', reason: TERMINATING },
        { endpoint: '198.19.2.1:8080', reason: ELSEWHERE },
        { endpoint: '198.19.2.2:8080', reason: ELSEWHERE },
        { endpoint: '198.19.2.3:8080', reason: ELSEWHERE },
      ],
      notes: [],
    });
    assert.deepEqual(view(e, 'node-b').internal.endpoints, ['198.19.2.1:8080', '198.19.2.3:8080']);
    assert.deepEqual(view(e, 'node-b').internal.excluded, [
      { endpoint: '198.19.1.1:8080', reason: ELSEWHERE },
      { endpoint: '198.19.1.2:8080', reason: ELSEWHERE },
      { endpoint: '198.19.1.3:8080', reason: ELSEWHERE },
      { endpoint: '198.19.2.2:8080', reason: NOT_READY },
    ]);
    assert.equal(view(e, 'node-a').external?.policy, 'Cluster');
    assert.equal(view(e, 'node-a').external?.endpoints.length, 4);
  });

  test('externalTrafficPolicy Local: NodePort traffic only to this node, and dropped where there is none', async () => {
    const endpoints = SIX.filter((x) => x.node === 'node-a');
    const e = await explainJSON(state({ spec: { externalTrafficPolicy: 'Local' }, endpoints }));
    assert.deepEqual(view(e, 'node-a').external, {
      policy: 'Local',
      endpoints: ['198.19.1.1:8080', '198.19.1.2:8080'],
      excluded: [{ endpoint: '198.19.1.3:8080', reason: TERMINATING }],
      notes: [],
    });
    const b = view(e, 'node-b');
    assert.deepEqual(b.external?.endpoints, []);
    assert.deepEqual(b.external?.noEndpoints, {
      verdict: 'drop',
      why: 'no endpoint on this node and the policy is Local: external traffic is dropped (the client times out)',
    });
    assert.deepEqual(
      b.internal.endpoints,
      ['198.19.1.1:8080', '198.19.1.2:8080'],
      'ClusterIP is still Cluster',
    );
  });

  test('PreferClose with hints: each zone keeps its own endpoints', async () => {
    const e = await explainJSON(state({ spec: { trafficDistribution: 'PreferClose' }, hints: true }));
    assert.deepEqual(view(e, 'node-a').internal, {
      policy: 'Cluster',
      endpoints: ['198.19.1.1:8080', '198.19.1.2:8080'],
      excluded: [
        { endpoint: '198.19.1.3:8080', reason: TERMINATING },
        { endpoint: '198.19.2.1:8080', reason: "hinted for zone zone-b, not this node's zone zone-a" },
        { endpoint: '198.19.2.2:8080', reason: NOT_READY },
        { endpoint: '198.19.2.3:8080', reason: "hinted for zone zone-b, not this node's zone zone-a" },
      ],
      notes: ['topology hints used: only endpoints hinted for zone zone-a'],
    });
    assert.deepEqual(view(e, 'node-b').internal.endpoints, ['198.19.2.1:8080', '198.19.2.3:8080']);
  });

  test('PreferClose without hints (the controller wrote none): every ready endpoint, no note', async () => {
    const e = await explainJSON(state({ spec: { trafficDistribution: 'PreferClose' }, hints: false }));
    assert.deepEqual(view(e, 'node-a').internal.endpoints, [
      '198.19.1.1:8080',
      '198.19.1.2:8080',
      '198.19.2.1:8080',
      '198.19.2.3:8080',
    ]);
    assert.deepEqual(view(e, 'node-a').internal.notes, []);
  });

  test('hints on all but one ready endpoint: hints ignored, and said so', async () => {
    const endpoints = SIX.map((x) => (x.ip === '198.19.2.3' ? { ...x, zone: undefined } : x));
    const e = await explainJSON(state({ endpoints, hints: true }));
    assert.equal(view(e, 'node-a').internal.endpoints.length, 4);
    assert.deepEqual(view(e, 'node-a').internal.notes, [
      'topology hints ignored: some ready endpoint has no hint, so all ready endpoints are used',
    ]);
  });

  test('only terminating endpoints: the ones still serving take the traffic', async () => {
    const endpoints: Endpoint6[] = [
      { ip: '198.19.1.1', node: 'node-a', ready: false, serving: true, terminating: true },
      { ip: '198.19.1.2', node: 'node-a', ready: false, serving: false, terminating: true },
      { ip: '198.19.2.1', node: 'node-b', ready: false, serving: true, terminating: true },
    ];
    const e = await explainJSON(state({ endpoints }));
    assert.deepEqual(view(e, 'node-a').internal, {
      policy: 'Cluster',
      endpoints: ['198.19.1.1:8080', '198.19.2.1:8080'],
      excluded: [{ endpoint: '198.19.1.2:8080', reason: 'terminating and no longer serving' }],
      notes: ['no endpoint is ready: terminating endpoints that still serve are used'],
    });
  });

  test('no usable endpoint at all: ClusterIP and NodePort traffic are rejected', async () => {
    const endpoints: Endpoint6[] = [{ ip: '198.19.1.1', node: 'node-a', ready: false, serving: false }];
    const v = view(await explainJSON(state({ endpoints })), 'node-a');
    assert.deepEqual(v.internal.noEndpoints, {
      verdict: 'reject',
      why: 'the Service has no usable endpoint anywhere: ClusterIP traffic is rejected (connection refused)',
    });
    assert.deepEqual(v.internal.excluded, [
      { endpoint: '198.19.1.1:8080', reason: 'not ready and not terminating' },
    ]);
    assert.equal(v.external?.noEndpoints?.verdict, 'reject');
  });

  test('--node names one node; the kernel objects are those the node would program', async () => {
    const e = await explainJSON(state({}), ['--node', 'node-b']);
    assert.deepEqual(
      e.nodes.map((n) => n.node),
      ['node-b'],
    );
    const r = await run(['service', 'web', '-n', 'demo', '-f', 'state.json', '--node', 'node-b'], state({}));
    assert.equal(r.code, 0, r.err);
    assert.match(r.out, /^node node-b, zone zone-b \(nftables, IPv4\)$/m);
    assert.match(r.out, /add element ip kube-proxy service-nodeports \{ tcp \. 30080 : goto external-/);
  });
});

describe('explain --proxy-mode ipvs', () => {
  test('Local with no local endpoint: IPVS uses the Cluster set, and says so; the kernel objects are virtual servers', async () => {
    const spec = { externalTrafficPolicy: 'Local' };
    const e = await explainJSON(state({ spec }), ['--proxy-mode', 'ipvs', '--node', 'node-b']);
    const external = view(e, 'node-b').external;
    // node-b's only ready endpoints are its own: Local uses them, as in every mode.
    assert.deepEqual(external?.endpoints, ['198.19.2.1:8080', '198.19.2.3:8080']);
    const onlyA: Endpoint6[] = [{ ip: '198.19.1.1', node: 'node-a', zone: 'zone-a' }];
    const a = await explainJSON(state({ spec, endpoints: onlyA }), [
      '--proxy-mode',
      'ipvs',
      '--node',
      'node-b',
    ]);
    const fallback = view(a, 'node-b').external;
    assert.deepEqual(fallback?.endpoints, ['198.19.1.1:8080'], 'upstream IPVS falls back to the Cluster set');
    assert.equal(fallback?.noEndpoints, undefined, 'not dropped, unlike the rule-based modes');
    assert.match(
      fallback?.notes.join('\n') ?? '',
      /ipvs mode: no local endpoint, so the Cluster endpoints are used/,
    );
    const nft = await explainJSON(state({ spec, endpoints: onlyA }), ['--node', 'node-b']);
    assert.equal(view(nft, 'node-b').external?.noEndpoints?.verdict, 'drop', 'nftables mode drops');

    const r = await run(
      ['service', 'web', '-n', 'demo', '-f', 'state.json', '--node', 'node-b', '--proxy-mode', 'ipvs'],
      state({ spec, endpoints: onlyA }),
    );
    assert.equal(r.code, 0, r.err);
    assert.match(r.out, /^node node-b, zone zone-b \(ipvs, IPv4\)$/m);
    assert.match(
      r.out,
      /-A -t 198\.18\.100\.10:80 -s rr\n\s*-a -t 198\.18\.100\.10:80 -r 198\.19\.1\.1:8080 -m -w 1/,
    );
    assert.match(r.out, /-A -t 198\.18\.0\.3:30080 -s rr/, 'the NodePort on the node address');
    assert.match(r.out, /add KUBE-NODE-PORT-LOCAL-TCP 30080/);
  });
});

describe('explain: bad input', () => {
  const cases: [string, string[], RegExp, number][] = [
    ['unknown Service', ['service', 'nope', '-n', 'demo'], /Service "nope" not found in namespace "demo"/, 1],
    ['unknown namespace', ['service', 'web', '-n', 'other'], /namespace "other" has no Services/, 1],
    ['unknown node', ['service', 'web', '-n', 'demo', '--node', 'node-z'], /node "node-z" not found/, 1],
    ['not a Service', ['pod', 'web'], /only Services can be explained/, 2],
    [
      'bad output',
      ['service', 'web', '-n', 'demo', '-o', 'yaml'],
      /--output: unknown output format "yaml" \(text or json\)/,
      2,
    ],
    [
      'bad mode',
      ['service', 'web', '-n', 'demo', '--proxy-mode', 'ipvsx'],
      /--proxy-mode: unknown mode "ipvsx" \(iptables, nftables or ipvs\)/,
      2,
    ],
  ];
  for (const [name, args, message, code] of cases) {
    test(`${name}: a clear message and exit ${code}`, async () => {
      const r = await run([...args, '-f', 'state.json'], state({}));
      assert.equal(r.code, code);
      assert.match(r.err, message);
      assert.equal(r.out, '');
    });
  }

  test('a file that does not parse', async () => {
    const r = await run(['service', 'web', '-n', 'demo', '-f', 'state.json'], '{"kind": "List", "items": [');
    assert.equal(r.code, 1);
    assert.match(r.err, /^explain: .*state\.json/m);
  });

  test('a file that does not exist', async () => {
    const r = await run(['service', 'web', '-n', 'demo', '-f', 'missing.json'], '');
    assert.equal(r.code, 1);
    assert.match(r.err, /missing\.json/);
  });
});
