// Cluster DNS in a real lab (startLab, two nodes, nftables mode): Deployment kube-system/coredns behind Service
// kube-dns at the service range's .10, its queries carried through the proxies like any Service's. From a pod
// created before the Services it asks for: `curl http://x.NS/` and `curl http://x.NS.svc.cluster.local/` reach
// x's pods (the name found through the pod's resolv.conf search path, not a hosts file), a query to the
// nameserver of the pod's /etc/resolv.conf answers over UDP and TCP, a headless Service resolves to its ready
// endpoints, and a Service made now resolves at once. Expected values come from the objects (ClusterIPs and pod IPs
// read back with kubectl), never from the DNS server's own view. One lab suite at a time (labTurn).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startLab, type Lab } from '../../packages/lab/src/cluster/index.js';
import { etcNetnsDir, podNamespaceName } from '../../packages/lab/src/cluster/layout.js';
import { podServerDeployment } from '../../packages/lab/src/cluster/workload.js';
import { kernelOptions } from '../helpers/kernel.js';
import { httpTally, kubectlFor, run, sorted, waitFor } from './helpers.js';
import { endLabSuite, labTurn, newLabPlace } from './helpers/lab-turn.js';

const gate = kernelOptions(['ip', 'nft', 'curl', 'kubectl']);
const NS = 'dnstest';

/**
 * Asks the nameserver of the namespace's /etc/resolv.conf (what `ip netns exec` binds there) for NAME, with Node's
 * resolver (UDP; c-ares), or over TCP by hand: prints {server, addresses} or {server, error}, or for TCP
 * {server, rcode, answers}.
 */
const ASK = String.raw`
const fs = require('node:fs');
const net = require('node:net');
const { Resolver } = require('node:dns').promises;
const [name, type] = process.argv.slice(1);
const server = /^nameserver\s+(\S+)/m.exec(fs.readFileSync('/etc/resolv.conf', 'utf8'))[1];
const out = (o) => console.log(JSON.stringify({ server, ...o }));
if (type === 'TCP') {
  const q = Buffer.concat([
    Buffer.from([0, 9, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0]),
    ...name.split('.').map((l) => Buffer.concat([Buffer.from([l.length]), Buffer.from(l)])),
    Buffer.from([0, 0, 1, 0, 1]),
  ]);
  const len = Buffer.alloc(2);
  len.writeUInt16BE(q.length);
  const s = net.connect(53, server, () => s.write(Buffer.concat([len, q])));
  let got = Buffer.alloc(0);
  s.setTimeout(5000, () => { out({ error: 'timeout' }); s.destroy(); });
  s.on('data', (b) => {
    got = Buffer.concat([got, b]);
    if (got.length < 2 || got.length < 2 + got.readUInt16BE(0)) return;
    out({ rcode: got.readUInt16BE(4) & 0xf, answers: got.readUInt16BE(8) });
    s.destroy();
  });
  s.on('error', (e) => out({ error: e.code }));
} else {
  const r = new Resolver({ timeout: 2000, tries: 2 });
  r.setServers([server]);
  (type === 'AAAA' ? r.resolve6(name) : r.resolve4(name)).then(
    (a) => out({ addresses: a.sort() }),
    (e) => out({ error: e.code }),
  );
}
`;

interface Asked {
  readonly server: string;
  readonly addresses?: string[];
  readonly error?: string;
  readonly rcode?: number;
  readonly answers?: number;
}

