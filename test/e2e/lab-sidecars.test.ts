// Init containers and sidecars in a real lab (startLab, two nodes, kube-proxy-ts as the DaemonSet's pods), driven
// by kubectl: an init container writes a file into an emptyDir and exits, and the app container (started only
// after it) prints what it wrote; a sidecar agnhost (an init container with restartPolicy: Always) serves HTTP on a
// named port `sidecar-http`, and a Service whose targetPort names that port answers through its ClusterIP from
// another pod. kubectl's columns show the init sequence (Init:0/1, Init:CrashLoopBackOff) and count the sidecar in
// READY. Expected values come from the objects the test creates. One lab suite at a time (labTurn).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startLab, type Lab } from '../../packages/lab/src/cluster/index.js';
import { kernelOptions } from '../helpers/kernel.js';
import { field, httpService, items, kubectlFor, podIsReady, waitFor } from './helpers.js';
import { endLabSuite, labTurn, newLabPlace } from './helpers/lab-turn.js';

const gate = kernelOptions(['ip', 'nft', 'curl', 'kubectl']);
const AGNHOST = 'registry.k8s.io/e2e-test-images/agnhost:2.53';
const GREETING = 'written-by-the-init-container';

const data = { name: 'data', mountPath: '/data' };
const withSidecar = {
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'with-sidecar', namespace: 'default', labels: { app: 'sidecar-demo' } },
  spec: {
    volumes: [{ name: 'data', emptyDir: {} }],
    initContainers: [
      {
        name: 'write-greeting',
        image: 'busybox',
        // The path is an argument of its own, so the lab maps it to the volume's directory.
        command: ['sh', '-c', `echo ${GREETING} > "$0"`, '/data/greeting'],
        volumeMounts: [data],
      },
      {
        name: 'sidecar',
        image: AGNHOST,
        restartPolicy: 'Always',
        args: ['netexec', '--http-port=9090'],
        ports: [{ name: 'sidecar-http', containerPort: 9090 }],
      },
    ],
    containers: [
      {
        name: 'app',
        image: 'busybox',
        command: ['sh', '-c', 'cat "$0" && exec sleep 3600', '/data/greeting'],
        volumeMounts: [data],
      },
    ],
  },
};
const service = httpService('default', 'sidecar-web', 'sidecar-demo', 'sidecar-http');
const client = {
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'client', namespace: 'default' },
  spec: { nodeName: 'worker', containers: [{ name: 'pod-server', image: 'kube-proxy-ts/pod-server' }] },
};
/** Init containers that never finish: one blocks, one keeps failing. */
const stuck = (name: string, command: string[]): object => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: 'default' },
  spec: {
    terminationGracePeriodSeconds: 2,
    initContainers: [{ name: 'init', image: 'busybox', command }],
    containers: [{ name: 'app', image: 'busybox', command: ['sleep', '3600'] }],
  },
});

describe('lab: init containers and sidecars (KEP-753)', { skip: gate.skip, timeout: 1_200_000 }, () => {
  const { prefix, stateDir } = newLabPlace();
  let lab: Lab | undefined;
  let releaseTurn: () => void = () => undefined;
  const k = (): ReturnType<typeof kubectlFor> => kubectlFor(lab?.kubeconfigPath ?? '');
  /** kubectl's row for a pod: [NAME, READY, STATUS, RESTARTS, AGE]. */
  const row = async (name: string): Promise<string[]> =>
    (await k().run(['get', 'pod', name, '--no-headers'])).trim().split(/\s+/);
  const podReady = async (name: string): Promise<true | undefined> =>
    podIsReady(await k().json(['get', 'pod', name])) ? true : undefined;

  before(
    async () => {
      releaseTurn = await labTurn();
      lab = await startLab({ nodes: 2, mode: 'nftables', stateDir, prefix, workload: false });
      const objects = [
        withSidecar,
        service,
        client,
        stuck('blocked-init', ['sleep', '3600']),
        stuck('failing-init', ['sh', '-c', 'exit 3']),
      ];
      await k().create(objects);
    },
    { timeout: 25 * 60_000 },
  );

  after(() => endLabSuite(lab, { stateDir, prefix }, releaseTurn));

  test('the app starts after the init container, sees its file, and the sidecar counts in READY', async () => {
    await waitFor('with-sidecar ready', 120_000, () => podReady('with-sidecar'));
    const logs = await k().run(['logs', 'with-sidecar', '-c', 'app']);
    assert.equal(logs.trim(), GREETING, 'the app read what the init container wrote');
    const pod = await k().json(['get', 'pod', 'with-sidecar']);
    const inits = field(pod, 'status', 'initContainerStatuses');
    assert.ok(Array.isArray(inits));
    assert.deepEqual(field(inits[0], 'state', 'terminated', 'reason'), 'Completed');
    assert.equal(field(inits[1], 'started'), true);
    assert.ok(field(inits[1], 'state', 'running'), 'the sidecar keeps running beside the app');
    const [, ready, status] = await row('with-sidecar');
    assert.equal(ready, '2/2');
    assert.equal(status, 'Running');
  });

  test('a Service with targetPort: sidecar-http answers through its ClusterIP from another pod', async () => {
    await waitFor('client ready', 120_000, () => podReady('client'));
    const slices = items(
      await k().json(['get', 'endpointslices', '-l', 'kubernetes.io/service-name=sidecar-web']),
    );
    assert.deepEqual(
      slices.flatMap((s) => (field(s, 'ports') as unknown[] | undefined) ?? []).map((p) => field(p, 'port')),
      [9090],
      'the named port resolved against the sidecar',
    );
    const clusterIP = String(
      await k().run(['get', 'svc', 'sidecar-web', '-o', 'jsonpath={.spec.clusterIP}']),
    );
    assert.match(clusterIP, /^198\.1[89]\./);
    const answer = await waitFor('an answer through the ClusterIP', 60_000, async () => {
      const out = await k().run([
        'exec',
        'client',
        '--',
        'curl',
        '-s',
        '-m',
        '3',
        `http://${clusterIP}:80/hostname`,
      ]);
      return out.trim() !== '' ? out.trim() : undefined;
    });
    assert.equal(answer, 'with-sidecar', 'the sidecar’s agnhost answered');
  });

  test('kubectl shows the init sequence: Init:0/1 while it runs, Init:CrashLoopBackOff or Init:Error while it fails', async () => {
    const blocked = await waitFor('blocked-init initializing', 60_000, async () => {
      const r = await row('blocked-init');
      return r[2] === 'Init:0/1' ? r : undefined;
    });
    assert.equal(blocked[1], '0/1');
    const failing = await waitFor('failing-init restarted', 60_000, async () => {
      const r = await row('failing-init');
      return Number(r[3]) >= 1 ? r : undefined;
    });
    assert.match(failing[2] ?? '', /^Init:(CrashLoopBackOff|Error)$/);
    const pod = await k().json(['get', 'pod', 'failing-init']);
    assert.equal(field(pod, 'status', 'phase'), 'Pending');
    const app = (field(pod, 'status', 'containerStatuses') as unknown[])[0];
    assert.equal(field(app, 'state', 'waiting', 'reason'), 'PodInitializing', 'the app never started');
    // A Pod whose init container still runs is deleted like any other.
    await k().run(['delete', 'pod', 'blocked-init', 'failing-init', '--wait=true', '--timeout=60s']);
  });
});
