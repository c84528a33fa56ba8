import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  expandPrimary,
  nodePortAddressesFor,
  nodePortIPs,
} from '../../packages/agent/src/model/nodeport-addresses.js';

describe('nodePortAddressesFor', () => {
  const cases: readonly {
    name: string;
    family: 'IPv4' | 'IPv6';
    input: string[] | null | undefined;
    cidrs: string[];
    matchAll: boolean;
    loopback: boolean;
    problems?: RegExp;
  }[] = [
    {
      name: 'null → match all (IPv4), which contains 127.0.0.1',
      family: 'IPv4',
      input: null,
      cidrs: ['0.0.0.0/0'],
      matchAll: true,
      loopback: true,
    },
    {
      name: 'undefined → match all (IPv6)',
      family: 'IPv6',
      input: undefined,
      cidrs: ['::/0'],
      matchAll: true,
      loopback: false,
    },
    {
      name: 'per-family filtering, canonical and masked',
      family: 'IPv4',
      input: ['198.18.1.7/24', '2001:db8::/64', ' 010.0.0.0/8 '],
      cidrs: ['198.18.1.0/24', '10.0.0.0/8'],
      matchAll: false,
      loopback: false,
    },
    {
      name: 'nothing of this family left → match all',
      family: 'IPv6',
      input: ['198.18.1.0/24'],
      cidrs: ['::/0'],
      matchAll: true,
      loopback: false,
    },
    {
      name: 'loopback CIDR',
      family: 'IPv4',
      input: ['127.0.0.0/8'],
      cidrs: ['127.0.0.0/8'],
      matchAll: false,
      loopback: true,
    },
    {
      name: 'a loopback /32 other than 127.0.0.1',
      family: 'IPv4',
      input: ['127.0.0.2/32'],
      cidrs: ['127.0.0.2/32'],
      matchAll: false,
      loopback: true,
    },
    {
      name: 'explicit zero CIDR among others',
      family: 'IPv4',
      input: ['198.18.0.0/16', '0.0.0.0/0'],
      cidrs: ['198.18.0.0/16', '0.0.0.0/0'],
      matchAll: true,
      loopback: true,
    },
    {
      name: 'invalid entries reported; "primary" must be expanded first',
      family: 'IPv4',
      input: ['bogus', 'primary', '198.18.0.0/16'],
      cidrs: ['198.18.0.0/16'],
      matchAll: false,
      loopback: false,
      problems:
        /nodePortAddresses\[0\] "bogus" is not a CIDR[\s\S]*nodePortAddresses\[1\] "primary".*expandPrimary/,
    },
  ];
  for (const c of cases) {
    test(c.name, () => {
      const { value, problems } = nodePortAddressesFor(c.family, c.input);
      assert.deepEqual(value, {
        family: c.family,
        cidrs: c.cidrs,
        matchAll: c.matchAll,
        containsIPv4Loopback: c.loopback,
      });
      if (c.problems) assert.match(problems.join('\n'), c.problems);
      else assert.deepEqual(problems, []);
    });
  }
});

describe('expandPrimary', () => {
  test('§10.9 ["primary"] → first IPv4 node IP /32 and first IPv6 node IP /128', () => {
    assert.deepEqual(expandPrimary(['primary'], ['198.18.0.2', '198.18.0.3', '2001:db8::2']), [
      '198.18.0.2/32',
      '2001:db8::2/128',
    ]);
    assert.deepEqual(expandPrimary(['primary'], ['2001:DB8::0:2']), ['2001:db8::2/128']);
  });
  test('loopback node IPs are omitted (nothing left means match-all later)', () => {
    assert.deepEqual(expandPrimary(['primary'], ['127.0.0.1', '::1']), []);
    assert.equal(
      nodePortAddressesFor('IPv4', expandPrimary(['primary'], ['127.0.0.1'])).value.matchAll,
      true,
    );
  });
  test('anything other than exactly ["primary"] is returned unchanged', () => {
    assert.deepEqual(expandPrimary(['198.18.0.0/16'], ['198.18.0.2']), ['198.18.0.0/16']);
    assert.deepEqual(expandPrimary([], ['198.18.0.2']), []);
  });
});

describe('nodePortIPs', () => {
  const host = new Map<string, readonly string[]>([
    ['lo', ['127.0.0.1/8', '::1/128']],
    ['eth0', ['198.18.0.2/24', '2001:db8::2/64', 'fe80::1/64']],
    ['eth1', ['198.19.0.2/24']],
  ]);
  test('addresses inside the CIDRs, this family only, canonical, de-duplicated', () => {
    const npa = nodePortAddressesFor('IPv4', ['198.18.0.0/15']).value;
    assert.deepEqual(nodePortIPs(npa, host), ['198.18.0.2', '198.19.0.2']);
  });
  test('loopback only when a CIDR contains it', () => {
    assert.deepEqual(nodePortIPs(nodePortAddressesFor('IPv4', ['198.18.0.0/24']).value, host), [
      '198.18.0.2',
    ]);
    assert.deepEqual(
      nodePortIPs(nodePortAddressesFor('IPv4', ['127.0.0.0/8', '198.18.0.0/24']).value, host),
      ['127.0.0.1', '198.18.0.2'],
    );
    assert.deepEqual(nodePortIPs(nodePortAddressesFor('IPv4', null).value, host), [
      '127.0.0.1',
      '198.18.0.2',
      '198.19.0.2',
    ]);
  });
  test('IPv6', () => {
    assert.deepEqual(nodePortIPs(nodePortAddressesFor('IPv6', ['2001:db8::/32']).value, host), [
      '2001:db8::2',
    ]);
  });
});
