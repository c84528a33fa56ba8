import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { EndpointSlice, Service } from '../../../packages/agent/src/api/objects.js';
import { ClusterRecords } from '../../../packages/lab/src/dns/records.js';
import { RCODE, RR_TYPE, type ResourceRecord } from '../../../packages/lab/src/dns/wire.js';

function service(name: string, ns: string, spec: Service['spec']): Service {
  return { metadata: { name, namespace: ns, resourceVersion: '1' }, spec };
}

function slice(
  svc: string,
  ns: string,
  name: string,
  endpoints: EndpointSlice['endpoints'],
  addressType = 'IPv4',
): EndpointSlice {
  return {
    metadata: { name, namespace: ns, resourceVersion: '1', labels: { 'kubernetes.io/service-name': svc } },
    addressType,
    endpoints,
    ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
  };
}

const web = service('web', 'svc', {
  clusterIP: '198.19.0.2',
  clusterIPs: ['198.19.0.2'],
  ports: [
    { name: 'http', port: 80, protocol: 'TCP' },
    { port: 81, protocol: 'TCP' },
  ],
});
const headless = service('db', 'svc', { clusterIP: 'None', ports: [{ name: 'http', port: 80 }] });
const dbSlice = slice('db', 'svc', 'db-abc', [
  { addresses: ['198.18.10.5'], conditions: { ready: true }, hostname: 'db-0' },
  { addresses: ['198.18.11.6'], conditions: {} },
  { addresses: ['198.18.11.7'], conditions: { ready: false } },
]);

function data(records: readonly ResourceRecord[]): unknown[] {
  return records.map((r) => r.data).sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
}

function addresses(r: ClusterRecords, name: string, type: number = RR_TYPE.A): string[] {
  return r
    .lookup(name, type)
    .answers.flatMap((a) => (a.data.kind === 'A' || a.data.kind === 'AAAA' ? [a.data.address] : []))
    .sort();
}

