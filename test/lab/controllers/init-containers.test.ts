// Init containers and sidecars as the controllers see them: a Service's named targetPort resolves against a
// sidecar's ports (after the app containers', never a plain init container's), the kubelet's reports of an
// initializing Pod become Pending with Initialized=False (kubectl: Init:N/M), and an unready sidecar keeps the Pod
// and its endpoint not ready. In process, on a FakeClock; the kubelet is a plug the test drives.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { EndpointSlice } from '../../../packages/agent/src/api/objects.js';
import type { ApiServer } from '../../../packages/lab/src/apiserver/index.js';
import { arr, child, str, type JsonObject } from '../../../packages/lab/src/apiserver/json.js';
import { podColumns } from '../../../packages/lab/src/apiserver/pod-columns.js';
import { resourceByKind } from '../../../packages/lab/src/apiserver/resources.js';
import { resolvePort } from '../../../packages/lab/src/controllers/endpointslice.js';
import {
  lingeringPodLifecycle,
  type PodLifecycle,
  type PodStatusReport,
} from '../../../packages/lab/src/controllers/pod-lifecycle.js';
import { reportedReady } from '../../../packages/lab/src/controllers/pods.js';
import { drivenLifecycle, withControlPlane } from './fixtures.js';

const SVC = resourceByKind('Service');
const POD = resourceByKind('Pod');
const SLICE = resourceByKind('EndpointSlice');

const podWith = (name: string, spec: JsonObject): JsonObject => ({
  metadata: { name, labels: { app: 'web' } },
  spec,
});

const SIDECAR_POD_SPEC: JsonObject = {
  initContainers: [
    { name: 'setup', image: 'busybox', ports: [{ name: 'setup-http', containerPort: 7070 }] },
    {
      name: 'proxy',
      image: 'agnhost',
      restartPolicy: 'Always',
      ports: [{ name: 'sidecar-http', containerPort: 9090 }],
    },
  ],
  containers: [{ name: 'app', image: 'app', ports: [{ name: 'http', containerPort: 8080 }] }],
};

const withServer = (lifecycle: PodLifecycle, fn: (s: ApiServer) => Promise<void>): Promise<void> =>
  withControlPlane({ podLifecycle: lifecycle }, fn);

const endpoints = (s: ApiServer): NonNullable<EndpointSlice['endpoints']> =>
  (s.store.list(SLICE, 'default') as unknown as EndpointSlice[])
    .filter((x) => x.metadata.name !== 'kubernetes') // the API server's own slice
    .flatMap((x) => x.endpoints ?? []);
const condition = (pod: unknown, type: string): string | undefined =>
  str(
    arr(child(pod, 'status'), 'conditions').find((c) => str(c, 'type') === type),
    'status',
  );

test('a named targetPort resolves in the app containers, then the sidecars, never a plain init container', () => {
  const pod = podWith('p', SIDECAR_POD_SPEC);
  assert.equal(resolvePort(pod, 'http', 'TCP'), 8080);
  assert.equal(resolvePort(pod, 'sidecar-http', 'TCP'), 9090);
  assert.equal(resolvePort(pod, 'sidecar-http', 'UDP'), undefined, 'the protocol must match');
  assert.equal(resolvePort(pod, 'setup-http', 'TCP'), undefined, 'a plain init container has ended');
  // An app container's port of the same name wins, as upstream's FindPort looks there first.
  const both = podWith('q', {
    ...SIDECAR_POD_SPEC,
    containers: [{ name: 'app', image: 'app', ports: [{ name: 'sidecar-http', containerPort: 1234 }] }],
  });
  assert.equal(resolvePort(both, 'sidecar-http', 'TCP'), 1234);
});

test('a Service whose targetPort names a sidecar port gets the Pod as an endpoint on that port', () =>
  withServer(lingeringPodLifecycle, async (s) => {
    assert.ok(s.registry.create(POD, 'default', podWith('web-0', SIDECAR_POD_SPEC)).ok);
    for (const [name, targetPort] of [
      ['via-sidecar', 'sidecar-http'],
      ['via-init', 'setup-http'],
    ] as const)
      assert.ok(
        s.registry.create(SVC, 'default', {
          metadata: { name },
          spec: { selector: { app: 'web' }, ports: [{ name: 'p', port: 80, targetPort }] },
        }).ok,
      );
    await s.idle();
    const all = s.store.list(SLICE, 'default') as unknown as EndpointSlice[];
    const of = (svc: string): EndpointSlice[] =>
      all.filter((x) => x.metadata.labels?.['kubernetes.io/service-name'] === svc);
    const [sidecarSlice] = of('via-sidecar');
    assert.deepEqual(sidecarSlice?.ports, [{ name: 'p', protocol: 'TCP', port: 9090 }]);
    assert.deepEqual(
      sidecarSlice?.endpoints?.map((e) => [e.targetRef?.name, e.conditions?.ready]),
      [['web-0', true]],
      'the default plug reports the sidecar running and ready',
    );
    // A plain init container's port resolves to nothing: the Service's slices carry no port.
    assert.deepEqual(
      of('via-init').flatMap((x) => x.ports ?? []),
      [],
    );
  }));

