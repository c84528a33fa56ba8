import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Service } from '../../packages/agent/src/api/objects.js';
import {
  externallyAccessible,
  servicePortsFromService,
  servicePortString,
  serviceRemnant,
  usesClusterEndpoints,
  usesLocalEndpoints,
} from '../../packages/agent/src/model/service-port.js';
import type { ServicePort } from '../../packages/agent/src/model/service-port.js';
import { ServiceChangeTracker } from '../../packages/agent/src/model/service-change-tracker.js';
import type { ServicePortMap } from '../../packages/agent/src/model/service-change-tracker.js';

type Spec = NonNullable<Service['spec']>;

function svc(spec: Spec, extra: Partial<Service> = {}): Service {
  return { metadata: { namespace: 'ns', name: 'svc' }, spec, ...extra };
}
const basic: Spec = { clusterIP: '198.18.0.10', ports: [{ name: 'http', port: 80, protocol: 'TCP' }] };

function only(r: ReturnType<typeof servicePortsFromService>): ServicePort {
  assert.equal(r.skipped, undefined, `unexpectedly skipped: ${r.skipped}`);
  assert.equal(r.ports.length, 1);
  return r.ports[0] as ServicePort;
}

/** The one IPv4 port of the basic Service with `spec` over its spec. */
function basicPort(spec: Partial<Spec> = {}): ServicePort {
  return only(servicePortsFromService(svc({ ...basic, ...spec }), 'IPv4'));
}

