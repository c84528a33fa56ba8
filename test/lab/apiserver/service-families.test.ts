// A Service's IP families and ClusterIPs as kube-apiserver assigns them (its alloc.go and validation), on an
// IPv4-only, an IPv6-only and a dual-stack (IPv4 primary) API server: ipFamilyPolicy defaults, the second family
// for PreferDualStack and RequireDualStack, upstream's refusals word for word, family changes on update, the
// default ServiceCIDR per family, Pods with an address per family and an EndpointSlice per family.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { cidrContains } from '../../../packages/agent/src/model/ip.js';
import { startApiServer, type ApiServer } from '../../../packages/lab/src/apiserver/index.js';
import { arr, child, str, type JsonObject } from '../../../packages/lab/src/apiserver/json.js';
import { resourceByKind } from '../../../packages/lab/src/apiserver/resources.js';
import { parseServiceClusterIPRange } from '../../../packages/lab/src/apiserver/service-cidr.js';

const SVC = resourceByKind('Service');
const SERVICE_CIDR = resourceByKind('ServiceCIDR');
const POD = resourceByKind('Pod');
const SLICE = resourceByKind('EndpointSlice');
const ENDPOINTS = resourceByKind('Endpoints');
const V4_RANGE = '198.19.0.0/16';
const V6_RANGE = '2001:db8:ff::/112';

async function withServer(serviceCIDR: string, fn: (s: ApiServer) => Promise<void> | void): Promise<void> {
  const s = await startApiServer({
    tls: false,
    serviceCIDR,
    nodes: [
      {
        name: 'n1',
        podCIDRs: ['198.18.10.0/24', '2001:db8:10::/64'],
        internalIPs: ['198.18.0.10', '2001:db8::10'],
      },
    ],
  });
  try {
    await fn(s);
  } finally {
    await s.stop();
  }
}

function service(name: string, spec: JsonObject = {}): object {
  return { metadata: { name }, spec: { selector: { app: 'web' }, ports: [{ port: 80 }], ...spec } };
}

type Created = { ok: true; spec: JsonObject } | { ok: false; message: string };

function create(s: ApiServer, name: string, spec: JsonObject = {}): Created {
  const r = s.registry.create(SVC, 'default', service(name, spec));
  return r.ok ? { ok: true, spec: child(r.value, 'spec') } : { ok: false, message: r.error.message };
}

function created(s: ApiServer, name: string, spec: JsonObject = {}): JsonObject {
  const r = create(s, name, spec);
  if (!r.ok) assert.fail(r.message);
  return r.spec;
}

function refused(s: ApiServer, name: string, spec: JsonObject): string {
  const r = create(s, name, spec);
  if (r.ok) assert.fail(`created: ${JSON.stringify(r.spec)}`);
  return r.message;
}

function update(s: ApiServer, name: string, change: (spec: JsonObject) => void): Created {
  const current = structuredClone(s.store.get(SVC, 'default', name)) as JsonObject;
  change(child(current, 'spec'));
  const r = s.registry.update(SVC, 'default', name, current);
  return r.ok ? { ok: true, spec: child(r.value, 'spec') } : { ok: false, message: r.error.message };
}

const familiesOf = (spec: JsonObject): unknown[] => arr(spec, 'ipFamilies');
const ipsOf = (spec: JsonObject): string[] => arr(spec, 'clusterIPs') as string[];

describe('--service-cluster-ip-range', () => {
  test('one range, or one per family, primary first', () => {
    const two = parseServiceClusterIPRange(`${V6_RANGE},${V4_RANGE}`);
    assert.ok(Array.isArray(two));
    assert.deepEqual(
      two.map((c) => c.family),
      [6, 4],
    );
    assert.match(String(parseServiceClusterIPRange('198.19.0.0/16,198.20.0.0/16')), /different IP families/);
    assert.match(String(parseServiceClusterIPRange('198.19.0.0/16,nope')), /"nope" is not a CIDR/);
  });
});

