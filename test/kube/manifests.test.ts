// The manifest loader behind every -f: JSON (one object, a List, objects one after another) through JSON.parse,
// YAML document by document, problems that name the document and line, and progress only for slow reads.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { loadManifestFile } from '../../packages/agent/src/kube/manifest-file.js';
import type { ManifestFileIO } from '../../packages/agent/src/kube/manifest-file.js';
import { readManifests } from '../../packages/agent/src/kube/manifests.js';
import type { ManifestObjects } from '../../packages/agent/src/kube/manifests.js';

const svc = (name: string): object => ({
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name, namespace: 'ns' },
  spec: { clusterIP: '198.19.0.10', ports: [{ port: 80 }] },
});
const slice = (name: string): object => ({
  apiVersion: 'discovery.k8s.io/v1',
  kind: 'EndpointSlice',
  metadata: { name: `${name}-1`, namespace: 'ns', labels: { 'kubernetes.io/service-name': name } },
  addressType: 'IPv4',
  endpoints: [{ addresses: ['198.18.10.10'] }],
});
const node = { apiVersion: 'v1', kind: 'Node', metadata: { name: 'node-0' } };

function names(objects: ManifestObjects): string[] {
  return [
    ...objects.services.map((s) => `Service ${s.metadata.name ?? ''}`),
    ...objects.endpointSlices.map((s) => `EndpointSlice ${s.metadata.name ?? ''}`),
    ...objects.nodes.map((n) => `Node ${n.metadata.name ?? ''}`),
  ];
}

const ALL = ['Service a', 'Service b', 'EndpointSlice a-1', 'Node node-0'];

describe('readManifests: JSON', () => {
  test('a List, as kubectl get -o json prints it', () => {
    const text = JSON.stringify({ kind: 'List', items: [svc('a'), svc('b'), slice('a'), node] }, null, 4);
    const r = readManifests(text, 'dump.json');
    assert.deepEqual(names(r), ALL);
    assert.deepEqual(r.problems, []);
  });

  test('one object, and objects one a line (with a byte order mark), and pretty-printed one after another', () => {
    assert.deepEqual(names(readManifests(JSON.stringify(svc('a')), 'one.json')), ['Service a']);
    const lines = '\ufeff' + [svc('a'), svc('b'), slice('a'), node].map((o) => JSON.stringify(o)).join('\n');
    const perLine = readManifests(lines, 'lines.json');
    assert.deepEqual(names(perLine), ALL);
    assert.deepEqual(perLine.problems, []);
    const pretty = [svc('a'), svc('b'), slice('a'), node].map((o) => JSON.stringify(o, null, 2)).join('\n');
    assert.deepEqual(names(readManifests(pretty, 'pretty.json')), ALL);
  });

  test('strings with braces, quotes and escapes do not split an object', () => {
    const tricky = {
      ...svc('a'),
      metadata: { name: 'a', namespace: 'ns', annotations: { note: '} { ] [ \\" "quoted" \\\\' } },
    };
    const r = readManifests(`${JSON.stringify(tricky)}\n${JSON.stringify(svc('b'))}`, 'x.json');
    assert.deepEqual(names(r), ['Service a', 'Service b']);
    assert.equal(r.services[0]?.metadata.annotations?.note, '} { ] [ \\" "quoted" \\\\');
  });

  test('a bad object is named by document and line; the others are read', () => {
    const text = [
      JSON.stringify(svc('a')),
      '{"kind": "Service", "metadata": {"name": "broken",}}',
      JSON.stringify(svc('b')),
      '[1, 2]',
      JSON.stringify({ metadata: { name: 'kindless' } }),
      'garbage here',
      'and here',
      JSON.stringify(slice('a')),
    ].join('\n');
    const r = readManifests(text, 'mixed.json');
    assert.deepEqual(names(r), ['Service a', 'Service b', 'EndpointSlice a-1']);
    assert.equal(r.problems.length, 4, r.problems.join('\n'));
    assert.match(r.problems[0] ?? '', /^mixed\.json document 2 \(line 2\): invalid JSON: /);
    assert.equal(r.problems[1], 'mixed.json document 4 (line 4): not an object');
    assert.equal(r.problems[2], 'mixed.json document 5 (line 5): object has no kind');
    assert.equal(r.problems[3], 'mixed.json line 6: not JSON: "garbage here\\nand here"');
  });

  test('problems inside a List name the item; an unterminated object is reported, not thrown', () => {
    const list = readManifests(
      JSON.stringify({ kind: 'List', items: [svc('a'), 'text', { kind: 'X' }] }),
      'l.json',
    );
    assert.deepEqual(list.problems, ['l.json item 2: not an object', 'l.json item 3: X has no metadata']);
    const cut = readManifests(JSON.stringify(svc('a')).slice(0, 30), 'cut.json');
    assert.deepEqual(names(cut), []);
    assert.equal(cut.problems.length, 1);
    assert.match(cut.problems[0] ?? '', /^cut\.json: invalid JSON: /);
  });

  test('other kinds are listed as ignored', () => {
    const r = readManifests(
      JSON.stringify({ kind: 'ConfigMap', metadata: { name: 'c', namespace: 'n' } }),
      'c.json',
    );
    assert.deepEqual(r.ignored, ['ConfigMap n/c']);
  });
});

