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
  const cases: readonly [string, string | undefined, 'IPv4' | 'IPv6' | undefined][] = [
    ['10.0.0.1', '10.0.0.1', 'IPv4'],
    // Leading zeros are decimal, never octal (netutils.ParseIPSloppy).
    ['172.30.0.041', '172.30.0.41', 'IPv4'],
    ['010.0.0.1', '10.0.0.1', 'IPv4'],
    ['000.000.000.000', '0.0.0.0', 'IPv4'],
    ['255.255.255.255', '255.255.255.255', 'IPv4'],
    ['256.0.0.1', undefined, undefined],
    // Edges of the one-pass check for canonical IPv4 (the common case): empty, long and zero-led octets.
    ['0.0.0.0', '0.0.0.0', 'IPv4'],
    ['1.2.3.0', '1.2.3.0', 'IPv4'],
    ['1.2.3.00', '1.2.3.0', 'IPv4'],
    ['1..2.3', undefined, undefined],
    ['.1.2.3', undefined, undefined],
    ['1.2.3.', undefined, undefined],
    ['1.2.3.0255', '1.2.3.255', 'IPv4'],
    ['1.2.3.1000', undefined, undefined],
    ['1.2.3.4a', undefined, undefined],
    ['1.2.3', undefined, undefined],
    ['1.2.3.4.5', undefined, undefined],
    ['1.2.3.-4', undefined, undefined],
    [' 1.2.3.4', undefined, undefined],
    ['1.2.3.4 ', undefined, undefined],
    ['', undefined, undefined],
    ['not-an-ip', undefined, undefined],
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
    ['1::2::3', undefined, undefined],
    ['1:2:3:4:5:6:7:8:9', undefined, undefined],
    ['1:2:3:4:5:6:7', undefined, undefined],
    ['12345::', undefined, undefined],
    ['2001:db8::g', undefined, undefined],
    ['fe80::1%eth0', undefined, undefined],
    // IPv4-mapped IPv6 counts as IPv4 (Go's To4()).
    ['::ffff:1.2.3.4', '1.2.3.4', 'IPv4'],
    ['::ffff:0102:0304', '1.2.3.4', 'IPv4'],
    ['::ffff:01.02.03.004', '1.2.3.4', 'IPv4'],
    // An embedded IPv4 that is not mapped stays IPv6 and prints in hex.
    ['64:ff9b::192.0.2.33', '64:ff9b::c000:221', 'IPv6'],
  ];
  for (const [input, text, family] of cases) {
    test(`${JSON.stringify(input)} → ${text ?? 'invalid'}`, () => {
      const got = parseIPSloppy(input);
      assert.deepEqual(got, text === undefined ? undefined : { text, family });
      assert.equal(ipFamilyOf(input), family);
    });
  }
  test('values that are not strings are not IPs (never throws)', () => {
    for (const v of [null, undefined, 5, {}, ['1.2.3.4']]) {
      assert.equal(parseIPSloppy(v as unknown as string), undefined);
    }
  });
});

describe('parseCIDRSloppy', () => {
  const cases: readonly [string, string | undefined][] = [
    ['203.0.113.000/025', '203.0.113.0/25'],
    ['203.0.113.200/25', '203.0.113.128/25'],
    ['10.1.2.3/8', '10.0.0.0/8'],
    ['0.0.0.0/0', '0.0.0.0/0'],
    ['1.2.3.4/32', '1.2.3.4/32'],
    ['1.2.3.4/33', undefined],
    ['1.2.3.4', undefined],
    ['1.2.3.4/', undefined],
    ['1.2.3.4/-1', undefined],
    ['1.2.3.4/8/8', undefined],
    ['2001:DB8::1/32', '2001:db8::/32'],
    ['2001:db8:1:2:3:4:5:6/64', '2001:db8:1:2::/64'],
    ['::/0', '::/0'],
    ['::1/128', '::1/128'],
    ['2001:db8::/129', undefined],
    ['::ffff:10.1.2.3/104', '10.0.0.0/8'],
  ];
  for (const [input, text] of cases) {
    test(`${input} → ${text ?? 'invalid'}`, () => {
      assert.equal(parseCIDRSloppy(input)?.text, text);
    });
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
  const cases: readonly [string, string, boolean][] = [
    ['10.0.0.0/8', '10.255.1.2', true],
    ['10.0.0.0/8', '11.0.0.0', false],
    ['10.0.0.0/8', '010.1.1.1', true],
    ['198.18.0.0/15', '198.19.255.255', true],
    ['198.18.0.0/15', '198.20.0.0', false],
    ['0.0.0.0/0', '127.0.0.1', true],
    ['0.0.0.0/0', '::1', false],
    ['2001:db8::/32', '2001:db8:ffff::1', true],
    ['2001:db8::/32', '2001:db9::1', false],
    ['::/0', '10.0.0.1', false],
    ['10.0.0.0/8', '::ffff:10.0.0.1', true],
    ['garbage', '10.0.0.1', false],
    ['10.0.0.0/8', 'garbage', false],
  ];
  for (const [cidr, ip, want] of cases) {
    test(`${cidr} ∋ ${ip} is ${want}`, () => assert.equal(cidrContains(cidr, ip), want));
  }
  test('isLoopbackIP', () => {
    assert.equal(isLoopbackIP('127.0.0.1'), true);
    assert.equal(isLoopbackIP('127.8.9.10'), true);
    assert.equal(isLoopbackIP('::1'), true);
    assert.equal(isLoopbackIP('128.0.0.1'), false);
    assert.equal(isLoopbackIP('::2'), false);
  });
});
