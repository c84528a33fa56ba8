import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { stringify } from 'yaml';
import { createApiClient, readBody } from '../../packages/agent/src/kube/api-client.js';
import { loadClientConfig, SERVICE_ACCOUNT_ROOT } from '../../packages/agent/src/kube/client-config.js';
import type { ClientConfig, ClientConfigResult } from '../../packages/agent/src/kube/client-config.js';
import { UNLIMITED } from '../../packages/agent/src/kube/rate-limiter.js';
import { opensslAvailable, selfSigned } from './helpers/certs.js';
import type { CertPair } from './helpers/certs.js';
import { systemClock } from '../../packages/agent/src/util/clock.js';
import { FakeApiServer } from './helpers/fake-apiserver.js';

let dir = '';
before(() => {
  dir = mkdtempSync(join(tmpdir(), 'kpts-kubeconfig-'));
});
after(() => rmSync(dir, { recursive: true, force: true }));

let fileSeq = 0;
function writeFile(content: string, name = `kubeconfig-${++fileSeq}`): string {
  const path = join(dir, name);
  writeFileSync(path, content);
  return path;
}

function kubeconfig(cluster: Record<string, unknown>, user: Record<string, unknown> = {}): string {
  return writeFile(
    stringify({
      apiVersion: 'v1',
      kind: 'Config',
      'current-context': 'lab',
      contexts: [{ name: 'lab', context: { cluster: 'lab-cluster', user: 'lab-user' } }],
      clusters: [{ name: 'lab-cluster', cluster }],
      users: [{ name: 'lab-user', user }],
    }),
  );
}

function ok(result: ClientConfigResult): ClientConfig {
  if (!result.ok) assert.fail(`expected a config, got: ${result.error.message}`);
  return result.config;
}

/** One GET through our own HTTP client; returns the status. */
async function get(config: ClientConfig): Promise<number> {
  const client = createApiClient(config, { clock: systemClock, rateLimiter: UNLIMITED });
  const res = await client.get('/api/v1/nodes', { limit: '1' }, new AbortController().signal);
  await readBody(res, 1 << 20);
  return res.status;
}

describe('loadClientConfig: kubeconfig and --master', () => {
  let server: FakeApiServer;
  before(async () => {
    server = await FakeApiServer.start({ token: 'secret-token' });
  });
  after(() => server.close());

  test('token auth from a kubeconfig reaches the server with the bearer header', async () => {
    const config = ok(
      loadClientConfig({ kubeconfig: kubeconfig({ server: server.url }, { token: 'secret-token' }) }),
    );
    assert.equal(config.source, 'kubeconfig');
    assert.equal(config.server.href, `${server.url}/`);
    assert.equal(await get(config), 200);
    assert.equal(server.requests.at(-1)?.headers.authorization, 'Bearer secret-token');
    assert.equal(server.requests.at(-1)?.headers.accept, 'application/json');
  });

  test('a wrong token is refused by the server (the header is really checked)', async () => {
    const config = ok(
      loadClientConfig({ kubeconfig: kubeconfig({ server: server.url }, { token: 'wrong' }) }),
    );
    assert.equal(await get(config), 401);
  });

  test('--master overrides the kubeconfig server; the kubeconfig still authenticates', async () => {
    // 198.18.0.1 is never contacted: the override must win.
    const file = kubeconfig({ server: 'https://198.18.0.1:6443' }, { token: 'secret-token' });
    const config = ok(loadClientConfig({ kubeconfig: file, master: server.url }));
    assert.equal(config.server.href, `${server.url}/`);
    assert.equal(await get(config), 200);
    assert.equal(server.requests.at(-1)?.headers.authorization, 'Bearer secret-token');
    assert.match(config.description, /--master/);
  });

  test('--master alone: that server, no credentials', async () => {
    const config = ok(loadClientConfig({ master: server.url }));
    assert.equal(config.source, 'master');
    assert.equal(await get(config), 401);
    assert.equal(server.requests.at(-1)?.headers.authorization, undefined);
  });

  test('an exec credential plugin (run by the library) supplies the token', async () => {
    const credential = JSON.stringify({
      apiVersion: 'client.authentication.k8s.io/v1beta1',
      kind: 'ExecCredential',
      status: { token: 'secret-token' },
    });
    const file = kubeconfig(
      { server: server.url },
      {
        exec: {
          apiVersion: 'client.authentication.k8s.io/v1beta1',
          command: 'sh',
          args: ['-c', `printf '%s' '${credential}'`],
          interactiveMode: 'Never',
        },
      },
    );
    assert.equal(await get(ok(loadClientConfig({ kubeconfig: file }))), 200);
    assert.equal(server.requests.at(-1)?.headers.authorization, 'Bearer secret-token');
  });

  test('a user entry with no user map is anonymous, not an error', async () => {
    const file = writeFile(
      stringify({
        'current-context': 'c',
        contexts: [{ name: 'c', context: { cluster: 'k', user: 'u' } }],
        clusters: [{ name: 'k', cluster: { server: server.url } }],
        users: [{ name: 'u' }],
      }),
    );
    assert.equal(await get(ok(loadClientConfig({ kubeconfig: file }))), 401);
  });

  test('a token file, named relative to the kubeconfig, wins over a token', async () => {
    writeFile('secret-token\n', 'token-relative');
    const file = kubeconfig({ server: server.url }, { token: 'stale-token', tokenFile: 'token-relative' });
    assert.equal(await get(ok(loadClientConfig({ kubeconfig: file }))), 200);
    assert.equal(server.requests.at(-1)?.headers.authorization, 'Bearer secret-token');
    const missing = loadClientConfig({
      kubeconfig: kubeconfig({ server: server.url }, { tokenFile: 'gone' }),
    });
    assert.ok(!missing.ok);
    assert.equal(missing.error.field, 'users[name=lab-user].user.tokenFile');
    assert.match(missing.error.message, /gone.*cannot be read/);
  });

  test('basic auth from username and password', async () => {
    const file = kubeconfig({ server: server.url }, { username: 'admin', password: 'pa:ss' });
    assert.equal(await get(ok(loadClientConfig({ kubeconfig: file }))), 401);
    const expected = `Basic ${Buffer.from('admin:pa:ss').toString('base64')}`;
    assert.equal(server.requests.at(-1)?.headers.authorization, expected);
  });

  test('qps and burst default to upstream clientConnection defaults (5, 10) and pass through', () => {
    const d = ok(loadClientConfig({ master: server.url }));
    assert.deepEqual([d.qps, d.burst], [5, 10]);
    const c = ok(loadClientConfig({ master: server.url, qps: 50, burst: 100 }));
    assert.deepEqual([c.qps, c.burst], [50, 100]);
  });
});

