// ServiceCIDRs through real kubectl, as upstream's e2e "should create Services and serve on different Service CIDRs"
// uses them: the default "kubernetes" range is listed; a ClusterIP outside every range is refused until a
// ServiceCIDR holding it exists, and then accepted; a ServiceCIDR being deleted waits (Ready=False, Terminating)
// while a Service holds an address only it contains, and goes once that Service does.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { resourceByKind } from '../../../packages/lab/src/apiserver/resources.js';
import { toolOptions } from '../tools.js';
import { kubectlOutcome as kubectl, withKubectlLab } from './kubectl-run.js';
import { waitFor } from '../../helpers/wait-for.js';

// RFC 5737 TEST-NET-3, as upstream's e2e test uses: no overlap with the lab's own 198.19.0.0/16.
const SERVICE_CIDR = `
apiVersion: networking.k8s.io/v1
kind: ServiceCIDR
metadata: {name: test-svc-cidr}
spec:
  cidrs: [203.0.113.0/24]
`;
const SERVICE = `
apiVersion: v1
kind: Service
metadata: {name: cidr1-test, namespace: default}
spec:
  type: NodePort
  clusterIP: 203.0.113.10
  selector: {app: cidr1}
  ports: [{name: http, port: 80, targetPort: 9376}]
`;

describe('ServiceCIDRs through kubectl', toolOptions(['kubectl']), () => {
  test('the default range is listed; a ClusterIP in a new ServiceCIDR is refused before it exists, accepted after', async () => {
    await withKubectlLab('servicecidr', {}, async ({ dir, kubeconfig, server }) => {
      const k = (...args: string[]) => kubectl(kubeconfig, args);
      await writeFile(join(dir, 'cidr.yaml'), SERVICE_CIDR);
      await writeFile(join(dir, 'svc.yaml'), SERVICE);

      const listed = await k('get', 'servicecidrs');
      assert.ok(listed.ok, listed.out);
      assert.match(listed.out, /^NAME\s+CIDRS\s+AGE\n/);
      assert.match(listed.out, /\nkubernetes\s+198\.19\.0\.0\/16\s+\S+\n/);
      // The ServiceCIDR controller marks it Ready (what upstream's e2e test waits for).
      const ready = await k('wait', '--for=condition=Ready', 'servicecidr/kubernetes', '--timeout=20s');
      assert.ok(ready.ok, ready.out);

      const refused = await k('create', '-f', join(dir, 'svc.yaml'));
      assert.equal(refused.ok, false);
      assert.match(
        refused.out,
        /failed to allocate IP 203\.0\.113\.10: the provided IP \(203\.0\.113\.10\) is not in the valid range\. The range of valid IPs is 198\.19\.0\.0\/16/,
      );

      const created = await k('create', '-f', join(dir, 'cidr.yaml'));
      assert.ok(created.ok, created.out);
      assert.match(created.out, /servicecidr\.networking\.k8s\.io\/test-svc-cidr created/);
      const accepted = await k('create', '-f', join(dir, 'svc.yaml'));
      assert.ok(accepted.ok, accepted.out);
      const ip = await k('get', 'svc', 'cidr1-test', '-o', 'jsonpath={.spec.clusterIP}');
      assert.equal(ip.out, '203.0.113.10');
      // A Service that asks for no address still gets one from the API server's own range first.
      const other = await k('create', 'service', 'clusterip', 'plain', '--tcp=80:8080');
      assert.ok(other.ok, other.out);
      const plainIP = await k('get', 'svc', 'plain', '-o', 'jsonpath={.spec.clusterIP}');
      assert.match(plainIP.out, /^198\.19\./);

      // Deleting the range while cidr1-test holds 203.0.113.10: it stays, terminating, until the Service goes.
      const deleting = await k('delete', 'servicecidr', 'test-svc-cidr', '--wait=false');
      assert.ok(deleting.ok, deleting.out);
      await waitFor('the Terminating condition', async () => {
        const r = await k(
          'get',
          'servicecidr',
          'test-svc-cidr',
          '-o',
          'jsonpath={.status.conditions[0].reason}',
        );
        return r.out === 'Terminating' ? true : undefined;
      });
      const refusedAgain = await k(
        'create',
        'service',
        'clusterip',
        'late',
        '--tcp=80:8080',
        '--clusterip=203.0.113.11',
      );
      assert.equal(refusedAgain.ok, false, 'a terminating ServiceCIDR allocates nothing');
      assert.ok((await k('delete', 'svc', 'cidr1-test')).ok);
      await waitFor('the ServiceCIDR gone', () =>
        server.store.get(resourceByKind('ServiceCIDR'), '', 'test-svc-cidr') ? undefined : true,
      );
      const after = await k('get', 'servicecidrs', '-o', 'name');
      assert.equal(after.out, 'servicecidr.networking.k8s.io/kubernetes\n');
    });
  });
});
