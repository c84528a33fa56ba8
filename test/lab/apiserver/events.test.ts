// Events in the lab API server, through real kubectl: what the scheduler, the kubelet and the Deployment and
// DaemonSet controllers record, listed through core/v1 and events.k8s.io/v1 (one object, two shapes), kubectl's
// table, `kubectl describe`'s Events section (its involvedObject field selector), and the retention bound.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { defaultNodes, startApiServer } from '../../../packages/lab/src/apiserver/index.js';
import { resourceByKind } from '../../../packages/lab/src/apiserver/resources.js';
import { EventRecorder } from '../../../packages/lab/src/controllers/events.js';
import { FakeClock, systemClock } from '../../../packages/agent/src/util/clock.js';
import { SILENT_LOGGER } from '../../../packages/agent/src/util/logger.js';
import { createApiClient } from '../../../packages/agent/src/kube/api-client.js';
import { loadClientConfig } from '../../../packages/agent/src/kube/client-config.js';
import { NodeEventWriter } from '../../../packages/agent/src/kube/events.js';
import { toolOptions } from '../tools.js';
import { withKubectlLab } from './kubectl-run.js';
import { deploymentYaml } from '../../helpers/manifests.js';
import { waitFor } from '../../helpers/wait-for.js';

const WEB = deploymentYaml({
  app: 'web',
  namespace: 'demo',
  replicas: 2,
  podSpec: 'containers: [{name: server, image: lab/agnhost}]',
});
const MANIFESTS = `${WEB}---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: demo}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      containers: [{name: agent, image: lab/agent}]
`;

interface CoreEvent {
  metadata: { name: string; namespace: string };
  involvedObject: { kind: string; name: string; namespace?: string; uid: string; fieldPath?: string };
  reason: string;
  message: string;
  source?: { component?: string; host?: string };
  count: number;
  type: string;
  firstTimestamp: string;
  lastTimestamp: string;
  reportingComponent: string;
}

// Async execFile: a synchronous child would block the in-process server it talks to.
const reasonsOf = (events: readonly CoreEvent[], kind: string, name?: string): string[] =>
  events
    .filter((e) => e.involvedObject.kind === kind && (name === undefined || e.involvedObject.name === name))
    .map((e) => e.reason);