describe('readManifests: YAML', () => {
  const yaml = `# a comment before the first document
apiVersion: v1
kind: Service
metadata: {name: a, namespace: ns}
spec: {clusterIP: 198.19.0.10, ports: [{port: 80}]}
---
- just
- a list
---
kind: Service
metadata: {name: b, namespace: ns}
spec:
  ports:
  - port: 80
---
kind: Service
metadata: {name: c
---
`;

  test('documents are read one by one; bad ones are named by document and line', () => {
    const r = readManifests(yaml, 'c.yaml');
    assert.deepEqual(names(r), ['Service a', 'Service b']);
    assert.equal(r.problems.length, 2, r.problems.join('\n'));
    assert.equal(r.problems[0], 'c.yaml document 2 (line 7): not an object');
    assert.match(r.problems[1] ?? '', /^c\.yaml document 4 \(line 16\): .*\(line \d+, column \d+\)$/);
  });

  test('a single document is named by its source alone', () => {
    const r = readManifests('kind: Service\nmetadata: [x]\n', 'one.yaml');
    assert.deepEqual(r.problems, ['one.yaml: Service has no metadata']);
  });

  test('JSON and YAML of the same objects read the same', () => {
    const objects = [svc('a'), svc('b'), slice('a'), node];
    const fromJSON = readManifests(objects.map((o) => JSON.stringify(o)).join('\n'), 'x.json');
    // YAML flow style that is not JSON (unquoted keys) still goes to the YAML parser.
    const fromYAML = readManifests(
      objects.map((o) => `---\n${JSON.stringify(o).replace(/"(\w+)":/g, '$1: ')}`).join('\n'),
      'x.yaml',
    );
    assert.deepEqual(fromYAML, fromJSON);
  });
});

/** A clock that moves only when reading asks the time: `step` ms per call. */
function slowIO(text: string, step: number): { io: ManifestFileIO; stderr: string[] } {
  let t = 0;
  const stderr: string[] = [];
  return {
    stderr,
    io: {
      readFile: () => text,
      stderr: (s) => void stderr.push(s),
      now: () => (t += step),
    },
  };
}

describe('loadManifestFile', () => {
  const many = JSON.stringify({
    kind: 'List',
    items: Array.from({ length: 12_000 }, (_, i) => svc(`s${i}`)),
  });

  test('a fast read prints nothing', () => {
    const { io, stderr } = slowIO(many, 0);
    const r = loadManifestFile('dump.json', 'render', io);
    assert.ok(r.ok);
    assert.equal(r.objects.services.length, 12_000);
    assert.deepEqual(stderr, []);
  });

  test('a slow read says how far it got, in a few lines, and how long it took', () => {
    // 400 ms per clock read: the first progress call is past a second; the next ones are throttled.
    const { io, stderr } = slowIO(many, 400);
    const r = loadManifestFile('dump.json', 'render', io);
    assert.ok(r.ok);
    assert.ok(stderr.length >= 2 && stderr.length <= 8, stderr.join(''));
    assert.match(stderr[0] ?? '', /^render: reading dump\.json: [\d,]+ objects…\n$/);
    assert.match(stderr.at(-1) ?? '', /^render: read dump\.json: 12,000 objects in [\d.]+ s\n$/);
  });

  test('a file that cannot be read is an error naming it; stdin is "-"', () => {
    const r = loadManifestFile('-', 'render', {
      readFile: () => {
        throw new Error('EAGAIN: resource temporarily unavailable');
      },
      stderr: () => undefined,
      now: () => 0,
    });
    assert.deepEqual(r, {
      ok: false,
      source: 'stdin',
      error: 'cannot read stdin: EAGAIN: resource temporarily unavailable',
    });
  });
});