describe('§1.2 BaseServicePortInfo fields', () => {
  test('basic ClusterIP port: identity, clusterIP, port, protocol, defaults', () => {
    const sp = basicPort();
    assert.equal(sp.nameString, 'ns/svc:http');
    assert.equal(sp.serviceName, 'ns/svc');
    assert.deepEqual(sp.name, { namespace: 'ns', name: 'svc', port: 'http', protocol: 'TCP' });
    assert.equal(sp.clusterIP, '198.18.0.10');
    assert.equal(sp.port, 80);
    assert.equal(sp.protocol, 'TCP');
    assert.equal(sp.nodePort, 0);
    assert.equal(sp.sessionAffinityClientIP, false);
    assert.equal(sp.stickyMaxAgeSeconds, 0);
    assert.deepEqual(sp.externalIPs, []);
    assert.equal(sp.healthCheckNodePort, 0);
    assert.equal(sp.externalPolicyLocal, false);
    assert.equal(sp.internalPolicyLocal, false);
    assert.equal(servicePortString(sp), '198.18.0.10:80/TCP');
  });

  test('clusterIP is parsed leniently and printed canonically', () => {
    const sp = basicPort({ clusterIP: '198.018.000.010' });
    assert.equal(sp.clusterIP, '198.18.0.10');
  });

  test('protocol omitted means TCP; UDP and SCTP kept', () => {
    const r = servicePortsFromService(
      svc({
        clusterIP: '198.18.0.10',
        ports: [
          { port: 53 },
          { name: 'u', port: 53, protocol: 'UDP' },
          { name: 's', port: 9, protocol: 'SCTP' },
        ],
      }),
      'IPv4',
    );
    assert.deepEqual(
      r.ports.map((p) => [p.nameString, p.protocol]),
      [
        ['ns/svc', 'TCP'],
        ['ns/svc:u', 'UDP'],
        ['ns/svc:s', 'SCTP'],
      ],
    );
  });

  describe('clusterIP by family', () => {
    const cases: readonly { name: string; spec: Spec; v4?: string; v6?: string }[] = [
      { name: 'no ipFamilies, IPv4 clusterIP', spec: { clusterIP: '198.18.0.1' }, v4: '198.18.0.1' },
      { name: 'no ipFamilies, IPv6 clusterIP', spec: { clusterIP: '2001:DB8::1' }, v6: '2001:db8::1' },
      {
        name: 'dual-stack, IPv6 primary',
        spec: {
          clusterIP: '2001:db8::1',
          clusterIPs: ['2001:db8::1', '198.18.0.1'],
          ipFamilies: ['IPv6', 'IPv4'],
        },
        v4: '198.18.0.1',
        v6: '2001:db8::1',
      },
      {
        name: 'single-stack IPv4 with ipFamilies',
        spec: { clusterIP: '198.18.0.1', clusterIPs: ['198.18.0.1'], ipFamilies: ['IPv4'] },
        v4: '198.18.0.1',
      },
    ];
    for (const c of cases) {
      test(c.name, () => {
        for (const [family, want] of [
          ['IPv4', c.v4],
          ['IPv6', c.v6],
        ] as const) {
          const r = servicePortsFromService(svc({ ...c.spec, ports: [{ port: 80 }] }), family);
          if (want === undefined) {
            assert.equal(r.skipped, `no clusterIP of family ${family}`);
            assert.deepEqual(r.ports, []);
          } else {
            assert.equal(only(r).clusterIP, want);
            assert.equal(only(r).family, family);
          }
        }
      });
    }
  });

  test('session affinity: ClientIP timeout from config, default 10800; None → 0', () => {
    const timeout60 = { sessionAffinityConfig: { clientIP: { timeoutSeconds: 60 } } };
    const withTimeout = basicPort({ sessionAffinity: 'ClientIP', ...timeout60 });
    assert.equal(withTimeout.sessionAffinityClientIP, true);
    assert.equal(withTimeout.stickyMaxAgeSeconds, 60);
    const defaulted = basicPort({ sessionAffinity: 'ClientIP' });
    assert.equal(defaulted.stickyMaxAgeSeconds, 10800);
    const none = basicPort({ sessionAffinity: 'None', ...timeout60 });
    assert.equal(none.stickyMaxAgeSeconds, 0);
  });

  test('externalIPs: lenient, this family only, invalid dropped with a problem', () => {
    const r = servicePortsFromService(
      svc({ ...basic, externalIPs: ['198.18.1.001', '2001:db8::5', 'bogus', '198.18.1.2'] }),
      'IPv4',
    );
    assert.deepEqual(only(r).externalIPs, ['198.18.1.1', '198.18.1.2']);
    assert.equal(r.problems.length, 1);
    assert.match(r.problems[0] as string, /spec\.externalIPs\[2\] "bogus"/);
  });

  test('loadBalancerSourceRanges: trimmed, masked, this family only, invalid ignored', () => {
    const r = servicePortsFromService(
      svc({
        ...basic,
        type: 'LoadBalancer',
        loadBalancerSourceRanges: [' 203.0.113.000/025 ', '2001:db8::/64', 'x/1'],
      }),
      'IPv4',
    );
    assert.deepEqual(only(r).loadBalancerSourceRanges, ['203.0.113.0/25']);
    assert.match(r.problems.join('\n'), /loadBalancerSourceRanges\[2\] "x\/1"/);
  });

  test('loadBalancerVIPs: VIP mode or unset, non-empty ip, this family; hostname-only and Proxy ignored', () => {
    const r = servicePortsFromService(
      svc(
        { ...basic, type: 'LoadBalancer' },
        {
          status: {
            loadBalancer: {
              ingress: [
                { ip: '198.18.5.1' },
                { ip: '198.18.5.2', ipMode: 'VIP' },
                { ip: '198.18.5.3', ipMode: 'Proxy' },
                { hostname: 'lb.example' },
                { ip: '2001:db8::9' },
                { ip: '' },
              ],
            },
          },
        },
      ),
      'IPv4',
    );
    assert.deepEqual(only(r).loadBalancerVIPs, ['198.18.5.1', '198.18.5.2']);
  });

  describe('externalPolicyLocal is type-based and ETP=Local; healthCheckNodePort only for LoadBalancer', () => {
    const cases: readonly {
      type: string;
      externalIPs?: string[];
      etp: string;
      local: boolean;
      hc: number;
    }[] = [
      { type: 'LoadBalancer', etp: 'Local', local: true, hc: 30000 },
      { type: 'LoadBalancer', etp: 'Cluster', local: false, hc: 0 },
      { type: 'NodePort', etp: 'Local', local: true, hc: 0 },
      { type: 'ClusterIP', etp: 'Local', local: false, hc: 0 },
      { type: 'ClusterIP', externalIPs: ['198.18.9.9'], etp: 'Local', local: true, hc: 0 },
      // Type-based: an externalIP of the *other* family still makes the Service "externally accessible" by type.
      { type: 'ClusterIP', externalIPs: ['2001:db8::9'], etp: 'Local', local: true, hc: 0 },
    ];
    for (const c of cases) {
      test(`${c.type}${c.externalIPs ? ' with externalIPs ' + c.externalIPs.join(',') : ''} ETP=${c.etp}`, () => {
        const sp = basicPort({
          type: c.type,
          externalTrafficPolicy: c.etp,
          healthCheckNodePort: 30000,
          ...(c.externalIPs ? { externalIPs: c.externalIPs } : {}),
        });
        assert.equal(sp.externalPolicyLocal, c.local);
        assert.equal(sp.healthCheckNodePort, c.hc);
      });
    }
    test('LoadBalancer ETP=Local with healthCheckNodePort 0 → stays 0, reported', () => {
      const r = servicePortsFromService(
        svc({ ...basic, type: 'LoadBalancer', externalTrafficPolicy: 'Local' }),
        'IPv4',
      );
      assert.equal(only(r).healthCheckNodePort, 0);
      assert.match(r.problems.join('\n'), /healthCheckNodePort/);
    });
  });

  test('internalPolicyLocal only for ITP=Local', () => {
    assert.equal(basicPort({ internalTrafficPolicy: 'Local' }).internalPolicyLocal, true);
    assert.equal(basicPort({ internalTrafficPolicy: 'Cluster' }).internalPolicyLocal, false);
  });
});