describe('Events in the lab API server', toolOptions(['kubectl']), () => {
  test('recorded by the control plane, served by both APIs, shown by kubectl get and describe', async () => {
    await withKubectlLab('events', {}, async ({ kubeconfig, server, k, apply }) => {
      await k('create', 'namespace', 'demo');
      await apply('m.yaml', MANIFESTS);
      await waitFor('the five pods running', async () => {
        await server.idle();
        const pods = server.store.list(resourceByKind('Pod'), 'demo') as { status?: { phase?: string } }[];
        return pods.length === 5 && pods.every((p) => p.status?.phase === 'Running') ? true : undefined;
      });

      const list = JSON.parse(await k('get', 'events', '-A', '-o', 'json')) as { items: CoreEvent[] };
      const events = list.items;
      const deployment = events.filter((e) => e.involvedObject.kind === 'Deployment');
      assert.equal(deployment.length, 1, JSON.stringify(deployment));
      assert.equal(deployment[0]?.reason, 'ScalingReplicaSet');
      assert.match(deployment[0]?.message ?? '', /^Scaled up replica set web-[a-z0-9]{10} from 0 to 2$/);
      assert.equal(deployment[0]?.source?.component, 'deployment-controller');
      assert.equal(deployment[0]?.involvedObject.name, 'web');
      assert.equal(deployment[0]?.involvedObject.namespace, 'demo');

      const ds = events.filter((e) => e.involvedObject.kind === 'DaemonSet');
      assert.deepEqual(
        ds.map((e) => e.reason),
        ['SuccessfulCreate', 'SuccessfulCreate', 'SuccessfulCreate'],
      );
      assert.ok(ds.every((e) => /^Created pod: agent-[a-z0-9]{5}$/.test(e.message)));

      const pods = server.store.list(resourceByKind('Pod'), 'demo') as {
        metadata: { name: string; uid: string };
        spec: { nodeName: string };
      }[];
      for (const pod of pods) {
        const about = events.filter((e) => e.involvedObject.name === pod.metadata.name);
        assert.deepEqual(
          about.map((e) => e.reason).sort(),
          ['Created', 'Pulled', 'Scheduled', 'Started'],
          pod.metadata.name,
        );
        const scheduled = about.find((e) => e.reason === 'Scheduled');
        assert.equal(
          scheduled?.message,
          `Successfully assigned demo/${pod.metadata.name} to ${pod.spec.nodeName}`,
        );
        assert.equal(scheduled?.involvedObject.uid, pod.metadata.uid);
        assert.equal(scheduled?.reportingComponent, 'default-scheduler');
        const started = about.find((e) => e.reason === 'Started');
        assert.equal(started?.source?.component, 'kubelet');
        assert.equal(started?.source?.host, pod.spec.nodeName);
        assert.match(started?.involvedObject.fieldPath ?? '', /^spec\.containers\{(server|agent)\}$/);
      }

      // The same objects through events.k8s.io/v1, with its field names.
      const v1 = JSON.parse(await k('get', 'events.v1.events.k8s.io', '-n', 'demo', '-o', 'json')) as {
        items: {
          apiVersion: string;
          metadata: { name: string };
          regarding: { kind: string };
          note: string;
          reportingController: string;
          deprecatedCount: number;
          involvedObject?: unknown;
        }[];
      };
      assert.deepEqual(
        v1.items.map((e) => e.metadata.name).sort(),
        events.map((e) => e.metadata.name).sort(),
      );
      const scaling = v1.items.find((e) => e.regarding.kind === 'Deployment');
      assert.equal(scaling?.apiVersion, 'events.k8s.io/v1');
      assert.equal(scaling?.reportingController, 'deployment-controller');
      assert.equal(scaling?.note, deployment[0]?.message);
      assert.equal(scaling?.involvedObject, undefined);
      const byRegarding = JSON.parse(
        await k(
          'get',
          'events.v1.events.k8s.io',
          '-n',
          'demo',
          '--field-selector',
          'regarding.kind=DaemonSet',
          '-o',
          'json',
        ),
      ) as { items: unknown[] };
      assert.equal(byRegarding.items.length, 3);

      // kubectl's columns.
      const table = await k('get', 'events', '-A');
      assert.match(
        table.split('\n')[0] ?? '',
        /^NAMESPACE\s+LAST SEEN\s+TYPE\s+REASON\s+OBJECT\s+MESSAGE\s*$/,
      );
      assert.match(
        table,
        /demo\s+\S+\s+Normal\s+ScalingReplicaSet\s+deployment\/web\s+Scaled up replica set/,
      );

      // A field selector on the involved object, as kubectl describe sends it.
      const one = pods[0];
      const selected = JSON.parse(
        await k(
          'get',
          'events',
          '-n',
          'demo',
          '--field-selector',
          `involvedObject.name=${one?.metadata.name}`,
          '-o',
          'json',
        ),
      ) as { items: CoreEvent[] };
      assert.equal(selected.items.length, 4);

      const described = await k('describe', 'deployment', 'web', '-n', 'demo');
      assert.match(described, /Events:\s*\n\s+Type\s+Reason\s+Age\s+From\s+Message/);
      assert.match(
        described,
        /Normal\s+ScalingReplicaSet\s+\S+\s+deployment-controller\s+Scaled up replica set web-/,
      );
      const describedPod = await k('describe', 'pod', one?.metadata.name ?? '', '-n', 'demo');
      assert.match(
        describedPod,
        /Normal\s+Scheduled\s+\S+\s+default-scheduler\s+Successfully assigned demo\//,
      );
      assert.match(describedPod, /Normal\s+Started\s+\S+\s+kubelet\s+Started container/);

      // The proxy's Starting event, written by the agent's own writer, on `kubectl describe node`: kubectl asks for
      // involvedObject.uid=<node name> in every namespace, since kube-proxy names the Node by name as its uid.
      const loaded = loadClientConfig({ kubeconfig });
      assert.ok(loaded.ok);
      const writer = new NodeEventWriter({
        client: createApiClient(loaded.config, { clock: systemClock }),
        clock: systemClock,
        logger: SILENT_LOGGER,
        nodeName: 'worker',
        hostname: 'lab-host',
      });
      assert.equal(await writer.starting(), true);
      const node = await k('describe', 'node', 'worker');
      assert.match(node, /Normal\s+Starting\s+\S+\s+kube-proxy\s*\n/);

      // Scaling down deletes pods: the kubelet's Killing, the controller's "Scaled down".
      await k('scale', 'deployment', 'web', '-n', 'demo', '--replicas', '1');
      await waitFor('Killing and Scaled down events', async () => {
        await server.idle();
        const all = JSON.parse(await k('get', 'events', '-n', 'demo', '-o', 'json')) as {
          items: CoreEvent[];
        };
        const killing = reasonsOf(all.items, 'Pod').includes('Killing');
        const scaledDown = all.items.some((e) =>
          /^Scaled down replica set web-\S+ from 2 to 1$/.test(e.message),
        );
        return killing && scaledDown ? true : undefined;
      });
    });
  });

  test('a repeated event is counted on one object, and the store keeps a bounded number', async () => {
    const server = await startApiServer({
      nodes: defaultNodes(1),
      tls: false,
      eventRetention: { maxEvents: 5 },
    });
    try {
      const events = resourceByKind('Event');
      const create = (i: number): void => {
        const r = server.registry.create(events, 'default', {
          metadata: { name: `e${i}` },
          involvedObject: { kind: 'Node', name: 'control-plane' },
          reason: 'Test',
          message: `event ${i}`,
          type: 'Normal',
        });
        assert.ok(r.ok, JSON.stringify(r));
      };
      for (let i = 0; i < 12; i++) create(i);
      const kept = server.store.list(events, 'default').map((e) => (e.metadata as { name: string }).name);
      assert.deepEqual(kept.sort(), ['e10', 'e11', 'e7', 'e8', 'e9']);

      // client-go's aggregation: the same event again is one object with a count, not a new one.
      const recorder = new EventRecorder(server.registry, systemClock, SILENT_LOGGER, { component: 'test' });
      const node = server.store.get(resourceByKind('Node'), '', 'control-plane');
      assert.ok(node);
      for (let i = 0; i < 3; i++) recorder.event(node, { type: 'Warning', reason: 'Again', message: 'same' });
      recorder.event(node, { type: 'Warning', reason: 'Again', message: 'different' });
      const again = server.store
        .list(events, 'default')
        .filter((e) => e.reason === 'Again')
        .map((e) => [e.message, e.count]);
      assert.deepEqual(again.sort(), [
        ['different', 1],
        ['same', 3],
      ]);
    } finally {
      await server.stop();
    }
  });
});

