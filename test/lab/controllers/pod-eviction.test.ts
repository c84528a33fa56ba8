// A Pod the kubelet evicted, as the controllers show it: the kubelet's report (local-storage.ts's eviction) becomes
// phase Failed with reason Evicted and upstream's message, one Warning Evicted event, and no endpoint in its
// Services' slices, not even a Service that publishes not-ready addresses (a terminal Pod serves nothing). In
// process, on a FakeClock; the kubelet is a plug whose reports the test sends.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '../../../packages/agent/src/util/clock.js';
import type { EndpointSlice } from '../../../packages/agent/src/api/objects.js';
import { startApiServer } from '../../../packages/lab/src/apiserver/index.js';
import { child, str } from '../../../packages/lab/src/apiserver/json.js';
import { resourceByKind } from '../../../packages/lab/src/apiserver/resources.js';
import type { PodStatusReport } from '../../../packages/lab/src/controllers/pod-lifecycle.js';
import { drivenLifecycle } from './fixtures.js';

const SVC = resourceByKind('Service');
const POD = resourceByKind('Pod');
const SLICE = resourceByKind('EndpointSlice');
const EVENT = resourceByKind('Event');

const MESSAGE = 'Pod ephemeral local storage usage exceeds the total limit of containers 5Mi. ';

test('an evicted Pod: Failed, reason Evicted, one Evicted event, and no endpoint even with publishNotReadyAddresses', async () => {
  const kubelet = drivenLifecycle();
  const send = kubelet.report;
  const s = await startApiServer({
    tls: false,
    clock: new FakeClock(Date.parse('2025-03-01T12:00:00Z')),
    podLifecycle: kubelet.lifecycle,
    nodes: [{ name: 'n1' }],
  });
  try {
    const spec = { selector: { app: 'evicted' }, publishNotReadyAddresses: true, ports: [{ port: 80 }] };
    assert.ok(s.registry.create(SVC, 'default', { metadata: { name: 'evicted-pods' }, spec }).ok);
    const container = { name: 'evicted-pod', image: 'agnhost' };
    const pod = {
      metadata: { name: 'evicted-pod', labels: { app: 'evicted' } },
      spec: { containers: [container] },
    };
    assert.ok(s.registry.create(POD, 'default', pod).ok);
    await kubelet.started;
    const running = { running: { startedAt: '2025-03-01T12:00:00Z' } };
    send({ phase: 'Running', containerStatuses: [{ name: 'evicted-pod', ready: true, state: running }] });
    await s.idle();
    const endpoints = (): unknown[] =>
      (s.store.list(SLICE, 'default') as unknown as EndpointSlice[])
        .filter((x) => x.metadata.labels?.['kubernetes.io/service-name'] === 'evicted-pods')
        .flatMap((x) => x.endpoints ?? []);
    assert.equal(endpoints().length, 1, 'the running Pod is an endpoint');

    const killed = { terminated: { exitCode: 137, reason: 'Error' } };
    const evicted: PodStatusReport = {
      phase: 'Failed',
      evicted: { message: MESSAGE },
      containerStatuses: [{ name: 'evicted-pod', ready: false, state: killed }],
    };
    send(evicted);
    send(evicted); // the kubelet reports again as the container ends: still one event
    await s.idle();
    const status = child(s.store.get(POD, 'default', 'evicted-pod'), 'status');
    assert.equal(str(status, 'phase'), 'Failed');
    assert.equal(str(status, 'reason'), 'Evicted');
    assert.equal(str(status, 'message'), MESSAGE);
    const events = s.store
      .list(EVENT, 'default')
      .filter((e) => str(e, 'reason') === 'Evicted')
      .map((e) => [str(e, 'type'), str(e, 'message'), str(child(e, 'involvedObject'), 'name')]);
    assert.deepEqual(events, [['Warning', MESSAGE, 'evicted-pod']]);
    assert.deepEqual(endpoints(), [], 'an evicted Pod is no endpoint');
  } finally {
    await s.stop();
  }
});
