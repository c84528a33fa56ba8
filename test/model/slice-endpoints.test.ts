import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { EndpointSliceCache } from '../../packages/agent/src/model/endpoint-slice-cache.js';
import { HintSets, sliceEndpoints } from '../../packages/agent/src/model/slice-endpoints.js';
import type {
  EndpointSlice,
  EndpointSliceEndpoint,
  EndpointSlicePort,
} from '../../packages/agent/src/api/objects.js';
import { ep, key, slice } from './fixtures.js';

const OPTIONS = { family: 'IPv4', nodeName: 'node-a', nodeHints: true } as const;
const SVC = { namespace: 'ns', name: 'svc' };

describe('sliceEndpoints: the endpoints it builds read as whole ones', () => {
  test('every combination of conditions and locality, and the ip:port string, IPv6 bracketed', () => {
    const endpoints: EndpointSliceEndpoint[] = [];
    const want: string[] = [];
    for (let i = 0; i < 16; i++) {
      const [local, ready, serving, terminating] = [1, 2, 4, 8].map((bit) => (i & bit) !== 0);
      endpoints.push(
        ep(`198.18.2.${i + 10}`, {
          nodeName: local ? 'node-a' : 'node-b',
          conditions: { ready, serving, terminating },
        }),
      );
      want.push(`198.18.2.${i + 10}:8080 ${local} ${ready} ${serving} ${terminating}`);
    }
    const r = sliceEndpoints(
      slice('s1', { ports: [{ name: 'http', port: 8080, protocol: 'TCP' }], endpoints }),
      SVC,
      OPTIONS,
    );
    const got = (r.lists[0] ?? []).map(
      (e) => `${e.endpoint} ${e.isLocal} ${e.ready} ${e.serving} ${e.terminating}`,
    );
    assert.deepEqual(got, want.sort());
    const v6 = sliceEndpoints(
      slice('s6', {
        addressType: 'IPv6',
        ports: [{ name: 'http', port: 80, protocol: 'TCP' }],
        endpoints: [ep('2001:db8::1')],
      }),
      SVC,
      { ...OPTIONS, family: 'IPv6' },
    );
    assert.deepEqual(
      (v6.lists[0] ?? []).map((e) => [e.ip, e.port, e.endpoint]),
      [['2001:db8::1', 80, '[2001:db8::1]:80']],
    );
  });
});

describe('sliceEndpoints: one slice on its own', () => {
  test('keys in first-appearance order; a port whose endpoints are all skipped keeps an empty list', () => {
    const r = sliceEndpoints(
      slice('s1', {
        ports: [
          { name: 'b', port: 81, protocol: 'TCP' },
          { name: 'a', port: 80, protocol: 'TCP' },
          { name: 'b', port: 82, protocol: 'TCP' },
        ],
        endpoints: [ep('198.18.1.1')],
      }),
      SVC,
      OPTIONS,
    );
    assert.deepEqual(r.keys, [key('ns', 'svc', 'b'), key('ns', 'svc', 'a')]);
    // The same key with two numbers holds both (upstream keys by name and protocol, lists ip:port).
    assert.deepEqual(
      r.lists.map((l) => l.map((e) => e.endpoint)),
      [['198.18.1.1:81', '198.18.1.1:82'], ['198.18.1.1:80']],
    );
    const empty = sliceEndpoints(slice('s1', { endpoints: [ep('2001:db8::1')] }), SVC, OPTIONS);
    assert.deepEqual(empty.keys, [key('ns', 'svc', 'http')]);
    assert.deepEqual(empty.lists, [[]]);
    assert.match(
      empty.problems.join('\n'),
      /endpoints\[0\]\.addresses\[0\] "2001:db8::1" is not IPv4; skipped/,
    );
  });

  test('problems: endpoint problems first, then port problems, in order; none gives an empty list', () => {
    const r = sliceEndpoints(
      slice('s1', {
        ports: [
          { name: null, port: 80 },
          { name: 'x', port: 70000 },
        ],
        endpoints: [{}, ep('nope')],
      }),
      SVC,
      OPTIONS,
    );
    assert.equal(r.problems.length, 4);
    assert.match(r.problems[0] ?? '', /^endpoints\[0\] has no addresses/);
    assert.match(r.problems[1] ?? '', /^endpoints\[1\]\.addresses\[0\] "nope" is not an IP/);
    assert.match(r.problems[2] ?? '', /^ports\[0\]\.name null is not a string/);
    assert.match(r.problems[3] ?? '', /^ports\[1\]\.port 70000 is not a port number/);
    assert.deepEqual(
      sliceEndpoints(slice('s1', { endpoints: [ep('198.18.1.1')] }), SVC, OPTIONS).problems,
      [],
    );
  });
});

