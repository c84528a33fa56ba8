// deploy/: the manifests that replace kubeadm's kube-proxy objects, and the image's Dockerfile. Real kubectl
// applies them to the lab API server holding kubeadm's kube-proxy objects, and kubeadm's ConfigMap stays as it was
// (rolling back needs it); the example ConfigMap (deploy/examples/, not applied) loads through the proxy's own
// configuration loader; the DaemonSet keeps kubeadm's names, mounts and scheduling and adds a readiness probe.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { parseAllDocuments } from 'yaml';
import { loadProxyConfig } from '../../packages/agent/src/config/index.js';
import { startApiServer } from '../../packages/lab/src/apiserver/index.js';
import { toolOptions } from '../lab/tools.js';

const DEPLOY = fileURLToPath(new URL('../../deploy/', import.meta.url));
const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

interface Manifest {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: { readonly name: string; readonly namespace?: string };
  readonly [field: string]: unknown;
}

async function manifests(dir = DEPLOY): Promise<Manifest[]> {
  const out: Manifest[] = [];
  for (const f of (await readdir(dir)).filter((n) => n.endsWith('.yaml')).sort()) {
    for (const doc of parseAllDocuments(await readFile(join(dir, f), 'utf8'))) {
      if (doc.errors.length > 0) throw new Error(`${f}: ${doc.errors[0]?.message ?? ''}`);
      const value = doc.toJS() as Manifest | null;
      if (value) out.push(value);
    }
  }
  return out;
}

function kubectl(
  kubeconfig: string,
  args: readonly string[],
  stdin?: string,
): Promise<{ code: number; out: string; err: string }> {
  return new Promise((resolve) => {
    const child = execFile(
      'kubectl',
      ['--kubeconfig', kubeconfig, ...args],
      { timeout: 60_000 },
      (error, stdout, stderr) =>
        resolve({
          code: error ? (typeof error.code === 'number' ? error.code : 1) : 0,
          out: stdout,
          err: stderr,
        }),
    );
    child.stdin?.end(stdin ?? '');
  });
}

function find(all: readonly Manifest[], kind: string, name: string): Manifest {
  const m = all.find((x) => x.kind === kind && x.metadata.name === name);
  assert.ok(m, `deploy/ has no ${kind} ${name}`);
  return m;
}

test('deploy/ replaces kubeadm kube-proxy objects, but not its ConfigMap', async () => {
  const all = await manifests();
  assert.equal(
    all.some((m) => m.kind === 'ConfigMap'),
    false,
    'kubectl apply -f deploy/ must not replace kubeadm’s ConfigMap',
  );
  // kubeadm's names (cmd/kubeadm/app/phases/addons/proxy): everything namespaced lives in kube-system.
  const sa = find(all, 'ServiceAccount', 'kube-proxy');
  const cm = find(await manifests(join(DEPLOY, 'examples')), 'ConfigMap', 'kube-proxy');
  const ds = find(all, 'DaemonSet', 'kube-proxy');
  const binding = find(all, 'ClusterRoleBinding', 'kubeadm:node-proxier');
  find(all, 'ClusterRole', 'system:node-proxier');
  assert.deepEqual((ds.spec as { updateStrategy: unknown }).updateStrategy, {
    type: 'RollingUpdate',
    rollingUpdate: { maxUnavailable: 1 },
  });
  for (const m of [sa, cm, ds]) assert.equal(m.metadata.namespace, 'kube-system', `${m.kind} namespace`);
  assert.deepEqual(binding.roleRef, {
    apiGroup: 'rbac.authorization.k8s.io',
    kind: 'ClusterRole',
    name: 'system:node-proxier',
  });
  assert.deepEqual(binding.subjects, [
    { kind: 'ServiceAccount', name: 'kube-proxy', namespace: 'kube-system' },
  ]);

  // config.conf is a KubeProxyConfiguration that the proxy itself accepts, in nftables mode.
  const data = cm.data as Record<string, string>;
  assert.ok(data['config.conf'] && data['kubeconfig.conf'], 'ConfigMap keys config.conf and kubeconfig.conf');
  const loaded = loadProxyConfig(
    ['--config', '/var/lib/kube-proxy/config.conf', '--hostname-override', 'node-1'],
    {
      readFile: () => data['config.conf'] as string,
      hostname: () => 'unused',
    },
  );
  assert.ok(loaded.ok, JSON.stringify(loaded.ok ? undefined : loaded.errors));
  assert.deepEqual(loaded.warnings, []);
  assert.equal(loaded.config.mode, 'nftables');
  assert.equal(loaded.config.nodeName, 'node-1');
  assert.equal(loaded.config.clientConnection.kubeconfig, '/var/lib/kube-proxy/kubeconfig.conf');

  // The DaemonSet: host network, privileged, the node name from spec.nodeName, kubeadm's mounts and scheduling.
  const pod = (ds.spec as { template: { spec: Record<string, unknown> } }).template.spec;
  assert.equal(pod.hostNetwork, true);
  assert.equal(pod.priorityClassName, 'system-node-critical');
  assert.equal(pod.serviceAccountName, 'kube-proxy');
  assert.deepEqual(pod.tolerations, [{ operator: 'Exists' }]);
  const [container] = pod.containers as {
    image: string;
    command: string[];
    env: unknown[];
    securityContext: unknown;
    volumeMounts: { name: string; mountPath: string }[];
  }[];
  assert.ok(container);
  assert.deepEqual(container.securityContext, { privileged: true });
  const probe = (container as unknown as { readinessProbe: { exec: { command: string[] } } }).readinessProbe;
  assert.deepEqual(probe.exec.command.slice(0, 2), ['node', '-e'], 'the image’s Node.js runs the probe');
  assert.match(probe.exec.command[2] ?? '', /kubeproxy_sync_proxy_rules_last_timestamp_seconds/);
  assert.ok(container.command.includes('--config=/var/lib/kube-proxy/config.conf'));
  assert.ok(container.command.includes('--hostname-override=$(NODE_NAME)'));
  assert.deepEqual(container.env, [
    { name: 'NODE_NAME', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } },
  ]);
  const mounts = Object.fromEntries(container.volumeMounts.map((m) => [m.mountPath, m.name]));
  const volumes = Object.fromEntries(
    (pod.volumes as { name: string; [k: string]: unknown }[]).map((v) => [v.name, v]),
  );
  assert.deepEqual(volumes[mounts['/var/lib/kube-proxy'] ?? '']?.configMap, { name: 'kube-proxy' });
  assert.deepEqual(volumes[mounts['/run/xtables.lock'] ?? '']?.hostPath, {
    path: '/run/xtables.lock',
    type: 'FileOrCreate',
  });
  assert.deepEqual(volumes[mounts['/lib/modules'] ?? '']?.hostPath, { path: '/lib/modules' });

  // The image it names is the one scripts/image.sh builds, by the name docs/operating.md imports it under
  // (test/e2e/image.test.ts builds and runs that image).
  const version = (
    JSON.parse(await readFile(join(REPO_ROOT, 'packages/agent/package.json'), 'utf8')) as {
      version: string;
    }
  ).version;
  assert.equal(container.image, `localhost/kube-proxy-ts:v${version}`);
  const operating = await readFile(join(REPO_ROOT, 'docs/operating.md'), 'utf8');
  assert.ok(operating.includes('bash scripts/image.sh'), 'docs/operating.md says how the image is built');
  assert.ok(operating.includes(`localhost/kube-proxy-ts:v${version}`), 'and under which name it is imported');
});