describe('lab: cluster DNS', { skip: gate.skip, timeout: 1_200_000 }, () => {
  const { prefix, stateDir } = newLabPlace();
  let lab: Lab | undefined;
  let releaseTurn: () => void = () => undefined;
  const k = (): ReturnType<typeof kubectlFor> => kubectlFor(lab?.kubeconfigPath ?? '');
  const clientNs = (): string => podNamespaceName(prefix, NS, 'client');
  const ask = async (name: string, type: 'A' | 'AAAA' | 'TCP' = 'A'): Promise<Asked> => {
    const r = await run('ip', ['netns', 'exec', clientNs(), process.execPath, '-e', ASK, name, type]);
    if (r.code !== 0) throw new Error(`asking for ${name}: exit ${r.code}: ${r.stderr}`);
    return JSON.parse(r.stdout.trim().split('\n').pop() ?? '') as Asked;
  };
  const create = (objects: readonly object[]): Promise<string> => k().create(objects);
  const clusterIP = async (svc: string): Promise<string> =>
    (await k().run(['-n', NS, 'get', 'svc', svc, '-o', 'jsonpath={.spec.clusterIP}'])).trim();
  const podIPs = async (app: string): Promise<string[]> =>
    sorted(
      (
        await k().run([
          '-n',
          NS,
          'get',
          'pods',
          '-l',
          `app=${app}`,
          '-o',
          'jsonpath={.items[*].status.podIP}',
        ])
      )
        .trim()
        .split(/\s+/)
        .filter((s) => s !== ''),
    );
  const service = (name: string, spec: object): object => ({
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, namespace: NS },
    spec: { selector: { app: 'x' }, ports: [{ name: 'http', port: 80, targetPort: 'http' }], ...spec },
  });

  before(
    async () => {
      releaseTurn = await labTurn();
      lab = await startLab({ nodes: 2, mode: 'nftables', stateDir, prefix, workload: false, web: false });
      // The client pod first: it must find Services made after it, so its names cannot come from its files.
      await create([
        { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } },
        {
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { name: 'client', namespace: NS },
          spec: { containers: [{ name: 'pod-server', image: 'kube-proxy-ts/pod-server' }] },
        },
      ]);
      await k().run(['-n', NS, 'wait', '--for=condition=Ready', 'pod/client', '--timeout=90s']);
      await create([podServerDeployment('x', NS, 2), service('x', {}), service('h', { clusterIP: 'None' })]);
      await k().run(['-n', NS, 'rollout', 'status', 'deployment/x', '--timeout=90s']);
    },
    { timeout: 10 * 60_000 },
  );

  after(() => endLabSuite(lab, { stateDir, prefix }, releaseTurn));

  test('kube-dns is Service kube-system/kube-dns at the .10 with ports dns and dns-tcp, backed by ready coredns pods', async () => {
    const svc = (await k().json(['-n', 'kube-system', 'get', 'svc', 'kube-dns'])) as {
      spec: {
        clusterIP: string;
        selector: Record<string, string>;
        ports: { name: string; protocol: string }[];
      };
    };
    assert.equal(svc.spec.clusterIP, '198.19.0.10');
    assert.deepEqual(svc.spec.selector, { 'k8s-app': 'kube-dns' });
    assert.deepEqual(
      svc.spec.ports.map((p) => `${p.name}/${p.protocol}`),
      ['dns/UDP', 'dns-tcp/TCP'],
    );
    const ready = await k().run([
      '-n',
      'kube-system',
      'get',
      'deploy',
      'coredns',
      '-o',
      'jsonpath={.status.readyReplicas}',
    ]);
    assert.ok(Number(ready) >= 1, `coredns ready replicas: ${ready}`);
  });

  test('the pod’s resolv.conf is the kubelet’s for ClusterFirst; its hosts file names no Service', () => {
    const dir = etcNetnsDir(clientNs());
    assert.equal(
      readFileSync(join(dir, 'resolv.conf'), 'utf8'),
      `search ${NS}.svc.cluster.local svc.cluster.local cluster.local\nnameserver 198.19.0.10\noptions ndots:5\n`,
    );
    const hosts = readFileSync(join(dir, 'hosts'), 'utf8');
    assert.doesNotMatch(hosts, /\bx\.dnstest\b|svc\.cluster\.local/);
  });

  test('curl http://x.NS/ and http://x.NS.svc.cluster.local/ from the pod reach x’s pods through DNS', async () => {
    const pods = sorted(
      (await k().run(['-n', NS, 'get', 'pods', '-l', 'app=x', '-o', 'jsonpath={.items[*].metadata.name}']))
        .trim()
        .split(/\s+/),
    );
    // The rollout is done when the pods are ready; the proxies program their endpoints a sync later.
    await waitFor('x answers by name', 30_000, async () =>
      (await httpTally(clientNs(), `http://x.${NS}/`, 1)).failures === 0 ? true : undefined,
    );
    for (const url of [`http://x.${NS}/`, `http://x.${NS}.svc.cluster.local/`]) {
      const tally = await httpTally(clientNs(), url, 6);
      assert.equal(tally.failures, 0, `${url}: every request answered`);
      for (const p of tally.pods.keys()) assert.ok(pods.includes(p), `${url}: ${p} is one of x's pods`);
    }
  });

  test('the nameserver in resolv.conf answers: A, NODATA for AAAA, NXDOMAIN, and over TCP', async () => {
    const ip = await clusterIP('x');
    const a = await ask(`x.${NS}.svc.cluster.local`);
    assert.equal(a.server, '198.19.0.10');
    assert.deepEqual(a.addresses, [ip]);
    assert.deepEqual(await ask(`X.${NS.toUpperCase()}.svc.cluster.local`), a, 'names are case-insensitive');
    assert.equal((await ask(`x.${NS}.svc.cluster.local`, 'AAAA')).error, 'ENODATA');
    assert.equal((await ask(`nope.${NS}.svc.cluster.local`)).error, 'ENOTFOUND');
    const tcp = await ask(`x.${NS}.svc.cluster.local`, 'TCP');
    assert.deepEqual([tcp.rcode, tcp.answers], [0, 1]);
  });

  test('a headless Service resolves to its ready endpoints’ addresses', async () => {
    const ips = await podIPs('x');
    assert.equal(ips.length, 2);
    const got = await waitFor('h resolves to both of x’s pods', 30_000, async () => {
      const r = await ask(`h.${NS}.svc.cluster.local`);
      return JSON.stringify(r.addresses) === JSON.stringify(ips) ? r : undefined;
    });
    assert.deepEqual(got.addresses, ips);
  });

  test('a Service made now resolves right away, and its deletion is NXDOMAIN', async () => {
    await create([service('fresh', {})]);
    const ip = await clusterIP('fresh');
    const asked = Date.now();
    const got = await waitFor('fresh resolves', 10_000, async () => {
      const r = await ask(`fresh.${NS}.svc.cluster.local`);
      return r.addresses?.[0] === ip ? r : undefined;
    });
    assert.deepEqual(got.addresses, [ip]);
    console.log(`# fresh resolved ${Date.now() - asked} ms after kubectl create returned`);
    await k().run(['-n', NS, 'delete', 'svc', 'fresh']);
    await waitFor('fresh gone', 10_000, async () =>
      (await ask(`fresh.${NS}.svc.cluster.local`)).error === 'ENOTFOUND' ? true : undefined,
    );
  });
});
