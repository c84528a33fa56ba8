// topology-mode Auto's allocation (packages/lab/src/controllers/topology-hints.ts) as upstream's topologycache does
// it: zone shares from the Nodes' allocatable CPU, each ready endpoint serving its own zone, surplus lent to zones
// short of their share, and no hints at all when a zone could get none or the 20% overload threshold would be
// crossed. Also which of the annotation (either spelling) and trafficDistribution decides.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  autoZoneHints,
  cpuMillis,
  hintPolicy,
  zoneShares,
  type HintedEndpoint,
  type ZoneShares,
} from '../../../packages/lab/src/controllers/topology-hints.js';

function node(
  zone: string | undefined,
  cpu: string,
  extra: Record<string, string> = {},
  ready = true,
): object {
  return {
    metadata: { labels: { ...(zone ? { 'topology.kubernetes.io/zone': zone } : {}), ...extra } },
    status: {
      allocatable: { cpu },
      conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }],
    },
  };
}

const shares = (entries: Record<string, number>): ZoneShares => ({
  ok: true,
  shares: new Map(Object.entries(entries)),
});
const ready = (...zones: string[]): HintedEndpoint[] => zones.map((zone) => ({ zone, ready: true }));
const count = (zones: readonly (string | undefined)[]): Record<string, number> => {
  const out: Record<string, number> = {};
  for (const z of zones) if (z) out[z] = (out[z] ?? 0) + 1;
  return out;
};

describe('topology-mode Auto: which zone each endpoint serves', () => {
  const cases: {
    name: string;
    shares: ZoneShares;
    endpoints: HintedEndpoint[];
    /** The hinted zone per endpoint, or the message of the refusal. */
    want: (string | undefined)[] | string;
  }[] = [
    {
      name: 'balanced zones: every endpoint serves its own zone',
      shares: shares({ a: 0.5, b: 0.5 }),
      endpoints: ready('a', 'b', 'a', 'b'),
      want: ['a', 'b', 'a', 'b'],
    },
    {
      name: 'a zone short of its share gets the surplus of another (the first of its endpoints)',
      shares: shares({ a: 0.5, b: 0.5 }),
      endpoints: ready('a', 'a', 'a', 'b'),
      want: ['b', 'a', 'a', 'b'],
    },
    {
      name: 'a zone with no endpoint of its own is lent some (upstream redistributes, it does not give up)',
      shares: shares({ a: 0.5, b: 0.5 }),
      endpoints: ready('a', 'a'),
      want: ['b', 'a'],
    },
    {
      name: 'shares follow CPU: a zone with three times the CPU serves three of four',
      shares: shares({ a: 0.75, b: 0.25 }),
      endpoints: ready('a', 'b', 'b', 'b'),
      want: ['a', 'a', 'a', 'b'],
    },
    {
      name: 'fewer endpoints than zones: no hints',
      shares: shares({ a: 1 / 3, b: 1 / 3, c: 1 / 3 }),
      endpoints: ready('a', 'b'),
      want: 'Insufficient number of endpoints (2 endpoints, 3 zones)',
    },
    {
      name: 'overload beyond 20%: the minimums (2+1+1) need more than the 3 endpoints',
      shares: shares({ a: 0.5, b: 0.25, c: 0.25 }),
      endpoints: ready('a', 'b', 'c'),
      want: 'Unable to allocate minimum required endpoints to each zone without exceeding overload threshold (3 endpoints, 3 zones)',
    },
    {
      name: 'within the threshold: 8 endpoints over 0.5/0.25/0.25 (minimums 4+2+2)',
      shares: shares({ a: 0.5, b: 0.25, c: 0.25 }),
      endpoints: ready('a', 'a', 'a', 'a', 'b', 'b', 'c', 'c'),
      want: ['a', 'a', 'a', 'a', 'b', 'b', 'c', 'c'],
    },
    {
      name: 'a ready endpoint without a zone: no hints',
      shares: shares({ a: 0.5, b: 0.5 }),
      endpoints: [...ready('a', 'b', 'a'), { ready: true }],
      want: 'One or more endpoints do not have a zone specified',
    },
    {
      name: 'endpoints that are not ready get no hint and are not counted',
      shares: shares({ a: 0.5, b: 0.5 }),
      endpoints: [...ready('a', 'b'), { zone: 'a', ready: false }, { ready: false }],
      want: ['a', 'b', undefined, undefined],
    },
    {
      name: 'no usable node information: no hints, with its reason',
      shares: {
        ok: false,
        message: 'Insufficient Node information: allocatable CPU or zone not specified on one or more nodes',
      },
      endpoints: ready('a', 'b'),
      want: 'Insufficient Node information: allocatable CPU or zone not specified on one or more nodes',
    },
  ];
  for (const c of cases)
    test(c.name, () => {
      const got = autoZoneHints(c.endpoints, c.shares);
      if (typeof c.want === 'string') assert.deepEqual(got, { ok: false, message: c.want });
      else assert.deepEqual(got, { ok: true, zones: c.want });
    });

  test('the share a zone serves stays within 20% of its CPU share, endpoint by endpoint', () => {
    const got = autoZoneHints(
      ready(...Array<string>(7).fill('a'), 'b', 'c'),
      shares({ a: 0.4, b: 0.3, c: 0.3 }),
    );
    assert.ok(got.ok);
    // Of 9: a wants 3.6, b and c 2.7 raised to their minimum 3; a lends until less than half an endpoint is left.
    assert.deepEqual(count(got.zones), { a: 4, b: 3, c: 2 });
  });
});