describe('§1.2 derived: ExternallyAccessible (data-based, per family), UsesCluster/UsesLocal', () => {
  const base = basicPort();
  const cases: readonly {
    name: string;
    sp: Partial<ServicePort>;
    ext: boolean;
    cluster: boolean;
    local: boolean;
  }[] = [
    { name: 'ITP Cluster, not external', sp: {}, ext: false, cluster: true, local: false },
    {
      name: 'ITP Cluster, nodePort, ETP Cluster',
      sp: { nodePort: 30080 },
      ext: true,
      cluster: true,
      local: false,
    },
    {
      name: 'ITP Cluster, VIP, ETP Local',
      sp: { loadBalancerVIPs: ['198.18.5.1'], externalPolicyLocal: true },
      ext: true,
      cluster: true,
      local: true,
    },
    {
      name: 'ITP Local, not external',
      sp: { internalPolicyLocal: true },
      ext: false,
      cluster: false,
      local: true,
    },
    {
      name: 'ITP Local, externalIP, ETP Cluster',
      sp: { internalPolicyLocal: true, externalIPs: ['198.18.9.9'] },
      ext: true,
      cluster: true,
      local: true,
    },
    {
      name: 'ITP Local, nodePort, ETP Local',
      sp: { internalPolicyLocal: true, nodePort: 30080, externalPolicyLocal: true },
      ext: true,
      cluster: true,
      local: true,
    },
    // ETP Local by type, but no external frontend of this family: Local set unused.
    {
      name: 'ETP Local by type but no frontend of this family',
      sp: { externalPolicyLocal: true },
      ext: false,
      cluster: true,
      local: false,
    },
  ];
  for (const c of cases) {
    test(`§10.4 ${c.name}`, () => {
      const sp = { ...base, ...c.sp };
      assert.equal(externallyAccessible(sp), c.ext);
      assert.equal(usesClusterEndpoints(sp), c.cluster);
      assert.equal(usesLocalEndpoints(sp), c.local);
    });
  }
  test('§10.4 per family: externalIP of IPv6 only, ETP Local → IPv4 port is not externally accessible', () => {
    const s = svc({
      clusterIP: '198.18.0.10',
      clusterIPs: ['198.18.0.10', '2001:db8::10'],
      ipFamilies: ['IPv4', 'IPv6'],
      externalIPs: ['2001:db8::99'],
      externalTrafficPolicy: 'Local',
      ports: [{ port: 80 }],
    });
    const v4 = only(servicePortsFromService(s, 'IPv4'));
    const v6 = only(servicePortsFromService(s, 'IPv6'));
    assert.equal(v4.externalPolicyLocal, true);
    assert.equal(externallyAccessible(v4), false);
    assert.equal(usesLocalEndpoints(v4), false);
    assert.equal(externallyAccessible(v6), true);
    assert.equal(usesLocalEndpoints(v6), true);
    assert.equal(servicePortString(v6), '[2001:db8::10]:80/TCP');
  });
});

