// `lab up --vm-nodes 1` end to end (issue 29's must-show): a two-node lab whose worker is a QEMU guest on Debian's
// kernel. `kubectl get nodes -o wide` shows each node's kernel; a pod on the guest node reaches svc/web (pods on
// the control-plane node) through its ClusterIP, so the guest's own kube-proxy-ts programmed the guest's kernel;
// a pod on the namespace node reaches a pod on the guest node through a ClusterIP; and stopping the lab leaves no
// QEMU, namespace or state directory behind.
//
// Not part of `npm test`: the guest's agent starts under emulation in minutes (packages/lab/src/vm/README.md,
// "Numbers"), so the lab takes 4–8 minutes to come up. Run it as root:
//
//   npm run test:vm-lab
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { release } from 'node:os';
import { startLab, type Lab } from '../../packages/lab/src/cluster/index.js';
import { VM_NODE_TAINT } from '../../packages/lab/src/cluster/guest-nodes.js';
import { podNamespaceName } from '../../packages/lab/src/cluster/layout.js';
import { kernelOptions } from '../helpers/kernel.js';
import { GUEST_TOOLS } from './guest-tools.js';
import { field, httpService, kubectlFor, mustRun, podViews, run, waitFor } from '../e2e/helpers.js';
import { LAB_MAIN, SOURCE_FLAGS } from '../helpers/cli.js';
import { labTurn, newLabPlace } from '../e2e/helpers/lab-turn.js';

const gate = kernelOptions([...GUEST_TOOLS, 'ip', 'nft', 'curl', 'kubectl', '/bin/busybox']);
const NS = 'vm';
const GUEST = 'worker';
const toleration = { key: VM_NODE_TAINT.key, operator: 'Exists' };

/** A pod pinned to the guest node: the lab's pod server (answers HTTP on 8080), or `command`. */
function guestPod(name: string, command?: readonly string[]): object {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: NS, labels: { app: name } },
    spec: {
      nodeName: GUEST,
      tolerations: [toleration],
      containers: [
        command
          ? { name, image: 'busybox', command }
          : {
              name,
              image: 'kube-proxy-ts/pod-server',
              ports: [{ name: 'http', containerPort: 8080, protocol: 'TCP' }],
            },
      ],
    },
  };
}

