// What `lab up` creates for cluster DNS, and how the lab's kubelet runs its container.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  clusterDnsIP,
  clusterDnsObjects,
  isCorednsImage,
} from '../../../packages/lab/src/cluster/cluster-dns.js';
import { resolveContainer } from '../../../packages/lab/src/cluster/container-spec.js';
import type { JsonObject } from '../../../packages/lab/src/apiserver/json.js';

const objects = clusterDnsObjects({
  clusterIP: '198.19.0.10',
  kubeconfigPath: '/state/nodes/$(NODE_NAME)/kubeconfig',
  apiserverSocket: '/state/apiserver.sock',
});

function find(kind: string): JsonObject {
  const found = objects.find(([k]) => k === kind);
  assert.ok(found, kind);
  return found[2] as JsonObject;
}

describe('cluster DNS objects', () => {
  test('the DNS address is the tenth of the service range, in either family', () => {
    assert.equal(clusterDnsIP('198.19.0.0/16'), '198.19.0.10');
    assert.equal(clusterDnsIP('2001:db8:1::/112'), '2001:db8:1::a');
    assert.equal(clusterDnsIP('nonsense'), undefined);
  });

  test('Service kube-dns: the fixed ClusterIP, ports dns 53/UDP and dns-tcp 53/TCP, selecting k8s-app=kube-dns', () => {
    const svc = find('Service') as {
      metadata: { name: string; namespace: string };
      spec: {
        clusterIP: string;
        selector: object;
        ports: { name: string; port: number; protocol: string }[];
      };
    };
    assert.deepEqual([svc.metadata.namespace, svc.metadata.name], ['kube-system', 'kube-dns']);
    assert.equal(svc.spec.clusterIP, '198.19.0.10');
    assert.deepEqual(svc.spec.selector, { 'k8s-app': 'kube-dns' });
    assert.deepEqual(
      svc.spec.ports.map((p) => `${p.name} ${p.port}/${p.protocol}`),
      ['dns 53/UDP', 'dns-tcp 53/TCP'],
    );
  });

  test('the coredns container runs the lab’s dns-server with the node’s kubeconfig and the socket', () => {
    const deployment = find('Deployment') as {
      metadata: { name: string; labels: object };
      spec: {
        template: { metadata: { labels: object }; spec: { dnsPolicy: string; containers: JsonObject[] } };
      };
    };
    assert.equal(deployment.metadata.name, 'coredns');
    assert.deepEqual(deployment.spec.template.metadata.labels, { 'k8s-app': 'kube-dns' });
    assert.equal(deployment.spec.template.spec.dnsPolicy, 'Default');
    const container = deployment.spec.template.spec.containers[0];
    assert.ok(container);
    assert.equal(isCorednsImage(String(container.image)), true);
    const pod = { metadata: { name: 'coredns-1', namespace: 'kube-system' }, spec: { nodeName: 'worker' } };
    const resolved = resolveContainer(pod, container, []);
    const argv = resolved.argv ?? [];
    const at = argv.indexOf('dns-server');
    assert.ok(at > 0, argv.join(' '));
    assert.deepEqual(argv.slice(at + 1), [
      '--kubeconfig=/state/nodes/worker/kubeconfig',
      '--apiserver-socket=/state/apiserver.sock',
    ]);
  });

  test('only CoreDNS’s image is taken for it', () => {
    assert.equal(isCorednsImage('registry.k8s.io/coredns/coredns:v1.11.3'), true);
    assert.equal(isCorednsImage('coredns/coredns@sha256:abc'), true);
    assert.equal(isCorednsImage('registry.k8s.io/e2e-test-images/agnhost:2.47'), false);
    assert.equal(isCorednsImage('example.org/coredns-helper:1'), false);
  });
});
