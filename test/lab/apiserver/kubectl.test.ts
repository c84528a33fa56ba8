// Real kubectl against the lab API server: create, apply, get (JSON and table), scale, delete by label, patch,
// apply again, and a `kubectl get -w` child process that must see every change in order.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultNodes, startApiServer, type ApiServer } from '../../../packages/lab/src/apiserver/index.js';
import { resourceByKind } from '../../../packages/lab/src/apiserver/resources.js';
import { toolOptions } from '../tools.js';
import { kubectl } from './kubectl-run.js';
import { deploymentYaml } from '../../helpers/manifests.js';
import { waitFor } from '../../helpers/wait-for.js';

const WEB_POD = `
containers:
- name: server
  image: lab/agnhost
  ports: [{name: http, containerPort: 8080}]
`;

const DEPLOYMENT = (replicas: number, servicePort: number): string =>
  `${deploymentYaml({ app: 'web', namespace: 'demo', replicas, podSpec: WEB_POD, labelled: true })}---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: demo}
spec:
  selector: {app: web}
  ports: [{name: http, port: ${servicePort}, targetPort: http}]
`;

const meta = (o: unknown): Record<string, unknown> => (o as { metadata: Record<string, unknown> }).metadata;

function pods(server: ApiServer): Record<string, unknown>[] {
  return server.store.list(resourceByKind('Pod'), 'demo') as Record<string, unknown>[];
}

function readyEndpoints(server: ApiServer): string[] {
  const slices = server.store.list(resourceByKind('EndpointSlice'), 'demo') as {
    endpoints?: { addresses: string[]; conditions: { ready: boolean } }[];
  }[];
  return slices.flatMap((s) =>
    (s.endpoints ?? []).filter((e) => e.conditions.ready).map((e) => e.addresses[0] ?? ''),
  );
}

