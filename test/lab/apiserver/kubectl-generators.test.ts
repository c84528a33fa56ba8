// kubectl's own generators against the lab API server (issue 24). `kubectl create service|deployment|namespace|
// configmap|serviceaccount|clusterrole|clusterrolebinding` post protobuf bodies through kubectl's typed clients;
// `run`, `expose`, `scale`, `label` and `annotate` send JSON or patches. Each object must be stored with the fields
// the command asked for, and a generator's object must be stored exactly as the same object sent as JSON is.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultNodes, startApiServer, type ApiServer } from '../../../packages/lab/src/apiserver/index.js';
import { resourceByKind } from '../../../packages/lab/src/apiserver/resources.js';
import { toolOptions } from '../tools.js';
import { kubectl } from './kubectl-run.js';

interface Port {
  name?: string;
  protocol?: string;
  port: number;
  targetPort?: number | string;
  nodePort?: number;
}
interface Stored {
  metadata: {
    name: string;
    labels?: Record<string, string>;
    ownerReferences?: { kind: string; name: string }[];
  };
  spec: Record<string, unknown>;
  [key: string]: unknown;
}
interface ServiceSpec {
  type: string;
  clusterIP?: string;
  clusterIPs?: string[];
  externalName?: string;
  selector?: Record<string, string>;
  ports?: Port[];
}
interface Container {
  name: string;
  image: string;
  command?: string[];
  args?: string[];
  ports?: { containerPort: number; protocol: string }[];
}
interface DeploymentSpec {
  replicas: number;
  selector: { matchLabels: Record<string, string> };
  template: { metadata: { labels: Record<string, string> }; spec: { containers: Container[] } };
}

