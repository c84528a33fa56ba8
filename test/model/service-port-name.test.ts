import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  namespacedNameString,
  parseProtocol,
  servicePortKey,
  servicePortNameFromKey,
  servicePortNameString,
} from '../../packages/agent/src/model/service-port-name.js';
import type { ServicePortName } from '../../packages/agent/src/model/service-port-name.js';
import { endpointString } from '../../packages/agent/src/model/endpoint.js';

describe('§1.1 ServicePortName', () => {
  test('string form is ns/name:port, or ns/name for an unnamed port; protocol not in the string', () => {
    assert.equal(
      servicePortNameString({ namespace: 'ns1', name: 'svc1', port: 'p80', protocol: 'TCP' }),
      'ns1/svc1:p80',
    );
    assert.equal(
      servicePortNameString({ namespace: 'ns1', name: 'svc1', port: '', protocol: 'UDP' }),
      'ns1/svc1',
    );
    assert.equal(namespacedNameString({ namespace: 'a', name: 'b' }), 'a/b');
  });

  test('the key includes the protocol', () => {
    const tcp = servicePortKey({ namespace: 'ns', name: 's', port: 'dns', protocol: 'TCP' });
    const udp = servicePortKey({ namespace: 'ns', name: 's', port: 'dns', protocol: 'UDP' });
    assert.notEqual(tcp, udp);
  });

  test('the key is unambiguous for hostile names', () => {
    const tcp = (namespace: string, name: string, port = ''): ServicePortName => ({
      namespace,
      name,
      port,
      protocol: 'TCP',
    });
    const names: ServicePortName[] = [
      tcp('a', 'b/c'),
      tcp('a/b', 'c'),
      tcp('a', 'b:c'),
      tcp('a', 'b', 'c'),
      tcp('a', 'b', 'c/TCP'),
      tcp('a', 'b"', ',"c'),
      tcp('a', 'b', '"'),
      tcp('a', 'b\n'),
      tcp('a', 'b', '\n'),
      tcp('a\u0000', 'b'),
      tcp('a', '\u0000b'),
      { namespace: 'a', name: 'b', port: '', protocol: 'UDP' },
    ];
    const keys = new Set(names.map(servicePortKey));
    assert.equal(keys.size, names.length);
    for (const n of names) assert.deepEqual(servicePortNameFromKey(servicePortKey(n)), n);
  });

  test('servicePortNameFromKey rejects strings that are not keys', () => {
    for (const k of ['', 'ns/name:port', '["a","b","c"]', '["a","b","c","ICMP"]', '[1,2,3,4]']) {
      assert.equal(servicePortNameFromKey(k), undefined, k);
    }
  });

  test('parseProtocol: API spellings only; empty or absent means TCP', () => {
    assert.equal(parseProtocol('TCP'), 'TCP');
    assert.equal(parseProtocol('UDP'), 'UDP');
    assert.equal(parseProtocol('SCTP'), 'SCTP');
    assert.equal(parseProtocol(''), 'TCP');
    assert.equal(parseProtocol(undefined), 'TCP');
    assert.equal(parseProtocol(null), 'TCP');
    assert.equal(parseProtocol('tcp'), undefined);
    assert.equal(parseProtocol('ICMP'), undefined);
    assert.equal(parseProtocol(6 as unknown as string), undefined);
  });
});

describe('§1.3 endpoint string', () => {
  test('host:port, IPv6 bracketed', () => {
    assert.equal(endpointString('10.0.0.1', 80), '10.0.0.1:80');
    assert.equal(endpointString('2001:db8::1', 443), '[2001:db8::1]:443');
  });
});
