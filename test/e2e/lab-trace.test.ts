// `lab trace` in a real lab (startLab, two nodes, kube-proxy-ts as the DaemonSet's pods in nftables mode): from a
// pod to a ClusterIP Service it shows the frontend match and the endpoint chosen; to a Service without endpoints
// the reject; from the client to a NodePort with externalTrafficPolicy Local on a node without a local endpoint
// the drop; and the trace table is gone from every node afterwards. Expected values come from the objects the
// test creates (which pods exist where), never from the trace's own output. One lab suite at a time (labTurn).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { formatLabTrace, labTrace } from '../../packages/lab/src/cli/lab-trace.js';
import { startLab, type Lab } from '../../packages/lab/src/cluster/index.js';
import { TRACE_TABLE } from '../../packages/agent/src/inspect/trace/table.js';
import { kernelOptions } from '../helpers/kernel.js';
import { hostCommandRunner, hostStreamRunner } from '../../packages/agent/src/netfilter/command.js';
import { field, httpService, items, kubectlFor, mustRun, podIsReady, waitFor } from './helpers.js';
import { endLabSuite, labTurn, newLabPlace } from './helpers/lab-turn.js';

const gate = kernelOptions(['ip', 'nft', 'curl', 'kubectl']);

describe('lab trace: one request through the lab’s rules', { skip: gate.skip, timeout: 1_200_000 }, () => {
  const { prefix, stateDir } = newLabPlace();
  let lab: Lab | undefined;
  let releaseTurn: () => void = () => undefined;
  const k = (): ReturnType<typeof kubectlFor> => kubectlFor(lab?.kubeconfigPath ?? '');
  const trace = (from: string, to: string): ReturnType<typeof labTrace> =>
    labTrace(
      from,
      to,
      { timeoutMs: 20_000 },
      { runner: hostCommandRunner, streams: hostStreamRunner, stateDir },
    );

  before(
    async () => {
      releaseTurn = await labTurn();
      lab = await startLab({ nodes: 2, mode: 'nftables', stateDir, prefix });
      const pod = {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'etp-cp-0', namespace: 'svc', labels: { app: 'etp' } },
        spec: {
          nodeName: 'control-plane',
          containers: [
            { name: 'pod-server', image: 'kube-proxy-ts/pod-server', ports: [{ containerPort: 8080 }] },
          ],
        },
      };
      const etp = httpService('svc', 'etp', 'etp', 8080, {
        type: 'NodePort',
        externalTrafficPolicy: 'Local',
      });
      const empty = httpService('svc', 'empty', 'nothing-has-this-label', 8080);
      await k().create([pod, etp, empty]);
      await waitFor('the etp pod ready and web reachable', 90_000, async () => {
        const pods = items(await k().json(['-n', 'svc', 'get', 'pods']));
        return pods.filter(podIsReady).length >= 4 ? true : undefined;
      });
    },
    { timeout: 25 * 60_000 },
  );

  after(() => endLabSuite(lab, { stateDir, prefix }, releaseTurn));

  const webPods = async (): Promise<{ name: string; ip: string; node: string }[]> =>
    items(await k().json(['-n', 'svc', 'get', 'pods', '-l', 'app=web'])).map((p) => ({
      name: String(field(p, 'metadata', 'name')),
      ip: String(field(p, 'status', 'podIP') ?? ''),
      node: String(field(p, 'spec', 'nodeName') ?? ''),
    }));

  const assertNoTraceTable = async (): Promise<void> => {
    for (const node of ['control-plane', 'worker']) {
      const r = await mustRun('ip', ['netns', 'exec', `${prefix}-${node}`, 'nft', 'list', 'tables']);
      assert.doesNotMatch(r, new RegExp(TRACE_TABLE), `no trace table left on ${node}`);
    }
  };

  test('from a pod to a ClusterIP Service: the frontend match and the endpoint chosen', async () => {
    const pods = await webPods();
    const from = pods.find((p) => p.node === 'worker');
    assert.ok(from, 'a web pod on worker');
    const r = await trace(from.name, 'http://web.svc/');
    console.log(formatLabTrace(r));
    assert.equal(r.request.ok, true, r.request.answer);
    assert.deepEqual(
      r.nodes.map((n) => n.node),
      ['worker'],
      'the packet is traced on the pod’s own node',
    );
    const pkt = r.nodes[0]?.report.packets[0];
    assert.ok(pkt);
    assert.equal(pkt.outcome, 'sent-to-endpoint', pkt.why.join('; '));
    assert.equal(pkt.servicePort, 'svc/web:http');
    const svcIP = String(
      await k().run(['-n', 'svc', 'get', 'svc', 'web', '-o', 'jsonpath={.spec.clusterIP}']),
    );
    assert.equal(pkt.frontend, `${svcIP}:80/tcp`);
    assert.ok(
      pods.some((p) => pkt.endpoint === `${p.ip}:8080`),
      `endpoint ${pkt.endpoint} is a web pod`,
    );
    await assertNoTraceTable();
  });

  test('to a Service with no endpoints: the reject', async () => {
    const from = (await webPods())[0];
    assert.ok(from);
    const r = await trace(from.name, 'empty.svc:80');
    assert.equal(r.request.ok, false);
    const pkt = r.nodes[0]?.report.packets[0];
    assert.ok(pkt, formatLabTrace(r));
    assert.equal(pkt.outcome, 'rejected', pkt.why.join('; '));
    assert.equal(pkt.servicePort, 'svc/empty:http');
    assert.match(pkt.why[0] ?? '', /no ready endpoints/);
    await assertNoTraceTable();
  });

  test('from the client to a NodePort with eTP Local on a node without a local endpoint: the drop', async () => {
    const nodePort = String(
      await k().run(['-n', 'svc', 'get', 'svc', 'etp', '-o', 'jsonpath={.spec.ports[0].nodePort}']),
    );
    const r = await trace('client', `worker:${nodePort}`);
    assert.equal(r.request.ok, false);
    assert.deepEqual(
      r.nodes.map((n) => n.node),
      ['worker'],
    );
    const pkt = r.nodes[0]?.report.packets[0];
    assert.ok(pkt, formatLabTrace(r));
    assert.equal(pkt.outcome, 'dropped', pkt.why.join('; '));
    assert.equal(pkt.servicePort, 'svc/etp:http');
    assert.match(pkt.why[0] ?? '', /externalTrafficPolicy: Local/);
    // And on the node with the endpoint, the same NodePort is answered with the client's address kept.
    const ok = await trace('client', `control-plane:${nodePort}`);
    assert.equal(ok.request.ok, true, ok.request.answer);
    const sent = ok.nodes[0]?.report.packets[0];
    assert.equal(sent?.outcome, 'sent-to-endpoint');
    assert.equal(sent?.masqueraded, false);
    await assertNoTraceTable();
  });
});