describe('Service IP families on a dual-stack API server (IPv4 primary)', () => {
  const RANGE = `${V4_RANGE},${V6_RANGE}`;

  test('the default ServiceCIDR holds both ranges', () =>
    withServer(RANGE, (s) => {
      const cidr = s.store.get(SERVICE_CIDR, '', 'kubernetes');
      assert.deepEqual(arr(child(cidr, 'spec'), 'cidrs'), [V4_RANGE, V6_RANGE]);
    }));

  test('no policy: SingleStack in the primary family, one ClusterIP', () =>
    withServer(RANGE, (s) => {
      const spec = created(s, 'plain');
      assert.equal(spec.ipFamilyPolicy, 'SingleStack');
      assert.deepEqual(familiesOf(spec), ['IPv4']);
      assert.equal(ipsOf(spec).length, 1);
      assert.ok(cidrContains(V4_RANGE, String(spec.clusterIP)));
    }));

  test('PreferDualStack and RequireDualStack get both families and an address of each, primary first', () =>
    withServer(RANGE, (s) => {
      for (const policy of ['PreferDualStack', 'RequireDualStack']) {
        const spec = created(s, policy.toLowerCase(), { ipFamilyPolicy: policy });
        assert.deepEqual(familiesOf(spec), ['IPv4', 'IPv6'], policy);
        const [v4, v6] = ipsOf(spec);
        assert.ok(cidrContains(V4_RANGE, v4 ?? ''), `${policy}: ${v4}`);
        assert.ok(cidrContains(V6_RANGE, v6 ?? ''), `${policy}: ${v6}`);
        assert.equal(spec.clusterIP, v4);
      }
      // The order asked for is kept: IPv6 first makes an IPv6 clusterIP.
      const v6first = created(s, 'v6first', { ipFamilyPolicy: 'RequireDualStack', ipFamilies: ['IPv6'] });
      assert.deepEqual(familiesOf(v6first), ['IPv6', 'IPv4']);
      assert.ok(cidrContains(V6_RANGE, String(v6first.clusterIP)));
      const v6only = created(s, 'v6only', { ipFamilies: ['IPv6'] });
      assert.equal(v6only.ipFamilyPolicy, 'SingleStack');
      assert.deepEqual(familiesOf(v6only), ['IPv6']);
      assert.equal(ipsOf(v6only).length, 1);
    }));

  test('requested ClusterIPs are kept and give the families; a taken or foreign one is refused', () =>
    withServer(RANGE, (s) => {
      const spec = created(s, 'asked', {
        ipFamilyPolicy: 'RequireDualStack',
        clusterIP: '2001:db8:ff::50',
        clusterIPs: ['2001:db8:ff::50', '198.19.0.50'],
      });
      assert.deepEqual(familiesOf(spec), ['IPv6', 'IPv4']);
      assert.deepEqual(ipsOf(spec), ['2001:db8:ff::50', '198.19.0.50']);
      assert.match(
        refused(s, 'taken', {
          ipFamilyPolicy: 'PreferDualStack',
          clusterIP: '198.19.0.51',
          clusterIPs: ['198.19.0.51', '2001:db8:ff::50'],
        }),
        /spec\.clusterIPs: Invalid value: \["2001:db8:ff::50"\]: failed to allocate IP 2001:db8:ff::50: provided IP is already allocated/,
      );
      assert.match(
        refused(s, 'two-v4', {
          ipFamilyPolicy: 'PreferDualStack',
          clusterIP: '198.19.0.52',
          clusterIPs: ['198.19.0.52', '198.19.0.53'],
        }),
        /spec\.clusterIPs: Invalid value: \["198\.19\.0\.52","198\.19\.0\.53"\]: may specify no more than one IP for each IP family/,
      );
    }));

  test("upstream's refusals: two families with SingleStack, unknown policy or family, duplicates", () =>
    withServer(RANGE, (s) => {
      assert.match(
        refused(s, 'single-two', { ipFamilyPolicy: 'SingleStack', ipFamilies: ['IPv4', 'IPv6'] }),
        /spec\.ipFamilyPolicy: Invalid value: "SingleStack": must be 'RequireDualStack' or 'PreferDualStack' when multiple IP families are specified/,
      );
      assert.match(
        refused(s, 'odd-policy', { ipFamilyPolicy: 'DualStackPlease' }),
        /spec\.ipFamilyPolicy: Unsupported value: "DualStackPlease": supported values: "PreferDualStack", "RequireDualStack", "SingleStack"/,
      );
      assert.match(
        refused(s, 'odd-family', { ipFamilies: ['IPv5'] }),
        /spec\.ipFamilies\[0\]: Unsupported value: "IPv5": supported values: "IPv4", "IPv6"/,
      );
      assert.match(
        refused(s, 'dup', { ipFamilyPolicy: 'PreferDualStack', ipFamilies: ['IPv4', 'IPv4'] }),
        /spec\.ipFamilies\[1\]: Duplicate value: "IPv4"/,
      );
    }));

  test('headless: families as asked, no address', () =>
    withServer(RANGE, (s) => {
      const spec = created(s, 'headless', { clusterIP: 'None', ipFamilyPolicy: 'PreferDualStack' });
      assert.deepEqual(familiesOf(spec), ['IPv4', 'IPv6']);
      assert.deepEqual(ipsOf(spec), ['None']);
    }));

  test('an update adds the second family (and address) and releases it only with SingleStack', () =>
    withServer(RANGE, (s) => {
      const first = created(s, 'grow');
      const up = update(s, 'grow', (spec) => (spec.ipFamilyPolicy = 'PreferDualStack'));
      assert.ok(up.ok, up.ok ? '' : up.message);
      assert.deepEqual(familiesOf(up.spec), ['IPv4', 'IPv6']);
      assert.equal(ipsOf(up.spec)[0], first.clusterIP, 'the primary address stays');
      assert.ok(cidrContains(V6_RANGE, ipsOf(up.spec)[1] ?? ''));
      const shrink = update(s, 'grow', (spec) => {
        spec.clusterIPs = ipsOf(spec).slice(0, 1);
        spec.ipFamilies = familiesOf(spec).slice(0, 1);
      });
      assert.ok(!shrink.ok);
      assert.match(
        shrink.message,
        /spec\.ipFamilyPolicy: Invalid value: "PreferDualStack": must be 'SingleStack' to release the secondary cluster IP/,
      );
      const down = update(s, 'grow', (spec) => (spec.ipFamilyPolicy = 'SingleStack'));
      assert.ok(down.ok, down.ok ? '' : down.message);
      assert.deepEqual(familiesOf(down.spec), ['IPv4']);
      assert.deepEqual(ipsOf(down.spec), [first.clusterIP]);
      const flip = update(s, 'grow', (spec) => {
        spec.ipFamilyPolicy = 'RequireDualStack';
        spec.ipFamilies = ['IPv6', 'IPv4'];
      });
      assert.ok(!flip.ok);
      assert.match(
        flip.message,
        /spec\.clusterIPs\[0\]: Invalid value: "198\.19\.0\.\d+": expected an IPv6 value as indicated by `ipFamilies\[0\]`/,
      );
      assert.doesNotMatch(flip.message, /no more than one IP/, 'no second IPv4 address was given out for it');
    }));

  test('Pods get an address of each family; a dual-stack Service gets an EndpointSlice of each, and Endpoints of its primary family only', () =>
    withServer(RANGE, async (s) => {
      created(s, 'web', { ipFamilyPolicy: 'RequireDualStack' });
      // Pods of their own (no Deployment): what is under test is the addresses and the slices.
      for (const name of ['web-a', 'web-b']) {
        const pod = {
          metadata: { name, labels: { app: 'web' } },
          spec: { containers: [{ name: 'c', image: 'i', ports: [{ containerPort: 80 }] }] },
        };
        assert.ok(s.registry.create(POD, 'default', pod).ok);
      }
      const slicesByFamily = (): Map<string, string[]> => {
        const out = new Map<string, string[]>();
        for (const slice of s.store.list(SLICE, 'default')) {
          const addresses = arr(slice, 'endpoints').flatMap((e) => arr(e, 'addresses') as string[]);
          out.set(str(slice, 'addressType') ?? '', addresses.sort());
        }
        return out;
      };
      // Each store write is an event: check after every one until both IPv6 endpoints are in a slice.
      const bothIPv6 = (): boolean => (slicesByFamily().get('IPv6') ?? []).length >= 2;
      await new Promise<void>((resolve, reject) => {
        const finish = (error?: Error): void => {
          clearTimeout(timer);
          unsubscribe();
          if (error) reject(error);
          else resolve();
        };
        const timer = setTimeout(
          () => finish(new Error('no IPv6 EndpointSlice with both pods within 10 s')),
          10_000,
        ); // a deadline, not a wait
        const unsubscribe = s.store.subscribe(() => {
          if (bothIPv6()) finish();
        });
        if (bothIPv6()) finish();
      });
      await s.idle();
      const pods = s.store.list(POD, 'default');
      assert.equal(pods.length, 2);
      const podIPs = pods.map((p) => arr(child(p, 'status'), 'podIPs').map((x) => str(x, 'ip') ?? ''));
      for (const [v4, v6] of podIPs) {
        assert.ok(cidrContains('198.18.10.0/24', v4 ?? ''), String(v4));
        assert.ok(cidrContains('2001:db8:10::/64', v6 ?? ''), String(v6));
      }
      const slices = slicesByFamily();
      assert.deepEqual([...slices.keys()].sort(), ['IPv4', 'IPv6']);
      assert.deepEqual(slices.get('IPv4'), podIPs.map((p) => p[0]).sort());
      assert.deepEqual(slices.get('IPv6'), podIPs.map((p) => p[1]).sort());
      // Endpoints are single family (upstream's controller, and e2e's WaitForServiceEndpointsNum counts them).
      const endpointIPs = arr(s.store.get(ENDPOINTS, 'default', 'web'), 'subsets').flatMap((ss) =>
        [...arr(ss, 'addresses'), ...arr(ss, 'notReadyAddresses')].map((a) => str(a, 'ip') ?? ''),
      );
      assert.deepEqual(endpointIPs.sort(), podIPs.map((p) => p[0]).sort());
      // Back to one family: the IPv6 slice goes.
      const down = update(s, 'web', (spec) => (spec.ipFamilyPolicy = 'SingleStack'));
      assert.ok(down.ok, down.ok ? '' : down.message);
      await s.idle();
      assert.deepEqual([...slicesByFamily().keys()], ['IPv4']);
    }));
});

