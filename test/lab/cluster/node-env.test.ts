// Each lab node is a host of its own: its kube-proxy's xtables lock is the node's file, and `lab up --iptables`
// decides which back end the plain iptables names run. Checked through the DaemonSet the lab creates and the
// container resolution the lab's kubelet runs, as a proxy pod on node "worker" would get them.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { arr, child, type JsonObject } from '../../../packages/lab/src/apiserver/json.js';
import { resolveContainer } from '../../../packages/lab/src/cluster/container-spec.js';
import { kubeProxyDaemonSet } from '../../../packages/lab/src/cluster/kube-proxy-daemonset.js';
import { labPaths } from '../../../packages/lab/src/cluster/layout.js';
import { nodeEnvironment, prepareIptablesBinDir } from '../../../packages/lab/src/cluster/node-env.js';

function proxyContainerOn(
  node: string,
  env: Record<string, string>,
  stateDir?: string,
): ReturnType<typeof resolveContainer> {
  const ds = kubeProxyDaemonSet({
    kubeconfigPath: '/lab/nodes/$(NODE_NAME)/kubeconfig',
    env,
    ...(stateDir !== undefined ? { stateDir } : {}),
  });
  const template = child(child(ds, 'spec'), 'template');
  const pod: JsonObject = { ...template, spec: { ...child(template, 'spec'), nodeName: node } };
  const container = arr(child(template, 'spec'), 'containers')[0] as JsonObject;
  return resolveContainer(pod, container, []);
}

describe('a lab node as its own host', () => {
  test("the proxy's XTABLES_LOCKFILE is its node's own file, one per node", () => {
    const paths = labPaths('/lab');
    const env = nodeEnvironment(paths, '$(NODE_NAME)', undefined, '/usr/bin');
    assert.deepEqual(env, { XTABLES_LOCKFILE: '/lab/nodes/$(NODE_NAME)/xtables.lock' });
    const worker = proxyContainerOn('worker', env);
    const cp = proxyContainerOn('control-plane', env);
    assert.equal(worker.env.XTABLES_LOCKFILE, '/lab/nodes/worker/xtables.lock');
    assert.equal(cp.env.XTABLES_LOCKFILE, '/lab/nodes/control-plane/xtables.lock');
    assert.equal(worker.env.NODE_NAME, 'worker');
  });

  test("the proxy's --nftables-state-dir is its node's own directory, not deploy/'s shared hostPath", () => {
    const paths = labPaths('/lab');
    const stateDir = paths.nodeProxyStateDir('$(NODE_NAME)');
    const ds = kubeProxyDaemonSet({ kubeconfigPath: '/k', stateDir });
    const spec = child(child(child(ds, 'spec'), 'template'), 'spec');
    const container = arr(spec, 'containers')[0] as JsonObject;
    const flags = arr(container, 'command').filter(
      (w) => typeof w === 'string' && w.startsWith('--nftables-state-dir'),
    );
    assert.deepEqual(flags, ['--nftables-state-dir=/lab/nodes/$(NODE_NAME)/kube-proxy-ts']);
    assert.ok(!JSON.stringify(spec).includes('/run/kube-proxy-ts'), JSON.stringify(spec));
    const worker = proxyContainerOn('worker', {}, stateDir);
    assert.ok(
      worker.argv?.includes('--nftables-state-dir=/lab/nodes/worker/kube-proxy-ts'),
      String(worker.argv),
    );
    // deploy/'s own DaemonSet leaves the state on the node's /run, outside the pod.
    const shipped = kubeProxyDaemonSet({ kubeconfigPath: '/k' });
    const shippedSpec = child(child(child(shipped, 'spec'), 'template'), 'spec');
    const shippedContainer = arr(shippedSpec, 'containers')[0] as JsonObject;
    assert.ok(arr(shippedContainer, 'command').includes('--nftables-state-dir=/run/kube-proxy-ts'));
    assert.deepEqual(
      arr(shippedSpec, 'volumes').filter((v) => child(v, 'hostPath').path === '/run/kube-proxy-ts').length,
      1,
    );
  });

  test('--iptables legacy puts links to the legacy binaries first on PATH', () => {
    const dir = mkdtempSync(join(tmpdir(), 'kpts-node-env-'));
    try {
      const paths = labPaths(dir);
      const bin = prepareIptablesBinDir(paths, 'legacy');
      assert.equal(bin, join(dir, 'iptables-legacy', 'bin'));
      for (const tool of ['iptables', 'iptables-restore', 'iptables-save', 'ip6tables-restore'])
        assert.match(
          readlinkSync(join(bin, tool)),
          new RegExp(`/${tool.replace('-', '-legacy-').replace(/^(ip6?tables)$/, '$1-legacy')}$`),
        );
      const env = nodeEnvironment(paths, 'worker', 'legacy', '/usr/sbin:/usr/bin');
      assert.equal(env.PATH, `${bin}:/usr/sbin:/usr/bin`);
      assert.equal(proxyContainerOn('worker', env).env.PATH, env.PATH);
      assert.ok(existsSync(join(bin, 'iptables')));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
