// The lab's agnhost as pods would run it: two namespaces this test makes, a veth between them on 198.18.100.0/24,
// serve-hostname in one, netexec in the other; netexec's /dial must reach serve-hostname over the wire (HTTP and
// UDP), and `connect` must succeed to the open port and fail to a closed one. Needs root and ip.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { kernelNamespaces } from '../helpers/kernel.js';

const suite = kernelNamespaces(['agc', 'ags'], ['ip', 'curl']);
const [client, server] = suite.names;
const CLIENT_IP = '198.18.100.1';
const SERVER_IP = '198.18.100.2';
const MAIN = fileURLToPath(new URL('../../packages/netns/src/agnhost/main.ts', import.meta.url));

function ip(...args: string[]): void {
  execFileSync('ip', args, { stdio: ['ignore', 'ignore', 'pipe'] });
}

/** Runs agnhost SUBCOMMAND in `ns` with $HOSTNAME, resolving once its stderr shows `ready`. */
function startAgnhost(ns: string, hostname: string, args: string[], ready: RegExp): Promise<ChildProcess> {
  const child = spawn('ip', ['netns', 'exec', ns, process.execPath, '--import', 'tsx', MAIN, ...args], {
    env: { ...process.env, HOSTNAME: hostname },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  return new Promise((resolve, reject) => {
    let err = '';
    const timer = setTimeout(() => reject(new Error(`agnhost ${args.join(' ')} not ready: ${err}`)), 30_000);
    child.stderr?.setEncoding('utf8').on('data', (s: string) => {
      err += s;
      if (ready.test(err)) {
        clearTimeout(timer);
        resolve(child);
      }
    });
    child.on('exit', (code) => reject(new Error(`agnhost ${args.join(' ')} exited ${code}: ${err}`)));
  });
}

function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGKILL');
  });
}

/** `ip netns exec NS CMD…`: exit code and output, never throwing. */
function inNamespace(ns: string, argv: string[]): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve) => {
    const child = spawn('ip', ['netns', 'exec', ns, ...argv], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (s: string) => (out += s));
    child.stderr.setEncoding('utf8').on('data', (s: string) => (err += s));
    child.on('close', (code) => resolve({ code, out, err }));
  });
}

describe('agnhost in namespaces: netexec /dial reaches serve-hostname; connect', suite.options, () => {
  suite.hooks();

  test('dial over HTTP and UDP between namespaces; connect to an open and a closed port', async () => {
    ip('-n', client, 'link', 'add', 'eth0', 'type', 'veth', 'peer', 'name', 'eth0', 'netns', server);
    for (const [ns, addr] of [
      [client, CLIENT_IP],
      [server, SERVER_IP],
    ] as const) {
      ip('-n', ns, 'addr', 'add', `${addr}/24`, 'dev', 'eth0');
      ip('-n', ns, 'link', 'set', 'eth0', 'up');
      ip('-n', ns, 'link', 'set', 'lo', 'up');
    }
    const children: ChildProcess[] = [];
    try {
      children.push(
        await startAgnhost(server, 'backend-a', ['serve-hostname', '--port=9376'], /Serving on port/),
        await startAgnhost(
          server,
          'backend-a',
          ['serve-hostname', '--udp', '--http=false', '--port=9377'],
          /Serving on port/,
        ),
        await startAgnhost(
          client,
          'client-a',
          ['netexec', '--http-port=8080', '--udp-port=8081'],
          /Started UDP server/,
        ),
      );
      const dial = async (query: string): Promise<unknown> => {
        const r = await inNamespace(client, [
          'curl',
          '-sS',
          '--max-time',
          '20',
          `http://127.0.0.1:8080/dial?${query}`,
        ]);
        assert.equal(r.code, 0, r.err);
        return JSON.parse(r.out);
      };
      assert.deepEqual(await dial(`request=hostname&protocol=http&host=${SERVER_IP}&port=9376&tries=3`), {
        responses: ['backend-a', 'backend-a', 'backend-a'],
      });
      assert.deepEqual(await dial(`request=hostname&protocol=udp&host=${SERVER_IP}&port=9377&tries=2`), {
        responses: ['backend-a', 'backend-a'],
      });
      const refused = (await dial(`request=hostname&protocol=http&host=${SERVER_IP}&port=9999`)) as {
        errors: string[];
      };
      assert.match(refused.errors[0] ?? '', /connection refused/);

      const connect = (target: string): ReturnType<typeof inNamespace> =>
        inNamespace(client, [process.execPath, '--import', 'tsx', MAIN, 'connect', target, '--timeout=5s']);
      const open = await connect(`${SERVER_IP}:9376`);
      assert.deepEqual([open.code, open.err], [0, '']);
      const closed = await connect(`${SERVER_IP}:9999`);
      assert.deepEqual([closed.code, closed.err], [1, 'REFUSED\n']);
    } finally {
      await Promise.all(children.map(stop));
    }
  });
});
