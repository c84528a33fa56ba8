import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Endpoint } from '../../packages/agent/src/model/endpoint.js';
import { endpointOf, servicePortOf } from '../helpers/model-values.js';
import type { ServicePort } from '../../packages/agent/src/model/service-port.js';
import {
  categorizeEndpoints,
  topologyDecision,
  topologyModeFromHints,
} from '../../packages/agent/src/model/topology.js';

const e = endpointOf;
const port = servicePortOf;

const NODE = { nodeName: 'node-a', zone: 'zone-a' };

const ips = (eps: readonly Endpoint[] | null): string[] | null =>
  eps === null ? null : eps.map((x) => x.ip).sort();

describe('§4 topologyModeFromHints / §10.3 hints', () => {
  const cases: readonly {
    name: string;
    eps: Endpoint[];
    node?: { nodeName: string; zone?: string };
    gate?: boolean;
    want: '' | 'PreferSameNode' | 'PreferSameZone';
  }[] = [
    { name: 'no ready endpoints → none', eps: [e('10.0.0.1', 'st', { zones: ['zone-a'] })], want: '' },
    {
      name: 'node hints everywhere and one for me, gate on → PreferSameNode',
      eps: [
        e('10.0.0.1', 'rs', { nodes: ['node-a'], zones: ['zone-a'] }),
        e('10.0.0.2', 'rs', { nodes: ['node-b'], zones: ['zone-a'] }),
      ],
      want: 'PreferSameNode',
    },
    {
      name: 'node hints for me but gate off → zone check',
      eps: [
        e('10.0.0.1', 'rs', { nodes: ['node-a'], zones: ['zone-a'] }),
        e('10.0.0.2', 'rs', { nodes: ['node-b'], zones: ['zone-b'] }),
      ],
      gate: false,
      want: 'PreferSameZone',
    },
    {
      name: 'node hints everywhere but none for me → falls through to zone',
      eps: [
        e('10.0.0.1', 'rs', { nodes: ['node-b'], zones: ['zone-a'] }),
        e('10.0.0.2', 'rs', { nodes: ['node-c'], zones: ['zone-b'] }),
      ],
      want: 'PreferSameZone',
    },
    {
      name: 'one ready endpoint lacks a node hint → zone check',
      eps: [
        e('10.0.0.1', 'rs', { nodes: ['node-a'], zones: ['zone-a'] }),
        e('10.0.0.2', 'rs', { zones: ['zone-b'] }),
      ],
      want: 'PreferSameZone',
    },
    {
      name: 'only ready endpoints are examined: an unhinted not-ready endpoint does not matter',
      eps: [e('10.0.0.1', 'rs', { zones: ['zone-a'] }), e('10.0.0.2', 's')],
      want: 'PreferSameZone',
    },
    {
      name: 'a ready endpoint lacks a zone hint → none',
      eps: [e('10.0.0.1', 'rs', { zones: ['zone-a'] }), e('10.0.0.2', 'rs')],
      want: '',
    },
    {
      name: 'zone hints everywhere, none for my zone → none',
      eps: [e('10.0.0.1', 'rs', { zones: ['zone-b'] }), e('10.0.0.2', 'rs', { zones: ['zone-c'] })],
      want: '',
    },
    {
      name: 'node without a zone label → none',
      eps: [e('10.0.0.1', 'rs', { zones: ['zone-a'] })],
      node: { nodeName: 'node-a' },
      want: '',
    },
  ];
  for (const c of cases) {
    test(`§10.3 ${c.name}`, () => {
      assert.equal(
        topologyModeFromHints(c.eps, c.node ?? NODE, { preferSameTrafficDistribution: c.gate ?? true }),
        c.want,
      );
    });
  }
});

