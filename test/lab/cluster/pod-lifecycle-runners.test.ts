// The lab kubelet's per-node runners (pod-lifecycle.ts `runnerFor`): a guest node's Pods are made and run through
// that node's runner (commands in the guest), every other node's through the lab's. Fakes at the CommandRunner
// seam record where each command went.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { SILENT_LOGGER } from '../../../packages/agent/src/util/logger.js';
import type { Pod } from '../../../packages/lab/src/apiserver/types.js';
import { labLayout } from '../../../packages/lab/src/cluster/layout.js';
import { namespacePodLifecycle } from '../../../packages/lab/src/cluster/pod-lifecycle.js';
import { DONE, HeldLaunchRuntime } from './fake-runtime.js';
import { fileTempDir } from '../../helpers/temp-dir.js';

const dir = fileTempDir('kpts-runners-');

/** Records every command (a signal as `signal NAME`); `ip` answers at once, keeping `ip netns` names. */
class RecordingRuntime extends HeldLaunchRuntime {
  readonly commands: string[] = [];
  /** What `ip netns add` made and `ip netns del` did not remove yet. */
  readonly namespaces = new Set<string>();

  override run(cmd: string, args: readonly string[], options?: { env?: Record<string, string> }) {
    this.commands.push(
      cmd === 'kill' ? `signal ${args[1] ?? ''} ${args[2] ?? ''}` : [cmd, ...args].join(' '),
    );
    if (cmd !== 'ip') return super.run(cmd, args, options);
    const [a, b, c] = args;
    if (a === 'netns' && b === 'add' && c !== undefined) this.namespaces.add(c);
    if (a === 'netns' && b === 'del' && c !== undefined) this.namespaces.delete(c);
    if (a === '-json' && b === 'netns' && c === 'list') {
      const list = [...this.namespaces].map((name) => ({ name }));
      return Promise.resolve({ ...DONE, stdout: JSON.stringify(list) });
    }
    return Promise.resolve(DONE);
  }
}

function pod(name: string, nodeName: string, hostNetwork: boolean, podIP: string): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default', uid: `uid-${name}` },
    spec: {
      nodeName,
      hostNetwork,
      restartPolicy: 'Always',
      containers: [
        { name, image: 'registry.k8s.io/e2e-test-images/agnhost:2.53', command: ['sleep', '10000'] },
      ],
    },
    status: { podIP, podIPs: [{ ip: podIP }] },
  } as unknown as Pod;
}

test('a Pod on a node with a runner of its own is made, run and stopped through that runner alone', async () => {
  const layout = labLayout(2, 'kptsrn');
  const [first, second] = layout.nodes;
  assert.ok(first && second);
  const lab = new RecordingRuntime(dir, 3000);
  const guest = new RecordingRuntime(dir, 4000);
  const kubelet = namespacePodLifecycle({
    runner: lab,
    runnerFor: (node) => (node === second.name ? guest : undefined),
    layout,
    podStateDir: mkdtempSync(join(dir, 'pods-')),
    logger: SILENT_LOGGER,
  });
  try {
    const onGuest = pod('on-guest', second.name, false, second.families[0]!.podCIDR.replace(/0\/\d+$/, '7'));
    await kubelet.start(onGuest);
    assert.equal(lab.commands.length, 0, "nothing ran through the lab's runner");
    assert.equal(guest.namespaces.size, 1, "the pod's namespace is the guest's");
    assert.ok(
      guest.commands.some((c) => c.startsWith('ip netns add ')),
      `the pod's namespace was made in the guest:\n${guest.commands.join('\n')}`,
    );
    assert.ok(
      guest.commands.some((c) => c.startsWith('sh ')),
      'its container was launched in the guest',
    );

    const onLabNode = pod('on-lab-node', first.name, true, first.ip);
    await kubelet.start(onLabNode);
    assert.ok(
      lab.commands.some((c) => c.startsWith('sh ')),
      "the other node's container: the lab's runner",
    );

    const before = guest.commands.length;
    await kubelet.stop(onGuest);
    const stopping = guest.commands.slice(before);
    assert.ok(
      stopping.some((c) => c.startsWith('signal TERM ')),
      `stopped in the guest:\n${stopping.join('\n')}`,
    );
    assert.ok(
      stopping.some((c) => c.startsWith('ip netns del')),
      'its namespace removed in the guest',
    );
    assert.ok(
      !lab.commands.some((c) => c.startsWith('signal TERM 4000')),
      'no signal for it on the lab side',
    );
  } finally {
    kubelet.close();
  }
});
