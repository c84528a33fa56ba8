import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { EndpointSliceCache } from '../../packages/agent/src/model/endpoint-slice-cache.js';
import type { EndpointsMap } from '../../packages/agent/src/model/endpoint-slice-cache.js';
import type { EndpointSlice } from '../../packages/agent/src/api/objects.js';
import type { Endpoint } from '../../packages/agent/src/model/endpoint.js';
import { ep, key, slice } from './fixtures.js';

function newCache(opts: { nodeName?: string; nodeHints?: boolean; family?: 'IPv4' | 'IPv6' } = {}) {
  const problems: string[] = [];
  const cache = new EndpointSliceCache({
    family: opts.family ?? 'IPv4',
    nodeName: opts.nodeName ?? 'node-a',
    featureGates: { preferSameTrafficDistribution: opts.nodeHints ?? true },
    onProblem: (name, reason) => problems.push(`${name}: ${reason}`),
  });
  return { cache, problems };
}

/** Applies and returns the current map of the one changed Service. */
function current(cache: EndpointSliceCache, service = 'ns/svc'): EndpointsMap {
  const c = cache.checkoutChanges().get(service);
  assert.ok(c, `no change for ${service}`);
  return c.current;
}

/** The endpoints of ns/svc port http once a new cache (IPv4, on node-a) has taken `slices`, in order. */
function endpointsFrom(...slices: EndpointSlice[]): readonly Endpoint[] {
  const { cache } = newCache();
  for (const s of slices) cache.updatePending(s, false);
  return current(cache).get(key('ns', 'svc', 'http')) ?? [];
}

const strings = (eps: readonly Endpoint[] | undefined): string[] => (eps ?? []).map((e) => e.endpoint);

