import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createSocket } from 'node:dgram';
import { request } from 'node:http';
import {
  CLIENT_ADDRESS_HEADER,
  POD_NAME_HEADER,
  formatPodReply,
  parsePodReply,
  parsePodServerArgs,
  podServerArgs,
  startPodServer,
} from '../../packages/netns/src/pod-server.js';

describe('pod reply text', () => {
  test('round-trips IPv4 and IPv6 client addresses', () => {
    for (const reply of [
      { pod: 'web-1', clientIP: '198.18.1.10', clientPort: 40312 },
      { pod: 'pod-0-2', clientIP: '2001:db8::7', clientPort: 1 },
    ]) {
      assert.deepEqual(parsePodReply(formatPodReply(reply)), reply);
    }
    assert.equal(
      formatPodReply({ pod: 'a', clientIP: '2001:db8::7', clientPort: 9 }),
      'pod=a client=[2001:db8::7]:9\n',
    );
  });

  test('rejects text that is not a pod reply', () => {
    for (const text of [
      '',
      'hello',
      'pod=a client=1.2.3.4',
      'pod= client=1.2.3.4:5',
      '<html>pod=a client=1.2.3.4:5',
    ]) {
      assert.equal(parsePodReply(text), undefined, JSON.stringify(text));
    }
  });
});

describe('pod server arguments', () => {
  test('podServerArgs and parsePodServerArgs agree', () => {
    const options = {
      name: 'web-1',
      tcpPorts: [8080, 8081],
      udpPorts: [5353],
      readyFile: '/tmp/x',
      maxLifetimeSeconds: 60,
    };
    const [, ...args] = podServerArgs(options); // the first is this file's path
    assert.deepEqual(parsePodServerArgs(args), options);
  });

  test('refuses a missing name, no port, and a port out of range', () => {
    assert.throws(() => parsePodServerArgs(['--tcp', '80']), /--name/);
    assert.throws(() => parsePodServerArgs(['--name', 'a']), /at least one/);
    assert.throws(() => parsePodServerArgs(['--name', 'a', '--tcp', '70000']), /not a port/);
    assert.throws(() => parsePodServerArgs(['--name', 'a', '--udp', 'x']), /not a port/);
  });
});

describe('pod server on loopback', () => {
  test('answers HTTP and UDP with its name and the client address it saw', async () => {
    const server = await startPodServer({
      name: 'web-9',
      tcpPorts: [0],
      udpPorts: [0],
      maxLifetimeSeconds: 60,
    });
    try {
      const http = await new Promise<{ headers: Record<string, unknown>; body: string; localPort: number }>(
        (resolve, reject) => {
          const req = request(
            { host: '127.0.0.1', port: server.tcpPorts[0], path: '/', agent: false },
            (res) => {
              const chunks: Buffer[] = [];
              res.on('data', (b: Buffer) => chunks.push(b));
              res.on('end', () =>
                resolve({
                  headers: res.headers,
                  body: Buffer.concat(chunks).toString(),
                  localPort: req.socket?.localPort ?? -1,
                }),
              );
            },
          );
          req.on('error', reject);
          req.end();
        },
      );
      assert.deepEqual(parsePodReply(http.body), {
        pod: 'web-9',
        clientIP: '127.0.0.1',
        clientPort: http.localPort,
      });
      assert.equal(http.headers[POD_NAME_HEADER], 'web-9');
      assert.equal(http.headers[CLIENT_ADDRESS_HEADER], `127.0.0.1:${http.localPort}`);

      const udp = await new Promise<{ text: string; localPort: number }>((resolve, reject) => {
        const socket = createSocket('udp4');
        socket.on('error', reject);
        socket.on('message', (msg) => {
          const localPort = socket.address().port;
          socket.close();
          resolve({ text: msg.toString(), localPort });
        });
        socket.connect(server.udpPorts[0]!, '127.0.0.1', () => socket.send('ping'));
      });
      assert.deepEqual(parsePodReply(udp.text), {
        pod: 'web-9',
        clientIP: '127.0.0.1',
        clientPort: udp.localPort,
      });
    } finally {
      server.close();
    }
  });
});