describe('§1.2 skipped Services', () => {
  const cases: readonly { name: string; obj: unknown; reason: RegExp }[] = [
    {
      name: 'clusterIP ""',
      obj: svc({ clusterIP: '', ports: [{ port: 80 }] }),
      reason: /clusterIP is empty/,
    },
    { name: 'no clusterIP', obj: svc({ ports: [{ port: 80 }] }), reason: /clusterIP is empty/ },
    { name: 'headless', obj: svc({ clusterIP: 'None', ports: [{ port: 80 }] }), reason: /headless/ },
    {
      name: 'ExternalName',
      obj: svc({
        type: 'ExternalName',
        clusterIP: '198.18.0.1',
        externalName: 'x.example',
        ports: [{ port: 80 }],
      }),
      reason: /ExternalName/,
    },
    {
      name: 'invalid clusterIP names the value',
      obj: svc({ clusterIP: '198.18.0.300', ports: [{ port: 80 }] }),
      reason: /invalid spec\.clusterIP "198\.18\.0\.300"/,
    },
    {
      name: 'clusterIP of the wrong type',
      obj: svc({ clusterIP: 42 as unknown as string }),
      reason: /invalid spec\.clusterIP 42/,
    },
    {
      name: 'service-proxy-name label',
      obj: {
        metadata: {
          namespace: 'ns',
          name: 'svc',
          labels: { 'service.kubernetes.io/service-proxy-name': 'other' },
        },
        spec: basic,
      },
      reason: /service-proxy-name/,
    },
    { name: 'no spec', obj: { metadata: { namespace: 'ns', name: 'svc' } }, reason: /spec/ },
    { name: 'spec null', obj: { metadata: { namespace: 'ns', name: 'svc' }, spec: null }, reason: /spec/ },
    { name: 'no metadata', obj: { spec: basic }, reason: /metadata/ },
    { name: 'null', obj: null, reason: /not an object/ },
    { name: 'a string', obj: 'svc', reason: /not an object/ },
  ];
  for (const c of cases) {
    test(c.name, () => {
      const r = servicePortsFromService(c.obj as Service, 'IPv4');
      assert.match(r.skipped ?? '', c.reason);
      assert.deepEqual(r.ports, []);
      const routine = /clusterIP ""|no clusterIP|headless|ExternalName|service-proxy-name/.test(c.name);
      assert.equal(r.routine, routine ? true : undefined);
    });
  }
});

describe('bad ports are dropped with a reason; the others are kept', () => {
  test('no number, out of range, string port, unknown protocol, wrong types, null', () => {
    const r = servicePortsFromService(
      svc({
        clusterIP: '198.18.0.10',
        ports: [
          { name: 'nonum' },
          { name: 'big', port: 70000 },
          { name: 'str', port: '80' as unknown as number },
          { name: 'icmp', port: 1, protocol: 'ICMP' },
          null as unknown as { port: number },
          { name: 7 as unknown as string, port: 81 },
          { name: 'ok', port: 8080, protocol: 'UDP', nodePort: 30001 },
          { name: 'badnp', port: 8081, nodePort: -1 },
        ],
      }),
      'IPv4',
    );
    assert.equal(r.skipped, undefined);
    assert.deepEqual(
      r.ports.map((p) => [p.nameString, p.port, p.protocol, p.nodePort]),
      [
        ['ns/svc:ok', 8080, 'UDP', 30001],
        ['ns/svc:badnp', 8081, 'TCP', 0],
      ],
    );
    const all = r.problems.join('\n');
    assert.match(all, /spec\.ports\[0\]\.port undefined is not a port number/);
    assert.match(all, /spec\.ports\[1\]\.port 70000/);
    assert.match(all, /spec\.ports\[2\]\.port "80"/);
    assert.match(all, /spec\.ports\[3\]\.protocol "ICMP" is unknown/);
    assert.match(all, /spec\.ports\[4\] is not an object/);
    assert.match(all, /spec\.ports\[5\]\.name 7/);
    assert.match(all, /spec\.ports\[7\]\.nodePort -1/);
  });

  test('ports that are not a list, and fields of the wrong type everywhere, never throw', () => {
    const weird: unknown[] = [
      svc({ clusterIP: '198.18.0.10', ports: 'http' as unknown as [] }),
      svc({ clusterIP: '198.18.0.10', ports: [{ port: 80 }], externalIPs: 'x' as unknown as [] }),
      svc({ clusterIP: '198.18.0.10', ports: [{ port: 80 }], ipFamilies: [null as unknown as string] }),
      svc({
        clusterIP: '198.18.0.10',
        ports: [{ port: 80 }],
        sessionAffinity: 'ClientIP',
        sessionAffinityConfig: null as unknown as object,
      }),
      {
        metadata: { namespace: 'ns', name: 'svc' },
        spec: basic,
        status: { loadBalancer: { ingress: [null, 5, { ip: 7 }] } },
      },
      { metadata: { namespace: 5, name: [] }, spec: basic },
      new Proxy(
        {},
        {
          get() {
            throw new Error('boom');
          },
        },
      ),
    ];
    // Per input: skipped, and how many ports. A field of the wrong type is ignored and the port kept; a missing
    // name, an unreadable object, or ipFamilies without IPv4 (upstream's GetClusterIPByFamily) skips the Service.
    const expected = [
      { skipped: false, ports: 0 },
      { skipped: false, ports: 1 },
      { skipped: true, ports: 0 },
      { skipped: false, ports: 1 },
      { skipped: false, ports: 1 },
      { skipped: true, ports: 0 },
      { skipped: true, ports: 0 },
    ];
    assert.deepEqual(
      weird.map((w) => {
        const r = servicePortsFromService(w as Service, 'IPv4');
        assert.ok(Array.isArray(r.ports));
        return { skipped: r.skipped !== undefined, ports: r.ports.length };
      }),
      expected,
    );
    // The wrong-typed ports field is a problem, not a skip.
    const r0 = servicePortsFromService(weird[0] as Service, 'IPv4');
    assert.equal(r0.skipped, undefined);
    assert.match(r0.problems.join(), /spec\.ports is not a list/);
    const rp = servicePortsFromService(weird[6] as Service, 'IPv4');
    assert.match(rp.skipped ?? '', /boom/);
  });
});