describe('loadClientConfig: errors name the file and the field', () => {
  const cases: [string, () => ClientConfigResult, string, RegExp, string?][] = [
    ['missing file', () => loadClientConfig({ kubeconfig: join(dir, 'nope') }), 'KubeconfigNotFound', /nope/],
    [
      'not YAML',
      () => loadClientConfig({ kubeconfig: writeFile('clusters: [\n  - {') }),
      'KubeconfigInvalid',
      /not valid YAML/,
    ],
    ['empty', () => loadClientConfig({ kubeconfig: writeFile('') }), 'KubeconfigInvalid', /empty/],
    [
      'cluster without server',
      () => loadClientConfig({ kubeconfig: kubeconfig({ 'insecure-skip-tls-verify': true }) }),
      'KubeconfigInvalid',
      /clusters\[0\]\.cluster\.server is missing/,
    ],
    [
      'current-context names nothing',
      () =>
        loadClientConfig({
          kubeconfig: writeFile(
            stringify({ 'current-context': 'ghost', contexts: [], clusters: [], users: [] }),
          ),
        }),
      'KubeconfigInvalid',
      /current-context names "ghost"/,
      'current-context',
    ],
    [
      'unreadable CA file',
      () =>
        loadClientConfig({
          kubeconfig: kubeconfig({ server: 'https://198.18.0.1', 'certificate-authority': 'missing-ca.crt' }),
        }),
      'KubeconfigInvalid',
      /missing-ca\.crt/,
      'clusters[name=lab-cluster].cluster.certificate-authority',
    ],
    [
      'server not a URL',
      () => loadClientConfig({ kubeconfig: kubeconfig({ server: 'not a url' }) }),
      'KubeconfigInvalid',
      /"not a url" is not a URL/,
      'clusters[name=lab-cluster].cluster.server',
    ],
    [
      'user without a name',
      () =>
        loadClientConfig({
          kubeconfig: writeFile(stringify({ 'current-context': 'c', users: [{ user: { token: 't' } }] })),
        }),
      'KubeconfigInvalid',
      /users\[0\]\.name is missing/,
    ],
    [
      'context without its map',
      () =>
        loadClientConfig({
          kubeconfig: writeFile(stringify({ 'current-context': 'c', contexts: [{ name: 'c' }] })),
        }),
      'KubeconfigInvalid',
      /contexts\[0\]\.context is missing/,
    ],
    [
      'server not a string',
      () => loadClientConfig({ kubeconfig: kubeconfig({ server: 6443 }) }),
      'KubeconfigInvalid',
      /clusters\[0\]\.cluster\.server is not a string/,
    ],
    ['bad --master', () => loadClientConfig({ master: 'ftp://x' }), 'InvalidServer', /--master/, '--master'],
  ];
  for (const [name, load, code, message, field] of cases) {
    test(name, () => {
      const result = load();
      assert.ok(!result.ok, 'expected an error');
      assert.equal(result.error.code, code);
      assert.match(result.error.message, message);
      if (field) assert.equal(result.error.field, field);
      if (code.startsWith('Kubeconfig')) {
        assert.ok(result.error.file, 'names the file');
        assert.ok(result.error.message.includes(result.error.file ?? ''), 'the message names the file');
      }
    });
  }
});

