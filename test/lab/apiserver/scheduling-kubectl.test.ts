// Real kubectl against the lab API server (no kernel, no root): the scheduler honours the Pod's constraints. A
// Deployment with required podAntiAffinity on the hostname puts one Pod on each of three nodes; a fourth replica
// stays Pending with PodScheduled=False/Unschedulable, kube-scheduler's message and a FailedScheduling event; a
// Pod with a nodeSelector lands on the node it names, and one whose label no node has is scheduled once
// `kubectl label node` gives a node that label.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { deploymentYaml } from '../../helpers/manifests.js';
import { toolOptions } from '../tools.js';
import { withKubectlLab } from './kubectl-run.js';

const SPREAD = deploymentYaml({
  app: 'spread',
  namespace: 'default',
  replicas: 3,
  podSpec: `
affinity:
  podAntiAffinity:
    requiredDuringSchedulingIgnoredDuringExecution:
    - labelSelector: {matchExpressions: [{key: app, operator: In, values: [spread]}]}
      topologyKey: kubernetes.io/hostname
containers:
- {name: server, image: lab/agnhost}
`,
});

const pinned = (name: string, selector: string): string => `
apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: default}
spec:
  nodeSelector: {${selector}}
  containers:
  - {name: server, image: lab/agnhost}
`;

interface PodView {
  readonly name: string;
  readonly node: string;
  readonly phase: string;
  readonly scheduled?: { status: string; reason?: string; message?: string };
}

describe('the lab scheduler through kubectl', toolOptions(['kubectl']), () => {
  test('anti-affinity spreads, a Pod that fits nowhere is Unschedulable, nodeSelector pins', async () => {
    await withKubectlLab('scheduling', {}, async ({ server, k, apply }) => {
      const pods = async (selector: string[] = []): Promise<PodView[]> => {
        const list = JSON.parse(await k('get', 'pods', '-o', 'json', ...selector)) as {
          items: {
            metadata: { name: string };
            spec: { nodeName?: string };
            status: {
              phase?: string;
              conditions?: { type: string; status: string; reason?: string; message?: string }[];
            };
          }[];
        };
        return list.items.map((p) => {
          const c = p.status.conditions?.find((x) => x.type === 'PodScheduled');
          return {
            name: p.metadata.name,
            node: p.spec.nodeName ?? '',
            phase: p.status.phase ?? '',
            ...(c ? { scheduled: { status: c.status, reason: c.reason, message: c.message } } : {}),
          };
        });
      };

      await apply('spread.yaml', SPREAD);
      const three = await pods(['-l', 'app=spread']);
      assert.equal(three.length, 3);
      assert.deepEqual(three.map((p) => p.node).sort(), ['control-plane', 'worker', 'worker2']);

      await k('scale', 'deployment/spread', '--replicas=4');
      await server.idle();
      const four = await pods(['-l', 'app=spread']);
      const pending = four.filter((p) => p.node === '');
      assert.equal(pending.length, 1, JSON.stringify(four));
      const message = "0/3 nodes are available: 3 node(s) didn't match pod anti-affinity rules.";
      assert.deepEqual(pending[0], {
        name: pending[0]!.name,
        node: '',
        phase: 'Pending',
        scheduled: { status: 'False', reason: 'Unschedulable', message },
      });
      const events = await k(
        'get',
        'events',
        '--field-selector',
        `reason=FailedScheduling,involvedObject.name=${pending[0]!.name}`,
        '-o',
        'jsonpath={range .items[*]}{.type} {.source.component}: {.message}{"\\n"}{end}',
      );
      assert.equal(events, `Warning default-scheduler: ${message}\n`);

      // One of the three goes away: its node is free once it is gone (a terminating Pod still holds it, as
      // upstream's), and one of the two unbound Pods (the pending one, or the Deployment's replacement) takes it.
      const victim = four.find((p) => p.node === 'worker')!;
      await k('delete', 'pod', victim.name, '--wait=false');
      await server.idle();
      const after = await pods(['-l', 'app=spread']);
      assert.equal(after.filter((p) => p.node === '').length, 1, JSON.stringify(after));
      const nodes = after.map((p) => p.node).filter((n) => n !== '');
      assert.deepEqual(nodes.sort(), ['control-plane', 'worker', 'worker2']);

      await apply('pinned.yaml', pinned('pinned', 'kubernetes.io/hostname: worker2'));
      const [p] = await pods(['--field-selector', 'metadata.name=pinned']);
      assert.equal(p?.node, 'worker2');
      assert.equal(p?.phase, 'Running');

      // No node has disk=ssd: Pending, until one is labelled so.
      await apply('ssd.yaml', pinned('ssd', 'disk: ssd'));
      const [waitingSsd] = await pods(['--field-selector', 'metadata.name=ssd']);
      assert.equal(waitingSsd?.scheduled?.reason, 'Unschedulable');
      assert.equal(
        waitingSsd?.scheduled?.message,
        "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector.",
      );
      await k('label', 'node', 'control-plane', 'disk=ssd');
      await server.idle();
      const [ssd] = await pods(['--field-selector', 'metadata.name=ssd']);
      assert.equal(ssd?.node, 'control-plane');
      assert.equal(ssd?.scheduled?.status, 'True');
    });
  });
});
