// `lab up --control-plane-taint`: the control-plane node carries kubeadm's taint, seen through real kubectl; Pods
// that do not tolerate it (svc/web) are not scheduled there while CoreDNS, which tolerates it as kubeadm's does,
// is; and a lab of one node refuses the option (nothing without the toleration could run), in startLab and in
// `lab up`, before anything is built.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultNodes, startApiServer } from '../../../packages/lab/src/apiserver/index.js';
import { labCommand } from '../../../packages/lab/src/cli/lab.js';
import { clusterDnsObjects } from '../../../packages/lab/src/cluster/cluster-dns.js';
import { startLab } from '../../../packages/lab/src/cluster/lab.js';
import {
  WORKLOAD_NAMESPACE,
  webDeployment,
  workloadNamespace,
} from '../../../packages/lab/src/cluster/workload.js';
import { resourceByKind } from '../../../packages/lab/src/apiserver/resources.js';
import { captureStderr, toolOptions } from '../tools.js';
import { kubectl } from '../apiserver/kubectl-run.js';

interface PodPlace {
  readonly name: string;
  readonly node: string;
  readonly unschedulable?: string;
}

function places(list: string): PodPlace[] {
  const parsed = JSON.parse(list) as {
    items: {
      metadata: { name: string };
      spec: { nodeName?: string };
      status: { conditions?: { type: string; status: string; message?: string }[] };
    }[];
  };
  return parsed.items.map((p) => {
    const c = p.status.conditions?.find((x) => x.type === 'PodScheduled' && x.status === 'False');
    return {
      name: p.metadata.name,
      node: p.spec.nodeName ?? '',
      ...(c?.message !== undefined ? { unschedulable: c.message } : {}),
    };
  });
}

describe('the control-plane taint', toolOptions(['kubectl']), () => {
  test('kubectl shows the taint on the control-plane node only; web avoids it, CoreDNS tolerates it', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'kpts-cp-taint-'));
    const kubeconfig = join(dir, 'kubeconfig');
    const server = await startApiServer({
      nodes: defaultNodes(2),
      controlPlaneTaint: true,
      kubeconfigPath: kubeconfig,
    });
    try {
      const k = (...args: string[]): Promise<string> => kubectl(kubeconfig, args);
      const taints = async (node: string): Promise<unknown> =>
        JSON.parse((await k('get', 'node', node, '-o', 'jsonpath={.spec.taints}')) || 'null');
      assert.deepEqual(await taints('control-plane'), [
        { key: 'node-role.kubernetes.io/control-plane', effect: 'NoSchedule' },
      ]);
      assert.equal(await taints('worker'), null, 'workers are not tainted');
      assert.match(
        await k('describe', 'node', 'control-plane'),
        /Taints:\s+node-role\.kubernetes\.io\/control-plane:NoSchedule/,
      );
      // With the only worker cordoned, the control-plane node is the one place left: what may run there does.
      await k('cordon', 'worker');
      const create = (kind: string, namespace: string, obj: object): void => {
        const r = server.registry.create(resourceByKind(kind), namespace, obj);
        assert.ok(r.ok, `create ${kind}`);
      };
      for (const [kind, ns, obj] of clusterDnsObjects({
        clusterIP: '198.19.0.10',
        kubeconfigPath: '/nodes/$(NODE_NAME)/kubeconfig',
        apiserverSocket: '/apiserver.sock',
      }))
        create(kind, ns, obj);
      create('Namespace', '', workloadNamespace());
      create('Deployment', WORKLOAD_NAMESPACE, webDeployment());
      await server.idle();
      const dns = places(await k('-n', 'kube-system', 'get', 'pods', '-l', 'k8s-app=kube-dns', '-o', 'json'));
      assert.equal(dns.length, 2);
      assert.deepEqual(
        dns.map((p) => p.node),
        ['control-plane', 'control-plane'],
        'CoreDNS tolerates the taint',
      );
      const web = places(await k('-n', WORKLOAD_NAMESPACE, 'get', 'pods', '-o', 'json'));
      assert.ok(web.length > 0);
      for (const p of web) {
        assert.equal(p.node, '', `${p.name} is not scheduled`);
        assert.match(
          p.unschedulable ?? '',
          /untolerated taint \{node-role\.kubernetes\.io\/control-plane: \}/,
        );
      }
    } finally {
      await server.stop();
      await rm(dir, { recursive: true, force: true });
    }
  });

  test('without the option no node is tainted', async () => {
    const server = await startApiServer({ nodes: defaultNodes(2) });
    try {
      for (const node of server.store.list(resourceByKind('Node')))
        assert.equal((node.spec as { taints?: unknown } | undefined)?.taints, undefined);
    } finally {
      await server.stop();
    }
  });

  test('one node and the taint: startLab refuses before it builds anything', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'kpts-cp-taint-'));
    try {
      const untouchable = { run: () => Promise.reject(new Error('a refused lab ran a command')) };
      await assert.rejects(
        startLab({ nodes: 1, controlPlaneTaint: true, stateDir: join(dir, 'state'), runner: untouchable }),
        /control-plane taint needs at least 2 nodes/,
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  test('lab up --nodes 1 --control-plane-taint: a usage error, exit 2', async () => {
    const { result, stderr } = await captureStderr(() =>
      labCommand(['up', '--nodes', '1', '--control-plane-taint']),
    );
    assert.equal(result, 2);
    assert.match(stderr, /--control-plane-taint: needs --nodes 2 or more/);
  });

  test('lab up --time-scale: a number from 1 to 100, else a usage error naming it', async () => {
    for (const bad of ['0', 'slow', '101']) {
      const { result, stderr } = await captureStderr(() => labCommand(['up', '--time-scale', bad]));
      assert.equal(result, 2, bad);
      assert.match(stderr, new RegExp(`--time-scale ${bad}: expected a number from 1 to 100`));
    }
  });
});
