// What the proxy reads of its Node, as the agent and every command read it: IPs (InternalIP, else ExternalIP),
// pod CIDRs (podCIDRs, else the older podCIDR) and zone.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Node } from '../../packages/agent/src/api/objects.js';
import { nodeFacts, nodeIPs, nodePodCIDRs, nodeZone } from '../../packages/agent/src/model/node-facts.js';

const node = (addresses: { type: string; address: string }[], spec: Node['spec'] = {}): Node => ({
  metadata: { name: 'node-a', resourceVersion: '1' },
  spec,
  status: { addresses },
});

test('node IPs: InternalIP addresses first; ExternalIP only when there is no InternalIP; invalid ones skipped', () => {
  assert.deepEqual(
    nodeIPs(
      node([
        { type: 'Hostname', address: 'node-a' },
        { type: 'ExternalIP', address: '198.19.0.1' },
        { type: 'InternalIP', address: '198.18.0.2' },
        { type: 'InternalIP', address: 'not-an-ip' },
        { type: 'InternalIP', address: '2001:db8::2' },
      ]),
    ),
    ['198.18.0.2', '2001:db8::2'],
  );
  assert.deepEqual(nodeIPs(node([{ type: 'ExternalIP', address: '198.19.0.1' }])), ['198.19.0.1']);
  assert.deepEqual(
    nodeIPs(
      node([
        { type: 'InternalIP', address: 'bad' },
        { type: 'ExternalIP', address: '198.19.0.1' },
      ]),
    ),
    ['198.19.0.1'],
  );
  assert.deepEqual(nodeIPs({ metadata: { name: 'x' } }), []);
  assert.deepEqual(nodeIPs(undefined), []);
});

test('pod CIDRs: spec.podCIDRs, else the single spec.podCIDR, else none', () => {
  assert.deepEqual(
    nodePodCIDRs(node([], { podCIDR: '198.18.10.0/24', podCIDRs: ['198.18.10.0/24', '2001:db8:10::/64'] })),
    ['198.18.10.0/24', '2001:db8:10::/64'],
  );
  // A hand-written manifest with only the older field, or an empty list beside it.
  assert.deepEqual(nodePodCIDRs(node([], { podCIDR: '198.18.10.0/24' })), ['198.18.10.0/24']);
  assert.deepEqual(nodePodCIDRs(node([], { podCIDR: '198.18.10.0/24', podCIDRs: [] })), ['198.18.10.0/24']);
  assert.deepEqual(nodePodCIDRs(node([])), []);
  assert.deepEqual(nodePodCIDRs(undefined), []);
});

test('zone: the topology.kubernetes.io/zone label', () => {
  const zoned: Node = { metadata: { name: 'n', labels: { 'topology.kubernetes.io/zone': 'zone-a' } } };
  assert.equal(nodeZone(zoned), 'zone-a');
  assert.equal(nodeZone({ metadata: { name: 'n', labels: {} } }), undefined);
  assert.deepEqual(
    nodeFacts({ ...zoned, status: { addresses: [{ type: 'ExternalIP', address: '198.18.0.9' }] } }),
    {
      name: 'n',
      ips: ['198.18.0.9'],
      podCIDRs: [],
      zone: 'zone-a',
    },
  );
  assert.deepEqual(nodeFacts(node([{ type: 'InternalIP', address: '198.18.0.2' }])), {
    name: 'node-a',
    ips: ['198.18.0.2'],
    podCIDRs: [],
  });
});