describe('lab up --vm-nodes 1: a guest node on Debian kernel', { ...gate, timeout: 40 * 60_000 }, () => {
  const { prefix, stateDir } = newLabPlace();
  let lab: Lab | undefined;
  let releaseTurn: () => void = () => undefined;
  const k = (): ReturnType<typeof kubectlFor> => kubectlFor(lab?.kubeconfigPath ?? '');

  before(
    async () => {
      releaseTurn = await labTurn();
      const t0 = Date.now();
      lab = await startLab({
        nodes: 2,
        vmNodes: 1,
        stateDir,
        prefix,
        web: false,
        progress: (line) => console.log(`# [${((Date.now() - t0) / 1000).toFixed(0)} s] ${line}`),
      });
      console.log(`# lab up in ${((Date.now() - t0) / 1000).toFixed(0)} s`);
    },
    { timeout: 30 * 60_000 },
  );

  after(async () => {
    try {
      await lab?.stop();
      const qemu = (await mustRun('ps', ['-eo', 'args='])).split('\n').filter((l) => l.includes(stateDir));
      assert.deepEqual(qemu, [], 'no process of the lab (QEMU among them) is left');
      const namespaces = (await mustRun('ip', ['netns', 'list']))
        .split('\n')
        .filter((l) => l.startsWith(prefix));
      assert.deepEqual(namespaces, [], 'no namespace is left');
      assert.equal(existsSync(stateDir), false, 'the state directory is gone');
    } finally {
      releaseTurn();
    }
  });

  test('kubectl get nodes -o wide shows the guest node with its own kernel', async () => {
    const guest = lab!.nodes.find((n) => n.name === GUEST)?.guest;
    assert.ok(guest, `${GUEST} is a guest`);
    assert.match(guest.release, /^6\.1\./, "Debian 12's kernel");
    const wide = await k().run(['get', 'nodes', '-o', 'wide']);
    console.log(wide.replace(/^/gm, '# '));
    const kernelOf = (node: string): string | undefined =>
      wide
        .split('\n')
        .find((l) => l.startsWith(`${node} `))
        ?.split(/\s{2,}/)[8];
    assert.equal(kernelOf(GUEST), guest.release);
    assert.equal(kernelOf('control-plane'), release(), "the namespace node shows this host's kernel");
  });

  test("the guest's kube-proxy logs reach kubectl; lab exec says a guest node is out of its reach", async () => {
    const proxy = podViews(
      await k().json(['-n', 'kube-system', 'get', 'pods', '-l', 'k8s-app=kube-proxy']),
    ).find((p) => p.node === GUEST);
    assert.ok(proxy, `a kube-proxy pod on ${GUEST}`);
    const logs = await k().run(['-n', 'kube-system', 'logs', proxy.name]);
    assert.match(
      logs,
      /"Caches are synced" controller="endpoint slice config"/,
      'its log, written in the guest',
    );
    const exec = await run(process.execPath, [
      ...SOURCE_FLAGS,
      LAB_MAIN,
      'exec',
      '--state-dir',
      stateDir,
      GUEST,
      '--',
      'true',
    ]);
    assert.equal(exec.code, 1);
    assert.match(
      exec.stderr,
      /worker is a guest node \(lab up --vm-nodes\): lab exec does not reach into guests yet/,
    );
  });

  test('a pod on the guest node reaches svc/web, whose pods are on the namespace node', async () => {
    await k().run(['create', 'namespace', NS]);
    await k().create([guestPod('vm-client', ['sleep', '3600'])]);
    await waitFor('vm-client running', 10 * 60_000, async () =>
      field(await k().json(['-n', NS, 'get', 'pod', 'vm-client']), 'status', 'phase') === 'Running'
        ? true
        : undefined,
    );
    const webIP = String(field(await k().json(['-n', 'svc', 'get', 'svc', 'web']), 'spec', 'clusterIP'));
    const webPods = podViews(await k().json(['-n', 'svc', 'get', 'pods', '-l', 'app=web'])).map(
      (p) => p.name,
    );
    const guestRunner = lab!.nodes.find((n) => n.name === GUEST)!.runner;
    const answer = await guestRunner.run(
      'ip',
      [
        'netns',
        'exec',
        podNamespaceName(prefix, NS, 'vm-client'),
        'curl',
        '-s',
        '-m',
        '30',
        `http://${webIP}/hostname`,
      ],
      { timeoutMs: 120_000 },
    );
    console.log(
      `# from vm-client (guest) to svc/web ${webIP}: ${answer.stdout.trim()} ${answer.stderr.trim()}`,
    );
    assert.ok(webPods.includes(answer.stdout.trim()), `a web pod answered: ${JSON.stringify(answer)}`);
  });

  test('a pod on the namespace node reaches a pod on the guest node through a ClusterIP', async () => {
    await k().create([guestPod('vm-web'), httpService(NS, 'vm-web', 'vm-web', 8080)]);
    await waitFor('vm-web ready', 10 * 60_000, async () => {
      const pods = podViews(await k().json(['-n', NS, 'get', 'pods', '-l', 'app=vm-web']));
      return pods.some((p) => p.ready && p.node === GUEST) ? true : undefined;
    });
    const ip = String(field(await k().json(['-n', NS, 'get', 'svc', 'vm-web']), 'spec', 'clusterIP'));
    const web = podViews(await k().json(['-n', 'svc', 'get', 'pods', '-l', 'app=web'])).find(
      (p) => p.node === 'control-plane' && p.ready,
    );
    assert.ok(web, 'a web pod on the namespace node');
    // The guest's endpoint reaches the namespace node's proxy through the API server; give it a few tries.
    const answer = await waitFor('vm-web through its ClusterIP', 120_000, async () => {
      const out = await mustRun('ip', [
        'netns',
        'exec',
        podNamespaceName(prefix, 'svc', web.name),
        'curl',
        '-s',
        '-m',
        '10',
        `http://${ip}/hostname`,
      ]).catch(() => '');
      return out.trim() === 'vm-web' ? out.trim() : undefined;
    });
    console.log(`# from ${web.name} (control-plane) to vm-web ${ip}: ${answer}`);
    assert.equal(answer, 'vm-web');
  });
});
