import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatHostPort, parseBindAddress } from '../../packages/agent/src/server/bind-address.js';

test('parseBindAddress splits host:port, bracketed IPv6, empty host = all addresses', () => {
  assert.deepEqual(parseBindAddress('127.0.0.1:10249'), {
    ok: true,
    value: { host: '127.0.0.1', port: 10249 },
  });
  assert.deepEqual(parseBindAddress('[::1]:10249'), { ok: true, value: { host: '::1', port: 10249 } });
  assert.deepEqual(parseBindAddress('0.0.0.0:10256'), { ok: true, value: { host: '0.0.0.0', port: 10256 } });
  assert.deepEqual(parseBindAddress(':10256'), { ok: true, value: { host: '0.0.0.0', port: 10256 } });
  for (const bad of ['127.0.0.1', '::1:10249', '127.0.0.1:70000', '127.0.0.1:x', '']) {
    assert.equal(parseBindAddress(bad).ok, false, bad);
  }
  assert.equal(formatHostPort('::1', 10249), '[::1]:10249');
  assert.equal(formatHostPort('198.18.0.1', 30053), '198.18.0.1:30053');
});
