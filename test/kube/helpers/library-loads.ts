// Run by request-auth.test.ts in a process of its own: makes one request with each kind of config and prints, per
// kind, whether @kubernetes/client-node had been imported after it (a module resolve hook watches for it).
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { register } from 'node:module';
import { MessageChannel } from 'node:worker_threads';
import { stringify } from 'yaml';
import { createApiClient, readBody } from '../../../packages/agent/src/kube/api-client.js';
import { loadClientConfig } from '../../../packages/agent/src/kube/client-config.js';
import type { ClientConnectionOptions } from '../../../packages/agent/src/kube/client-config.js';
import { UNLIMITED } from '../../../packages/agent/src/kube/rate-limiter.js';
import { systemClock } from '../../../packages/agent/src/util/clock.js';
import { FakeApiServer } from './fake-apiserver.js';

const HOOKS = `
let port;
export function initialize(data) { port = data.port; }
export async function resolve(specifier, context, next) {
  if (specifier.startsWith('@kubernetes/client-node')) port.postMessage(specifier);
  return next(specifier, context);
}`;

let loaded = false;
const { port1, port2 } = new MessageChannel();
port1.on('message', () => void (loaded = true));
port1.unref();
register(`data:text/javascript,${encodeURIComponent(HOOKS)}`, {
  data: { port: port2 },
  transferList: [port2],
});

const dir = process.argv[2] ?? '.';
const server = await FakeApiServer.start();
const url = server.url;

function kubeconfig(name: string, user: Record<string, unknown>): string {
  const file = join(dir, name);
  writeFileSync(
    file,
    stringify({
      'current-context': 'c',
      contexts: [{ name: 'c', context: { cluster: 'k', user: 'u' } }],
      clusters: [{ name: 'k', cluster: { server: url } }],
      users: [{ name: 'u', user }],
    }),
  );
  return file;
}

async function loadsLibrary(options: ClientConnectionOptions): Promise<boolean> {
  const result = loadClientConfig(options);
  if (!result.ok) throw new Error(result.error.message);
  const client = createApiClient(result.config, { clock: systemClock, rateLimiter: UNLIMITED });
  await readBody(await client.get('/api/v1/nodes', {}, new AbortController().signal), 1 << 20);
  // The hook's message crosses a thread: give it a turn of the loop.
  await new Promise((resolve) => setTimeout(resolve, 100));
  return loaded;
}

const sa = join(dir, 'serviceaccount');
mkdirSync(sa, { recursive: true });
writeFileSync(join(sa, 'token'), 'sa-token');
const credential = JSON.stringify({
  apiVersion: 'client.authentication.k8s.io/v1beta1',
  kind: 'ExecCredential',
  status: { token: 't' },
});
const seen = {
  token: await loadsLibrary({ kubeconfig: kubeconfig('token', { token: 't' }) }),
  // In-cluster always speaks TLS: its request fails against this plain server, after the credentials were applied.
  inCluster: await loadsLibrary({
    inCluster: { root: sa, env: { KUBERNETES_SERVICE_HOST: '127.0.0.1', KUBERNETES_SERVICE_PORT: '1' } },
  }).catch(() => loaded),
  master: await loadsLibrary({ master: url }),
  exec: await loadsLibrary({
    kubeconfig: kubeconfig('exec', {
      exec: {
        apiVersion: 'client.authentication.k8s.io/v1beta1',
        command: 'sh',
        args: ['-c', `printf '%s' '${credential}'`],
        interactiveMode: 'Never',
      },
    }),
  }),
};
await server.close();
console.log(JSON.stringify(seen));
