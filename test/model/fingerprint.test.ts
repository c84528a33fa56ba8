import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { deepEqual } from '../../packages/agent/src/model/deep-equal.js';
import { canonicalText, fingerprint } from '../../packages/agent/src/model/fingerprint.js';
import { EndpointSliceCache } from '../../packages/agent/src/model/endpoint-slice-cache.js';
import type { EndpointSlice } from '../../packages/agent/src/api/objects.js';
import { ep, slice } from './fixtures.js';

/** A slice as the API server sends it: metadata with labels, annotations, managed fields; hints and conditions. */
function fullSlice(): EndpointSlice {
  return {
    metadata: {
      namespace: 'ns',
      name: 'svc-abc12',
      uid: '8c1d7c2e-0000-4000-8000-000000000001',
      resourceVersion: '1000',
      generation: 3,
      labels: { 'kubernetes.io/service-name': 'svc', 'endpointslice.kubernetes.io/managed-by': 'x' },
      annotations: { 'endpoints.kubernetes.io/last-change-trigger-time': '2025-01-01T12:00:00Z' },
      ownerReferences: [{ apiVersion: 'v1', kind: 'Service', name: 'svc', uid: 'u', controller: true }],
    },
    addressType: 'IPv4',
    endpoints: [
      ep('198.18.1.1', {
        conditions: { ready: true, serving: true, terminating: false },
        nodeName: 'node-a',
        zone: 'z1',
        hints: { forZones: [{ name: 'z1' }] },
      }),
      ep('198.18.1.2', { conditions: { ready: false }, nodeName: 'node-b' }),
    ],
    ports: [
      { name: 'http', port: 80, protocol: 'TCP' },
      { name: 'dns', port: 53, protocol: 'UDP' },
    ],
  } as EndpointSlice;
}

/** The same value with every object's keys in reverse order (arrays keep their order). */
function reversedKeys(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(reversedKeys);
  if (typeof v !== 'object' || v === null) return v;
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(v).reverse()) out[k] = reversedKeys((v as Record<string, unknown>)[k]);
  return out;
}

type Mutable = Record<string, unknown>;
const meta = (s: unknown): Mutable => (s as { metadata: Mutable }).metadata;
const endpoints = (s: unknown): Mutable[] => (s as { endpoints: Mutable[] }).endpoints;

/** One-field edits a controller or a user can make; each must count as a change. */
const EDITS: readonly [string, (s: unknown) => void][] = [
  ['resourceVersion', (s) => void (meta(s)['resourceVersion'] = '1001')],
  [
    'a label value',
    (s) => void ((meta(s)['labels'] as Mutable)['endpointslice.kubernetes.io/managed-by'] = 'y'),
  ],
  ['a new label', (s) => void ((meta(s)['labels'] as Mutable)['team'] = 'a')],
  ['an annotation', (s) => void ((meta(s)['annotations'] as Mutable)['note'] = '1')],
  ['annotations removed', (s) => void delete meta(s)['annotations']],
  ['generation 3 → "3"', (s) => void (meta(s)['generation'] = '3')],
  ['a condition', (s) => void ((endpoints(s)[1] as { conditions: Mutable }).conditions['ready'] = true)],
  [
    'a condition made explicit null',
    (s) => void ((endpoints(s)[1] as { conditions: Mutable }).conditions['serving'] = null),
  ],
  ['nodeName', (s) => void (endpoints(s)[0]!['nodeName'] = 'node-c')],
  ['zone hint', (s) => void (endpoints(s)[0]!['hints'] = { forZones: [{ name: 'z2' }] })],
  ['endpoint order', (s) => void endpoints(s).reverse()],
  ['an address', (s) => void (endpoints(s)[0]!['addresses'] = ['198.18.1.9'])],
  ['a second address', (s) => void (endpoints(s)[0]!['addresses'] = ['198.18.1.1', '198.18.1.9'])],
  ['a port number', (s) => void ((s as { ports: Mutable[] }).ports[0]!['port'] = 81)],
  ['addressType', (s) => void ((s as Mutable)['addressType'] = 'IPv6')],
  ['a string that looks like the number', (s) => void ((s as { ports: Mutable[] }).ports[0]!['port'] = '80')],
  ['an empty object made an empty list', (s) => void (endpoints(s)[1]!['hints'] = [])],
];