describe('serviceRemnant: what the Service store keeps', () => {
  // As an API server sends one: managedFields is not in our typed subset, hence the cast.
  const whole = (labels: Record<string, string>, spec: Spec, status?: Service['status']): Service =>
    ({
      metadata: {
        namespace: 'ns',
        name: 'svc',
        resourceVersion: '7',
        uid: '0b8c7d2e-1111-4222-8333-944445555666',
        labels,
        annotations: { 'kubectl.kubernetes.io/last-applied-configuration': '{"big":"copy"}' },
        managedFields: [{ manager: 'kubectl', operation: 'Update', fieldsV1: { 'f:spec': {} } }],
      },
      spec,
      ...(status !== undefined ? { status } : {}),
    }) as unknown as Service;
  const cases: [string, Service][] = [
    ['a plain ClusterIP', whole({ app: 'a' }, basic)],
    [
      'a LoadBalancer with Local policy, VIPs, source ranges and affinity',
      whole(
        {},
        {
          ...basic,
          type: 'LoadBalancer',
          externalTrafficPolicy: 'Local',
          internalTrafficPolicy: 'Local',
          healthCheckNodePort: 30999,
          externalIPs: ['198.18.5.5', '2001:db8::5', 'nonsense'],
          loadBalancerSourceRanges: ['198.18.9.0/24'],
          sessionAffinity: 'ClientIP',
          sessionAffinityConfig: { clientIP: { timeoutSeconds: 60 } },
          ports: [
            { name: 'http', port: 80, nodePort: 30080 },
            { name: 'dns', port: 53, protocol: 'UDP' },
          ],
        },
        { loadBalancer: { ingress: [{ ip: '198.18.7.7' }, { ip: '198.18.7.8', ipMode: 'Proxy' }] } },
      ),
    ],
    [
      'dual-stack',
      whole({}, { ...basic, ipFamilies: ['IPv6', 'IPv4'], clusterIPs: ['2001:db8::a', '198.18.0.10'] }),
    ],
    ['claimed by another proxy', whole({ 'service.kubernetes.io/service-proxy-name': 'other' }, basic)],
    ['headless', whole({}, { ...basic, clusterIP: 'None' })],
  ];
  // What the reflector hands the tracker: the whole object on add, its remnant as an update's `old` and as a
  // relist's delete. Either way the tracker ends where the whole objects would take it.
  const withApplied = (s: Service) => {
    const tracker = new ServiceChangeTracker({ family: 'IPv4' });
    const live: ServicePortMap = new Map();
    tracker.update(undefined, s);
    tracker.checkout(live);
    return { tracker, live, applied: [...live.values()] };
  };
  for (const [what, s] of cases) {
    test(`${what}: a delete with the remnant removes exactly what the whole Service had put in`, () => {
      const { tracker, live, applied } = withApplied(s);
      tracker.update(serviceRemnant(s), undefined);
      const r = tracker.checkout(live);
      assert.equal(live.size, 0);
      assert.deepEqual(r.deletedServicePorts, applied);
      assert.deepEqual([...r.updatedServices], applied.length > 0 ? ['ns/svc'] : []);
    });
    test(`${what}: an update with the remnant as \`old\` goes where the whole objects go`, () => {
      const next = whole({}, { ...basic, ports: [{ name: 'http', port: 8080 }] });
      const byRemnant = withApplied(s);
      const byWhole = withApplied(s);
      byRemnant.tracker.update(serviceRemnant(s), next);
      byWhole.tracker.update(s, next);
      assert.deepEqual(byRemnant.tracker.checkout(byRemnant.live), byWhole.tracker.checkout(byWhole.live));
      assert.deepEqual([...byRemnant.live], [...byWhole.live]);
      assert.equal(byRemnant.live.size, 1);
    });
  }

  test('keeps the identity and resourceVersion only', () => {
    const s = cases[1]?.[1] as Service;
    assert.deepEqual(serviceRemnant(s), { metadata: { namespace: 'ns', name: 'svc', resourceVersion: '7' } });
  });
});