describe('§4 categorizeEndpoints', () => {
  test('zero endpoints → nil/false everywhere', () => {
    const r = categorizeEndpoints([], port({ internalPolicyLocal: true }), NODE);
    assert.deepEqual(r, {
      clusterEndpoints: null,
      localEndpoints: null,
      allReachableEndpoints: [],
      hasAnyEndpoints: false,
      topology: { mode: '' },
      clusterFellBack: false,
      localFellBack: false,
    });
  });

  const ready = [e('10.0.0.1', 'rsl'), e('10.0.0.2', 'rs'), e('10.0.0.3', 'st'), e('10.0.0.4', '')];
  const cases: readonly {
    name: string;
    eps: Endpoint[];
    sp: Partial<ServicePort>;
    cluster: string[] | null;
    local: string[] | null;
    all: string[];
    any: boolean;
    node?: { nodeName: string; zone?: string };
  }[] = [
    {
      name: 'ITP Cluster, not external: cluster = ready endpoints; Local unused',
      eps: ready,
      sp: {},
      cluster: ['10.0.0.1', '10.0.0.2'],
      local: null,
      all: ['10.0.0.1', '10.0.0.2'],
      any: true,
    },
    {
      name: 'ITP Local, not external: Cluster unused; local = local ready',
      eps: ready,
      sp: { internalPolicyLocal: true },
      cluster: null,
      local: ['10.0.0.1'],
      all: ['10.0.0.1'],
      any: true,
    },
    {
      name: 'ETP Local with a NodePort: both sets; no topology, local did not fall back → all = cluster',
      eps: ready,
      sp: { externalPolicyLocal: true, nodePort: 30080 },
      cluster: ['10.0.0.1', '10.0.0.2'],
      local: ['10.0.0.1'],
      all: ['10.0.0.1', '10.0.0.2'],
      any: true,
    },
    {
      name: 'ETP Local by type, no external frontend of this family: Local unused',
      eps: ready,
      sp: { externalPolicyLocal: true },
      cluster: ['10.0.0.1', '10.0.0.2'],
      local: null,
      all: ['10.0.0.1', '10.0.0.2'],
      any: true,
    },
    {
      name: 'ITP Local with externalIP, ETP Cluster: both sets',
      eps: ready,
      sp: { internalPolicyLocal: true, externalIPs: ['198.18.9.9'] },
      cluster: ['10.0.0.1', '10.0.0.2'],
      local: ['10.0.0.1'],
      all: ['10.0.0.1', '10.0.0.2'],
      any: true,
    },
    {
      name: 'terminating fallback: no ready endpoints anywhere → serving+terminating, ignoring topology',
      eps: [
        e('10.0.0.1', 'st', { zones: ['zone-b'] }),
        e('10.0.0.2', 'stl', { zones: ['zone-b'] }),
        e('10.0.0.3', 't'),
      ],
      sp: {},
      cluster: ['10.0.0.1', '10.0.0.2'],
      local: null,
      all: ['10.0.0.1', '10.0.0.2'],
      any: true,
    },
    {
      name: 'nothing ready or serving-terminating → hasAnyEndpoints false',
      eps: [e('10.0.0.1', ''), e('10.0.0.2', 't'), e('10.0.0.3', 's')],
      sp: {},
      cluster: [],
      local: null,
      all: [],
      any: false,
    },
    {
      name: 'ITP Local, no local endpoints, ready endpoints elsewhere → hasAny true, local empty',
      eps: [e('10.0.0.2', 'rs')],
      sp: { internalPolicyLocal: true },
      cluster: null,
      local: [],
      all: [],
      any: true,
    },
    {
      name: 'ITP Local, only remote serving-terminating → hasAny true, local empty',
      eps: [e('10.0.0.2', 'st')],
      sp: { internalPolicyLocal: true },
      cluster: null,
      local: [],
      all: [],
      any: true,
    },
    {
      name: 'ITP Local, nothing usable anywhere → hasAny false',
      eps: [e('10.0.0.2', 's'), e('10.0.0.1', 'l')],
      sp: { internalPolicyLocal: true },
      cluster: null,
      local: [],
      all: [],
      any: false,
    },
    {
      name: 'Local set falls back to local serving+terminating; all = union with cluster',
      eps: [e('10.0.0.1', 'stl'), e('10.0.0.2', 'rs')],
      sp: { externalPolicyLocal: true, nodePort: 30080 },
      cluster: ['10.0.0.2'],
      local: ['10.0.0.1'],
      all: ['10.0.0.1', '10.0.0.2'],
      any: true,
    },
    {
      name: 'zone hints narrow the Cluster set only; the Local set never uses hints; all = union',
      eps: [
        e('10.0.0.1', 'rs', { zones: ['zone-a'] }),
        e('10.0.0.2', 'rsl', { zones: ['zone-b'] }),
        e('10.0.0.3', 'rs', { zones: ['zone-b'] }),
      ],
      sp: { externalPolicyLocal: true, loadBalancerVIPs: ['198.18.5.5'] },
      cluster: ['10.0.0.1'],
      local: ['10.0.0.2'],
      all: ['10.0.0.1', '10.0.0.2'],
      any: true,
    },
    {
      name: 'ITP Local ignores hints entirely',
      eps: [e('10.0.0.1', 'rs', { zones: ['zone-a'] }), e('10.0.0.2', 'rsl', { zones: ['zone-b'] })],
      sp: { internalPolicyLocal: true },
      cluster: null,
      local: ['10.0.0.2'],
      all: ['10.0.0.2'],
      any: true,
    },
    {
      name: 'node hints: only endpoints hinted for this node',
      eps: [
        e('10.0.0.1', 'rsl', { nodes: ['node-a'], zones: ['zone-a'] }),
        e('10.0.0.2', 'rs', { nodes: ['node-b'], zones: ['zone-a'] }),
      ],
      sp: {},
      cluster: ['10.0.0.1'],
      local: null,
      all: ['10.0.0.1'],
      any: true,
    },
    {
      name: 'zone mode: ready endpoints hinted for my zone; not-ready ones never included',
      eps: [
        e('10.0.0.1', 'rs', { zones: ['zone-a'] }),
        e('10.0.0.2', 'rs', { zones: ['zone-b'] }),
        e('10.0.0.3', 's', { zones: ['zone-a'] }),
      ],
      sp: {},
      cluster: ['10.0.0.1'],
      local: null,
      all: ['10.0.0.1'],
      any: true,
    },
    {
      name: 'a missing hint anywhere → every ready endpoint',
      eps: [e('10.0.0.1', 'rs', { zones: ['zone-a'] }), e('10.0.0.2', 'rs')],
      sp: {},
      cluster: ['10.0.0.1', '10.0.0.2'],
      local: null,
      all: ['10.0.0.1', '10.0.0.2'],
      any: true,
    },
  ];
  for (const c of cases) {
    test(c.name, () => {
      const r = categorizeEndpoints(c.eps, port(c.sp), c.node ?? NODE);
      assert.deepEqual(ips(r.clusterEndpoints), c.cluster);
      assert.deepEqual(ips(r.localEndpoints), c.local);
      assert.deepEqual(ips(r.allReachableEndpoints), c.all);
      assert.equal(r.hasAnyEndpoints, c.any);
    });
  }

  test('§10.3 node-hint mode is used only with the PreferSameTrafficDistribution gate', () => {
    const eps = [
      e('10.0.0.1', 'rs', { nodes: ['node-a'], zones: ['zone-a'] }),
      e('10.0.0.2', 'rs', { nodes: ['node-b'], zones: ['zone-a'] }),
    ];
    const off = categorizeEndpoints(eps, port(), NODE, { preferSameTrafficDistribution: false });
    assert.deepEqual(ips(off.clusterEndpoints), ['10.0.0.1', '10.0.0.2']); // zone mode: both in zone-a
  });

  test('allReachableEndpoints union has no duplicates', () => {
    const eps = [e('10.0.0.1', 'rsl', { zones: ['zone-a'] }), e('10.0.0.2', 'rs', { zones: ['zone-b'] })];
    const r = categorizeEndpoints(eps, port({ externalPolicyLocal: true, nodePort: 30000 }), NODE);
    assert.deepEqual(
      r.allReachableEndpoints.map((x) => x.endpoint),
      ['10.0.0.1:80'],
    );
  });
});