describe('fingerprint: the slice cache change test without keeping the slice', () => {
  test('key order does not matter', () => {
    const s = fullSlice();
    assert.equal(fingerprint(reversedKeys(s)), fingerprint(s));
    assert.equal(canonicalText({ b: 1, a: [{ d: 2, c: 3 }] }), '{"a":[{"c":3,"d":2}],"b":1}');
  });

  test('an identical resync (a fresh copy) has the same fingerprint', () => {
    assert.equal(fingerprint(structuredClone(fullSlice())), fingerprint(fullSlice()));
    assert.equal(fingerprint(JSON.parse(JSON.stringify(fullSlice())) as unknown), fingerprint(fullSlice()));
  });

  test('every one-field change (labels, annotations, resourceVersion, a condition, …) is a change', () => {
    const base = fingerprint(fullSlice());
    for (const [what, edit] of EDITS) {
      const s = fullSlice();
      edit(s);
      assert.ok(!deepEqual(s, fullSlice()), `${what}: the edit must change the object`);
      assert.notEqual(fingerprint(s), base, what);
    }
  });

  test('agrees with deepEqual: undefined keys are absent, NaN equals NaN, -0 equals 0, types differ', () => {
    const cases: readonly [unknown, unknown][] = [
      [{ a: 1, b: undefined }, { a: 1 }],
      [{ a: NaN }, { a: NaN }],
      [{ a: -0 }, { a: 0 }],
      [1, '1'],
      [null, 'null'],
      [[1, 2], { 0: 1, 1: 2 }],
      [[undefined], [null]],
      [[], {}],
      [{ a: 'x,"b":1' }, { a: 'x', b: 1 }], // a quote inside a string cannot forge structure
      [{ 'a"': 1 }, { a: 1 }],
      [['a', 'b'], ['a,b']],
      [{ a: true }, { a: 'true' }],
      [new Map([['k', 1]]), new Map([['k', 1]])],
      [new Map([['k', 1]]), { k: 1 }],
      [new Set(['a', 'b']), new Set(['b', 'a'])],
      [new Set(['a']), ['a']],
      ['\ud800', '\ufffd'], // lone surrogates are escaped, not replaced before hashing
    ];
    for (const [a, b] of cases) {
      const want = deepEqual(a, b);
      assert.equal(fingerprint(a) === fingerprint(b), want, `${canonicalText(a)} vs ${canonicalText(b)}`);
    }
  });

  test('strings are quoted exactly as JSON quotes them', () => {
    for (const str of [
      '',
      'plain',
      'a"b',
      'back\\slash',
      'line\nbreak',
      '\u0000\u001f',
      'é',
      '😀',
      '\ud800',
      'x\udc00y',
    ]) {
      assert.equal(canonicalText(str), JSON.stringify(str), JSON.stringify(str));
      assert.equal(canonicalText({ [str]: str }), `{${JSON.stringify(str)}:${JSON.stringify(str)}}`);
    }
  });

  test('is the SHA-256 of the canonical text, one char per byte', () => {
    const v = { b: [1, 'x'], a: null };
    const want = createHash('sha256').update('{"a":null,"b":[1,"x"]}').digest();
    const got = fingerprint(v);
    assert.equal(got.length, 32);
    assert.deepEqual(Buffer.from(got, 'latin1'), want);
  });
});

describe('EndpointSliceCache keeps no slice object', () => {
  test('a slice mutated after it was given to the cache is still compared as it was given', () => {
    // The cache keeps a fingerprint, not the object: the reflector's copy changing under it (it must not, but a
    // cache holding the object would silently follow) changes nothing here.
    const cache = new EndpointSliceCache({ family: 'IPv4', nodeName: 'n' });
    const s = slice('s1', { endpoints: [ep('198.18.1.1')] });
    assert.equal(cache.updatePending(s, false), true);
    const original = structuredClone(s);
    (s.metadata as Mutable)['resourceVersion'] = '2';
    assert.equal(cache.updatePending(original, false), false);
    assert.equal(cache.updatePending(s, false), true);
  });

  test('an object it cannot read (a cycle) is skipped with a reason, not thrown', () => {
    const problems: string[] = [];
    const cache = new EndpointSliceCache({
      family: 'IPv4',
      nodeName: 'n',
      onProblem: (name, reason) => problems.push(`${name}: ${reason}`),
    });
    const s = slice('s1', { endpoints: [ep('198.18.1.1')] }) as unknown as Mutable;
    s['self'] = s;
    assert.equal(cache.updatePending(s as unknown as EndpointSlice, false), false);
    assert.match(problems.join('\n'), /^ns\/s1: unreadable EndpointSlice object: .*; skipped$/);
    assert.equal(cache.checkoutChanges().size, 0);
  });
});
