// serviceCIDRsOf: one family's ranges from ServiceCIDR objects, canonical, sorted, once each.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { serviceCIDRsOf } from '../../packages/agent/src/model/service-cidrs.js';

test('serviceCIDRsOf keeps one family, canonical and sorted, and skips what does not parse', () => {
  const objects = [
    { metadata: { name: 'kubernetes' }, spec: { cidrs: ['198.19.0.0/16', '2001:db8:ff::/108'] } },
    { metadata: { name: 'extra' }, spec: { cidrs: ['198.18.128.0/20', ' 198.19.0.0/16 ', 'nonsense', 42] } },
    { metadata: { name: 'empty' } },
  ] as never[];
  assert.deepEqual(serviceCIDRsOf(objects, 'IPv4'), ['198.18.128.0/20', '198.19.0.0/16']);
  assert.deepEqual(serviceCIDRsOf(objects, 'IPv6'), ['2001:db8:ff::/108']);
  assert.deepEqual(serviceCIDRsOf([], 'IPv4'), []);
});
