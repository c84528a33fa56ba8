// Real kubectl against the lab API server (no kernel, no root): Deployments roll through ReplicaSets as upstream's
// controller rolls them (`kubectl get rs`, `rollout status`, `rollout restart`, `scale`), and HorizontalPodAutoscalers
// are served in autoscaling/v2 and v1 (`kubectl autoscale` sends v1), printed by `kubectl get hpa`, and acted on by
// the controller on the API server's clock, from the usage a test metrics source reports. (kubectl expands a short
// name without its version: autoscaling/v1 is asked for by the full name, horizontalpodautoscalers.v1.autoscaling.)
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { FakeClock } from '../../../packages/agent/src/util/clock.js';
import { defaultNodes } from '../../../packages/lab/src/apiserver/index.js';
import { toolOptions } from '../tools.js';
import { kubectlOutcome, withKubectlLab } from './kubectl-run.js';

const IMAGE = 'registry.k8s.io/e2e-test-images/agnhost:2.53';

const HPA_V2 = `
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web, namespace: default}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: d}
  minReplicas: 2
  maxReplicas: 6
  metrics:
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 60}}
  behavior:
    scaleDown:
      stabilizationWindowSeconds: 60
      policies: [{type: Pods, value: 1, periodSeconds: 30}]
`;

const rows = (table: string): string[][] =>
  table
    .trim()
    .split('\n')
    .map((l) => l.trim().split(/\s{2,}/));

