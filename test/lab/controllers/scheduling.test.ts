// The lab scheduler's filters (controllers/scheduling.ts), case by case, on plain objects: nodeSelector, each
// node affinity operator, terms ORed and expressions ANDed, matchFields, taints and tolerations, pod affinity and
// anti-affinity by hostname and by zone (the incoming Pod's terms and the bound Pods' own), the preferred terms as
// a tie-break, kube-scheduler's message for a Pod that fits nowhere, and which nodes a DaemonSet's Pod belongs on.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { JsonObject } from '../../../packages/lab/src/apiserver/json.js';
import {
  daemonPodPlacement,
  filterReason,
  placePod,
  REASON,
  unschedulableMessage,
  type SchedulingSnapshot,
} from '../../../packages/lab/src/controllers/scheduling.js';

function node(name: string, labels: Record<string, string> = {}, spec: JsonObject = {}): JsonObject {
  return { kind: 'Node', metadata: { name, labels: { 'kubernetes.io/hostname': name, ...labels } }, spec };
}

/** Three nodes, two zones: a and b share zone-1. */
const NODES = [
  node('a', { 'topology.kubernetes.io/zone': 'zone-1', disk: 'ssd', cores: '8' }),
  node('b', { 'topology.kubernetes.io/zone': 'zone-1', disk: 'hdd', cores: '2' }),
  node('c', { 'topology.kubernetes.io/zone': 'zone-2', gpu: '' }),
];

function pod(
  name: string,
  spec: JsonObject = {},
  labels: Record<string, string> = {},
  namespace = 'default',
): JsonObject {
  return { kind: 'Pod', metadata: { name, namespace, uid: `uid-${name}`, labels }, spec };
}

const bound = (p: JsonObject, nodeName: string): JsonObject => ({
  ...p,
  spec: { ...(p.spec as JsonObject), nodeName },
});

function snapshot(boundPods: JsonObject[] = [], nodes = NODES): SchedulingSnapshot {
  const nsLabels: Record<string, JsonObject> = { default: { team: 'x' }, other: { team: 'y' } };
  return { nodes, boundPods, namespaceLabels: (ns) => nsLabels[ns] ?? {} };
}

/** The names of the nodes `p` fits. */
function fits(p: JsonObject, snap = snapshot()): string[] {
  return snap.nodes
    .filter((n) => filterReason(p, n, snap) === undefined)
    .map((n) => String((n.metadata as JsonObject).name));
}

const required = (...terms: JsonObject[]): JsonObject => ({
  affinity: {
    nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: terms } },
  },
});
const expr = (key: string, operator: string, values?: string[]): JsonObject => ({
  key,
  operator,
  ...(values ? { values } : {}),
});
const podTerm = (kind: 'podAffinity' | 'podAntiAffinity', term: JsonObject): JsonObject => ({
  affinity: { [kind]: { requiredDuringSchedulingIgnoredDuringExecution: [term] } },
});
const HOST = 'kubernetes.io/hostname';
const ZONE = 'topology.kubernetes.io/zone';

describe('node selector and node affinity', () => {
  const cases: [string, JsonObject, string[]][] = [
    ['no constraints', {}, ['a', 'b', 'c']],
    ['nodeSelector match', { nodeSelector: { disk: 'ssd' } }, ['a']],
    ['nodeSelector: every pair', { nodeSelector: { disk: 'ssd', [ZONE]: 'zone-2' } }, []],
    ['nodeSelector mismatch', { nodeSelector: { disk: 'nvme' } }, []],
    ['In', required({ matchExpressions: [expr('disk', 'In', ['ssd', 'hdd'])] }), ['a', 'b']],
    [
      'NotIn (a node without the key passes)',
      required({ matchExpressions: [expr('disk', 'NotIn', ['ssd'])] }),
      ['b', 'c'],
    ],
    ['Exists', required({ matchExpressions: [expr('gpu', 'Exists')] }), ['c']],
    ['DoesNotExist', required({ matchExpressions: [expr('gpu', 'DoesNotExist')] }), ['a', 'b']],
    [
      'Gt (integers, not strings: 8 > 4, 2 is not)',
      required({ matchExpressions: [expr('cores', 'Gt', ['4'])] }),
      ['a'],
    ],
    ['Lt', required({ matchExpressions: [expr('cores', 'Lt', ['4'])] }), ['b']],
    ['Gt with a value that is no integer', required({ matchExpressions: [expr('disk', 'Gt', ['1'])] }), []],
    [
      'expressions in a term are ANDed',
      required({ matchExpressions: [expr(ZONE, 'In', ['zone-1']), expr('disk', 'In', ['hdd'])] }),
      ['b'],
    ],
    [
      'terms are ORed',
      required(
        { matchExpressions: [expr('disk', 'In', ['ssd'])] },
        { matchExpressions: [expr('gpu', 'Exists')] },
      ),
      ['a', 'c'],
    ],
    ['matchFields metadata.name', required({ matchFields: [expr('metadata.name', 'In', ['b'])] }), ['b']],
    ['an empty term matches nothing', required({}), []],
    [
      'nodeSelector and affinity both hold',
      {
        nodeSelector: { [ZONE]: 'zone-1' },
        ...required({ matchExpressions: [expr('disk', 'NotIn', ['ssd'])] }),
      },
      ['b'],
    ],
  ];
  for (const [name, spec, want] of cases) test(name, () => assert.deepEqual(fits(pod('p', spec)), want));

  test('a mismatch is reported in kube-scheduler words', () => {
    assert.equal(
      filterReason(pod('p', { nodeSelector: { disk: 'nvme' } }), NODES[0]!, snapshot()),
      REASON.nodeAffinity,
    );
  });
});

