// Which IP families the agent runs a proxier for, and which is primary (owns the Services' health-check servers):
// the first address's family, bindAddress first when it names an address, the other family when the node has one.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { nodeAddressFamilies } from '../../packages/agent/src/model/node-facts.js';

test('single-stack: one family, the node IPs as they are', () => {
  assert.deepEqual(nodeAddressFamilies('0.0.0.0', ['198.18.0.2']), {
    ips: ['198.18.0.2'],
    primary: 'IPv4',
    families: ['IPv4'],
  });
});

test('dual-stack: the first address decides the primary family; the other follows', () => {
  assert.deepEqual(nodeAddressFamilies('::', ['2001:db8::2', '198.18.0.2']).families, ['IPv6', 'IPv4']);
  assert.deepEqual(nodeAddressFamilies('0.0.0.0', ['198.18.0.2', '2001:db8::2']).families, ['IPv4', 'IPv6']);
});

test('a bindAddress that names an address goes first and can make its family primary', () => {
  const r = nodeAddressFamilies('2001:db8::9', ['198.18.0.2']);
  assert.deepEqual(r.ips, ['2001:db8::9', '198.18.0.2']);
  assert.equal(r.primary, 'IPv6');
  assert.deepEqual(r.families, ['IPv6', 'IPv4']);
});

test('no usable address: IPv4 alone, as upstream defaults', () => {
  assert.deepEqual(nodeAddressFamilies('0.0.0.0', []), { ips: [], primary: 'IPv4', families: ['IPv4'] });
});
