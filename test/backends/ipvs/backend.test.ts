// IpvsBackend against its tools' fakes (FakeIpvs, FakeIPSet, FakeIptables, the `ip` fake): what a first sync lays
// down, that later syncs program only the difference, graceful termination of TCP real servers, that a full sync
// repairs what was changed behind the backend's back and leaves excluded virtual servers alone.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { IpvsBackend } from '../../../packages/agent/src/backends/ipvs/backend.js';
import { FakeIpvs } from '../../../packages/agent/src/netfilter/ipvs/fake.js';
import { virtualServerKey } from '../../../packages/agent/src/netfilter/ipvs/types.js';
import type { VirtualServer } from '../../../packages/agent/src/netfilter/ipvs/types.js';
import { FakeClock } from '../../../packages/agent/src/util/clock.js';
import { NO_PROXY_METRICS } from '../../../packages/agent/src/sync/metrics.js';
import { ModelCluster } from '../../helpers/model-cluster.js';
import { testNode } from '../../helpers/model-values.js';
import { dnsPort, endpointSlice, httpPort, service } from '../../dataplane/harness/objects.js';
import type { SliceEndpoint } from '../../dataplane/harness/objects.js';
import { FakeIpvsNode } from '../../../packages/agent/src/backends/ipvs/fake-node.js';

const NODE = testNode({
  nodeIPs: ['198.18.0.2'],
  hostInterfaces: new Map([
    ['eth0', ['198.18.0.2/24']],
    ['lo', ['127.0.0.1/8']],
  ]),
});

const WEB = service({ name: 'web', clusterIP: '198.19.1.10', ports: [httpPort({ nodePort: 30080 })] });
const pod = (ip: string, nodeName = 'node-b'): SliceEndpoint => ({ ip, nodeName, podName: `p-${ip}` });

function setup(excludeCIDRs: string[] = []) {
  const tools = new FakeIpvsNode();
  const ipvs = new FakeIpvs();
  const backend = new IpvsBackend({
    node: NODE,
    commands: tools,
    clock: new FakeClock(),
    ipvs,
    ipvsOptions: { scheduler: '', excludeCIDRs, randomFully: false },
  });
  const cluster = new ModelCluster('IPv4', 'node-a');
  return { tools, ipvs, backend, cluster };
}

function servers(ipvs: FakeIpvs): Record<string, string[]> {
  const listed = ipvs.listVirtualServers();
  assert.ok(listed.ok);
  const out: Record<string, string[]> = {};
  for (const vs of listed.value) {
    const real = ipvs.listRealServers(vs);
    assert.ok(real.ok);
    out[`${virtualServerKey(vs)} ${vs.scheduler}`] = real.value
      .map((r) => `${r.address}:${r.port} w${r.weight}`)
      .sort();
  }
  return out;
}

function setEntries(tools: FakeIpvsNode, name: string): string[] {
  return [...(tools.ipset.state().get(name)?.entries ?? [])].sort();
}