describe('taints and tolerations, cordoned nodes', () => {
  const tainted = [
    node('cp', {}, { taints: [{ key: 'node-role.kubernetes.io/control-plane', effect: 'NoSchedule' }] }),
    node('w', {}, { taints: [{ key: 'dedicated', value: 'db', effect: 'PreferNoSchedule' }] }),
    node('cordoned', {}, { unschedulable: true }),
  ];
  const snap = snapshot([], tainted);
  const cases: [string, JsonObject[], string[]][] = [
    ['no tolerations: NoSchedule keeps out, PreferNoSchedule does not', [], ['w']],
    [
      'Exists on the key',
      [{ key: 'node-role.kubernetes.io/control-plane', operator: 'Exists' }],
      ['cp', 'w'],
    ],
    [
      'wrong effect',
      [{ key: 'node-role.kubernetes.io/control-plane', operator: 'Exists', effect: 'NoExecute' }],
      ['w'],
    ],
    ['Equal with the wrong value', [{ key: 'node-role.kubernetes.io/control-plane', value: 'x' }], ['w']],
    ['tolerate everything', [{ operator: 'Exists' }], ['cp', 'w', 'cordoned']],
  ];
  for (const [name, tolerations, want] of cases)
    test(name, () => assert.deepEqual(fits(pod('p', { tolerations }), snap), want));

  test('the reasons name the taint and the cordon', () => {
    const p = pod('p');
    assert.equal(
      filterReason(p, tainted[0]!, snap),
      'node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }',
    );
    assert.equal(filterReason(p, tainted[2]!, snap), REASON.unschedulable);
  });
});

describe('inter-pod affinity', () => {
  const web = (name: string): JsonObject => pod(name, {}, { app: 'web' });
  const antiHost = podTerm('podAntiAffinity', {
    labelSelector: { matchLabels: { app: 'web' } },
    topologyKey: HOST,
  });
  const antiZone = podTerm('podAntiAffinity', {
    labelSelector: { matchLabels: { app: 'web' } },
    topologyKey: ZONE,
  });

  test('anti-affinity by hostname: not beside a matching Pod', () => {
    assert.deepEqual(fits(pod('p', antiHost), snapshot([bound(web('w1'), 'a')])), ['b', 'c']);
  });
  test('anti-affinity by zone: not in a matching Pod zone', () => {
    assert.deepEqual(fits(pod('p', antiZone), snapshot([bound(web('w1'), 'b')])), ['c']);
  });
  test('anti-affinity with matchExpressions; a Pod of another namespace does not count', () => {
    const spec = podTerm('podAntiAffinity', {
      labelSelector: { matchExpressions: [{ key: 'app', operator: 'In', values: ['web', 'api'] }] },
      topologyKey: HOST,
    });
    const others = [
      bound(pod('x', {}, { app: 'api' }), 'a'),
      bound(pod('y', {}, { app: 'web' }, 'other'), 'b'),
    ];
    assert.deepEqual(fits(pod('p', spec), snapshot(others)), ['b', 'c']);
  });
  test('namespaces and namespaceSelector widen a term beyond its own namespace', () => {
    const term = (extra: JsonObject): JsonObject =>
      podTerm('podAntiAffinity', {
        labelSelector: { matchLabels: { app: 'web' } },
        topologyKey: HOST,
        ...extra,
      });
    const others = [bound(pod('y', {}, { app: 'web' }, 'other'), 'b')];
    assert.deepEqual(fits(pod('p', term({ namespaces: ['other'] })), snapshot(others)), ['a', 'c']);
    assert.deepEqual(
      fits(pod('p', term({ namespaceSelector: { matchLabels: { team: 'y' } } })), snapshot(others)),
      ['a', 'c'],
    );
    assert.deepEqual(fits(pod('p', term({ namespaceSelector: {} })), snapshot(others)), ['a', 'c']);
  });
  test('a term without a labelSelector selects no Pods', () => {
    const spec = podTerm('podAntiAffinity', { topologyKey: HOST });
    assert.deepEqual(fits(pod('p', spec), snapshot([bound(web('w1'), 'a')])), ['a', 'b', 'c']);
  });
  test("a bound Pod's own anti-affinity keeps a matching Pod out of its domain", () => {
    const loner = bound(pod('loner', antiZone), 'a');
    const p = web('p');
    assert.deepEqual(fits(p, snapshot([loner])), ['c']);
    assert.equal(filterReason(p, NODES[1]!, snapshot([loner])), REASON.existingAntiAffinity);
  });
  test('affinity co-locates with a matching Pod, by hostname and by zone', () => {
    const cache = bound(pod('cache', {}, { app: 'cache' }), 'b');
    const near = (key: string): JsonObject =>
      podTerm('podAffinity', { labelSelector: { matchLabels: { app: 'cache' } }, topologyKey: key });
    assert.deepEqual(fits(pod('p', near(HOST)), snapshot([cache])), ['b']);
    assert.deepEqual(fits(pod('p', near(ZONE)), snapshot([cache])), ['a', 'b']);
    assert.equal(filterReason(pod('p', near(HOST)), NODES[0]!, snapshot([cache])), REASON.podAffinity);
  });
  test('affinity with no matching Pod: nowhere, unless the Pod matches its own term (the first of a group)', () => {
    const spec = podTerm('podAffinity', {
      labelSelector: { matchLabels: { app: 'web' } },
      topologyKey: ZONE,
    });
    assert.deepEqual(fits(pod('p', spec), snapshot()), []);
    assert.deepEqual(fits(pod('p', spec, { app: 'web' }), snapshot()), ['a', 'b', 'c']);
  });
  test('the Pod itself, already in the snapshot, is not its own neighbour', () => {
    const p = pod('p', antiHost, { app: 'web' });
    assert.deepEqual(fits(p, snapshot([bound(p, 'a')])), ['a', 'b', 'c']);
  });
});