describe('kubectl generators against the lab API server', toolOptions(['kubectl']), () => {
  let server: ApiServer;
  let dir: string;
  let k: (...args: string[]) => Promise<string>;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'kpts-generators-'));
    const kubeconfig = join(dir, 'kubeconfig');
    server = await startApiServer({ nodes: defaultNodes(2), kubeconfigPath: kubeconfig });
    k = (...args) => kubectl(kubeconfig, args);
    assert.match(await k('create', 'namespace', 'demo'), /^namespace\/demo created$/m);
  });
  after(async () => {
    await server.stop();
    await rm(dir, { recursive: true, force: true });
  });

  const stored = (kind: string, name: string, namespace = 'demo'): Stored => {
    const type = resourceByKind(kind);
    const obj = server.store.get(type, type.namespaced ? namespace : '', name) as Stored | undefined;
    assert.ok(obj, `${kind} ${name} is stored`);
    return obj;
  };
  const serviceSpec = (name: string): ServiceSpec => stored('Service', name).spec as unknown as ServiceSpec;
  const deploymentSpec = (name: string): DeploymentSpec =>
    stored('Deployment', name).spec as unknown as DeploymentSpec;
  const podsOf = (app: string): Stored[] =>
    (server.store.list(resourceByKind('Pod'), 'demo') as Stored[]).filter(
      (p) => p.metadata.labels?.app === app,
    );

  test('create namespace and configmap keep labels and data', async () => {
    assert.equal(stored('Namespace', 'demo', '').metadata.labels?.['kubernetes.io/metadata.name'], 'demo');
    assert.match(
      await k(
        '-n',
        'demo',
        'create',
        'configmap',
        'cfg',
        '--from-literal=mode=fast',
        '--from-literal=empty=',
      ),
      /^configmap\/cfg created$/m,
    );
    assert.deepEqual(stored('ConfigMap', 'cfg').data, { mode: 'fast', empty: '' });
  });

  test('create service clusterip: ports with numeric and named targetPorts, selector, ClusterIP', async () => {
    assert.match(
      await k('-n', 'demo', 'create', 'service', 'clusterip', 'x', '--tcp=80:8080', '--tcp=443:https'),
      /^service\/x created$/m,
    );
    const spec = serviceSpec('x');
    assert.equal(spec.type, 'ClusterIP');
    assert.deepEqual(spec.selector, { app: 'x' });
    assert.deepEqual(
      spec.ports?.map((p) => [p.name, p.protocol, p.port, p.targetPort]),
      [
        ['80-8080', 'TCP', 80, 8080],
        ['443-https', 'TCP', 443, 'https'],
      ],
    );
    assert.match(spec.clusterIP ?? '', /^198\.19\.\d+\.\d+$/);
    // kubectl reads the JSON answer to the protobuf request, and its own reads work as before.
    assert.equal(
      await k('-n', 'demo', 'get', 'service', 'x', '-o', 'jsonpath={.spec.ports[1].targetPort}'),
      'https',
    );

    assert.match(
      await k('-n', 'demo', 'create', 'service', 'clusterip', 'headless', '--clusterip=None'),
      /^service\/headless created$/m,
    );
    assert.equal(serviceSpec('headless').clusterIP, 'None');
  });

  test('create service nodeport and loadbalancer: nodePorts as asked or allocated', async () => {
    assert.match(
      await k('-n', 'demo', 'create', 'service', 'nodeport', 'np', '--tcp=80:8080', '--node-port=30080'),
      /^service\/np created$/m,
    );
    assert.equal(serviceSpec('np').type, 'NodePort');
    assert.deepEqual(
      serviceSpec('np').ports?.map((p) => [p.port, p.targetPort, p.nodePort]),
      [[80, 8080, 30080]],
    );
    assert.match(
      await k('-n', 'demo', 'create', 'service', 'nodeport', 'np-any', '--tcp=81:8081'),
      /^service\/np-any created$/m,
    );
    const allocated = serviceSpec('np-any').ports?.[0]?.nodePort ?? 0;
    assert.ok(allocated >= 30000 && allocated <= 32767 && allocated !== 30080, `nodePort ${allocated}`);

    assert.match(
      await k('-n', 'demo', 'create', 'service', 'loadbalancer', 'lb', '--tcp=80:8080'),
      /^service\/lb created$/m,
    );
    const lb = serviceSpec('lb');
    assert.equal(lb.type, 'LoadBalancer');
    assert.ok(lb.ports?.[0]?.nodePort, 'a LoadBalancer port gets a nodePort');
  });

  test('create service externalname: no ClusterIP, the external name kept', async () => {
    assert.match(
      await k('-n', 'demo', 'create', 'service', 'externalname', 'ext', '--external-name=db.example.com'),
      /^service\/ext created$/m,
    );
    const spec = serviceSpec('ext');
    assert.equal(spec.type, 'ExternalName');
    assert.equal(spec.externalName, 'db.example.com');
    assert.equal(spec.clusterIP, undefined);
  });

  test('create deployment: replicas, selector, labels, image, port, and the Pods the controller makes', async () => {
    assert.match(
      await k('-n', 'demo', 'create', 'deployment', 'web', '--image=agnhost', '--replicas=3', '--port=8080'),
      /^deployment\.apps\/web created$/m,
    );
    const spec = deploymentSpec('web');
    assert.equal(spec.replicas, 3);
    assert.deepEqual(spec.selector.matchLabels, { app: 'web' });
    assert.deepEqual(spec.template.metadata.labels, { app: 'web' });
    assert.deepEqual(stored('Deployment', 'web').metadata.labels, { app: 'web' });
    const [container] = spec.template.spec.containers;
    assert.equal(container?.name, 'agnhost');
    assert.equal(container?.image, 'agnhost');
    assert.deepEqual(container?.ports, [{ containerPort: 8080, protocol: 'TCP' }]);

    await server.idle();
    const pods = podsOf('web');
    assert.equal(pods.length, 3);
    // As upstream: the Deployment owns a ReplicaSet named for its template's hash, which owns the Pods.
    const [rs, ...more] = server.store.list(resourceByKind('ReplicaSet'), 'demo') as Stored[];
    assert.equal(more.length, 0);
    assert.match(rs?.metadata.name ?? '', /^web-[a-z0-9]{10}$/);
    assert.deepEqual(
      rs?.metadata.ownerReferences?.map((o) => [o.kind, o.name]),
      [['Deployment', 'web']],
    );
    for (const p of pods) {
      assert.equal((p.spec.containers as Container[])[0]?.image, 'agnhost');
      assert.deepEqual(
        p.metadata.ownerReferences?.map((o) => [o.kind, o.name]),
        [['ReplicaSet', rs?.metadata.name]],
      );
    }

    // replicas 0 is a value, not "unset" (which the server would default to 1).
    assert.match(
      await k('-n', 'demo', 'create', 'deployment', 'idle', '--image=agnhost', '--replicas=0'),
      /^deployment\.apps\/idle created$/m,
    );
    assert.equal(deploymentSpec('idle').replicas, 0);
    await server.idle();
    assert.equal(podsOf('idle').length, 0);

    assert.match(
      await k('-n', 'demo', 'create', 'deployment', 'cmd', '--image=agnhost', '--', '/agnhost', 'netexec'),
      /^deployment\.apps\/cmd created$/m,
    );
    assert.deepEqual(deploymentSpec('cmd').template.spec.containers[0]?.command, ['/agnhost', 'netexec']);
  });

  test('a generator stores the same object as the same request sent as JSON', async () => {
    // The object the generator builds, as kubectl prints it; sent with create -f it travels as JSON.
    const cases: [kind: string, name: string, args: string[]][] = [
      ['Service', 'same-svc', ['create', 'service', 'nodeport', 'same-svc', '--tcp=80:8080', '--tcp=53:dns']],
      [
        'Deployment',
        'same-deploy',
        ['create', 'deployment', 'same-deploy', '--image=agnhost', '--port=8080'],
      ],
    ];
    for (const [kind, name, args] of cases) {
      const printed = JSON.parse(await k('-n', 'demo', ...args, '--dry-run=client', '-o', 'json')) as Stored;
      printed.metadata.name = `${name}-json`;
      const file = join(dir, `${name}.json`);
      await writeFile(file, JSON.stringify(printed));
      await k('-n', 'demo', 'create', '-f', file);
      await k('-n', 'demo', ...args);
      const fromProtobuf = structuredClone(stored(kind, name).spec);
      const fromJson = structuredClone(stored(kind, `${name}-json`).spec);
      // What the server allocates differs between the two; everything else must not.
      for (const spec of [fromProtobuf, fromJson] as unknown as ServiceSpec[]) {
        delete spec.clusterIP;
        delete spec.clusterIPs;
        for (const p of spec.ports ?? []) delete p.nodePort;
      }
      assert.deepEqual(fromProtobuf, fromJson, kind);
      assert.deepEqual(stored(kind, name).metadata.labels, stored(kind, `${name}-json`).metadata.labels);
    }
  });

  test('create serviceaccount, clusterrole and clusterrolebinding', async () => {
    assert.match(
      await k('-n', 'demo', 'create', 'serviceaccount', 'robot'),
      /^serviceaccount\/robot created$/m,
    );
    assert.equal(stored('ServiceAccount', 'robot').metadata.name, 'robot');
    assert.match(
      await k('create', 'clusterrole', 'reader', '--verb=get,list', '--resource=pods,services'),
      /created$/m,
    );
    assert.deepEqual(stored('ClusterRole', 'reader', '').rules, [
      { verbs: ['get', 'list'], apiGroups: [''], resources: ['pods', 'services'] },
    ]);
    assert.match(
      await k(
        'create',
        'clusterrolebinding',
        'reader',
        '--clusterrole=reader',
        '--serviceaccount=demo:robot',
      ),
      /created$/m,
    );
    const binding = stored('ClusterRoleBinding', 'reader', '');
    assert.deepEqual(binding.roleRef, {
      apiGroup: 'rbac.authorization.k8s.io',
      kind: 'ClusterRole',
      name: 'reader',
    });
    assert.deepEqual(binding.subjects, [{ kind: 'ServiceAccount', name: 'robot', namespace: 'demo' }]);
  });

  test('run, expose, scale, label and annotate', async () => {
    assert.match(
      await k('-n', 'demo', 'run', 'solo', '--image=agnhost', '--port=9376'),
      /^pod\/solo created$/m,
    );
    const pod = stored('Pod', 'solo');
    assert.deepEqual((pod.spec.containers as Container[])[0]?.ports, [
      { containerPort: 9376, protocol: 'TCP' },
    ]);

    assert.match(
      await k(
        '-n',
        'demo',
        'expose',
        'deployment',
        'web',
        '--name=web-svc',
        '--port=80',
        '--target-port=8080',
      ),
      /^service\/web-svc exposed$/m,
    );
    const exposed = serviceSpec('web-svc');
    assert.deepEqual(exposed.selector, { app: 'web' });
    assert.deepEqual(
      exposed.ports?.map((p) => [p.port, p.targetPort]),
      [[80, 8080]],
    );

    assert.match(await k('-n', 'demo', 'scale', 'deployment', 'web', '--replicas=1'), /scaled$/m);
    await server.idle();
    assert.equal(deploymentSpec('web').replicas, 1);
    assert.equal(podsOf('web').length, 1);

    assert.match(await k('-n', 'demo', 'label', 'service', 'x', 'team=blue'), /labeled$/m);
    assert.equal(stored('Service', 'x').metadata.labels?.team, 'blue');
    assert.match(await k('-n', 'demo', 'annotate', 'service', 'x', 'note=hi'), /annotated$/m);
    assert.equal(
      (stored('Service', 'x').metadata as { annotations?: Record<string, string> }).annotations?.note,
      'hi',
    );
  });
});
