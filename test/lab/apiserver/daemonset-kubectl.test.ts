// Real kubectl against the lab API server (no kernel, no root): a DaemonSet gets one Pod per matching Node and the
// status fields `kubectl get ds` prints; `kubectl rollout restart` replaces the Pods node by node, never more than
// maxUnavailable at once, and `kubectl rollout status` waits for it; `kubectl get endpoints` mirrors the slices;
// pods/log serves a kubelet's files with --tail, --previous and -c; exec and attach speak WebSocket, and SPDY gets
// a message naming the kubectl that works.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'node:https';
import { defaultNodes, startApiServer, type ApiServer } from '../../../packages/lab/src/apiserver/index.js';
import { resourceByKind } from '../../../packages/lab/src/apiserver/resources.js';
import { UNSUPPORTED_STREAMING } from '../../../packages/lab/src/apiserver/remotecommand.js';
import { scaledMaxUnavailable } from '../../../packages/lab/src/controllers/daemonset.js';
import type {
  KubeletContainer,
  PodLifecycle,
  StreamSession,
} from '../../../packages/lab/src/controllers/pod-lifecycle.js';
import { toolOptions } from '../tools.js';

interface Ran {
  readonly code: number;
  readonly out: string;
  readonly err: string;
}
function kubectl(kubeconfig: string, args: string[], stdin = ''): Promise<Ran> {
  return new Promise((resolve) => {
    const child = execFile(
      'kubectl',
      args,
      { env: { ...process.env, KUBECONFIG: kubeconfig }, timeout: 60_000 },
      (err, stdout, stderr) =>
        resolve({
          code: err ? (typeof err.code === 'number' ? err.code : 1) : 0,
          out: String(stdout),
          err: String(stderr),
        }),
    );
    child.stdin?.end(stdin);
  });
}

const DS = `
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: kube-system, labels: {k8s-app: agent}}
spec:
  selector: {matchLabels: {k8s-app: agent}}
  template:
    metadata: {labels: {k8s-app: agent}}
    spec:
      hostNetwork: true
      nodeSelector: {kubernetes.io/os: linux}
      containers:
      - {name: agent, image: lab/agent, command: [agent]}
`;

const POD = resourceByKind('Pod');
const DAEMONSET = resourceByKind('DaemonSet');
type Obj = Record<string, Record<string, unknown> | undefined>;

/** A kubelet with files for logs and an exec that echoes, so the API server's side is what is tested. */
function fakeKubelet(dir: string): {
  lifecycle: PodLifecycle;
  containers: (ns: string, pod: string) => KubeletContainer[] | undefined;
  exec: (ns: string, pod: string, c: string, cmd: readonly string[], s: StreamSession) => void;
  attach: (ns: string, pod: string, c: string, s: StreamSession) => void;
  delay: { ms: number };
} {
  const delay = { ms: 0 };
  const started = new Set<string>();
  return {
    delay,
    lifecycle: {
      start: (pod) =>
        new Promise((resolve) => {
          started.add(`${pod.metadata.namespace ?? ''}/${pod.metadata.name ?? ''}`);
          setTimeout(resolve, delay.ms); // a pod start that takes as long as the test says: simulated work
        }),
      stop: () => Promise.resolve(),
    },
    containers: (ns, pod) => {
      if (!started.has(`${ns}/${pod}`)) return undefined;
      const file = (n: number): string => join(dir, `${pod}-${n}.log`);
      writeFileSync(file(0), 'run 0 line 1\nrun 0 line 2\n');
      writeFileSync(file(1), 'run 1 line 1\nrun 1 line 2\nrun 1 line 3\n');
      return [{ name: 'agent', restartCount: 1, netns: 'none', logFile: (prev) => file(prev ? 0 : 1) }];
    },
    exec: (_ns, _pod, _c, cmd, s) => {
      s.writeStdout(Buffer.from(`ran ${cmd.join(' ')}\n`));
      s.writeStderr(Buffer.from('to stderr\n'));
      s.finish({ exitCode: cmd[0] === 'fail' ? 7 : 0 });
    },
    attach: (_ns, _pod, _c, s) => {
      s.onStdin((d) => {
        if (d === null) s.finish({ exitCode: 0 });
        else s.writeStdout(Buffer.from(`got ${d.toString()}`));
      });
    },
  };
}

