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

function proxyContainerOn(node: string, env: Record<string, string>): ReturnType<typeof resolveContainer> {
  const ds = kubeProxyDaemonSet({ kubeconfigPath: '/lab/nodes/$(NODE_NAME)/kubeconfig', env });
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