test("two controllers' events about objects of one name in one millisecond both land, with different names", async () => {
  const clock = new FakeClock(1_700_000_000_000); // time stands still: every event in one millisecond
  const s = await startApiServer({ tls: false, clock });
  try {
    const deployment = {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'web', namespace: 'default', uid: 'u1' },
    };
    const service = {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'web', namespace: 'default', uid: 'u2' },
    };
    const fromDeployments = new EventRecorder(s.registry, clock, SILENT_LOGGER, {
      component: 'deployment-controller',
    });
    const fromSlices = new EventRecorder(s.registry, clock, SILENT_LOGGER, {
      component: 'endpoint-slice-controller',
    });
    fromDeployments.event(deployment, { type: 'Normal', reason: 'ScalingReplicaSet', message: 'scaled' });
    fromSlices.event(service, { type: 'Normal', reason: 'TopologyAwareHintsEnabled', message: 'enabled' });
    const events = s.store.list(resourceByKind('Event'), 'default') as {
      reason?: string;
      metadata: { name: string };
    }[];
    assert.deepEqual(events.map((e) => e.reason).sort(), ['ScalingReplicaSet', 'TopologyAwareHintsEnabled']);
    assert.equal(new Set(events.map((e) => e.metadata.name)).size, 2);
  } finally {
    await s.stop();
  }
});