describe('DaemonSets, endpoints, logs and exec with kubectl', toolOptions(['kubectl']), () => {
  let server: ApiServer;
  let dir: string;
  let kubeconfig: string;
  let kubelet: ReturnType<typeof fakeKubelet>;
  const k = (args: string[], stdin?: string): Promise<Ran> => kubectl(kubeconfig, args, stdin);
  const agentPods = (): Obj[] =>
    (server.store.list(POD, 'kube-system') as Obj[]).filter(
      (p) => p.metadata?.deletionTimestamp === undefined,
    );

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'kpts-ds-'));
    kubeconfig = join(dir, 'kubeconfig');
    kubelet = fakeKubelet(dir);
    server = await startApiServer({
      nodes: defaultNodes(3),
      kubeconfigPath: kubeconfig,
      podLifecycle: kubelet.lifecycle,
      kubelet,
    });
  });
  after(async () => {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('one pod per node; kubectl get ds shows desired = current = ready = up-to-date = available', async () => {
    const created = await k(['apply', '-f', '-'], DS);
    assert.equal(created.code, 0, created.err);
    await server.idle();
    const pods = agentPods();
    assert.deepEqual(
      pods.map((p) => p.spec?.nodeName).sort(),
      ['control-plane', 'worker', 'worker2'],
      'one pod on each node',
    );
    for (const p of pods) assert.match(String(p.metadata?.name), /^agent-[a-z0-9]{5}$/);
    const ds = await k(['-n', 'kube-system', 'get', 'ds', 'agent']);
    assert.equal(ds.code, 0, ds.err);
    assert.match(ds.out, /^NAME\s+DESIRED\s+CURRENT\s+READY\s+UP-TO-DATE\s+AVAILABLE\s+NODE SELECTOR\s+AGE/);
    assert.match(ds.out, /\nagent\s+3\s+3\s+3\s+3\s+3\s+kubernetes\.io\/os=linux\s/);
    const status = server.store.get(DAEMONSET, 'kube-system', 'agent') as Obj;
    assert.equal(status.status?.observedGeneration, 1);
    const st = await k(['-n', 'kube-system', 'rollout', 'status', 'ds', 'agent', '--timeout=10s']);
    assert.match(st.out, /daemon set "agent" successfully rolled out/);
  });

  test('rollout restart replaces every pod, at most maxUnavailable (1) missing at a time; rollout status waits', async () => {
    const before = new Set(agentPods().map((p) => String(p.metadata?.name)));
    kubelet.delay.ms = 300; // each new pod takes a moment to become ready
    let maxUnavailable = 0;
    const unsubscribe = server.store.subscribe((ev) => {
      if (ev.resource.names.kind !== 'Pod') return;
      const ready = (server.store.list(POD, 'kube-system') as Obj[]).filter(
        (p) =>
          p.metadata?.deletionTimestamp === undefined &&
          Array.isArray(p.status?.conditions) &&
          (p.status.conditions as { type: string; status: string }[]).some(
            (c) => c.type === 'Ready' && c.status === 'True',
          ),
      ).length;
      maxUnavailable = Math.max(maxUnavailable, 3 - ready);
    });
    try {
      const r = await k(['-n', 'kube-system', 'rollout', 'restart', 'ds', 'agent']);
      assert.equal(r.code, 0, r.err);
      assert.match(r.out, /daemonset.apps\/agent restarted/);
      const st = await k(['-n', 'kube-system', 'rollout', 'status', 'ds', 'agent', '--timeout=30s']);
      assert.equal(st.code, 0, st.err);
      assert.match(st.out, /successfully rolled out/);
    } finally {
      unsubscribe();
      kubelet.delay.ms = 0;
    }
    await server.idle();
    const after = agentPods();
    assert.equal(after.length, 3);
    assert.ok(
      after.every((p) => !before.has(String(p.metadata?.name))),
      'every pod is new',
    );
    assert.equal(maxUnavailable, 1, 'one node at a time');
    const ds = server.store.get(DAEMONSET, 'kube-system', 'agent') as Obj;
    assert.equal(ds.status?.observedGeneration, 2);
    assert.equal(ds.status?.updatedNumberScheduled, 3);
  });

  test('a new matching node gets a pod; a node the nodeSelector leaves out does not', async () => {
    const NODE = resourceByKind('Node');
    const node = (name: string, os: string): object => ({
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name, labels: { 'kubernetes.io/os': os } },
      spec: { podCIDR: '198.18.15.0/24' },
      status: { addresses: [{ type: 'InternalIP', address: '198.18.0.15' }] },
    });
    assert.ok(server.registry.create(NODE, '', node('win', 'windows')).ok);
    await server.idle();
    assert.equal(agentPods().length, 3, 'not on the windows node');
    assert.ok(server.registry.create(NODE, '', node('worker5', 'linux')).ok);
    await server.idle();
    assert.deepEqual(
      agentPods()
        .map((p) => p.spec?.nodeName)
        .sort(),
      ['control-plane', 'worker', 'worker2', 'worker5'],
    );
    const ds = server.store.get(DAEMONSET, 'kube-system', 'agent') as Obj;
    assert.equal(ds.status?.desiredNumberScheduled, 4);
    for (const name of ['win', 'worker5']) {
      const cur = server.store.get(NODE, '', name);
      if (cur) server.registry.remove(NODE, cur, cur);
    }
    await server.idle();
    assert.equal(agentPods().length, 3, 'the pod of a node that went is deleted');
  });

  test('kubectl get endpoints mirrors the EndpointSlices', async () => {
    const r = await k(
      ['apply', '-f', '-'],
      `
apiVersion: v1
kind: Service
metadata: {name: agents, namespace: kube-system}
spec:
  selector: {k8s-app: agent}
  ports: [{name: metrics, port: 10249}]
`,
    );
    assert.equal(r.code, 0, r.err);
    await server.idle();
    const ep = await k(['-n', 'kube-system', 'get', 'endpoints', 'agents', '-o', 'json']);
    assert.equal(ep.code, 0, ep.err);
    const subsets = (JSON.parse(ep.out) as { subsets: { addresses: { ip: string }[]; ports: unknown[] }[] })
      .subsets;
    assert.deepEqual(
      subsets[0]?.addresses.map((a) => a.ip),
      ['198.18.0.10', '198.18.0.11', '198.18.0.12'],
    );
    assert.deepEqual(subsets[0]?.ports, [{ name: 'metrics', port: 10249, protocol: 'TCP' }]);
    const table = await k(['get', 'ep', '-A']);
    assert.match(
      table.out,
      /kube-system\s+agents\s+198\.18\.0\.10:10249,198\.18\.0\.11:10249,198\.18\.0\.12:10249/,
    );
  });

  test('kubectl logs: --tail, --previous, -c, -l, and the errors upstream gives', async () => {
    const pod = String(agentPods()[0]?.metadata?.name);
    const all = await k(['-n', 'kube-system', 'logs', pod]);
    assert.equal(all.out, 'run 1 line 1\nrun 1 line 2\nrun 1 line 3\n');
    assert.equal((await k(['-n', 'kube-system', 'logs', pod, '--tail=1'])).out, 'run 1 line 3\n');
    assert.equal(
      (await k(['-n', 'kube-system', 'logs', pod, '--previous', '-c', 'agent'])).out,
      'run 0 line 1\nrun 0 line 2\n',
    );
    const byLabel = await k(['-n', 'kube-system', 'logs', '-l', 'k8s-app=agent', '--tail=1']);
    assert.equal(byLabel.out, 'run 1 line 3\n'.repeat(3));
    const wrong = await k(['-n', 'kube-system', 'logs', pod, '-c', 'nope']);
    assert.notEqual(wrong.code, 0);
    assert.match(wrong.err, /container nope is not valid for pod/);
  });

  test('kubectl exec runs over WebSocket: output, stderr and the exit code', async () => {
    const pod = String(agentPods()[0]?.metadata?.name);
    const ok = await k(['-n', 'kube-system', 'exec', pod, '--', 'echo', 'hi']);
    assert.equal(ok.code, 0, ok.err);
    assert.equal(ok.out, 'ran echo hi\n');
    assert.match(ok.err, /to stderr/);
    const failed = await k(['-n', 'kube-system', 'exec', pod, '--', 'fail']);
    assert.equal(failed.code, 7, 'the command’s exit code');
  });

  test('kubectl attach -i sends stdin and ends when it closes', async () => {
    const pod = String(agentPods()[0]?.metadata?.name);
    const r = await k(['-n', 'kube-system', 'attach', '-i', pod], 'hello\n');
    assert.equal(r.code, 0, r.err);
    assert.match(r.out, /got hello/);
  });

  test('a SPDY upgrade (kubectl before 1.29) is refused with a message naming the kubectl that works', async () => {
    const pod = String(agentPods()[0]?.metadata?.name);
    const url = new URL(`${server.url}/api/v1/namespaces/kube-system/pods/${pod}/exec?command=ls&stdout=1`);
    const answer = await new Promise<{ code: number; body: string }>((resolve, reject) => {
      const req = request(url, {
        method: 'POST',
        ca: server.caPem,
        headers: {
          Authorization: `Bearer ${server.token}`,
          Connection: 'Upgrade',
          Upgrade: 'SPDY/3.1',
          'X-Stream-Protocol-Version': 'v4.channel.k8s.io',
        },
      });
      req.on('response', (res) => {
        let body = '';
        res.on('data', (d: Buffer) => (body += d.toString()));
        res.on('end', () => resolve({ code: res.statusCode ?? 0, body }));
      });
      req.on('upgrade', () => reject(new Error('upgraded to SPDY')));
      req.on('error', reject);
      req.end();
    });
    assert.equal(answer.code, 400);
    assert.equal((JSON.parse(answer.body) as { message: string }).message, UNSUPPORTED_STREAMING);
    assert.match(UNSUPPORTED_STREAMING, /kubectl v1\.30 or newer/);
  });
});

test('maxUnavailable: an integer, or a percentage of the desired nodes rounded up', () => {
  assert.equal(scaledMaxUnavailable(2, 10), 2);
  assert.equal(scaledMaxUnavailable('25%', 10), 3);
  assert.equal(scaledMaxUnavailable('10%', 3), 1);
  assert.equal(scaledMaxUnavailable('0%', 3), 0);
  assert.equal(scaledMaxUnavailable(undefined, 3), 1);
});