describe('kubectl against the lab API server', toolOptions(['kubectl']), () => {
  test('create, apply, get, scale, delete, patch, apply, watch', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'kpts-kubectl-'));
    const kubeconfig = join(dir, 'kubeconfig');
    const server = await startApiServer({ nodes: defaultNodes(3), kubeconfigPath: kubeconfig });
    let watcher: ReturnType<typeof spawn> | undefined;
    try {
      const k = (...args: string[]): Promise<string> => kubectl(kubeconfig, args);
      assert.match(await k('create', 'namespace', 'demo'), /namespace\/demo created/);

      // The watch starts before the Deployment exists; it must report replicas 3, 12, 3 in that order.
      watcher = spawn(
        'kubectl',
        ['-n', 'demo', 'get', 'deployments', '-w', '-o', 'jsonpath={.metadata.name} {.spec.replicas}{"\\n"}'],
        {
          env: { ...process.env, KUBECONFIG: kubeconfig },
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      let watched = '';
      watcher.stdout?.on('data', (c: Buffer) => (watched += c.toString()));

      const yaml = join(dir, 'app.yaml');
      await writeFile(yaml, DEPLOYMENT(3, 80));
      const applied = await k('apply', '-f', yaml);
      assert.match(applied, /deployment.apps\/web created/);
      assert.match(applied, /service\/web created/);
      await server.idle();

      const svc = JSON.parse(await k('-n', 'demo', 'get', 'service', 'web', '-o', 'json')) as {
        spec: { clusterIP: string; type: string; ports: { protocol: string; targetPort: unknown }[] };
      };
      assert.equal(svc.spec.type, 'ClusterIP');
      assert.match(svc.spec.clusterIP, /^198\.19\.\d+\.\d+$/);
      assert.equal(svc.spec.ports[0]?.protocol, 'TCP');
      assert.equal(svc.spec.ports[0]?.targetPort, 'http');

      const table = await k('-n', 'demo', 'get', 'deployments');
      assert.match(table, /^NAME\s+READY\s+UP-TO-DATE\s+AVAILABLE\s+AGE\n/);
      assert.match(table, /^web\s+3\/3\s+3\s+3\s+/m);
      const svcTable = await k('-n', 'demo', 'get', 'svc', 'web');
      assert.match(
        svcTable,
        new RegExp(
          `^web\\s+ClusterIP\\s+${svc.spec.clusterIP.replace(/\./g, '\\.')}\\s+<none>\\s+80/TCP\\s+`,
          'm',
        ),
      );

      assert.equal(pods(server).length, 3);
      assert.equal(readyEndpoints(server).length, 3);

      await k('-n', 'demo', 'scale', 'deployment', 'web', '--replicas=12');
      await server.idle();
      assert.equal(pods(server).length, 12);
      assert.equal(new Set(readyEndpoints(server)).size, 12);
      // Round-robin over 3 nodes: 4 pods each.
      const perNode = new Map<string, number>();
      for (const p of pods(server)) {
        const n = String((p.spec as { nodeName: string }).nodeName);
        perNode.set(n, (perNode.get(n) ?? 0) + 1);
      }
      assert.deepEqual([...perNode.values()], [4, 4, 4]);

      await k('-n', 'demo', 'scale', 'deployment', 'web', '--replicas=3');
      await server.idle();
      assert.equal(pods(server).length, 3);
      assert.equal(readyEndpoints(server).length, 3);

      const before = new Set(pods(server).map((p) => String(meta(p).name)));
      const deleted = await k('-n', 'demo', 'delete', 'pods', '-l', 'app=web', '--wait=false');
      assert.equal(deleted.trim().split('\n').length, 3);
      await server.idle();
      const after = pods(server).map((p) => String(meta(p).name));
      assert.equal(after.length, 3);
      assert.ok(
        after.every((n) => !before.has(n) && /^web-[a-z0-9]{10}-[a-z0-9]{5}$/.test(n)),
        after.join(','),
      );

      await k(
        '-n',
        'demo',
        'patch',
        'service',
        'web',
        '-p',
        '{"spec":{"ports":[{"name":"metrics","port":9090}]}}',
      );
      // Strategic merge: the list of ports merges by port, so http stays.
      let ports = (
        JSON.parse(await k('-n', 'demo', 'get', 'svc', 'web', '-o', 'json')) as {
          spec: { ports: { port: number }[] };
        }
      ).spec.ports;
      assert.deepEqual(ports.map((p) => p.port).sort(), [80, 9090]);

      await writeFile(yaml, DEPLOYMENT(3, 8081));
      assert.match(await k('apply', '-f', yaml), /service\/web configured/);
      ports = (
        JSON.parse(await k('-n', 'demo', 'get', 'svc', 'web', '-o', 'json')) as {
          spec: { ports: { port: number }[] };
        }
      ).spec.ports;
      // Three-way apply: 80 became 8081; 9090 was never applied, so apply leaves it alone.
      assert.deepEqual(ports.map((p) => p.port).sort(), [8081, 9090]);
      const cip = (
        JSON.parse(await k('-n', 'demo', 'get', 'svc', 'web', '-o', 'json')) as {
          spec: { clusterIP: string };
        }
      ).spec.clusterIP;
      assert.equal(cip, svc.spec.clusterIP);

      // Let the watch catch up, then compare the replica counts it saw (consecutive repeats are status updates).
      await waitFor(
        'kubectl get -w to print 3, 12 and 3 replicas',
        () => (/web 3\n[\s\S]*web 12\n[\s\S]*web 3\n/.test(watched) ? true : undefined),
        { timeoutMs: 5_000 },
      ).catch(() => undefined); // the assertion below shows what it printed
      const seen = watched
        .trim()
        .split('\n')
        .map((l) => Number(l.split(' ')[1]))
        .filter((n, i, all) => i === 0 || all[i - 1] !== n);
      assert.deepEqual(seen, [3, 12, 3]);
    } finally {
      watcher?.kill('SIGTERM');
      await server.stop();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