describe(
  'ReplicaSets, rollouts and HorizontalPodAutoscalers through kubectl',
  toolOptions(['kubectl']),
  () => {
    test('create deployment, get rs, rollout restart and status, scale, autoscale, apply an autoscaling/v2 HPA', async () => {
      const clock = new FakeClock(Date.now());
      let cpuMillis = 40;
      const options = {
        nodes: defaultNodes(2),
        clock,
        podMetrics: () => ({ agnhost: { cpu: cpuMillis, memory: 1 << 20 } }),
      };
      await withKubectlLab('workloads', options, async ({ dir, kubeconfig, server, k }) => {
        const revision = (): Promise<string> =>
          k(
            'get',
            'deploy',
            'd',
            '-o',
            'jsonpath={.metadata.annotations.deployment\\.kubernetes\\.io/revision}',
          );
        const assertRolledOut = async (): Promise<void> =>
          assert.match(
            await k('rollout', 'status', 'deployment/d', '--timeout=20s'),
            /successfully rolled out/,
          );
        /** One HPA sync period on the API server's clock, and what the controllers do in it. */
        const syncPeriod = async (): Promise<void> => {
          clock.advance(15_000);
          await server.idle();
        };
        assert.match(
          await k('create', 'deployment', 'd', `--image=${IMAGE}`, '--replicas=2'),
          /^deployment\.apps\/d created$/m,
        );
        await server.idle();
        const rs = rows(await k('get', 'rs'));
        assert.deepEqual(rs[0], ['NAME', 'DESIRED', 'CURRENT', 'READY', 'AGE']);
        assert.equal(rs.length, 2, JSON.stringify(rs));
        assert.match(rs[1]?.[0] ?? '', /^d-[a-z0-9]{10}$/);
        assert.deepEqual(rs[1]?.slice(1, 4), ['2', '2', '2']);
        const hash = (rs[1]?.[0] ?? '').slice(2);
        const wide = rows(await k('get', 'rs', '-o', 'wide'));
        assert.deepEqual(wide[0]?.slice(5), ['CONTAINERS', 'IMAGES', 'SELECTOR']);
        assert.deepEqual(wide[1]?.slice(5), ['agnhost', IMAGE, `app=d,pod-template-hash=${hash}`]);
        await assertRolledOut();
        assert.equal(await revision(), '1');

        assert.match(await k('rollout', 'restart', 'deployment/d'), /restarted/);
        await server.idle();
        await assertRolledOut();
        const after = rows(await k('get', 'rs', '--no-headers'));
        assert.equal(after.length, 2, JSON.stringify(after));
        const current = after.find((r) => r[0] !== `d-${hash}`);
        assert.deepEqual(current?.slice(1, 4), ['2', '2', '2']);
        assert.deepEqual(after.find((r) => r[0] === `d-${hash}`)?.slice(1, 4), ['0', '0', '0']);
        assert.equal(await revision(), '2');
        assert.match(await k('rollout', 'history', 'deployment/d'), /^1\s.*\n2\s/m);

        assert.match(await k('scale', 'deployment', 'd', '--replicas=3'), /scaled$/m);
        await server.idle();
        assert.deepEqual(rows(await k('get', 'rs', current?.[0] ?? '', '--no-headers'))[0]?.slice(1, 4), [
          '3',
          '3',
          '3',
        ]);

        assert.match(
          await k('autoscale', 'deployment', 'd', '--min=1', '--max=5', '--cpu-percent=50'),
          /^horizontalpodautoscaler\.autoscaling\/d autoscaled$/m,
        );
        let hpa = rows(await k('get', 'hpa'));
        assert.deepEqual(hpa[0], ['NAME', 'REFERENCE', 'TARGETS', 'MINPODS', 'MAXPODS', 'REPLICAS', 'AGE']);
        assert.deepEqual(hpa[1]?.slice(0, 6), ['d', 'Deployment/d', 'cpu: <unknown>/50%', '1', '5', '0']);
        // autoscaling/v1 sees its own field; v2 the metric it stands for.
        assert.equal(
          await k(
            'get',
            'horizontalpodautoscalers.v1.autoscaling',
            'd',
            '-o',
            'jsonpath={.spec.targetCPUUtilizationPercentage}',
          ),
          '50',
        );
        assert.equal(
          await k('get', 'hpa', 'd', '-o', 'jsonpath={.spec.metrics[0].resource.target.averageUtilization}'),
          '50',
        );

        // Without CPU requests there is no utilization: the HPA says so, as upstream's does.
        await syncPeriod();
        const failing = JSON.parse(await k('get', 'hpa', 'd', '-o', 'json')) as {
          status: {
            currentReplicas: number;
            conditions: { type: string; status: string; reason: string; message: string }[];
          };
        };
        assert.equal(failing.status.currentReplicas, 3);
        const active = failing.status.conditions.find((c) => c.type === 'ScalingActive');
        assert.equal(active?.status, 'False');
        assert.match(active?.message ?? '', /missing request for cpu in container agnhost/);

        await k('set', 'resources', 'deployment', 'd', '--requests=cpu=100m');
        await server.idle();
        await assertRolledOut();
        await syncPeriod();
        hpa = rows(await k('get', 'hpa', 'd', '--no-headers'));
        // 40m of 100m is 40% of a 50% target: 3 × 0.8 rounds up to 3, no change.
        assert.deepEqual(hpa[0]?.slice(0, 6), ['d', 'Deployment/d', 'cpu: 40%/50%', '1', '5', '3']);
        cpuMillis = 100;
        await syncPeriod();
        // 200% of the target: 6 wanted, within maxReplicas 5.
        assert.equal(await k('get', 'deploy', 'd', '-o', 'jsonpath={.spec.replicas}'), '5');
        const events = await k(
          'get',
          'events',
          '--field-selector',
          'involvedObject.kind=HorizontalPodAutoscaler',
        );
        assert.match(
          events,
          /SuccessfulRescale\s+horizontalpodautoscaler\/d\s+New size: 5; reason: cpu resource utilization \(percentage of request\) above target/,
        );

        await writeFile(join(dir, 'hpa.yaml'), HPA_V2);
        assert.match(
          await k('apply', '-f', join(dir, 'hpa.yaml')),
          /horizontalpodautoscaler\.autoscaling\/web created/,
        );
        const applied = JSON.parse(await k('get', 'hpa', 'web', '-o', 'json')) as {
          spec: {
            behavior: {
              scaleDown: { stabilizationWindowSeconds: number; selectPolicy: string };
              scaleUp: { selectPolicy: string; stabilizationWindowSeconds: number };
            };
          };
        };
        assert.equal(applied.spec.behavior.scaleDown.stabilizationWindowSeconds, 60);
        // The rules not given are upstream's defaults.
        assert.equal(applied.spec.behavior.scaleDown.selectPolicy, 'Max');
        assert.equal(applied.spec.behavior.scaleUp.stabilizationWindowSeconds, 0);
        // The same object through v1: the behavior kept in an annotation, so a v1 client's update does not lose it.
        const v1 = JSON.parse(
          await k('get', 'horizontalpodautoscalers.v1.autoscaling', 'web', '-o', 'json'),
        ) as {
          metadata: { annotations: Record<string, string> };
          spec: { targetCPUUtilizationPercentage: number };
        };
        assert.equal(v1.spec.targetCPUUtilizationPercentage, 60);
        assert.match(
          v1.metadata.annotations['autoscaling.alpha.kubernetes.io/behavior'] ?? '',
          /"stabilizationWindowSeconds":60/,
        );
        await writeFile(
          join(dir, 'bad.yaml'),
          HPA_V2.replace('name: web', 'name: bad').replace('minReplicas: 2', 'minReplicas: 9'),
        );
        const refused = await kubectlOutcome(kubeconfig, ['apply', '-f', join(dir, 'bad.yaml')]);
        assert.equal(refused.ok, false);
        assert.match(
          refused.out,
          /spec\.maxReplicas: Invalid value: 6: must be greater than or equal to `minReplicas`/,
        );
      });
    });
  },
);
