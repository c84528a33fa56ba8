// The lab's agnhost subcommands on loopback, in-process (no kernel, no root): what each answers, in agnhost's
// formats, for the requests upstream's e2e tests send. The kernel test (agnhost-kernel.test.ts) runs them as pods.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { connect, createServer, type AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { parseFlags, parseGoDuration } from '../../packages/netns/src/agnhost/flags.js';
import { parseNetexecArgs, startNetexec } from '../../packages/netns/src/agnhost/netexec.js';
import {
  parseServeHostnameArgs,
  startServeHostname,
} from '../../packages/netns/src/agnhost/serve-hostname.js';
import { localhostCertificate, porterEntries, startPorter } from '../../packages/netns/src/agnhost/porter.js';
import { runConnect } from '../../packages/netns/src/agnhost/connect.js';
import { sctpUnsupportedReason } from '../../packages/netns/src/agnhost/common.js';
import { httpCall, type HttpReply } from '../helpers/http-call.js';

/** GET `path` on 127.0.0.1:`port` (HTTPS when `tls`). */
function get(
  port: number,
  path: string,
  headers: Record<string, string> = {},
  tls = false,
): Promise<HttpReply> {
  return httpCall(port, path, { headers, tls });
}

/** One datagram to 127.0.0.1:port; the answer, or undefined when none comes within `waitMs`. */
function udp(
  port: number,
  text: string,
  waitMs = 2000,
): Promise<{ text: string; localPort: number } | undefined> {
  return new Promise((resolve, reject) => {
    const socket = createSocket('udp4');
    const timer = setTimeout(() => {
      socket.close();
      resolve(undefined);
    }, waitMs);
    socket.on('error', reject);
    socket.on('message', (msg) => {
      clearTimeout(timer);
      const localPort = socket.address().port;
      socket.close();
      resolve({ text: msg.toString(), localPort });
    });
    socket.connect(port, '127.0.0.1', () => socket.send(text));
  });
}