describe('§1.3 / §10.1 endpoint info', () => {
  test('§10.1 condition defaults: nil ready ⇒ true, nil serving ⇒ true, nil terminating ⇒ false', () => {
    const eps = endpointsFrom(
      slice('s1', {
        endpoints: [
          ep('198.18.1.1'),
          ep('198.18.1.2', { conditions: {} }),
          ep('198.18.1.3', { conditions: { ready: null, serving: null, terminating: null } }),
          ep('198.18.1.4', { conditions: { ready: false, serving: true, terminating: true } }),
          ep('198.18.1.5', { conditions: { ready: false, serving: false, terminating: false } }),
        ],
      }),
    );
    assert.deepEqual(
      eps.map((e) => [e.ip, e.ready, e.serving, e.terminating]),
      [
        ['198.18.1.1', true, true, false],
        ['198.18.1.2', true, true, false],
        ['198.18.1.3', true, true, false],
        ['198.18.1.4', false, true, true],
        ['198.18.1.5', false, false, false],
      ],
    );
  });

  test('§10.1 only addresses[0] is used, parsed leniently and printed canonically', () => {
    const eps = endpointsFrom(slice('s1', { endpoints: [{ addresses: ['198.018.001.010', '198.18.9.9'] }] }));
    assert.deepEqual(strings(eps), ['198.18.1.10:80']);
  });

  test('endpoints with no or invalid addresses, or of the other family, are skipped with a reason', () => {
    const { cache, problems } = newCache();
    cache.updatePending(
      slice('s1', {
        endpoints: [
          { addresses: [] },
          {},
          ep('not-an-ip'),
          ep('2001:db8::1'),
          { addresses: [7 as unknown as string] },
          ep('198.18.1.1'),
        ],
      }),
      false,
    );
    assert.deepEqual(strings(current(cache).get(key('ns', 'svc', 'http'))), ['198.18.1.1:80']);
    const all = problems.join('\n');
    assert.match(all, /ns\/s1: endpoints\[0\] has no addresses/);
    assert.match(all, /endpoints\[1\] has no addresses/);
    assert.match(all, /endpoints\[2\]\.addresses\[0\] "not-an-ip" is not an IP/);
    assert.match(all, /endpoints\[3\]\.addresses\[0\] "2001:db8::1" is not IPv4/);
    assert.match(all, /endpoints\[4\]\.addresses\[0\] 7 is not an IP/);
  });

  test('§10.1 ports with a nil name or a 0/nil number are skipped; other ports kept', () => {
    const { cache, problems } = newCache();
    cache.updatePending(
      slice('s1', {
        ports: [
          { name: null, port: 80, protocol: 'TCP' },
          { port: 81, protocol: 'TCP' },
          { name: 'zero', port: 0, protocol: 'TCP' },
          { name: 'nil', port: null, protocol: 'TCP' },
          { name: 'icmp', port: 82, protocol: 'ICMP' },
          { name: '', port: 83 },
          { name: 'dns', port: 53, protocol: 'UDP' },
        ],
        endpoints: [ep('198.18.1.1')],
      }),
      false,
    );
    const m = current(cache);
    assert.deepEqual([...m.keys()].sort(), [key('ns', 'svc', ''), key('ns', 'svc', 'dns', 'UDP')].sort());
    assert.deepEqual(strings(m.get(key('ns', 'svc', ''))), ['198.18.1.1:83']);
    assert.match(problems.join('\n'), /ports\[0\]\.name null is not a string/);
    assert.match(problems.join('\n'), /ports\[4\]\.protocol "ICMP" is unknown/);
  });

  test('isLocal: nodeName equals this node; never local when this node has no name', () => {
    const { cache } = newCache({ nodeName: 'node-a' });
    cache.updatePending(
      slice('s1', {
        endpoints: [
          ep('198.18.1.1', { nodeName: 'node-a' }),
          ep('198.18.1.2', { nodeName: 'node-b' }),
          ep('198.18.1.3'),
        ],
      }),
      false,
    );
    assert.deepEqual(
      (current(cache).get(key('ns', 'svc', 'http')) ?? []).map((e) => e.isLocal),
      [true, false, false],
    );
    const { cache: nameless } = newCache({ nodeName: '' });
    nameless.updatePending(slice('s1', { endpoints: [ep('198.18.1.3', { nodeName: '' })] }), false);
    assert.equal(current(nameless).get(key('ns', 'svc', 'http'))?.[0]?.isLocal, false);
  });

  test('hints: zone hints always; node hints only with PreferSameTrafficDistribution', () => {
    const hinted = ep('198.18.1.1', {
      hints: { forZones: [{ name: 'z1' }], forNodes: [{ name: 'node-a' }] },
    });
    const on = newCache({ nodeHints: true });
    on.cache.updatePending(slice('s1', { endpoints: [hinted] }), false);
    const e1 = current(on.cache).get(key('ns', 'svc', 'http'))?.[0];
    assert.deepEqual([...(e1?.zoneHints ?? [])], ['z1']);
    assert.deepEqual([...(e1?.nodeHints ?? [])], ['node-a']);
    const off = newCache({ nodeHints: false });
    off.cache.updatePending(slice('s1', { endpoints: [hinted] }), false);
    const e2 = current(off.cache).get(key('ns', 'svc', 'http'))?.[0];
    assert.deepEqual([...(e2?.zoneHints ?? [])], ['z1']);
    assert.equal(e2?.nodeHints.size, 0);
  });

  test('IPv6 endpoints print bracketed', () => {
    const { cache } = newCache({ family: 'IPv6' });
    cache.updatePending(slice('s1', { addressType: 'IPv6', endpoints: [ep('2001:DB8::0:1')] }), false);
    assert.deepEqual(strings(current(cache).get(key('ns', 'svc', 'http'))), ['[2001:db8::1]:80']);
  });
});