describe('HintSets: equal hints share one Set', () => {
  const zones = (...names: string[]) => names.map((name) => ({ name }));

  test('the same names, in any order, give the same Set; different names a different one', () => {
    const h = new HintSets();
    const a = h.of(zones('z1', 'z2'));
    assert.deepEqual([...a].sort(), ['z1', 'z2']);
    assert.equal(h.of(zones('z2', 'z1')), a);
    assert.equal(h.of(zones('z1', 'z2', 'z1')), a);
    assert.notEqual(h.of(zones('z1')), a);
    assert.equal(h.size, 2);
  });

  test('no usable name is the shared empty set, never remembered', () => {
    const h = new HintSets();
    const none = h.of([]);
    assert.equal(none.size, 0);
    assert.equal(h.of(undefined), none);
    assert.equal(h.of([{ name: '' }, { other: 'x' }, 'z']), none);
    assert.equal(h.size, 0);
  });

  test('a name that looks like a list of names is not confused with that list', () => {
    const h = new HintSets();
    const two = h.of(zones('a', 'b'));
    const one = h.of(zones('["a","b"]'));
    assert.notEqual(one, two);
    assert.deepEqual([...one], ['["a","b"]']);
  });

  test('bounded: past the limit, new combinations get their own Set and are not remembered', () => {
    const h = new HintSets(2);
    const a = h.of(zones('a'));
    h.of(zones('b'));
    const c1 = h.of(zones('c'));
    const c2 = h.of(zones('c'));
    assert.notEqual(c1, c2);
    assert.deepEqual([...c2], ['c']);
    assert.equal(h.of(zones('a')), a);
    assert.equal(h.size, 2);
  });

  test('through the cache: endpoints of different slices and Services with the same zone share its Set', () => {
    const cache = new EndpointSliceCache({ family: 'IPv4', nodeName: 'node-a' });
    const hinted = (ip: string, zone: string) => ep(ip, { hints: { forZones: [{ name: zone }] } });
    cache.updatePending(slice('a1', { service: 'a', endpoints: [hinted('198.18.1.1', 'z1')] }), false);
    cache.updatePending(
      slice('b1', { service: 'b', endpoints: [hinted('198.18.2.1', 'z1'), hinted('198.18.2.2', 'z2')] }),
      false,
    );
    const changes = cache.checkoutChanges();
    const a = changes.get('ns/a')?.current.get(key('ns', 'a', 'http')) ?? [];
    const b = changes.get('ns/b')?.current.get(key('ns', 'b', 'http')) ?? [];
    assert.equal(a[0]?.zoneHints, b[0]?.zoneHints);
    assert.notEqual(b[0]?.zoneHints, b[1]?.zoneHints);
    assert.deepEqual([...(b[1]?.zoneHints ?? [])], ['z2']);
  });
});

// The cache de-duplicates within each slice when it arrives, then across slices when it merges. The spec states
// the rule over the whole sequence (§3: every slice in order, each port, each endpoint; a later `ip:port`
// replaces an earlier one unless the later one is terminating). This reference applies it that way, from the
// objects, so the two-stage merge is checked against the rule as written.
interface Winner {
  readonly endpoint: string;
  readonly terminating: boolean;
  /** Tells duplicates apart: every test endpoint has its own node name. */
  readonly nodeName: string;
}