/** A port nothing listens on: bound once by the kernel's choice, then closed. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('flags as pflag reads them', () => {
  test('--name=value, --name value, booleans, Go durations; unknown flags are errors, klog’s are ignored', () => {
    const f = parseFlags(['--http-port=81', '--udp-port', '-1', '--tcp', '--http=false', '--v=2', 'x'], {
      'http-port': 'int',
      'udp-port': 'int',
      tcp: 'bool',
      http: 'bool',
    });
    assert.deepEqual(Object.fromEntries(f.values), {
      'http-port': 81,
      'udp-port': -1,
      tcp: true,
      http: false,
    });
    assert.deepEqual(f.positional, ['x']);
    assert.throws(() => parseFlags(['--nope=1'], {}), /unknown flag: --nope/);
    assert.throws(() => parseFlags(['--port=abc'], { port: 'int' }), /invalid argument "abc"/);
    assert.equal(parseGoDuration('1m30s'), 90_000);
    assert.equal(parseGoDuration('250ms'), 250);
    assert.equal(parseGoDuration('0'), 0);
    assert.throws(() => parseGoDuration('5'), /invalid duration/);
  });

  test('netexec’s defaults are agnhost’s: HTTP 8080, UDP 8081, no SCTP', () => {
    const o = parseNetexecArgs([], 'h');
    assert.equal(o.httpPort, 8080);
    assert.equal(o.udpPort, 8081);
    assert.equal(o.sctpPort, -1);
    assert.throws(() => parseNetexecArgs(['extra'], 'h'), /at most 0 arg/);
    assert.equal(parseServeHostnameArgs([], 'h').port, 9376);
    assert.throws(() => parseServeHostnameArgs(['--udp'], 'h'), /TCP\/UDP mode and HTTP mode/);
  });
});

describe('netexec on loopback', () => {
  test('HTTP paths: hostname, clientip, echo (with code), header, redirect, healthz/readyz, shell, exit', async () => {
    const exits: number[] = [];
    const n = await startNetexec(
      { ...parseNetexecArgs(['--http-port=0', '--udp-port=0'], 'netexec-7'), delayShutdownSeconds: 3600 },
      (code) => exits.push(code),
    );
    try {
      for (const path of ['/hostname', '/hostName'])
        assert.equal((await get(n.httpPort, path)).body, 'netexec-7');
      const ip = await get(n.httpPort, '/clientip');
      assert.equal(ip.body, `127.0.0.1:${ip.localPort}`);
      assert.equal((await get(n.httpPort, '/echo?msg=hello%20there')).body, 'hello there');
      const coded = await get(n.httpPort, '/echo?msg=gone&code=503');
      assert.deepEqual([coded.status, coded.body], [503, 'gone']);
      assert.equal((await get(n.httpPort, '/header?key=x-test', { 'X-Test': 'v1' })).body, 'v1');
      assert.deepEqual(JSON.parse((await get(n.httpPort, '/header', { 'X-Test': 'v1' })).body)['X-Test'], [
        'v1',
      ]);
      const redirect = await get(n.httpPort, '/redirect?location=/echo%3Fmsg%3Dx&code=307');
      assert.deepEqual([redirect.status, redirect.headers.location], [307, '/echo?msg=x']);
      assert.match((await get(n.httpPort, '/')).body, /^NOW: /);
      assert.equal((await get(n.httpPort, '/healthz')).status, 200);
      assert.deepEqual(await get(n.httpPort, '/readyz').then((a) => [a.status, a.body]), [200, 'ok']);
      const shell = await get(n.httpPort, '/shell?cmd=' + encodeURIComponent('echo out; echo err >&2'));
      assert.deepEqual(JSON.parse(shell.body), { output: 'out\nerr\n' });
      const failed = await get(n.httpPort, '/shell?shellCommand=' + encodeURIComponent('exit 3'));
      assert.deepEqual(JSON.parse(failed.body), { error: 'exit status 3' });
      // SIGTERM: not ready any more (the endpoint leaves), still healthy (the kubelet does not kill it).
      n.terminate();
      assert.deepEqual(await get(n.httpPort, '/readyz').then((a) => [a.status, a.body]), [
        503,
        'shutting down',
      ]);
      assert.equal((await get(n.httpPort, '/healthz')).status, 200);
      assert.deepEqual(exits, [], 'exit waits for --delay-shutdown');
      await assert.rejects(get(n.httpPort, '/exit?code=7'), 'no answer when the exit has no timeout');
      assert.deepEqual(exits, [7]);
    } finally {
      n.close();
    }
  });

  test('UDP commands: hostname, echo (lower-cased, as agnhost does), clientip; anything else gets no answer', async () => {
    const n = await startNetexec(
      parseNetexecArgs(['--http-port=0', '--udp-port=0'], 'netexec-7'),
      () => undefined,
    );
    try {
      const port = n.udpPorts[0] ?? 0;
      assert.equal((await udp(port, 'hostname'))?.text, 'netexec-7');
      assert.equal((await udp(port, 'echo Hello World\n'))?.text, 'hello world');
      const ip = await udp(port, 'clientip');
      assert.equal(ip?.text, `127.0.0.1:${ip?.localPort}`);
      assert.equal(await udp(port, 'what', 300), undefined);
    } finally {
      n.close();
    }
  });

  test('/dial: HTTP and UDP tries, errors for a closed port, 400 for bad parameters, SCTP named as unsupported', async () => {
    const target = await startServeHostname({ ...parseServeHostnameArgs(['--port=0'], 'backend-1') });
    const n = await startNetexec(
      parseNetexecArgs(['--http-port=0', '--udp-port=0'], 'client-0'),
      () => undefined,
    );
    try {
      const dial = (q: string): Promise<HttpReply> => get(n.httpPort, `/dial?${q}`);
      const http = await dial(
        `request=hostname&protocol=http&host=127.0.0.1&port=${target.ports.http}&tries=3`,
      );
      assert.deepEqual(
        [http.status, JSON.parse(http.body)],
        [200, { responses: ['backend-1', 'backend-1', 'backend-1'] }],
      );
      const viaName = await dial(`request=echo?msg=hi&host=localhost&port=${n.httpPort}`);
      assert.deepEqual(JSON.parse(viaName.body), { responses: ['hi'] });
      const overUdp = await dial(
        `request=hostname&protocol=udp&host=127.0.0.1&port=${n.udpPorts[0]}&tries=2`,
      );
      assert.deepEqual(JSON.parse(overUdp.body), { responses: ['client-0', 'client-0'] });
      const closed = await closedPort();
      const refused = JSON.parse((await dial(`request=hostname&host=127.0.0.1&port=${closed}&tries=2`)).body);
      assert.deepEqual(Object.keys(refused), ['errors']);
      assert.equal(refused.errors.length, 2);
      assert.match(refused.errors[0], /connect: connection refused/);
      assert.equal((await dial(`host=127.0.0.1&port=${closed}`)).status, 400);
      assert.equal((await dial(`request=x&protocol=gopher&host=127.0.0.1&port=1`)).status, 400);
      assert.equal((await dial(`request=x&host=127.0.0.1&port=99999`)).status, 400);
      assert.equal((await dial(`request=x&host=127.0.0.1&port=1&tries=two`)).status, 400);
      const sctp = JSON.parse((await dial(`request=hostname&protocol=sctp&host=127.0.0.1&port=1`)).body);
      assert.match(sctp.errors[0], /^sctp dial failed\. err:SCTP: not supported here because/);
    } finally {
      n.close();
      target.close();
    }
  });

  test('--sctp-port fails at start with the reason, rather than serving without it', async () => {
    await assert.rejects(
      startNetexec(parseNetexecArgs(['--http-port=0', '--udp-port=-1', '--sctp-port=0'], 'h')),
      /SCTP: not supported here because Node\.js has no SCTP sockets/,
    );
    assert.match(sctpUnsupportedReason('/nonexistent'), /cannot be read/);
  });
});

describe('serve-hostname, porter, connect, pause', () => {
  test('serve-hostname answers the hostname over HTTP, raw TCP and UDP', async () => {
    const http = await startServeHostname(parseServeHostnameArgs(['--port=0', '--close'], 'sh-1'));
    const raw = await startServeHostname(
      parseServeHostnameArgs(['--port=0', '--tcp', '--udp', '--http=false'], 'sh-2'),
    );
    try {
      const a = await get(http.ports.http ?? 0, '/anything');
      assert.deepEqual([a.status, a.body, a.headers.connection], [200, 'sh-1', 'close']);
      assert.equal((await udp(raw.ports.udp ?? 0, 'x'))?.text, 'sh-2');
      const tcpText = await new Promise<string>((resolve, reject) => {
        let text = '';
        const sock = connect(raw.ports.tcp ?? 0, '127.0.0.1');
        sock.on('data', (b: Buffer) => (text += b.toString()));
        sock.on('end', () => resolve(text));
        sock.on('error', reject);
      });
      assert.equal(tcpText, 'sh-2');
    } finally {
      http.close();
      raw.close();
    }
  });

  test('porter serves each SERVE_*_PORT_N value: HTTP, JSON, UDP, TLS; SCTP is refused with the reason', async () => {
    const entries = porterEntries({
      SERVE_PORT_0: 'plain',
      SERVE_UDP_PORT_0: 'dgram',
      SERVE_TLS_PORT_0: 'secret',
      SERVE_PORT_x: 'no',
      PATH: '/bin',
    });
    assert.deepEqual(entries.map((e) => `${e.kind}:${e.value}`).sort(), [
      'tcp:plain',
      'tls:secret',
      'udp:dgram',
    ]);
    const porter = await startPorter(entries, { jsonResponse: false, tls: localhostCertificate });
    const json = await startPorter(porterEntries({ SERVE_TCP_PORT_0: 'v' }), { jsonResponse: true });
    try {
      const port = (kind: string): number => porter.bound.find((b) => b.kind === kind)?.bound ?? 0;
      assert.equal((await get(port('tcp'), '/whatever')).body, 'plain');
      assert.equal((await udp(port('udp'), 'anything'))?.text, 'dgram');
      assert.equal((await get(port('tls'), '/', {}, true)).body, 'secret');
      assert.deepEqual(JSON.parse((await get(json.bound[0]?.bound ?? 0, '/')).body), {
        Method: 'GET',
        Body: 'v',
      });
    } finally {
      porter.close();
      json.close();
    }
    await assert.rejects(
      startPorter(porterEntries({ SERVE_SCTP_PORT_9: 'x' }), { jsonResponse: false }),
      /SCTP: not supported here/,
    );
  });

  test('connect: 0 for an open port, REFUSED for a closed one, UNKNOWN/DNS/OTHER as agnhost words them', async () => {
    const server = createServer((c) => c.end());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const open = (server.address() as AddressInfo).port;
      assert.deepEqual(await runConnect([`127.0.0.1:${open}`, '--timeout=5s']), { code: 0, message: '' });
      assert.deepEqual(await runConnect([`127.0.0.1:${await closedPort()}`]), {
        code: 1,
        message: 'REFUSED\n',
      });
      assert.match((await runConnect(['127.0.0.1'])).message, /^UNKNOWN: /);
      assert.match((await runConnect(['127.0.0.1:notaport'])).message, /^DNS: /);
      assert.match(
        (await runConnect(['--protocol=sctp', '127.0.0.1:1'])).message,
        /^OTHER: SCTP: not supported here/,
      );
      assert.equal((await runConnect([])).code, 1);
    } finally {
      server.close();
    }
  });

  test('pause prints Paused and exits 2 on SIGTERM, as agnhost’s does', async () => {
    const main = fileURLToPath(new URL('../../packages/netns/src/agnhost/main.ts', import.meta.url));
    const child = spawn(process.execPath, ['--import', 'tsx', main, 'pause'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const code = await new Promise<number | null>((resolve, reject) => {
      child.on('error', reject);
      child.stdout.setEncoding('utf8').on('data', (s: string) => {
        if (s.includes('Paused')) child.kill('SIGTERM');
      });
      child.on('exit', (c) => resolve(c));
    });
    assert.equal(code, 2);
  });
});
