// The soak's churn against a fake API: which writes it sends, in which order, and the limits it keeps (a pod
// operation at most every two seconds and only once soak-steady has settled; never two pods of one flappy
// Deployment unready at once; flipped pods made ready again).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Churn, type PodState } from '../../../packages/lab/src/soak/churn.js';
import type { LabApi } from '../../../packages/lab/src/soak/lab-client.js';

interface Sent {
  readonly method: string;
  readonly path: string;
  readonly body: unknown;
}

function fakeApi(sent: Sent[]): LabApi {
  return {
    request: async (method, path, body) => {
      sent.push({ method, path, body });
      return {};
    },
    watch: async () => undefined,
  };
}

function pods(): PodState[] {
  const out: PodState[] = [];
  for (let i = 0; i < 4; i++)
    out.push({ name: `steady-${i}`, app: 'soak-steady', ready: true, terminating: false });
  for (const k of [0, 1])
    for (let i = 0; i < 3; i++)
      out.push({ name: `flappy${k}-${i}`, app: `soak-flappy-${k}`, ready: true, terminating: false });
  return out;
}

describe('soak churn', () => {
  test('a pod operation every two seconds at most; readiness flips in between, one pod per Deployment', async () => {
    const sent: Sent[] = [];
    let state = pods();
    const churn = new Churn(fakeApi(sent), () => state, ['soak-flappy-0', 'soak-flappy-1']);
    const T = 1_000_000;
    // Ten changes in 2.5 s.
    for (let i = 0; i < 10; i++) {
      await churn.step(T + i * 250);
      // The fake API's effect on readiness, as the pod watch would show it.
      const last = churn.records[churn.records.length - 1];
      if (last?.change === 'unready' || last?.change === 'ready')
        state = state.map((p) => (p.name === last.target ? { ...p, ready: last.change === 'ready' } : p));
      // No flappy Deployment ever has two pods out.
      for (const app of ['soak-flappy-0', 'soak-flappy-1'])
        assert.ok(state.filter((p) => p.app === app && !p.ready).length <= 1, `${app}: two pods unready`);
    }
    const kinds = churn.records.map((r) => r.change);
    assert.equal(kinds[0], 'delete', 'the first change is a pod operation (steady has settled)');
    assert.equal(
      kinds.filter((k) => k === 'delete' || k.startsWith('scale') || k === 'rollout-restart').length,
      2,
    );
    assert.deepEqual(
      kinds.slice(1, 8).filter((k) => k !== 'unready' && k !== 'ready'),
      [],
      'between two pod operations: flips only',
    );
    const del = sent[0];
    assert.equal(del?.method, 'DELETE');
    assert.match(del?.path ?? '', /^\/api\/v1\/namespaces\/soak\/pods\/steady-\d$/);
    const flip = sent.find((s) => s.path.endsWith('/status'));
    assert.equal(flip?.method, 'PATCH');
    const conditions = (flip?.body as { status: { conditions: { type: string; status: string }[] } }).status
      .conditions;
    assert.deepEqual(
      conditions.map((c) => `${c.type}=${c.status}`),
      ['PodScheduled=True', 'Initialized=True', 'ContainersReady=False', 'Ready=False'],
    );
    // The second pod operation (at 2 s) is the scale-up.
    const scale = sent.find((s) => s.path.endsWith('/deployments/soak-steady'));
    assert.deepEqual(scale?.body, { spec: { replicas: 6 } });
  });

  test('no pod operation while soak-steady has fewer ready pods than it wants; restore() readies every flip', async () => {
    const sent: Sent[] = [];
    const state = pods().map((p) => (p.name === 'steady-0' ? { ...p, ready: false } : p));
    const churn = new Churn(fakeApi(sent), () => state, ['soak-flappy-0']);
    await churn.step(5000);
    assert.equal(churn.records[0]?.change, 'unready', 'steady not settled: a flip instead');
    await churn.restore();
    assert.deepEqual(
      churn.records.map((r) => `${r.change} ${r.target}`),
      [`unready ${churn.records[0]?.target}`, `ready ${churn.records[0]?.target}`],
    );
  });

  test('a write the API refuses is recorded with its error, and the churn goes on', async () => {
    const api: LabApi = {
      request: async () => {
        throw new Error('PATCH …: 409 conflict');
      },
      watch: async () => undefined,
    };
    const churn = new Churn(api, pods, ['soak-flappy-0']);
    await churn.step(0);
    await churn.step(100);
    assert.equal(churn.records.length, 2);
    assert.match(churn.records[0]?.error ?? '', /409/);
  });
});
