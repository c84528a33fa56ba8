// kubectl's READY, STATUS and RESTARTS of a Pod (pod-columns.ts), case by case as upstream's printPod prints them:
// init containers (Init:N/M, Init:<reason>), sidecars counted as containers once started, app containers read from
// the last to the first, Completed beside a running container, Terminating.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { JsonObject } from '../../../packages/lab/src/apiserver/json.js';
import { podColumns } from '../../../packages/lab/src/apiserver/pod-columns.js';

const running = { running: { startedAt: '2025-03-01T12:00:00Z' } };
const waiting = (reason: string): JsonObject => ({ waiting: { reason } });
const terminated = (exitCode: number, reason?: string): JsonObject => ({
  terminated: { exitCode, ...(reason ? { reason } : {}) },
});
const st = (name: string, state: JsonObject, extra: JsonObject = {}): JsonObject => ({
  name,
  ready: false,
  restartCount: 0,
  state,
  ...extra,
});

function pod(status: JsonObject, extra: JsonObject = {}): JsonObject {
  return {
    metadata: { name: 'p', ...extra },
    spec: {
      initContainers: [{ name: 'setup' }, { name: 'proxy', restartPolicy: 'Always' }],
      containers: [{ name: 'app' }],
    },
    status,
  };
}

test('while the first init container runs: Init:0/2, its restarts counted', () => {
  const c = podColumns(
    pod({
      phase: 'Pending',
      initContainerStatuses: [
        st('setup', running, { restartCount: 2 }),
        st('proxy', waiting('PodInitializing')),
      ],
      containerStatuses: [st('app', waiting('PodInitializing'))],
    }),
  );
  assert.deepEqual(c, { ready: '0/2', status: 'Init:0/2', restarts: 2, lastRestart: 0 });
});

test('a failing init container: Init:CrashLoopBackOff, Init:Error, Init:ExitCode:N, Init:Signal:N', () => {
  const status = (setup: JsonObject): string =>
    podColumns(
      pod({
        phase: 'Pending',
        initContainerStatuses: [st('setup', setup), st('proxy', waiting('PodInitializing'))],
      }),
    ).status;
  assert.equal(status(waiting('CrashLoopBackOff')), 'Init:CrashLoopBackOff');
  assert.equal(status(terminated(1, 'Error')), 'Init:Error');
  assert.equal(status(terminated(3)), 'Init:ExitCode:3');
  assert.equal(status({ terminated: { exitCode: 137, signal: 9 } }), 'Init:Signal:9');
});

test('a started sidecar counts in READY once ready; the next init container shows as Init:1/2', () => {
  const c = podColumns(
    pod(
      {
        phase: 'Pending',
        initContainerStatuses: [
          st('setup', terminated(0, 'Completed')),
          st('proxy', running, { started: true, ready: true }),
        ],
        containerStatuses: [st('app', waiting('PodInitializing'))],
      },
      {},
    ),
  );
  // Both init containers are done (the sidecar started), and Initialized is not yet True: the app still waits.
  assert.equal(c.status, 'PodInitializing');
  assert.equal(c.ready, '1/2');
  const second = podColumns({
    metadata: { name: 'p' },
    spec: { initContainers: [{ name: 'a' }, { name: 'b' }], containers: [{ name: 'app' }] },
    status: {
      phase: 'Pending',
      initContainerStatuses: [st('a', terminated(0, 'Completed')), st('b', running)],
    },
  });
  assert.equal(second.status, 'Init:1/2');
});

test('initialized: the app containers decide, sidecar restarts count, plain init restarts do not', () => {
  const finishedAt = '2025-03-01T12:00:10Z';
  const c = podColumns(
    pod({
      phase: 'Running',
      conditions: [
        { type: 'Initialized', status: 'True' },
        { type: 'Ready', status: 'True' },
      ],
      initContainerStatuses: [
        st('setup', terminated(0, 'Completed'), { restartCount: 4 }),
        st('proxy', running, {
          started: true,
          ready: true,
          restartCount: 1,
          lastState: { terminated: { exitCode: 1, finishedAt } },
        }),
      ],
      containerStatuses: [st('app', running, { ready: true })],
    }),
  );
  assert.deepEqual(c, { ready: '2/2', status: 'Running', restarts: 1, lastRestart: Date.parse(finishedAt) });
});

test('app containers from the last to the first: the first one’s reason wins; Completed beside a running one', () => {
  const two = (a: JsonObject, b: JsonObject, ready: boolean): string =>
    podColumns({
      metadata: { name: 'p' },
      spec: { containers: [{ name: 'a' }, { name: 'b' }] },
      status: {
        phase: 'Running',
        conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }],
        containerStatuses: [st('a', a), st('b', b, { ready: true })],
      },
    }).status;
  assert.equal(two(waiting('CrashLoopBackOff'), waiting('ErrImagePull'), false), 'CrashLoopBackOff');
  assert.equal(two(terminated(0, 'Completed'), running, true), 'Running');
  assert.equal(two(terminated(0, 'Completed'), running, false), 'NotReady');
});

test('Terminating while deleted, unless the Pod already ended', () => {
  const deleted = { deletionTimestamp: '2025-03-01T12:00:00Z' };
  assert.equal(podColumns(pod({ phase: 'Running' }, deleted)).status, 'Terminating');
  assert.equal(podColumns(pod({ phase: 'Succeeded' }, deleted)).status, 'Succeeded');
});