function referenceMerge(slices: readonly EndpointSlice[]): Map<string, Winner[]> {
  const byKey = new Map<string, Map<string, Winner>>();
  for (const s of slices) {
    for (const p of s.ports ?? []) {
      const k = key('ns', 'svc', p.name ?? '', p.protocol === 'UDP' ? 'UDP' : 'TCP');
      let set = byKey.get(k);
      if (set === undefined) byKey.set(k, (set = new Map()));
      for (const e of s.endpoints ?? []) {
        const endpoint = `${e.addresses?.[0] ?? ''}:${p.port}`;
        const terminating = e.conditions?.terminating === true;
        if (terminating && set.has(endpoint)) continue;
        set.set(endpoint, { endpoint, terminating, nodeName: e.nodeName ?? '' });
      }
    }
  }
  const out = new Map<string, Winner[]>();
  for (const [k, set] of byKey) {
    if (set.size > 0)
      out.set(
        k,
        [...set.values()].sort((a, b) => (a.endpoint < b.endpoint ? -1 : 1)),
      );
  }
  return out;
}

/** A small deterministic PRNG (mulberry32), so a failure reproduces. */
function prng(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** 1–4 slices of 0–5 endpoints over four addresses (duplicates within and across slices are common). */
function randomSlices(rand: () => number): EndpointSlice[] {
  const PORTS: readonly EndpointSlicePort[] = [
    { name: 'http', port: 80, protocol: 'TCP' },
    { name: 'http', port: 8080, protocol: 'TCP' },
    { name: 'dns', port: 53, protocol: 'UDP' },
  ];
  const slices: EndpointSlice[] = [];
  const count = 1 + Math.floor(rand() * 4);
  for (let s = 0; s < count; s++) {
    const endpoints: EndpointSliceEndpoint[] = [];
    const n = Math.floor(rand() * 6);
    for (let e = 0; e < n; e++) {
      endpoints.push(
        ep(`198.18.0.${1 + Math.floor(rand() * 4)}`, {
          nodeName: `n${s}-${e}`,
          conditions: rand() < 0.4 ? { ready: false, terminating: true } : {},
        }),
      );
    }
    const ports = PORTS.filter(() => rand() < 0.6);
    slices.push(slice(`s${s}`, { ports: ports.length > 0 ? ports : PORTS.slice(0, 1), endpoints }));
  }
  return slices;
}

test('§3 dedup: merging per slice then across slices equals the rule applied to the whole sequence', () => {
  const rand = prng(20260101);
  for (let round = 0; round < 300; round++) {
    const slices = randomSlices(rand);
    const want = referenceMerge(slices);
    const cache = new EndpointSliceCache({ family: 'IPv4', nodeName: '' });
    for (const s of slices) cache.updatePending(s, false);
    const got = cache.checkoutChanges().get('ns/svc')?.current ?? new Map();
    const summary = (m: ReadonlyMap<string, readonly { endpoint: string; terminating: boolean }[]>) =>
      [...m].map(([k, l]) => [k, l.map((e) => `${e.endpoint}${e.terminating ? ' terminating' : ''}`)]).sort();
    assert.deepEqual(summary(got), summary(want), `round ${round}: ${JSON.stringify(slices)}`);
    // The winner among duplicates is the very endpoint the rule picks: make its node this node, and the entry
    // for its ip:port must come out local (every test endpoint has a node of its own).
    for (const [k, winners] of want) {
      for (const w of winners) {
        const local = new EndpointSliceCache({ family: 'IPv4', nodeName: w.nodeName });
        for (const s of slices) local.updatePending(s, false);
        const eps = local.checkoutChanges().get('ns/svc')?.current.get(k) ?? [];
        const entry = eps.find((e) => e.endpoint === w.endpoint);
        assert.equal(entry?.isLocal, true, `round ${round}, ${k}: want ${JSON.stringify(w)}`);
      }
    }
  }
});
