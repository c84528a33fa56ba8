// The protobuf body decoder on bytes built by hand (field numbers as upstream's generated.proto files give them):
// each kind comes out as the JSON object the same request would have sent, unknown fields are skipped, zeros of
// non-pointer fields are dropped as JSON's omitempty drops them, and broken bytes are errors that name the field.
// Then the same bodies over HTTP: 201 for a good one, 400 for a malformed one, 415 for a kind the lab does not take.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { decodeProtobuf } from '../../../packages/lab/src/apiserver/protobuf.js';
import { startApiServer, type ApiServer } from '../../../packages/lab/src/apiserver/index.js';
import { call } from './client.js';

// --- a minimal protobuf writer, enough to build test bodies ---

function varint(n: bigint | number): Buffer {
  let v = BigInt.asUintN(64, BigInt(n));
  const out: number[] = [];
  do {
    const b = Number(v & 0x7fn);
    v >>= 7n;
    out.push(v > 0n ? b | 0x80 : b);
  } while (v > 0n);
  return Buffer.from(out);
}

const key = (num: number, wire: number): Buffer => varint((num << 3) | wire);
/** A varint field (int32, int64, bool). */
const int = (num: number, v: number | bigint | boolean): Buffer =>
  Buffer.concat([key(num, 0), varint(typeof v === 'boolean' ? Number(v) : v)]);
/** A length-delimited field: a string, bytes, or a nested message from its parts. */
const bytes = (num: number, ...parts: (Buffer | string)[]): Buffer => {
  const body = Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p, 'utf8') : p)));
  return Buffer.concat([key(num, 2), varint(body.length), body]);
};
const entry = (num: number, k: string, v: string): Buffer => bytes(num, bytes(1, k), bytes(2, v));

/** The "k8s\0" prefix and runtime.Unknown { typeMeta { apiVersion, kind }, raw }. */
function envelope(apiVersion: string, kind: string, raw: Buffer, extra: Buffer = Buffer.alloc(0)): Buffer {
  const typeMeta = apiVersion || kind ? bytes(1, bytes(1, apiVersion), bytes(2, kind)) : Buffer.alloc(0);
  return Buffer.concat([Buffer.from('k8s\0', 'latin1'), typeMeta, bytes(2, raw), extra]);
}

const meta = (name: string, ...more: Buffer[]): Buffer => bytes(1, bytes(1, name), ...more);
const intOrString = (num: number, v: number | string): Buffer =>
  typeof v === 'number'
    ? bytes(num, int(1, 0), int(2, v), bytes(3, ''))
    : bytes(num, int(1, 1), int(2, 0), bytes(3, v));

function decoded(body: Buffer, kind: string): Record<string, unknown> {
  const d = decodeProtobuf(body, kind);
  if ('error' in d) assert.fail(`unexpected error: ${d.error}`);
  return d.value;
}

function failure(body: Buffer, kind: string): { error: string; unsupported: boolean } {
  const d = decodeProtobuf(body, kind);
  assert.ok('error' in d, `expected an error, got ${JSON.stringify(d)}`);
  return d;
}

// A Service as `kubectl create service nodeport` writes it, with what the generated marshaller adds: empty strings
// and zero numbers for every unset non-pointer field, an empty creationTimestamp, and fields we do not describe.
const SERVICE = Buffer.concat([
  meta('web', bytes(3, 'default'), bytes(8), entry(11, 'app', 'web'), entry(11, 'empty', ''), int(7, 0)),
  bytes(
    2,
    bytes(1, bytes(1, 'http'), bytes(2, 'TCP'), int(3, 80), intOrString(4, 8080), int(5, 0)),
    bytes(1, bytes(1, 'named'), bytes(2, 'UDP'), int(3, 53), intOrString(4, 'dns'), int(5, 30053)),
    entry(2, 'app', 'web'),
    bytes(3, ''),
    bytes(4, 'NodePort'),
    int(13, false),
    bytes(5, '192.0.2.10'),
    bytes(19, 'IPv4'),
    int(20, false),
    bytes(23, 'PreferClose'),
    // Not described: status would be field 3 of Service; these are unknown fields inside ServiceSpec.
    int(99, 7),
    bytes(98, 'future'),
    Buffer.concat([key(97, 5), Buffer.alloc(4)]),
    Buffer.concat([key(96, 1), Buffer.alloc(8)]),
  ),
  bytes(3, bytes(1, bytes(1, bytes(1, '1.2.3.4')))),
]);