describe('placement and the unschedulable message', () => {
  test("kube-scheduler's FitError text: counted reasons, sorted", () => {
    assert.equal(
      unschedulableMessage(3, [REASON.nodeAffinity, REASON.nodeAffinity, REASON.nodeAffinity]),
      "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector.",
    );
    assert.equal(
      unschedulableMessage(3, [REASON.podAntiAffinity, REASON.nodeAffinity, REASON.podAntiAffinity]),
      "0/3 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 2 node(s) didn't match pod anti-affinity rules.",
    );
    assert.equal(unschedulableMessage(0, []), 'no nodes available to schedule pods');
  });
  test('placePod: a Pod that fits nowhere gets the message', () => {
    assert.deepEqual(placePod(pod('p', { nodeSelector: { disk: 'nvme' } }), snapshot(), 0), {
      message: "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector.",
    });
  });
  test('placePod: round robin over the nodes that fit', () => {
    const p = pod('p', { nodeSelector: { [ZONE]: 'zone-1' } });
    assert.deepEqual(
      [0, 1, 2, 3].map((i) => placePod(p, snapshot(), i).node),
      ['a', 'b', 'a', 'b'],
    );
  });
  test('placePod: preferred terms break ties, weights summed', () => {
    const spec = {
      affinity: {
        nodeAffinity: {
          preferredDuringSchedulingIgnoredDuringExecution: [
            { weight: 10, preference: { matchExpressions: [expr(ZONE, 'In', ['zone-1'])] } },
            { weight: 5, preference: { matchExpressions: [expr('disk', 'In', ['hdd'])] } },
          ],
        },
        podAntiAffinity: {
          preferredDuringSchedulingIgnoredDuringExecution: [
            {
              weight: 50,
              podAffinityTerm: { labelSelector: { matchLabels: { app: 'web' } }, topologyKey: HOST },
            },
          ],
        },
      },
    };
    // b scores 15, a 10, c 0: b wins whatever the rotation.
    assert.deepEqual(
      [0, 1, 2].map((i) => placePod(pod('p', spec), snapshot(), i).node),
      ['b', 'b', 'b'],
    );
    // A web Pod on b costs it 50: a is best now.
    const onB = [bound(pod('w', {}, { app: 'web' }), 'b')];
    assert.equal(placePod(pod('p', spec), snapshot(onB), 0).node, 'a');
  });
});

describe('DaemonSet placement', () => {
  const template = (spec: JsonObject): JsonObject => ({ metadata: { labels: { app: 'd' } }, spec });
  test('node selector and affinity choose the nodes', () => {
    const t = template(required({ matchExpressions: [expr(ZONE, 'In', ['zone-1'])] }));
    assert.deepEqual(
      NODES.map((n) => daemonPodPlacement(t, n).shouldRun),
      [true, true, false],
    );
  });
  test('a cordoned node still runs one; NoSchedule keeps new Pods out but the old one stays; NoExecute evicts', () => {
    const t = template({});
    const place = (spec: JsonObject): object => daemonPodPlacement(t, node('n', {}, spec));
    assert.deepEqual(place({ unschedulable: true }), { shouldRun: true, shouldContinueRunning: true });
    assert.deepEqual(place({ taints: [{ key: 'k', effect: 'NoSchedule' }] }), {
      shouldRun: false,
      shouldContinueRunning: true,
    });
    assert.deepEqual(place({ taints: [{ key: 'k', effect: 'NoExecute' }] }), {
      shouldRun: false,
      shouldContinueRunning: false,
    });
    const tolerant = template({ tolerations: [{ key: 'k', operator: 'Exists' }] });
    assert.equal(
      daemonPodPlacement(tolerant, node('n', {}, { taints: [{ key: 'k', effect: 'NoExecute' }] })).shouldRun,
      true,
    );
  });
});