describe('cluster DNS records', () => {
  test('a ClusterIP Service: A is its ClusterIP, AAAA is NODATA, case does not matter, the asker’s case comes back', () => {
    const r = new ClusterRecords();
    r.setService(web);
    const a = r.lookup('Web.SVC.svc.cluster.local.', RR_TYPE.A);
    assert.equal(a.rcode, RCODE.NOERROR);
    assert.equal(a.authoritative, true);
    assert.deepEqual(data(a.answers), [{ kind: 'A', address: '198.19.0.2' }]);
    assert.equal(a.answers[0]?.name, 'Web.SVC.svc.cluster.local');
    assert.equal(a.answers[0]?.ttl, 5);
    const aaaa = r.lookup('web.svc.svc.cluster.local', RR_TYPE.AAAA);
    assert.equal(aaaa.rcode, RCODE.NOERROR);
    assert.deepEqual(aaaa.answers, []);
    assert.equal(aaaa.authority[0]?.data.kind, 'SOA');
  });

  test('unknown names in the zone are NXDOMAIN; their ancestors exist (NODATA); other zones are REFUSED', () => {
    const r = new ClusterRecords();
    r.setService(web);
    for (const name of [
      'nope.svc.svc.cluster.local',
      'web.other.svc.cluster.local',
      'x.web.svc.svc.cluster.local',
    ])
      assert.equal(r.lookup(name, RR_TYPE.A).rcode, RCODE.NXDOMAIN, name);
    for (const name of ['svc.svc.cluster.local', 'svc.cluster.local', 'cluster.local']) {
      const res = r.lookup(name, RR_TYPE.A);
      assert.equal(res.rcode, RCODE.NOERROR, name);
      assert.deepEqual(res.answers, [], name);
    }
    const outside = r.lookup('example.org', RR_TYPE.A);
    assert.equal(outside.rcode, RCODE.REFUSED);
    assert.equal(outside.authoritative, false);
    // `web.svc` alone is what a search path tries last, as an absolute name: not ours.
    assert.equal(r.lookup('web.svc', RR_TYPE.A).rcode, RCODE.REFUSED);
    assert.equal(r.lookup('cluster.local', RR_TYPE.SOA).answers[0]?.data.kind, 'SOA');
  });

  test('dual-stack ClusterIPs answer by family', () => {
    const r = new ClusterRecords();
    r.setService(
      service('ds', 'svc', { clusterIP: '198.19.0.9', clusterIPs: ['198.19.0.9', '2001:db8:1::9'] }),
    );
    assert.deepEqual(addresses(r, 'ds.svc.svc.cluster.local'), ['198.19.0.9']);
    assert.deepEqual(addresses(r, 'ds.svc.svc.cluster.local', RR_TYPE.AAAA), ['2001:db8:1::9']);
  });

  test('a headless Service resolves to its ready endpoints, and each endpoint by hostname or dashed address', () => {
    const r = new ClusterRecords();
    r.setService(headless);
    assert.equal(r.lookup('db.svc.svc.cluster.local', RR_TYPE.A).rcode, RCODE.NOERROR);
    assert.deepEqual(addresses(r, 'db.svc.svc.cluster.local'), []);
    r.setSlice(dbSlice);
    assert.deepEqual(addresses(r, 'db.svc.svc.cluster.local'), ['198.18.10.5', '198.18.11.6']);
    assert.deepEqual(addresses(r, 'db-0.db.svc.svc.cluster.local'), ['198.18.10.5']);
    assert.deepEqual(addresses(r, '198-18-11-6.db.svc.svc.cluster.local'), ['198.18.11.6']);
    assert.equal(r.lookup('198-18-11-7.db.svc.svc.cluster.local', RR_TYPE.A).rcode, RCODE.NXDOMAIN);
    r.setService(service('db', 'svc', { clusterIP: 'None', publishNotReadyAddresses: true }));
    assert.deepEqual(addresses(r, 'db.svc.svc.cluster.local'), ['198.18.10.5', '198.18.11.6', '198.18.11.7']);
  });

  test('changes show in the next answer: a slice’s update and deletion, a Service’s deletion', () => {
    const r = new ClusterRecords();
    r.setService(headless);
    r.setSlice(dbSlice);
    r.setSlice(slice('db', 'svc', 'db-abc', [{ addresses: ['198.18.12.9'] }]));
    assert.deepEqual(addresses(r, 'db.svc.svc.cluster.local'), ['198.18.12.9']);
    r.deleteSlice(dbSlice);
    assert.deepEqual(addresses(r, 'db.svc.svc.cluster.local'), []);
    r.setService(web);
    assert.deepEqual(addresses(r, 'web.svc.svc.cluster.local'), ['198.19.0.2']);
    const soaBefore = r.lookup('cluster.local', RR_TYPE.SOA).answers[0]?.data;
    r.deleteService(web);
    assert.equal(r.lookup('web.svc.svc.cluster.local', RR_TYPE.A).rcode, RCODE.NXDOMAIN);
    const soaAfter = r.lookup('cluster.local', RR_TYPE.SOA).answers[0]?.data;
    assert.ok(soaBefore?.kind === 'SOA' && soaAfter?.kind === 'SOA' && soaAfter.serial > soaBefore.serial);
  });

  test('SRV for named ports: the Service for a ClusterIP, each ready endpoint for a headless one, with addresses', () => {
    const r = new ClusterRecords();
    r.setService(web);
    r.setService(headless);
    r.setSlice(dbSlice);
    const srv = r.lookup('_http._tcp.web.svc.svc.cluster.local', RR_TYPE.SRV);
    assert.deepEqual(data(srv.answers), [
      { kind: 'SRV', priority: 0, weight: 100, port: 80, target: 'web.svc.svc.cluster.local' },
    ]);
    assert.deepEqual(data(srv.additional), [{ kind: 'A', address: '198.19.0.2' }]);
    const hs = r.lookup('_http._tcp.db.svc.svc.cluster.local', RR_TYPE.SRV);
    assert.deepEqual(
      hs.answers
        .map((a) => (a.data.kind === 'SRV' ? `${a.data.target}:${a.data.port}/${a.data.weight}` : ''))
        .sort(),
      ['198-18-11-6.db.svc.svc.cluster.local:8080/50', 'db-0.db.svc.svc.cluster.local:8080/50'],
    );
    assert.equal(hs.additional.length, 2);
    // An unnamed port has no SRV record.
    assert.equal(r.lookup('_81._tcp.web.svc.svc.cluster.local', RR_TYPE.SRV).rcode, RCODE.NXDOMAIN);
  });

  test('ExternalName is a CNAME; pods resolve by dashed address', () => {
    const r = new ClusterRecords();
    r.setService(service('ext', 'svc', { type: 'ExternalName', externalName: 'db.example.org' }));
    r.setService(
      service('alias', 'svc', { type: 'ExternalName', externalName: 'web.svc.svc.cluster.local' }),
    );
    r.setService(web);
    assert.deepEqual(data(r.lookup('ext.svc.svc.cluster.local', RR_TYPE.A).answers), [
      { kind: 'CNAME', target: 'db.example.org' },
    ]);
    // A CNAME inside the zone is followed.
    assert.deepEqual(data(r.lookup('alias.svc.svc.cluster.local', RR_TYPE.A).answers), [
      { kind: 'A', address: '198.19.0.2' },
      { kind: 'CNAME', target: 'web.svc.svc.cluster.local' },
    ]);
    assert.deepEqual(addresses(r, '198-18-10-5.svc.pod.cluster.local'), ['198.18.10.5']);
    assert.deepEqual(addresses(r, '2001-db8--5.svc.pod.cluster.local', RR_TYPE.AAAA), ['2001:db8::5']);
    assert.equal(r.lookup('not-an-ip.svc.pod.cluster.local', RR_TYPE.A).rcode, RCODE.NXDOMAIN);
  });
});
