// `kubectl get nodes -o wide` against the lab API server: kubectl's wide columns, with each Node's kernel (the
// host's for namespace nodes, which share it; a guest node's own) and a node's own taints beside the control
// plane's.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { release, tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultNodes, startApiServer } from '../../../packages/lab/src/apiserver/index.js';
import { toolOptions } from '../tools.js';
import { kubectl } from './kubectl-run.js';

describe('kubectl get nodes -o wide', toolOptions(['kubectl']), () => {
  test("kubectl's wide columns; each Node's own kernel; a Node's own taints", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'kpts-nodes-'));
    const kubeconfig = join(dir, 'kubeconfig');
    const [first, second] = defaultNodes(2);
    const taint = { key: 'kube-proxy-ts.lab/vm-node', value: 'true', effect: 'NoSchedule' };
    const server = await startApiServer({
      nodes: [first!, { ...second!, kernelVersion: '6.1.0-99-amd64', taints: [taint] }],
      controlPlaneTaint: true,
      kubeconfigPath: kubeconfig,
    });
    try {
      const wide = (await kubectl(kubeconfig, ['get', 'nodes', '-o', 'wide'])).trimEnd().split('\n');
      assert.deepEqual(wide[0]?.split(/\s+/), [
        'NAME',
        'STATUS',
        'ROLES',
        'AGE',
        'VERSION',
        'INTERNAL-IP',
        'EXTERNAL-IP',
        'OS-IMAGE',
        'KERNEL-VERSION',
        'CONTAINER-RUNTIME',
      ]);
      const row = (name: string): string[] =>
        wide.find((l) => l.startsWith(`${name} `))?.split(/\s{2,}/) ?? [];
      assert.equal(row(first!.name)[8], release(), 'a namespace node shows the host kernel');
      assert.equal(row(second!.name)[8], '6.1.0-99-amd64', 'a guest node shows its own');
      assert.equal(row(second!.name)[6], '<none>', 'no ExternalIP');
      assert.equal(row(second!.name)[9], '<unknown>', 'no container runtime version');

      const taints = (name: string): Promise<string> =>
        kubectl(kubeconfig, ['get', 'node', name, '-o', 'jsonpath={.spec.taints[*].key}']);
      assert.equal(await taints(second!.name), 'kube-proxy-ts.lab/vm-node');
      assert.equal(await taints(first!.name), 'node-role.kubernetes.io/control-plane');
    } finally {
      await server.stop();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
