// The lab kubelet's local-storage eviction (local-storage.ts) and its containers' writable layers: ephemeral-storage
// quantities, upstream's eviction messages, and the kubelet (pod-lifecycle.ts) evicting a Pod whose container wrote
// more than its limit into its writable layer, sparing one that wrote less, and removing the layers with the Pod.
// Processes are faked at the CommandRunner seam (one launch test runs a real shell on the host, in a temporary
// directory); the eviction manager's timer is a FakeClock, so a check happens exactly when the test advances it,
// and the eviction's first report is there as soon as the check has run.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { hostCommandRunner } from '../../../packages/agent/src/netfilter/command.js';
import { FakeClock } from '../../../packages/agent/src/util/clock.js';
import { SILENT_LOGGER } from '../../../packages/agent/src/util/logger.js';
import type { Pod } from '../../../packages/lab/src/apiserver/types.js';
import type { PodStatusReport } from '../../../packages/lab/src/controllers/pod-lifecycle.js';
import { labLayout } from '../../../packages/lab/src/cluster/layout.js';
import {
  diskUsage,
  formatBytes,
  STORAGE_CHECK_PERIOD_MS,
  storageEvictionMessage,
  storageLimitOf,
} from '../../../packages/lab/src/cluster/local-storage.js';
import { namespacePodLifecycle } from '../../../packages/lab/src/cluster/pod-lifecycle.js';
import { launchInNamespace } from '../../../packages/lab/src/cluster/processes.js';
import { waitFor } from '../../helpers/wait-for.js';
import { HeldLaunchRuntime } from './fake-runtime.js';
import { fileTempDir } from '../../helpers/temp-dir.js';

const dir = fileTempDir('kpts-local-storage-');

const MiB = 1024 * 1024;
const limit = (text: string): { readonly text: string; readonly bytes: number } | undefined =>
  storageLimitOf({ resources: { limits: { 'ephemeral-storage': text } } });

test('ephemeral-storage limits parse as Kubernetes quantities, in bytes rounded up', () => {
  assert.deepEqual(limit('5Mi'), { text: '5Mi', bytes: 5 * MiB });
  assert.equal(limit('1G')?.bytes, 1_000_000_000);
  assert.equal(limit('500k')?.bytes, 500_000);
  assert.equal(limit('1.5Gi')?.bytes, 1.5 * 1024 * MiB);
  assert.equal(limit('2e3')?.bytes, 2000);
  assert.equal(limit('100m')?.bytes, 1, 'a fraction of a byte is a byte');
  assert.equal(limit('5 apples'), undefined);
  assert.equal(storageLimitOf({ resources: { limits: { cpu: '1' } } }), undefined);
  assert.equal(storageLimitOf({ name: 'no-resources' }), undefined);
});

test('byte counts print as resource.Quantity does: the largest exact suffix of their format', () => {
  assert.equal(formatBytes(5 * MiB, true), '5Mi');
  assert.equal(formatBytes(1536 * MiB, true), '1536Mi');
  assert.equal(formatBytes(1500, true), '1500');
  assert.equal(formatBytes(1_500_000, false), '1500k');
  assert.equal(formatBytes(2_000_000_000, false), '2G');
});

test("upstream's messages: the Pod's total limit first, then a container's own", () => {
  const five = limit('5Mi');
  assert.equal(
    storageEvictionMessage([{ name: 'evicted-pod', limit: five, usage: 10 * MiB }], 0),
    'Pod ephemeral local storage usage exceeds the total limit of containers 5Mi. ',
  );
  // Two limited containers: the Pod's limit is their sum, in the first one's format.
  assert.equal(
    storageEvictionMessage(
      [
        { name: 'a', limit: five, usage: 6 * MiB },
        { name: 'b', limit: limit('1Gi'), usage: 1030 * MiB },
      ],
      0,
    ),
    'Pod ephemeral local storage usage exceeds the total limit of containers 1029Mi. ',
  );
  // Under the Pod's total, but one container over its own.
  assert.equal(
    storageEvictionMessage(
      [
        { name: 'a', limit: five, usage: 6 * MiB },
        { name: 'b', limit: limit('1Gi'), usage: 0 },
      ],
      0,
    ),
    'Container a exceeded its local ephemeral storage limit "5Mi". ',
  );
  // emptyDir volumes count towards the Pod's usage.
  assert.match(
    storageEvictionMessage([{ name: 'a', limit: five, usage: 1 * MiB }], 5 * MiB) ?? '',
    /exceeds the total limit of containers 5Mi/,
  );
  assert.equal(storageEvictionMessage([{ name: 'a', limit: five, usage: 4 * MiB }], 0), undefined);
  assert.equal(storageEvictionMessage([{ name: 'a', limit: undefined, usage: 100 * MiB }], 0), undefined);
});

test('disk usage counts allocated blocks under a directory, nested ones included', () => {
  const d = mkdtempSync(join(dir, 'du-'));
  mkdirSync(join(d, 'sub'));
  writeFileSync(join(d, 'sub', 'file'), Buffer.alloc(3 * MiB, 1));
  assert.ok(diskUsage(d) >= 3 * MiB, `${diskUsage(d)} bytes`);
  assert.equal(diskUsage(join(d, 'missing')), 0);
});

