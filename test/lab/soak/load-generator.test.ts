// The load generator's input and reading of answers; its traffic is exercised for real by the soak's e2e test.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  outcomeOf,
  parseLoadConfig,
  podFromHttpResponse,
} from '../../../packages/lab/src/soak/load-generator.js';

const good = {
  durationMs: 1000,
  ratePerSecond: 10,
  timeoutMs: 1000,
  longIntervalMs: 250,
  targets: [{ service: 'web', protocol: 'tcp', via: 'clusterIP', host: '198.19.0.2', port: 80 }],
  long: [{ service: 'web', via: 'nodePort', host: '198.18.0.10', port: 30080, connections: 2 }],
};

describe('soak load generator', () => {
  test('a valid config parses; only the lab addresses may be dialled', () => {
    assert.deepEqual(parseLoadConfig(JSON.stringify(good)), good);
    for (const host of ['127.0.0.1', '8.8.8.8', '198.20.0.1', 'web.svc'])
      assert.throws(
        () => parseLoadConfig(JSON.stringify({ ...good, targets: [{ ...good.targets[0], host }] })),
        /is not a lab address/,
      );
    assert.throws(() => parseLoadConfig(JSON.stringify({ ...good, ratePerSecond: 1e6 })), /ratePerSecond/);
    assert.throws(
      () => parseLoadConfig(JSON.stringify({ ...good, targets: [{ ...good.targets[0], protocol: 'sctp' }] })),
      /protocol/,
    );
    assert.throws(() => parseLoadConfig('{'), SyntaxError);
  });

  test('socket errors read as refused, reset or timeout', () => {
    const e = (code: string): NodeJS.ErrnoException => Object.assign(new Error(code), { code });
    assert.equal(outcomeOf(e('ECONNREFUSED')), 'refused');
    assert.equal(outcomeOf(e('ECONNRESET')), 'reset');
    assert.equal(outcomeOf(e('EHOSTUNREACH')), 'timeout');
    assert.equal(outcomeOf(e('EMFILE')), 'other');
  });

  test("the answering pod is the pod server's x-pod-name header", () => {
    const reply =
      'HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\nx-pod-name: web-abc-12345\r\ncontent-length: 5\r\n\r\nhello';
    assert.equal(podFromHttpResponse(reply), 'web-abc-12345');
    assert.equal(podFromHttpResponse(reply.replace('200 OK', '503 Service Unavailable')), undefined);
    assert.equal(
      podFromHttpResponse('HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n'),
      undefined,
      'no pod server',
    );
  });
});