describe('zone shares from the Nodes', () => {
  test('allocatable CPU per zone; control-plane and NotReady nodes do not count', () => {
    const got = zoneShares([
      node('a', '3'),
      node('b', '1000m'),
      node('c', '8', { 'node-role.kubernetes.io/control-plane': '' }),
      node('c', '8', {}, false),
    ] as never[]);
    assert.deepEqual(got, {
      ok: true,
      shares: new Map([
        ['a', 0.75],
        ['b', 0.25],
      ]),
    });
  });
  for (const [name, nodes] of [
    ['a counted node without a zone', [node('a', '2'), node('b', '2'), node(undefined, '2')]],
    ['a counted node without allocatable CPU', [node('a', '2'), node('b', '0')]],
    ['one zone only', [node('a', '2'), node('a', '2')]],
  ] as const)
    test(`${name}: none`, () => {
      const got = zoneShares(nodes as unknown as never[]);
      assert.equal(got.ok, false);
      assert.match(got.ok ? '' : got.message, /^Insufficient Node information/);
    });
  test('CPU quantities', () => {
    assert.deepEqual(['4', '3500m', '0.5', '', 'lots'].map(cpuMillis), [4000, 3500, 500, 0, 0]);
  });
});

describe('which hints a Service asks for', () => {
  const svc = (annotations: Record<string, string>, trafficDistribution?: string): never =>
    ({ metadata: { annotations }, spec: trafficDistribution ? { trafficDistribution } : {} }) as never;
  const cases: [string, Record<string, string>, string | undefined, string][] = [
    ['topology-mode: Auto', { 'service.kubernetes.io/topology-mode': 'Auto' }, undefined, 'auto'],
    [
      'the older spelling, topology-aware-hints: auto',
      { 'service.kubernetes.io/topology-aware-hints': 'auto' },
      undefined,
      'auto',
    ],
    [
      'the annotation wins over trafficDistribution',
      { 'service.kubernetes.io/topology-mode': 'Auto' },
      'PreferClose',
      'auto',
    ],
    ['trafficDistribution alone', {}, 'PreferClose', 'trafficDistribution:PreferClose'],
    ['PreferSameNode', {}, 'PreferSameNode', 'trafficDistribution:PreferSameNode'],
    [
      'topology-mode Disabled leaves trafficDistribution in charge',
      { 'service.kubernetes.io/topology-mode': 'Disabled' },
      'PreferSameZone',
      'trafficDistribution:PreferSameZone',
    ],
    [
      'both keys: the older one decides, even to disable',
      {
        'service.kubernetes.io/topology-aware-hints': 'Disabled',
        'service.kubernetes.io/topology-mode': 'Auto',
      },
      undefined,
      'none',
    ],
    ['an unknown trafficDistribution', {}, 'Elsewhere', 'none'],
    ['nothing asked', {}, undefined, 'none'],
  ];
  for (const [name, annotations, dist, want] of cases)
    test(name, () => {
      const p = hintPolicy(svc(annotations, dist));
      assert.equal(p.kind === 'trafficDistribution' ? `${p.kind}:${p.value}` : p.kind, want);
    });
});