describe('§3 / §10.2 merging and duplicates', () => {
  test('§10.2 duplicates: a later non-terminating duplicate replaces the earlier one', () => {
    const eps = endpointsFrom(
      slice('s1', { endpoints: [ep('198.18.1.1', { conditions: { ready: false }, nodeName: 'x' })] }),
      slice('s2', { endpoints: [ep('198.18.1.1', { conditions: { ready: true }, nodeName: 'node-a' })] }),
    );
    assert.equal(eps.length, 1);
    assert.equal(eps[0]?.ready, true);
    assert.equal(eps[0]?.isLocal, true);
  });

  test('§10.2 duplicates: later terminating duplicate does not replace', () => {
    const eps = endpointsFrom(
      slice('s1', { endpoints: [ep('198.18.1.1')] }),
      slice('s2', {
        endpoints: [ep('198.18.1.1', { conditions: { ready: false, serving: true, terminating: true } })],
      }),
    );
    assert.equal(eps.length, 1);
    assert.equal(eps[0]?.terminating, false);
    assert.equal(eps[0]?.ready, true);
  });

  test('§10.2 duplicates within one slice resolve the same way', () => {
    const eps = endpointsFrom(
      slice('s1', {
        endpoints: [ep('198.18.1.1'), ep('198.18.1.1', { conditions: { ready: false, terminating: true } })],
      }),
    );
    assert.equal(eps[0]?.terminating, false);
  });

  test('§10.2 lists are sorted as strings: 10.0.0.10:80 before 10.0.0.2:80', () => {
    const eps = endpointsFrom(slice('s1', { endpoints: [ep('10.0.0.2'), ep('10.0.0.10'), ep('10.0.0.1')] }));
    assert.deepEqual(strings(eps), ['10.0.0.10:80', '10.0.0.1:80', '10.0.0.2:80']);
  });

  test('§10.2 empty port keys are absent', () => {
    const { cache } = newCache();
    cache.updatePending(slice('s1', { endpoints: [] }), false);
    const m = current(cache);
    assert.equal(m.size, 0);
  });

  test('the same port name with different numbers in different slices gives distinct entries', () => {
    const eps = endpointsFrom(
      slice('s1', { ports: [{ name: 'http', port: 80 }], endpoints: [ep('198.18.1.1')] }),
      slice('s2', { ports: [{ name: 'http', port: 8080 }], endpoints: [ep('198.18.1.2')] }),
    );
    assert.deepEqual(strings(eps), ['198.18.1.1:80', '198.18.1.2:8080']);
  });

  test('endpoints moving between slices do not vanish when one slice updates before the other', () => {
    const { cache } = newCache();
    cache.updatePending(slice('s1', { endpoints: [ep('198.18.1.1'), ep('198.18.1.2')] }), false);
    cache.checkoutChanges();
    // 198.18.1.2 moves from s1 to s2: s2 gains it first.
    cache.updatePending(slice('s2', { endpoints: [ep('198.18.1.2')] }), false);
    assert.deepEqual(strings(current(cache).get(key('ns', 'svc', 'http'))), [
      '198.18.1.1:80',
      '198.18.1.2:80',
    ]);
    cache.updatePending(slice('s1', { endpoints: [ep('198.18.1.1')], rv: '2' }), false);
    assert.deepEqual(strings(current(cache).get(key('ns', 'svc', 'http'))), [
      '198.18.1.1:80',
      '198.18.1.2:80',
    ]);
  });
});

