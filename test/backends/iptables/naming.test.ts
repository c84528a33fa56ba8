import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  base32,
  endpointChainName,
  isServiceChainName,
  portProtoHash,
  servicePortChainNames,
} from '../../../packages/agent/src/backends/iptables/naming.js';

describe('iptables chain names (upstream-backends.md §2.2)', () => {
  test('base32 is RFC 4648 standard alphabet (RFC test vectors, padding dropped)', () => {
    const enc = (s: string) => base32(Buffer.from(s));
    assert.equal(enc('f'), 'MY');
    assert.equal(enc('fo'), 'MZXQ');
    assert.equal(enc('foo'), 'MZXW6');
    assert.equal(enc('foob'), 'MZXW6YQ');
    assert.equal(enc('foobar'), 'MZXW6YTBOI');
  });

  test('§2.2 example: ns1/svc1:p80 + tcp', () => {
    assert.equal(portProtoHash('ns1/svc1:p80', 'TCP'), 'XPGD46QRK7WJZT7O');
    assert.deepEqual(servicePortChainNames('ns1/svc1:p80', 'TCP'), {
      clusterPolicy: 'KUBE-SVC-XPGD46QRK7WJZT7O',
      localPolicy: 'KUBE-SVL-XPGD46QRK7WJZT7O',
      external: 'KUBE-EXT-XPGD46QRK7WJZT7O',
      firewall: 'KUBE-FW-XPGD46QRK7WJZT7O',
    });
  });

  test('§2.2 example: endpoint chain of 10.180.0.1:80', () => {
    assert.equal(endpointChainName('ns1/svc1:p80', 'TCP', '10.180.0.1:80'), 'KUBE-SEP-SXIVWICOYRO3J4NJ');
  });

  test('IPv6 endpoints hash "[addr]:port"; the protocol is part of the hash', () => {
    assert.notEqual(
      endpointChainName('ns/s:p', 'TCP', '[2001:db8::1]:80'),
      endpointChainName('ns/s:p', 'TCP', '2001:db8::1:80'),
    );
    assert.notEqual(portProtoHash('ns/s:p', 'UDP'), portProtoHash('ns/s:p', 'TCP'));
    assert.match(endpointChainName('ns/s:p', 'SCTP', '[2001:db8::1]:80'), /^KUBE-SEP-[A-Z2-7]{16}$/);
  });

  test('every generated name fits the 28-character chain limit', () => {
    assert.ok(servicePortChainNames('a'.repeat(300), 'TCP').clusterPolicy.length <= 28);
  });

  test('service chains are recognised by prefix only', () => {
    assert.ok(isServiceChainName('KUBE-SEP-SXIVWICOYRO3J4NJ'));
    assert.ok(isServiceChainName('KUBE-FW-X'));
    assert.ok(!isServiceChainName('KUBE-SERVICES'));
    assert.ok(!isServiceChainName('KUBE-MARK-MASQ'));
  });
});