test('a launched process runs in its working directory, and its relative paths land there', async () => {
  const work = mkdtempSync(join(dir, 'work-'));
  const files = { pidFile: join(dir, 'launch.pid'), log: join(dir, 'launch.log'), workDir: work };
  const argv = ['sh', '-c', 'pwd; dd if=/dev/zero of=file bs=1k count=4 2>/dev/null'];
  const r = await launchInNamespace(hostCommandRunner, undefined, argv, files).exited;
  assert.equal(r.code, 0, r.stderr);
  assert.equal(readFileSync(files.log, 'utf8').trim(), work);
  assert.equal(readFileSync(join(work, 'file')).length, 4096);
});

function kubeletHarness() {
  const runtime = new HeldLaunchRuntime(dir);
  const clock = new FakeClock(Date.now());
  const layout = labLayout(1, 'kptsls');
  const kubelet = namespacePodLifecycle({
    runner: runtime,
    layout,
    podStateDir: mkdtempSync(join(dir, 'pods-')),
    logger: SILENT_LOGGER,
    clock,
  });
  const reports: PodStatusReport[] = [];
  const report = (r: PodStatusReport): void => void reports.push(r);
  /** The latest report, once it satisfies `pred` (the kubelet reports each change of a container). */
  const until = (what: string, pred: (r: PodStatusReport) => boolean): Promise<PodStatusReport> =>
    waitFor(what, () => {
      const r = reports.at(-1);
      return r && pred(r) ? r : undefined;
    });
  // hostNetwork: the kubelet runs the command in the node's namespace and makes no namespace of its own.
  const pod: Pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'evicted-pod', namespace: 'default', uid: 'uid-evicted' },
    spec: {
      nodeName: layout.nodes[0]?.name ?? '',
      hostNetwork: true,
      restartPolicy: 'Always',
      containers: [
        {
          name: 'evicted-pod',
          image: 'registry.k8s.io/e2e-test-images/agnhost:2.53',
          command: ['/bin/sh', '-c', 'sleep 10; dd if=/dev/zero of=file bs=1M count=10; sleep 10000'],
          resources: { limits: { 'ephemeral-storage': '5Mi' } },
        },
      ],
    },
    status: { podIP: layout.nodes[0]?.ip ?? '' },
  } as unknown as Pod;
  return { runtime, clock, kubelet, pod, reports, until, report };
}

test('a container that writes more than its ephemeral-storage limit is evicted: Failed, reason Evicted', async () => {
  const h = kubeletHarness();
  await h.kubelet.start(h.pod, h.report);
  const layer = h.runtime.workDirs[0] ?? '';
  assert.match(layer, /containers\/evicted-pod\/writable$/);
  assert.ok(existsSync(layer), 'the writable layer exists while the container runs');
  // What `dd … of=file` does in the container: 10 MiB in its working directory.
  writeFileSync(join(layer, 'file'), Buffer.alloc(10 * MiB, 1));
  h.clock.advance(STORAGE_CHECK_PERIOD_MS);
  const evicted = h.reports.at(-1);
  assert.equal(evicted?.phase, 'Failed');
  assert.equal(
    evicted?.evicted?.message,
    'Pod ephemeral local storage usage exceeds the total limit of containers 5Mi. ',
  );
  // Its container is killed, and not restarted although its restartPolicy is Always.
  const stopped = await h.until('container terminated', (r) =>
    r.containerStatuses.every((c) => (c.state as { terminated?: unknown }).terminated !== undefined),
  );
  assert.equal(stopped.phase, 'Failed');
  assert.deepEqual(h.runtime.signals, ['TERM']);
  assert.equal(h.runtime.workDirs.length, 1, 'no restart after the eviction');
  h.clock.advance(10 * STORAGE_CHECK_PERIOD_MS);
  assert.deepEqual(h.runtime.signals, ['TERM'], 'evicted once');

  // Deleting the evicted Pod removes the container's writable layer (its logs stay with the pod's state).
  await h.kubelet.stop(h.pod);
  assert.equal(existsSync(layer), false, 'the writable layer is gone with the pod');
  h.kubelet.close();
});

test('a container within its ephemeral-storage limit is not evicted; its layer goes with the Pod', async () => {
  const h = kubeletHarness();
  await h.kubelet.start(h.pod, h.report);
  const layer = h.runtime.workDirs[0] ?? '';
  writeFileSync(join(layer, 'file'), Buffer.alloc(2 * MiB, 1));
  h.clock.advance(3 * STORAGE_CHECK_PERIOD_MS);
  assert.equal(
    h.reports.some((r) => r.evicted !== undefined || r.phase === 'Failed'),
    false,
  );
  assert.deepEqual(h.runtime.signals, []);
  await h.kubelet.stop(h.pod);
  assert.deepEqual(h.runtime.signals, ['TERM'], 'stopped by the deletion');
  assert.equal(existsSync(layer), false);
  h.kubelet.close();
});