describe('§3 change test (updatePending)', () => {
  const s = slice('s1', { endpoints: [ep('198.18.1.1')] });
  test('an add with nothing cached is a change; a remove with nothing cached is not', () => {
    assert.equal(newCache().cache.updatePending(s, false), true);
    assert.equal(newCache().cache.updatePending(s, true), false);
  });
  test('an identical object (a resync) is not a change, against pending and against applied', () => {
    const { cache } = newCache();
    assert.equal(cache.updatePending(s, false), true);
    assert.equal(cache.updatePending(structuredClone(s), false), false); // vs pending
    cache.checkoutChanges();
    assert.equal(cache.updatePending(structuredClone(s), false), false); // vs applied
    assert.equal(cache.checkoutChanges().size, 0);
  });
  test('key order does not matter for equality', () => {
    const { cache } = newCache();
    cache.updatePending(s, false);
    const reordered = {
      endpoints: s.endpoints,
      ports: s.ports,
      addressType: s.addressType,
      metadata: { ...s.metadata },
    };
    assert.equal(cache.updatePending(reordered, false), false);
  });
  test('metadata counts: a new resourceVersion alone is a change', () => {
    const { cache } = newCache();
    cache.updatePending(s, false);
    cache.checkoutChanges();
    assert.equal(
      cache.updatePending({ ...s, metadata: { ...s.metadata, resourceVersion: '2' } }, false),
      true,
    );
  });
  test("an API server's object is compared by uid and resourceVersion, a hand-made one by content", () => {
    const { cache } = newCache();
    const stamped = { ...s, metadata: { ...s.metadata, uid: 'u-1', resourceVersion: '5' } };
    assert.equal(cache.updatePending(stamped, false), true);
    cache.checkoutChanges();
    // The same pair is the same write: its content is not read again.
    const sameWrite = { ...stamped, endpoints: [] };
    assert.equal(cache.updatePending(sameWrite, false), false);
    assert.equal(cache.checkoutChanges().size, 0);
    // A new version, or a new object under the same name, is a change.
    const updated = { ...stamped, metadata: { ...stamped.metadata, resourceVersion: '6' } };
    assert.equal(cache.updatePending(updated, false), true);
    const recreated = { ...updated, metadata: { ...updated.metadata, uid: 'u-2' } };
    assert.equal(cache.updatePending(recreated, false), true);
    // Without a uid the whole object decides, resourceVersion and all.
    const plain = newCache().cache;
    assert.equal(plain.updatePending(s, false), true);
    plain.checkoutChanges();
    assert.equal(plain.updatePending({ ...s, endpoints: [] }, false), true);
  });
  test('the remove flag counts: a remove of an applied slice is a change, a second remove is not', () => {
    const { cache } = newCache();
    cache.updatePending(s, false);
    cache.checkoutChanges();
    assert.equal(cache.updatePending(s, true), true);
    assert.equal(cache.updatePending(s, true), false);
    const c = cache.checkoutChanges().get('ns/svc');
    assert.deepEqual(strings(c?.previous.get(key('ns', 'svc', 'http'))), ['198.18.1.1:80']);
    assert.equal(c?.current.size, 0);
    // Fully removed: a later remove is a no-op again.
    assert.equal(cache.updatePending(s, true), false);
  });
  test('a change that returns to the applied object still compares against the pending entry', () => {
    const { cache } = newCache();
    cache.updatePending(s, false);
    cache.checkoutChanges();
    const s2 = { ...s, metadata: { ...s.metadata, resourceVersion: '2' } };
    assert.equal(cache.updatePending(s2, false), true);
    assert.equal(cache.updatePending(s, false), true); // differs from the pending s2
  });
  test('checkout reports previous and current per changed Service only', () => {
    const { cache } = newCache();
    cache.updatePending(slice('a1', { service: 'a', endpoints: [ep('198.18.1.1')] }), false);
    cache.updatePending(slice('b1', { service: 'b', endpoints: [ep('198.18.2.1')] }), false);
    const first = cache.checkoutChanges();
    assert.deepEqual([...first.keys()].sort(), ['ns/a', 'ns/b']);
    assert.equal(first.get('ns/a')?.previous.size, 0);
    cache.updatePending(slice('a1', { service: 'a', endpoints: [ep('198.18.1.2')], rv: '2' }), false);
    const second = cache.checkoutChanges();
    assert.deepEqual([...second.keys()], ['ns/a']);
    assert.deepEqual(strings(second.get('ns/a')?.previous.get(key('ns', 'a', 'http'))), ['198.18.1.1:80']);
    assert.deepEqual(strings(second.get('ns/a')?.current.get(key('ns', 'a', 'http'))), ['198.18.1.2:80']);
  });
  test('a slice without the service-name label is refused with a reason', () => {
    const { cache, problems } = newCache();
    assert.equal(cache.updatePending(slice('s1', { labels: null }), false), false);
    assert.match(problems.join(), /kubernetes\.io\/service-name is missing/);
  });
});