describe(
  'loadClientConfig: TLS and in-cluster',
  { skip: opensslAvailable() ? false : 'openssl not found' },
  () => {
    let serverPair: CertPair;
    let clientPair: CertPair;
    let server: FakeApiServer;
    let mtls: FakeApiServer;
    before(async () => {
      serverPair = selfSigned('fake-apiserver', 'IP:127.0.0.1');
      clientPair = selfSigned('system:kube-proxy');
      server = await FakeApiServer.start({ tls: serverPair, token: 'sa-token' });
      mtls = await FakeApiServer.start({ tls: { ...serverPair, clientCa: clientPair.cert } });
    });
    after(async () => {
      await server.close();
      await mtls.close();
    });

    function serviceAccount(files: { token?: string; ca?: string }): string {
      const root = join(dir, `sa-${++fileSeq}`);
      mkdirSync(root);
      if (files.token !== undefined) writeFileSync(join(root, 'token'), files.token);
      if (files.ca !== undefined) writeFileSync(join(root, 'ca.crt'), files.ca);
      return root;
    }

    const envFor = (s: FakeApiServer) => ({
      KUBERNETES_SERVICE_HOST: '127.0.0.1',
      KUBERNETES_SERVICE_PORT: new URL(s.url).port,
    });

    test('in-cluster from an injected root: service-account token and CA, server from the environment', async () => {
      const root = serviceAccount({ token: 'sa-token', ca: serverPair.cert });
      const config = ok(loadClientConfig({ inCluster: { root, env: envFor(server) } }));
      assert.equal(config.source, 'in-cluster');
      assert.equal(config.server.href, `${server.url}/`);
      assert.deepEqual(config.warnings, []);
      assert.equal(await get(config), 200);
      assert.equal(server.requests.at(-1)?.headers.authorization, 'Bearer sa-token');
    });

    test('in-cluster without a CA file: a warning, the system roots, and so a self-signed server is refused', async () => {
      const root = serviceAccount({ token: 'sa-token' });
      const config = ok(loadClientConfig({ inCluster: { root, env: envFor(server) } }));
      assert.equal(config.warnings.length, 1);
      assert.match(config.warnings[0] ?? '', /ca\.crt/);
      await assert.rejects(get(config), /self.signed|certificate/i);
    });

    test('in-cluster errors: no environment, no token', () => {
      const noEnv = loadClientConfig({ inCluster: { root: serviceAccount({ token: 't' }), env: {} } });
      assert.ok(!noEnv.ok);
      assert.equal(noEnv.error.code, 'InClusterUnavailable');
      assert.equal(noEnv.error.field, 'KUBERNETES_SERVICE_HOST');
      const root = serviceAccount({ ca: serverPair.cert });
      const noToken = loadClientConfig({ inCluster: { root, env: envFor(server) } });
      assert.ok(!noToken.ok);
      assert.equal(noToken.error.file, join(root, 'token'));
      assert.ok(SERVICE_ACCOUNT_ROOT.endsWith('/serviceaccount'));
    });

    test('client certificate and CA data from a kubeconfig (mutual TLS)', async () => {
      const b64 = (s: string) => Buffer.from(s).toString('base64');
      const file = kubeconfig(
        { server: mtls.url, 'certificate-authority-data': b64(serverPair.cert) },
        { 'client-certificate-data': b64(clientPair.cert), 'client-key-data': b64(clientPair.key) },
      );
      assert.equal(await get(ok(loadClientConfig({ kubeconfig: file }))), 200);
      assert.equal(mtls.requests.at(-1)?.clientCN, 'system:kube-proxy');
      // Without the client certificate the server's handshake refuses us.
      const anonymous = kubeconfig({ server: mtls.url, 'certificate-authority-data': b64(serverPair.cert) });
      await assert.rejects(get(ok(loadClientConfig({ kubeconfig: anonymous }))));
    });

    test('insecure-skip-tls-verify reaches a server whose CA we do not have', async () => {
      const file = kubeconfig(
        { server: server.url, 'insecure-skip-tls-verify': true },
        { token: 'sa-token' },
      );
      assert.equal(await get(ok(loadClientConfig({ kubeconfig: file }))), 200);
      const strict = kubeconfig({ server: server.url }, { token: 'sa-token' });
      await assert.rejects(get(ok(loadClientConfig({ kubeconfig: strict }))), /self.signed|certificate/i);
    });
  },
);
