import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  cidrContains,
  ipFamilyOf,
  isLoopbackIP,
  parseCIDRSloppy,
  parseIPSloppy,
} from '../../packages/agent/src/model/ip.js';

describe('parseIPSloppy', () => {
  const valid: readonly [string, string, 'IPv4' | 'IPv6'][] = [
    ['10.0.0.1', '10.0.0.1', 'IPv4'],
    // Leading zeros are decimal, never octal (netutils.ParseIPSloppy).
    ['172.30.0.041', '172.30.0.41', 'IPv4'],
    ['010.0.0.1', '10.0.0.1', 'IPv4'],
    ['000.000.000.000', '0.0.0.0', 'IPv4'],
    ['255.255.255.255', '255.255.255.255', 'IPv4'],
    // Edges of the one-pass check for canonical IPv4 (the common case): long and zero-led octets.
    ['0.0.0.0', '0.0.0.0', 'IPv4'],
    ['1.2.3.0', '1.2.3.0', 'IPv4'],
    ['1.2.3.00', '1.2.3.0', 'IPv4'],
    ['1.2.3.0255', '1.2.3.255', 'IPv4'],
    // RFC 5952: lower case, no leading zeros, longest zero run compressed, a single zero group not compressed.
    ['2001:DB8::1', '2001:db8::1', 'IPv6'],
    ['2001:0db8:0000:0000:0000:0000:0000:0001', '2001:db8::1', 'IPv6'],
    ['2001:db8:0:0:1:0:0:1', '2001:db8::1:0:0:1', 'IPv6'],
    ['2001:db8:0:1:1:1:1:1', '2001:db8:0:1:1:1:1:1', 'IPv6'],
    ['2001:0:0:1:0:0:0:1', '2001:0:0:1::1', 'IPv6'],
    ['::', '::', 'IPv6'],
    ['::1', '::1', 'IPv6'],
    ['fe80::', 'fe80::', 'IPv6'],
    ['1:2:3:4:5:6:7:8', '1:2:3:4:5:6:7:8', 'IPv6'],
    ['1:2:3:4:5:6:7::', '1:2:3:4:5:6:7:0', 'IPv6'],
    // IPv4-mapped IPv6 counts as IPv4 (Go's To4()).
    ['::ffff:1.2.3.4', '1.2.3.4', 'IPv4'],
    ['::ffff:0102:0304', '1.2.3.4', 'IPv4'],
    ['::ffff:01.02.03.004', '1.2.3.4', 'IPv4'],
    // An embedded IPv4 that is not mapped stays IPv6 and prints in hex.
    ['64:ff9b::192.0.2.33', '64:ff9b::c000:221', 'IPv6'],
  ];
  const invalid: readonly string[] = [
    '256.0.0.1',
    // Edges of the one-pass check for canonical IPv4: empty, long and malformed octets.
    '1..2.3',
    '.1.2.3',
    '1.2.3.',
    '1.2.3.1000',
    '1.2.3.4a',
    '1.2.3',
    '1.2.3.4.5',
    '1.2.3.-4',
    ' 1.2.3.4',
    '1.2.3.4 ',
    '',
    'not-an-ip',
    '1::2::3',
    '1:2:3:4:5:6:7:8:9',
    '1:2:3:4:5:6:7',
    '12345::',
    '2001:db8::g',
    'fe80::1%eth0',
  ];
  for (const [input, text, family] of valid) {
    test(`${JSON.stringify(input)} → ${text}`, () => {
      assert.deepEqual(parseIPSloppy(input), { text, family });
      assert.equal(ipFamilyOf(input), family);
    });
  }
  for (const input of invalid) {
    test(`${JSON.stringify(input)} → invalid`, () => {
      assert.equal(parseIPSloppy(input), undefined);
      assert.equal(ipFamilyOf(input), undefined);
    });
  }
  test('values that are not strings are not IPs (never throws)', () => {
    for (const v of [null, undefined, 5, {}, ['1.2.3.4']]) {
      assert.equal(parseIPSloppy(v as unknown as string), undefined);
    }
  });
});

describe('parseCIDRSloppy', () => {
  const valid: readonly [string, string][] = [
    ['203.0.113.000/025', '203.0.113.0/25'],
    ['203.0.113.200/25', '203.0.113.128/25'],
    ['10.1.2.3/8', '10.0.0.0/8'],
    ['0.0.0.0/0', '0.0.0.0/0'],
    ['1.2.3.4/32', '1.2.3.4/32'],
    ['2001:DB8::1/32', '2001:db8::/32'],
    ['2001:db8:1:2:3:4:5:6/64', '2001:db8:1:2::/64'],
    ['::/0', '::/0'],
    ['::1/128', '::1/128'],
    ['::ffff:10.1.2.3/104', '10.0.0.0/8'],
  ];
  const invalid = ['1.2.3.4/33', '1.2.3.4', '1.2.3.4/', '1.2.3.4/-1', '1.2.3.4/8/8', '2001:db8::/129'];
  for (const [input, text] of valid) {
    test(`${input} → ${text}`, () => assert.equal(parseCIDRSloppy(input)?.text, text));
  }
  for (const input of invalid) {
    test(`${input} → invalid`, () => assert.equal(parseCIDRSloppy(input), undefined));
  }
  test('fields', () => {
    assert.deepEqual(parseCIDRSloppy('198.18.7.9/16'), {
      family: 'IPv4',
      text: '198.18.0.0/16',
      address: '198.18.0.0',
      prefixLength: 16,
    });
  });
});

describe('cidrContains', () => {
  // Each CIDR with addresses inside it and addresses outside it.
  const cases: readonly { cidr: string; inside: readonly string[]; outside: readonly string[] }[] = [
    {
      cidr: '10.0.0.0/8',
      inside: ['10.255.1.2', '010.1.1.1', '::ffff:10.0.0.1'],
      outside: ['11.0.0.0', 'garbage'],
    },
    { cidr: '198.18.0.0/15', inside: ['198.19.255.255'], outside: ['198.20.0.0'] },
    { cidr: '0.0.0.0/0', inside: ['127.0.0.1'], outside: ['::1'] },
    { cidr: '2001:db8::/32', inside: ['2001:db8:ffff::1'], outside: ['2001:db9::1'] },
    { cidr: '::/0', inside: [], outside: ['10.0.0.1'] },
    { cidr: 'garbage', inside: [], outside: ['10.0.0.1'] },
  ];
  for (const { cidr, inside, outside } of cases) {
    for (const ip of inside) test(`${cidr} ∋ ${ip}`, () => assert.equal(cidrContains(cidr, ip), true));
    for (const ip of outside) test(`${cidr} ∌ ${ip}`, () => assert.equal(cidrContains(cidr, ip), false));
  }
  test('isLoopbackIP', () => {
    assert.equal(isLoopbackIP('127.0.0.1'), true);
    assert.equal(isLoopbackIP('127.8.9.10'), true);
    assert.equal(isLoopbackIP('::1'), true);
    assert.equal(isLoopbackIP('128.0.0.1'), false);
    assert.equal(isLoopbackIP('::2'), false);
  });
});