describe('IpvsBackend', () => {
  test('a first sync lays down virtual servers, kube-ipvs0, the sets and the iptables glue', async () => {
    const { tools, ipvs, backend, cluster } = setup();
    cluster.upsertService(WEB);
    cluster.upsertSlice(endpointSlice(WEB, [pod('198.19.8.2'), pod('198.19.8.3')]));
    const r = await cluster.sync(backend);
    assert.equal(r.full, true);
    assert.deepEqual(servers(ipvs), {
      'TCP/198.19.1.10:80 rr': ['198.19.8.2:8080 w1', '198.19.8.3:8080 w1'],
      'TCP/198.18.0.2:30080 rr': ['198.19.8.2:8080 w1', '198.19.8.3:8080 w1'],
    });
    assert.deepEqual(tools.ip.links.get('kube-ipvs0'), ['198.19.1.10/32']);
    assert.deepEqual(setEntries(tools, 'KUBE-CLUSTER-IP'), ['198.19.1.10,tcp:80']);
    assert.deepEqual(setEntries(tools, 'KUBE-NODE-PORT-TCP'), ['30080']);
    assert.deepEqual(setEntries(tools, 'KUBE-IPVS-IPS'), ['198.19.1.10']);
    const nat = tools.iptables.dump('IPv4', 'nat');
    assert.match(nat, /-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES/);
    assert.match(nat, /-A KUBE-NODE-PORT -p tcp .*--match-set KUBE-NODE-PORT-TCP dst -j KUBE-MARK-MASQ/);
    const filter = tools.iptables.dump('IPv4', 'filter');
    assert.match(filter, /-A INPUT -m comment --comment "kubernetes ipvs access filter" -j KUBE-IPVS-FILTER/);
  });

  test('a later sync changes only what changed', async () => {
    const { tools, ipvs, backend, cluster } = setup();
    cluster.upsertService(WEB);
    cluster.upsertSlice(endpointSlice(WEB, [pod('198.19.8.2')]));
    await cluster.sync(backend);
    const before = ipvs.calls.length;
    cluster.upsertSlice(endpointSlice(WEB, [pod('198.19.8.2'), pod('198.19.8.4')]));
    const r = await cluster.sync(backend);
    assert.equal(r.full, false);
    const asked = ipvs.calls.slice(before);
    assert.deepEqual(
      asked.filter((c) => !c.startsWith('list')),
      [
        'add real server 198.19.8.4:8080 (weight 1) to TCP/198.19.1.10:80',
        'add real server 198.19.8.4:8080 (weight 1) to TCP/198.18.0.2:30080',
      ],
    );
    const third = ipvs.calls.length;
    const restores = tools.iptables.restores.length;
    await cluster.sync(backend);
    assert.deepEqual(
      ipvs.calls.slice(third).filter((c) => !c.startsWith('list')),
      [],
      'nothing changed',
    );
    assert.equal(tools.iptables.restores.length, restores, 'the same rules are not restored again');
  });

  test('a removed Service leaves nothing of its own', async () => {
    const { tools, ipvs, backend, cluster } = setup();
    cluster.upsertService(WEB);
    cluster.upsertSlice(endpointSlice(WEB, [pod('198.19.8.2')]));
    await cluster.sync(backend);
    cluster.deleteService('dataplane/web');
    await cluster.sync(backend);
    assert.deepEqual(servers(ipvs), {});
    assert.deepEqual(tools.ip.links.get('kube-ipvs0'), []);
    assert.deepEqual(setEntries(tools, 'KUBE-CLUSTER-IP'), []);
    assert.deepEqual(setEntries(tools, 'KUBE-IPVS-IPS'), []);
  });

  test('a full sync repairs the kernel and leaves excluded virtual servers alone', async () => {
    const { ipvs, backend, cluster } = setup(['203.0.113.0/24']);
    const foreign: VirtualServer = {
      address: '203.0.113.7',
      port: 443,
      protocol: 'TCP',
      scheduler: 'rr',
      flags: 0,
      timeout: 0,
    };
    const stray: VirtualServer = { ...foreign, address: '198.19.99.9' };
    assert.ok(ipvs.addVirtualServer(foreign).ok);
    assert.ok(ipvs.addVirtualServer(stray).ok);
    cluster.upsertService(WEB);
    cluster.upsertSlice(endpointSlice(WEB, [pod('198.19.8.2')]));
    await cluster.sync(backend);
    const keys = Object.keys(servers(ipvs)).sort();
    assert.deepEqual(keys, ['TCP/198.18.0.2:30080 rr', 'TCP/198.19.1.10:80 rr', 'TCP/203.0.113.7:443 rr']);
    // Someone deletes a virtual server: a partial sync trusts what it applied; a full one reads the kernel.
    assert.ok(ipvs.deleteVirtualServer({ ...foreign, address: '198.19.1.10', port: 80 }).ok);
    await cluster.sync(backend);
    assert.equal(servers(ipvs)['TCP/198.19.1.10:80 rr'], undefined);
    backend.requestFullSync();
    const r = await cluster.sync(backend);
    assert.equal(r.full, true);
    assert.deepEqual(servers(ipvs)['TCP/198.19.1.10:80 rr'], ['198.19.8.2:8080 w1']);
  });

  test('a TCP real server that leaves drains at weight 0 until its connections end; UDP ones go at once', async () => {
    const { ipvs, backend, cluster } = setup();
    const dns = service({ name: 'dns', clusterIP: '198.19.1.53', ports: [dnsPort()] });
    cluster.upsertService(WEB);
    cluster.upsertService(dns);
    cluster.upsertSlice(endpointSlice(WEB, [pod('198.19.8.2'), pod('198.19.8.3')]));
    cluster.upsertSlice(endpointSlice(dns, [pod('198.19.8.2'), pod('198.19.8.3')]));
    await cluster.sync(backend);
    const vip = {
      address: '198.19.1.10',
      port: 80,
      protocol: 'TCP' as const,
      scheduler: 'rr',
      flags: 0,
      timeout: 0,
    };
    assert.ok(ipvs.setConnections(vip, { address: '198.19.8.3', port: 8080 }, 2, 1));
    cluster.upsertSlice(endpointSlice(WEB, [pod('198.19.8.2')]));
    cluster.upsertSlice(endpointSlice(dns, [pod('198.19.8.2')]));
    await cluster.sync(backend);
    const now = servers(ipvs);
    assert.deepEqual(now['TCP/198.19.1.10:80 rr'], ['198.19.8.2:8080 w1', '198.19.8.3:8080 w0'], 'draining');
    assert.deepEqual(
      now['TCP/198.18.0.2:30080 rr'],
      ['198.19.8.2:8080 w1'],
      'no connections: removed at once',
    );
    assert.deepEqual(now['UDP/198.19.1.53:53 rr'], ['198.19.8.2:5353 w1'], 'UDP: removed at once');
    // The connections end: the next sync, whatever it is for, removes the drained server.
    assert.ok(ipvs.setConnections(vip, { address: '198.19.8.3', port: 8080 }, 0, 0));
    await cluster.sync(backend);
    assert.deepEqual(servers(ipvs)['TCP/198.19.1.10:80 rr'], ['198.19.8.2:8080 w1']);
  });

  test('an endpoint that comes back while draining gets its weight back', async () => {
    const { ipvs, backend, cluster } = setup();
    cluster.upsertService(WEB);
    cluster.upsertSlice(endpointSlice(WEB, [pod('198.19.8.2'), pod('198.19.8.3')]));
    await cluster.sync(backend);
    const vip = {
      address: '198.19.1.10',
      port: 80,
      protocol: 'TCP' as const,
      scheduler: 'rr',
      flags: 0,
      timeout: 0,
    };
    assert.ok(ipvs.setConnections(vip, { address: '198.19.8.3', port: 8080 }, 1, 0));
    cluster.upsertSlice(endpointSlice(WEB, [pod('198.19.8.2')]));
    await cluster.sync(backend);
    assert.deepEqual(servers(ipvs)['TCP/198.19.1.10:80 rr'], ['198.19.8.2:8080 w1', '198.19.8.3:8080 w0']);
    cluster.upsertSlice(endpointSlice(WEB, [pod('198.19.8.2'), pod('198.19.8.3')]));
    await cluster.sync(backend);
    assert.deepEqual(servers(ipvs)['TCP/198.19.1.10:80 rr'], ['198.19.8.2:8080 w1', '198.19.8.3:8080 w1']);
  });

  test('a sync that fails says what failed and makes the next one full', async () => {
    const { ipvs, backend, cluster } = setup();
    cluster.upsertService(WEB);
    cluster.upsertSlice(endpointSlice(WEB, [pod('198.19.8.2')]));
    await cluster.sync(backend);
    ipvs.close();
    cluster.upsertSlice(endpointSlice(WEB, [pod('198.19.8.5')]));
    await assert.rejects(cluster.sync(backend), (e: Error & { full?: boolean }) => {
      assert.match(e.message, /^ipvs sync failed: .*the IPVS handle is closed/);
      return true;
    });
  });

  test('each iptables-restore reports its xtables lock wait, as iptables mode does; an unchanged glue none', async () => {
    const clock = new FakeClock();
    const tools = new FakeIpvsNode({ backend: 'legacy', clock });
    const lockWaits: number[] = [];
    const backend = new IpvsBackend({
      node: NODE,
      commands: tools,
      clock,
      ipvs: new FakeIpvs(),
      ipvsOptions: { scheduler: '', excludeCIDRs: [], randomFully: false },
      metrics: { ...NO_PROXY_METRICS, iptablesLockWait: (_f, s) => void lockWaits.push(s) },
    });
    const cluster = new ModelCluster('IPv4', 'node-a');
    cluster.upsertService(WEB);
    cluster.upsertSlice(endpointSlice(WEB, [pod('198.19.8.2')]));
    tools.iptables.holdLock(1500);
    await cluster.sync(backend);
    assert.deepEqual(lockWaits, [1.5], 'the first sync restores the glue, after the holder let go');
    // A new endpoint changes servers and sets, not the glue rules: no restore, so no lock taken and none reported.
    cluster.upsertSlice(endpointSlice(WEB, [pod('198.19.8.2'), pod('198.19.8.3')]));
    tools.iptables.holdLock(800);
    await cluster.sync(backend);
    assert.deepEqual(lockWaits, [1.5]);
    // A full sync restores again, and waits again.
    backend.requestFullSync();
    await cluster.sync(backend);
    assert.deepEqual(lockWaits, [1.5, 0.8]);
  });
});