describe('protobuf request bodies: the decoder', () => {
  test('a Service comes out as its JSON, zeros of non-pointer fields and unknown fields left out', () => {
    assert.deepEqual(decoded(envelope('v1', 'Service', SERVICE), 'Service'), {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: {
        name: 'web',
        namespace: 'default',
        creationTimestamp: null,
        labels: { app: 'web', empty: '' },
      },
      spec: {
        ports: [
          { name: 'http', protocol: 'TCP', port: 80, targetPort: 8080 },
          { name: 'named', protocol: 'UDP', port: 53, targetPort: 'dns', nodePort: 30053 },
        ],
        selector: { app: 'web' },
        type: 'NodePort',
        externalIPs: ['192.0.2.10'],
        ipFamilies: ['IPv4'],
        // A pointer: false was set on purpose and stays.
        allocateLoadBalancerNodePorts: false,
        trafficDistribution: 'PreferClose',
      },
    });
  });

  test('a Deployment: replicas 0 kept, selector, template with probe, env, resources, strategy', () => {
    const container = Buffer.concat([
      bytes(1, 'agnhost'),
      bytes(2, 'registry.k8s.io/e2e-test-images/agnhost:2.53'),
      bytes(4, 'netexec'),
      bytes(4, '--http-port=8080'),
      bytes(6, bytes(1, 'http'), int(3, 8080), bytes(4, 'TCP')),
      bytes(7, bytes(1, 'MODE'), bytes(2, 'fast')),
      bytes(7, bytes(1, 'FROM'), bytes(3, bytes(3, bytes(1, bytes(1, 'cm')), bytes(2, 'k'), int(3, false)))),
      bytes(8, bytes(1, bytes(1, 'cpu'), bytes(2, bytes(1, '100m')))),
      bytes(11, bytes(1, bytes(2, bytes(1, '/ready'), intOrString(2, 'http'))), int(4, 2), int(6, 0)),
    ]);
    const podSpec = Buffer.concat([
      bytes(2, container),
      int(4, 0),
      entry(7, 'kubernetes.io/os', 'linux'),
      bytes(10, 'worker'),
      bytes(22, bytes(1, 'k'), bytes(2, 'Exists'), bytes(4, 'NoSchedule')),
    ]);
    const spec = Buffer.concat([
      int(1, 0),
      bytes(
        2,
        entry(1, 'app', 'web'),
        bytes(2, bytes(1, 'tier'), bytes(2, 'In'), bytes(3, 'a'), bytes(3, '')),
      ),
      bytes(3, meta('', entry(11, 'app', 'web')), bytes(2, podSpec)),
      bytes(4, bytes(1, 'RollingUpdate'), bytes(2, intOrString(1, 0), intOrString(2, '25%'))),
      int(6, 0),
    ]);
    const body = envelope('apps/v1', 'Deployment', Buffer.concat([meta('web'), bytes(2, spec)]));
    assert.deepEqual(decoded(body, 'Deployment'), {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'web' },
      spec: {
        replicas: 0,
        selector: {
          matchLabels: { app: 'web' },
          matchExpressions: [{ key: 'tier', operator: 'In', values: ['a', ''] }],
        },
        template: {
          metadata: { labels: { app: 'web' } },
          spec: {
            containers: [
              {
                name: 'agnhost',
                image: 'registry.k8s.io/e2e-test-images/agnhost:2.53',
                args: ['netexec', '--http-port=8080'],
                ports: [{ name: 'http', containerPort: 8080, protocol: 'TCP' }],
                env: [
                  { name: 'MODE', value: 'fast' },
                  { name: 'FROM', valueFrom: { configMapKeyRef: { name: 'cm', key: 'k', optional: false } } },
                ],
                resources: { limits: { cpu: '100m' } },
                // ProbeHandler is inline: httpGet sits beside periodSeconds, as in JSON.
                readinessProbe: { httpGet: { path: '/ready', port: 'http' }, periodSeconds: 2 },
              },
            ],
            terminationGracePeriodSeconds: 0,
            nodeSelector: { 'kubernetes.io/os': 'linux' },
            nodeName: 'worker',
            tolerations: [{ key: 'k', operator: 'Exists', effect: 'NoSchedule' }],
          },
        },
        strategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 0, maxSurge: '25%' } },
        revisionHistoryLimit: 0,
      },
    });
  });

  test('Namespace, ConfigMap, times, owner references and negative numbers', () => {
    const ns = envelope(
      'v1',
      'Namespace',
      meta('demo', entry(12, 'note', 'x'), bytes(8, int(1, 1700000000))),
    );
    assert.deepEqual(decoded(ns, 'Namespace'), {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: 'demo', annotations: { note: 'x' }, creationTimestamp: '2023-11-14T22:13:20Z' },
    });
    const owner = bytes(
      13,
      bytes(1, 'Deployment'),
      bytes(3, 'web'),
      bytes(4, 'u-1'),
      bytes(5, 'apps/v1'),
      int(6, true),
    );
    const cm = Buffer.concat([
      meta('cfg', owner, int(10, -1)),
      entry(2, 'a', 'b'),
      entry(2, 'empty', ''),
      bytes(3, bytes(1, 'bin'), bytes(2, Buffer.from([0, 1, 2]))),
    ]);
    assert.deepEqual(decoded(envelope('v1', 'ConfigMap', cm), 'ConfigMap'), {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {
        name: 'cfg',
        ownerReferences: [
          { kind: 'Deployment', name: 'web', uid: 'u-1', apiVersion: 'apps/v1', controller: true },
        ],
        deletionGracePeriodSeconds: -1,
      },
      data: { a: 'b', empty: '' },
      binaryData: { bin: 'AAEC' },
    });
  });

  test('the envelope names the type; without one, the URL kind is used', () => {
    const noType = envelope('', '', meta('x', bytes(3, 'demo')));
    assert.deepEqual(decoded(noType, 'ServiceAccount'), {
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      metadata: { name: 'x', namespace: 'demo' },
    });
    // The scale subresource of a Deployment takes a Scale.
    const scale = envelope('autoscaling/v1', 'Scale', Buffer.concat([meta('web'), bytes(2, int(1, 0))]));
    assert.deepEqual(decoded(scale, 'Deployment'), {
      apiVersion: 'autoscaling/v1',
      kind: 'Scale',
      metadata: { name: 'web' },
      spec: { replicas: 0 },
    });
    const rules = bytes(2, bytes(1, 'get'), bytes(2, ''), bytes(3, 'pods'));
    assert.deepEqual(
      decoded(
        envelope('rbac.authorization.k8s.io/v1', 'ClusterRole', Buffer.concat([meta('r'), rules])),
        'ClusterRole',
      ),
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRole',
        metadata: { name: 'r' },
        rules: [{ verbs: ['get'], apiGroups: [''], resources: ['pods'] }],
      },
    );
  });

  test('kinds, versions and encodings the lab does not take are refused as unsupported', () => {
    const secret = failure(envelope('v1', 'Secret', meta('s')), 'Secret');
    assert.equal(secret.unsupported, true);
    assert.match(secret.error, /not accepted for Secret; send JSON/);
    const beta = failure(envelope('apps/v1beta2', 'Deployment', meta('d')), 'Deployment');
    assert.equal(beta.unsupported, true);
    assert.match(beta.error, /apps\/v1 Deployment, not apps\/v1beta2/);
    const gzip = failure(envelope('v1', 'Service', meta('s'), bytes(3, 'gzip')), 'Service');
    assert.equal(gzip.unsupported, true);
  });

  test('malformed bodies are errors that say what is wrong and where', () => {
    const cases: [Buffer, RegExp][] = [
      [Buffer.from('{"kind":"Service"}'), /does not start with the "k8s\\0" envelope prefix/],
      [envelope('v1', 'Service', Buffer.alloc(0)), /carries no object/],
      // A length that runs past the end of the ports entry.
      [
        envelope(
          'v1',
          'Service',
          Buffer.concat([meta('s'), bytes(2, Buffer.concat([key(1, 2), varint(50), Buffer.from('ab')]))]),
        ),
        /Service\.spec field 1: length 50 runs past the end/,
      ],
      // port (an int32) sent as a string.
      [
        envelope('v1', 'Service', Buffer.concat([meta('s'), bytes(2, bytes(1, bytes(3, '80')))])),
        /Service\.spec\.ports\[0\]\.port: int32 needs wire type 0, got wire type 2/,
      ],
      // name (a string) sent as a varint.
      [
        envelope('v1', 'Service', bytes(1, int(1, 5))),
        /Service\.metadata\.name: string needs wire type 2, got wire type 0/,
      ],
      // A varint cut short at the end of the body.
      [
        envelope('v1', 'Service', Buffer.concat([meta('s'), Buffer.from([0x08, 0x80])])),
        /Service field 1: truncated varint/,
      ],
      // Wire types 3 and 4 (groups) do not occur in Kubernetes' messages.
      [
        envelope('v1', 'Service', Buffer.concat([meta('s'), key(5, 3)])),
        /Service field 5: unsupported wire type 3/,
      ],
    ];
    for (const [body, message] of cases) {
      const d = failure(body, 'Service');
      assert.equal(d.unsupported, false, d.error);
      assert.match(d.error, message);
    }
  });
});