describe('Service IP families on a single-stack API server', () => {
  test("IPv4 only: RequireDualStack is refused with kube-apiserver's message; PreferDualStack stays IPv4", () =>
    withServer(V4_RANGE, (s) => {
      assert.equal(
        refused(s, 'dual', { ipFamilyPolicy: 'RequireDualStack' }),
        'Service "dual" is invalid: spec.ipFamilyPolicy: Invalid value: "RequireDualStack": this cluster is not configured for dual-stack services',
      );
      const prefer = created(s, 'prefer', { ipFamilyPolicy: 'PreferDualStack' });
      assert.deepEqual(familiesOf(prefer), ['IPv4']);
      assert.equal(ipsOf(prefer).length, 1);
      assert.match(
        refused(s, 'v6', { ipFamilies: ['IPv6'] }),
        /spec\.ipFamilies\[0\]: Invalid value: "IPv6": not configured on this cluster/,
      );
      // Headless without a selector may name both families anywhere (upstream's exception).
      const r = s.registry.create(SVC, 'default', {
        metadata: { name: 'external' },
        spec: { clusterIP: 'None', ports: [{ port: 80 }] },
      });
      assert.ok(r.ok, r.ok ? '' : r.error.message);
      assert.equal(child(r.value, 'spec').ipFamilyPolicy, 'RequireDualStack');
      assert.deepEqual(familiesOf(child(r.value, 'spec')), ['IPv4', 'IPv6']);
    }));

  test('IPv6 only: every Service is IPv6', () =>
    withServer(V6_RANGE, (s) => {
      const spec = created(s, 'plain');
      assert.deepEqual(familiesOf(spec), ['IPv6']);
      assert.ok(cidrContains(V6_RANGE, String(spec.clusterIP)), String(spec.clusterIP));
      assert.match(
        refused(s, 'dual', { ipFamilyPolicy: 'RequireDualStack' }),
        /not configured for dual-stack/,
      );
    }));
});