// kubeadm's kube-proxy ConfigMap as `kubeadm init` writes it (cmd/kubeadm/app/phases/addons/proxy): iptables mode
// by default (mode ""), the node's kubeconfig pointing at the control-plane endpoint.
const KUBEADM_CONFIGMAP = `apiVersion: v1
kind: ConfigMap
metadata:
  name: kube-proxy
  namespace: kube-system
  labels:
    app: kube-proxy
data:
  config.conf: |-
    apiVersion: kubeproxy.config.k8s.io/v1alpha1
    kind: KubeProxyConfiguration
    bindAddress: 0.0.0.0
    clientConnection:
      kubeconfig: /var/lib/kube-proxy/kubeconfig.conf
    clusterCIDR: 198.18.8.0/21
    mode: ""
  kubeconfig.conf: |-
    apiVersion: v1
    kind: Config
    clusters:
    - cluster:
        certificate-authority: /var/run/secrets/kubernetes.io/serviceaccount/ca.crt
        server: https://cp.kubeadm.internal:6443
      name: default
    contexts:
    - context:
        cluster: default
        namespace: default
        user: default
      name: default
    current-context: default
    users:
    - name: default
      user:
        tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token
`;

test(
  'kubectl apply -f deploy/ over kubeadm’s objects: accepted, and kubeadm’s ConfigMap unchanged',
  toolOptions(['kubectl']),
  async () => {
    const dir = await mkdtemp(join(tmpdir(), 'kpts-deploy-'));
    const kubeconfig = join(dir, 'kubeconfig');
    const server = await startApiServer({ kubeconfigPath: kubeconfig });
    const kubeadmConfigMap = async (): Promise<unknown> => {
      const r = await kubectl(kubeconfig, ['-n', 'kube-system', 'get', 'cm', 'kube-proxy', '-o', 'json']);
      assert.equal(r.code, 0, r.err);
      return JSON.parse(r.out) as unknown;
    };
    try {
      const created = await kubectl(kubeconfig, ['create', '-f', '-'], KUBEADM_CONFIGMAP);
      assert.equal(created.code, 0, created.err);
      const cmBefore = await kubeadmConfigMap();

      const dry = await kubectl(kubeconfig, ['apply', '--dry-run=client', '-f', DEPLOY]);
      assert.equal(dry.code, 0, dry.err);
      const lines = dry.out.trim().split('\n').sort();
      assert.deepEqual(lines, [
        'clusterrole.rbac.authorization.k8s.io/system:node-proxier created (dry run)',
        'clusterrolebinding.rbac.authorization.k8s.io/kubeadm:node-proxier created (dry run)',
        'daemonset.apps/kube-proxy created (dry run)',
        'serviceaccount/kube-proxy created (dry run)',
      ]);

      const real = await kubectl(kubeconfig, ['apply', '-f', DEPLOY]);
      assert.equal(real.code, 0, real.err);
      const back = await kubectl(kubeconfig, [
        'get',
        '-n',
        'kube-system',
        'daemonset/kube-proxy',
        '-o',
        'json',
      ]);
      assert.equal(back.code, 0, back.err);
      const ds = JSON.parse(back.out) as { spec: { template: { spec: { hostNetwork: boolean } } } };
      assert.equal(ds.spec.template.spec.hostNetwork, true);
      const again = await kubectl(kubeconfig, ['apply', '-f', DEPLOY]);
      assert.equal(again.code, 0, again.err);
      assert.match(again.out, /daemonset\.apps\/kube-proxy unchanged/);

      const cmAfter = await kubeadmConfigMap();
      assert.deepEqual(cmAfter, cmBefore, 'kubeadm’s ConfigMap, untouched');
    } finally {
      await server.stop();
      await rm(dir, { recursive: true, force: true });
    }
  },
);