describe('topologyDecision: why hints were not used', () => {
  const hinted = (ip: string, zones: string[]) => e(ip, 'rs', { zones });
  const cases: readonly { name: string; eps: Endpoint[]; want: ReturnType<typeof topologyDecision> }[] = [
    {
      name: 'hints used: no reason',
      eps: [hinted('10.0.0.1', ['zone-a'])],
      want: { mode: 'PreferSameZone' },
    },
    {
      name: 'no hints at all: no reason either (nothing was ignored)',
      eps: [e('10.0.0.1', 'rs')],
      want: { mode: '' },
    },
    {
      name: 'one ready endpoint without a hint: all hints ignored',
      eps: [hinted('10.0.0.1', ['zone-a']), e('10.0.0.2', 'rs')],
      want: { mode: '', hintsIgnored: 'not-all-hinted' },
    },
    {
      name: 'every endpoint hinted, none for this zone',
      eps: [hinted('10.0.0.1', ['zone-b']), hinted('10.0.0.2', ['zone-c'])],
      want: { mode: '', hintsIgnored: 'none-for-this-node' },
    },
    {
      name: 'an unhinted endpoint that is not ready does not count',
      eps: [hinted('10.0.0.1', ['zone-a']), e('10.0.0.2', 'st')],
      want: { mode: 'PreferSameZone' },
    },
  ];
  for (const c of cases) {
    test(c.name, () => assert.deepEqual(topologyDecision(c.eps, NODE), c.want));
  }
});