describe('protobuf request bodies over HTTP', () => {
  let server: ApiServer;
  before(async () => {
    server = await startApiServer({});
  });
  after(() => server.stop());
  const post = (path: string, body: Buffer) =>
    call(server, 'POST', path, body, { 'content-type': 'application/vnd.kubernetes.protobuf' });

  test('a good body is created, a malformed one is 400, an unsupported kind 415', async () => {
    const created = await post('/api/v1/namespaces/default/services', envelope('v1', 'Service', SERVICE));
    assert.equal(created.status, 201, created.text);
    const svc = created.body as {
      metadata: { namespace: string };
      spec: { ports: { targetPort: unknown; nodePort: number }[] };
    };
    assert.equal(svc.metadata.namespace, 'default');
    assert.deepEqual(
      svc.spec.ports.map((p) => p.targetPort),
      [8080, 'dns'],
    );
    assert.equal(svc.spec.ports[1]?.nodePort, 30053);
    assert.ok(svc.spec.ports[0]?.nodePort, 'the first port got a nodePort allocated');

    const bad = await post(
      '/api/v1/namespaces/default/services',
      envelope('v1', 'Service', Buffer.concat([meta('s'), bytes(2, bytes(1, bytes(3, '80')))])),
    );
    assert.equal(bad.status, 400, bad.text);
    assert.match((bad.body as { message: string }).message, /Service\.spec\.ports\[0\]\.port/);

    const node = await post('/api/v1/nodes', envelope('v1', 'Node', meta('n')));
    assert.equal(node.status, 415, node.text);
    assert.match((node.body as { message: string }).message, /not accepted for Node; send JSON/);
  });
});