test('reportedReady: app containers and sidecars must all be ready, and the Pod running and initialized', () => {
  const pod = podWith('p', SIDECAR_POD_SPEC);
  const app = [{ name: 'app', ready: true }];
  const inits = (proxyReady: boolean): JsonObject[] => [
    { name: 'setup', ready: true },
    { name: 'proxy', ready: proxyReady },
  ];
  const report = (over: Partial<PodStatusReport>): PodStatusReport => ({
    phase: 'Running',
    containerStatuses: app,
    initContainerStatuses: inits(true),
    initialized: true,
    ...over,
  });
  assert.equal(reportedReady(pod, report({})), true);
  assert.equal(reportedReady(pod, report({ initContainerStatuses: inits(false) })), false);
  assert.equal(reportedReady(pod, report({ initContainerStatuses: [] })), false, 'a sidecar with no status');
  assert.equal(reportedReady(pod, report({ initialized: false })), false);
  assert.equal(reportedReady(pod, report({ phase: 'Pending' })), false);
  assert.equal(reportedReady(pod, report({ containerStatuses: [{ name: 'app', ready: false }] })), false);
});

test('the kubelet’s reports: Pending and Init:N/M while initializing; an unready sidecar keeps the Pod not ready', async () => {
  const driven = drivenLifecycle();
  await withServer(driven.lifecycle, async (s) => {
    assert.ok(
      s.registry.create(SVC, 'default', {
        metadata: { name: 'web' },
        spec: { selector: { app: 'web' }, ports: [{ port: 80, targetPort: 'sidecar-http' }] },
      }).ok,
    );
    assert.ok(s.registry.create(POD, 'default', podWith('web-0', SIDECAR_POD_SPEC)).ok);
    await driven.started;
    const waiting = { waiting: { reason: 'PodInitializing' } };
    const running = { running: { startedAt: '2025-03-01T12:00:00Z' } };
    const completed = { terminated: { exitCode: 0, reason: 'Completed' } };
    const appWaiting = [{ name: 'app', ready: false, restartCount: 0, state: waiting }];
    const appRunning = [{ name: 'app', ready: true, restartCount: 0, state: running }];
    /** The Pod as the API server holds it once the control plane has taken in the kubelet's report `r`. */
    const podAfter = async (r: PodStatusReport) => {
      driven.report(r);
      await s.idle();
      return s.store.get(POD, 'default', 'web-0');
    };
    let pod = await podAfter({
      phase: 'Pending',
      initialized: false,
      containerStatuses: appWaiting,
      initContainerStatuses: [
        { name: 'setup', ready: false, started: true, restartCount: 0, state: running },
        { name: 'proxy', ready: false, started: false, restartCount: 0, state: waiting },
      ],
    });
    assert.equal(str(child(pod, 'status'), 'phase'), 'Pending');
    assert.equal(condition(pod, 'Initialized'), 'False');
    assert.equal(condition(pod, 'Ready'), 'False');
    assert.deepEqual(podColumns(pod ?? {}), {
      ready: '0/2',
      status: 'Init:0/2',
      restarts: 0,
      lastRestart: 0,
    });
    assert.deepEqual(
      endpoints(s).map((e) => e.conditions?.ready),
      [false],
    );

    /** Initialized and running; the sidecar ready once its readiness probe has passed. */
    const initialized = (proxyReady: boolean): PodStatusReport => ({
      phase: 'Running',
      initialized: true,
      containerStatuses: appRunning,
      initContainerStatuses: [
        { name: 'setup', ready: true, started: false, restartCount: 0, state: completed },
        { name: 'proxy', ready: proxyReady, started: true, restartCount: 0, state: running },
      ],
    });
    // Initialized and running, but the sidecar's readiness probe has not passed yet.
    pod = await podAfter(initialized(false));
    assert.equal(condition(pod, 'Initialized'), 'True');
    assert.equal(condition(pod, 'ContainersReady'), 'False');
    assert.equal(condition(pod, 'Ready'), 'False');
    assert.equal(podColumns(pod ?? {}).ready, '1/2');
    assert.equal(podColumns(pod ?? {}).status, 'Running');
    assert.deepEqual(
      endpoints(s).map((e) => e.conditions?.ready),
      [false],
    );

    pod = await podAfter(initialized(true));
    assert.equal(condition(pod, 'Ready'), 'True');
    assert.equal(podColumns(pod ?? {}).ready, '2/2');
    assert.deepEqual(arr(child(pod, 'status'), 'initContainerStatuses').length, 2);
    assert.deepEqual(
      endpoints(s).map((e) => [e.conditions?.ready, e.conditions?.serving]),
      [[true, true]],
    );
  });
});
