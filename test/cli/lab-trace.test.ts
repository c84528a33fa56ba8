// lab trace's TO argument: the forms the command accepts, and the errors for the rest.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseDestination } from '../../packages/lab/src/cli/lab-trace.js';

test('TO: a Service name, with a port, as a URL, an IP:PORT, a node NodePort, IPv6 in brackets', () => {
  assert.deepEqual(parseDestination('web.svc'), { host: 'web.svc', port: 80 });
  assert.deepEqual(parseDestination('web.svc:8080'), { host: 'web.svc', port: 8080 });
  assert.deepEqual(parseDestination('http://web.svc/'), { host: 'web.svc', port: 80 });
  assert.deepEqual(parseDestination('https://web.svc/x'), { host: 'web.svc', port: 443 });
  assert.deepEqual(parseDestination('198.19.0.2:80'), { host: '198.19.0.2', port: 80 });
  assert.deepEqual(parseDestination('worker:31080'), { host: 'worker', port: 31080 });
  assert.deepEqual(parseDestination('[2001:db8::1]:53'), { host: '2001:db8::1', port: 53 });
  assert.equal(parseDestination('web.svc:99999'), 'web.svc:99999: port 99999 is not 1…65535');
  assert.equal(parseDestination(':80'), ':80: no host');
});
