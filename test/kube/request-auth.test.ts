import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { RequestOptions } from 'node:https';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import { CredentialAuth, LibraryAuth, REREAD_MS } from '../../packages/agent/src/kube/request-auth.js';
import { stringify } from 'yaml';

let dir = '';
before(() => {
  dir = mkdtempSync(join(tmpdir(), 'kpts-auth-'));
});
after(() => rmSync(dir, { recursive: true, force: true }));

async function authorization(auth: CredentialAuth): Promise<unknown> {
  const opts: RequestOptions = {};
  await auth.applyToHTTPSOptions(opts);
  return (opts.headers as Record<string, unknown> | undefined)?.authorization;
}

describe('CredentialAuth', () => {
  test('a token file is re-read once a minute, and its last content kept while it cannot be read', async () => {
    const file = join(dir, 'token');
    writeFileSync(file, 'first\n');
    let now = 1_000_000;
    const auth = new CredentialAuth({ insecureSkipTLSVerify: false, tokenFile: file }, () => now);
    assert.equal(await authorization(auth), 'Bearer first');
    writeFileSync(file, 'second\n');
    now += REREAD_MS - 1;
    assert.equal(await authorization(auth), 'Bearer first', 'not re-read within the minute');
    now += 1;
    assert.equal(await authorization(auth), 'Bearer second');
    rmSync(file);
    now += REREAD_MS;
    assert.equal(await authorization(auth), 'Bearer second', 'a failed re-read keeps the last token');
  });

  test('one TLS agent while the material is the same, a new one when a certificate file changed', async () => {
    const ca = join(dir, 'ca.pem');
    writeFileSync(ca, 'one');
    let now = 0;
    const auth = new CredentialAuth({ insecureSkipTLSVerify: false, ca: { file: ca } }, () => now);
    const agentOf = async (): Promise<unknown> => {
      const opts: RequestOptions = {};
      await auth.applyToHTTPSOptions(opts);
      return opts.agent;
    };
    const first = await agentOf();
    now += REREAD_MS;
    assert.equal(await agentOf(), first, 'unchanged material: the same agent and its connections');
    writeFileSync(ca, 'two');
    now += REREAD_MS;
    const second = await agentOf();
    assert.notEqual(second, first);
    assert.deepEqual((second as { options: { ca: Buffer } }).options.ca, Buffer.from('two'));
  });

  test('no token, no basic auth: no authorization header', async () => {
    assert.equal(await authorization(new CredentialAuth({ insecureSkipTLSVerify: true })), undefined);
  });
});

describe('LibraryAuth', () => {
  test("an exec plugin's token on every request, and one TLS agent kept across the library's calls", async () => {
    const credential = JSON.stringify({
      apiVersion: 'client.authentication.k8s.io/v1beta1',
      kind: 'ExecCredential',
      status: { token: 'from-exec' },
    });
    const file = join(dir, 'exec-kubeconfig');
    writeFileSync(
      file,
      stringify({
        'current-context': 'c',
        contexts: [{ name: 'c', context: { cluster: 'k', user: 'u' } }],
        clusters: [{ name: 'k', cluster: { server: 'https://198.18.0.1:6443' } }],
        users: [
          {
            name: 'u',
            user: {
              exec: {
                apiVersion: 'client.authentication.k8s.io/v1beta1',
                command: 'sh',
                args: ['-c', `printf '%s' '${credential}'`],
                interactiveMode: 'Never',
              },
            },
          },
        ],
      }),
    );
    const auth = new LibraryAuth({ file, plainHttp: false });
    const first: RequestOptions = {};
    const second: RequestOptions = {};
    await auth.applyToHTTPSOptions(first);
    await auth.applyToHTTPSOptions(second);
    // The library names the header as HTTP/1.1 spells it; node sends it as any case.
    assert.equal((second.headers as Record<string, unknown>).Authorization, 'Bearer from-exec');
    assert.ok(first.agent !== undefined);
    assert.equal(second.agent, first.agent);
  });
});

describe('@kubernetes/client-node is loaded only for what needs it', () => {
  const here = dirname(fileURLToPath(import.meta.url));
  test('a token kubeconfig, an in-cluster config and --master never import it; an exec plugin does', () => {
    const run = spawnSync(
      process.execPath,
      ['--import', 'tsx', '--conditions=kpts-source', join(here, 'helpers', 'library-loads.ts'), dir],
      { encoding: 'utf8', timeout: 120_000 },
    );
    assert.equal(run.status, 0, run.stderr);
    assert.deepEqual(JSON.parse(run.stdout.trim().split('\n').at(-1) ?? '{}'), {
      token: false,
      inCluster: false,
      master: false,
      exec: true,
    });
  });
});
