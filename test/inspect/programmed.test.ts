// explain --programmed against real tables: a port's kernel objects are looked up in a namespace's live nftables
// or iptables tables, programmed from `render`'s output, then broken by hand.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { renderIptablesRestore } from '../../packages/agent/src/backends/iptables/render-cache.js';
import { DEFAULT_IPTABLES_EXTRAS } from '../../packages/agent/src/backends/iptables/render.js';
import { renderFullSyncTransaction } from '../../packages/agent/src/backends/nftables/backend.js';
import type { ProxyMode } from '../../packages/agent/src/config/proxy-mode.js';
import { explainNode } from '../../packages/agent/src/inspect/explain.js';
import { checkProgrammed, liveKernelReader } from '../../packages/agent/src/inspect/programmed.js';
import { netnsCommandRunner } from '../../packages/agent/src/netfilter/command.js';
import type { NodeNetworkConfig } from '../../packages/agent/src/sync/backend.js';
import { snapshotFromObjects } from '../../packages/agent/src/sync/snapshot.js';
import { kernelOptions, runPrefix } from '../helpers/kernel.js';
import { localNodeAddresses, planIpvs } from '../../packages/agent/src/backends/ipvs/plan.js';
import { renderIpvs } from '../../packages/agent/src/backends/ipvs/render.js';
import { IpvsServers } from '../../packages/agent/src/backends/ipvs/servers.js';
import { ipvsServiceText } from '../../packages/agent/src/inspect/ipvs-objects.js';
import { FakeIpvs } from '../../packages/agent/src/netfilter/ipvs/fake.js';
import { realServerKey, virtualServerKey } from '../../packages/agent/src/netfilter/ipvs/types.js';
import { SILENT_LOGGER } from '../../packages/agent/src/util/logger.js';
import { testNode } from '../helpers/model-values.js';

const options = kernelOptions(['ip', 'nft', 'iptables-restore', 'iptables', 'ipset']);
const prefix = runPrefix();
const ns = `${prefix}-explain`;

const SERVICE = {
  metadata: { namespace: 'demo', name: 'web' },
  spec: {
    type: 'NodePort',
    clusterIP: '198.18.100.10',
    ports: [{ name: 'http', port: 80, protocol: 'TCP', nodePort: 30080 }],
  },
};
const SLICE = {
  metadata: { namespace: 'demo', name: 'web-1', labels: { 'kubernetes.io/service-name': 'web' } },
  addressType: 'IPv4',
  ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
  endpoints: [
    { addresses: ['198.19.1.1'], nodeName: 'node-a' },
    { addresses: ['198.19.2.1'], nodeName: 'node-b' },
  ],
};

function nodeConfig(mode: ProxyMode): NodeNetworkConfig {
  return testNode({ nodePortAddresses: mode === 'nftables' ? ['198.18.0.2/32'] : [] });
}

function explained(mode: ProxyMode) {
  const { snapshot } = snapshotFromObjects({
    family: 'IPv4',
    nodeName: 'node-a',
    services: [SERVICE],
    endpointSlices: [SLICE],
  });
  const node = nodeConfig(mode);
  const port = explainNode({
    mode,
    node,
    iptables: DEFAULT_IPTABLES_EXTRAS,
    snapshot,
    service: 'demo/web',
  }).ports[0];
  assert.ok(port !== undefined);
  return { port, node, snapshot };
}

function inNs(cmd: string, args: string[], input?: string): string {
  return execFileSync('ip', ['netns', 'exec', ns, cmd, ...args], { encoding: 'utf8', input });
}

describe('explain --programmed', options, () => {
  before(() => {
    execFileSync('ip', ['netns', 'add', ns]);
  });
  after(() => {
    execFileSync('ip', ['netns', 'del', ns]);
  });
  const reader = () => liveKernelReader('IPv4', netnsCommandRunner(ns));

  test('nftables: every object present, then a deleted element missing and a changed chain different', async () => {
    const { port, node, snapshot } = explained('nftables');
    inNs('nft', ['-f', '-'], renderFullSyncTransaction(snapshot, node));
    const all = await checkProgrammed(port.objects, reader());
    assert.ok(all.length >= 5, `objects: ${all.map((o) => o.object).join('\n')}`);
    assert.deepEqual(
      all.filter((o) => o.state !== 'present'),
      [],
      'everything render wrote is found',
    );

    const element = port.objects.find((o) => o.check.kind === 'nft-element' && o.check.set === 'service-ips');
    assert.ok(element);
    inNs('nft', ['delete', 'element', 'ip', 'kube-proxy', 'service-ips', '{ 198.18.100.10 . tcp . 80 }']);
    const chain = port.objects.find(
      (o) => o.check.kind === 'nft-chain' && o.check.chain.startsWith('service-'),
    );
    assert.ok(chain && chain.check.kind === 'nft-chain');
    inNs('nft', ['add', 'rule', 'ip', 'kube-proxy', chain.check.chain, 'counter']);

    const after = await checkProgrammed(port.objects, reader());
    const changed = after.filter((o) => o.state !== 'present');
    assert.deepEqual(changed, [
      { object: element.object, state: 'missing' },
      { object: chain.object, state: 'different', difference: '2 rules, not 1' },
    ]);
    inNs('nft', ['delete', 'table', 'ip', 'kube-proxy']);
  });

  test('iptables: every chain and rule present, then a flushed rule missing and a changed chain different', async () => {
    const { port, node, snapshot } = explained('iptables');
    inNs('iptables-restore', ['--noflush'], renderIptablesRestore(snapshot, node, DEFAULT_IPTABLES_EXTRAS));
    const all = await checkProgrammed(port.objects, reader());
    assert.deepEqual(
      all.filter((o) => o.state !== 'present'),
      [],
      `everything render wrote is found: ${JSON.stringify(all, null, 1)}`,
    );

    const svcChain = port.objects.find(
      (o) => o.check.kind === 'iptables-chain' && o.check.chain.startsWith('KUBE-SVC-'),
    );
    assert.ok(svcChain && svcChain.check.kind === 'iptables-chain');
    const topRules = port.objects.filter(
      (o) => o.check.kind === 'iptables-rule' && o.check.chain === 'KUBE-SERVICES',
    );
    assert.equal(topRules.length, 1, 'one ClusterIP rule in nat KUBE-SERVICES');
    inNs('iptables', ['-t', 'nat', '-F', 'KUBE-SERVICES']);
    inNs('iptables', ['-t', 'nat', '-D', svcChain.check.chain, '1']);

    const changed = (await checkProgrammed(port.objects, reader())).filter((o) => o.state !== 'present');
    assert.deepEqual(
      changed.map((o) => [o.object.split('\n')[0], o.state]),
      [
        [topRules[0]?.object, 'missing'],
        [`:${svcChain.check.chain} - [0:0]`, 'different'],
      ],
    );
    assert.match(changed[1]?.difference ?? '', /^2 rules, not 3$/);
  });

  test('ipvs: virtual servers and ipset entries present, then a real server gone and an entry missing', async () => {
    const { port, node, snapshot } = explained('ipvs');
    // The sets as a node holds them, in the namespace's real ipset; IPVS (which this kernel lacks) as FakeIpvs
    // holds what the backend's server code applied for the same plan.
    const text = renderIpvs(snapshot, node, { randomFully: false });
    inNs('ipset', ['restore', '-exist'], text.slice(text.indexOf('# ipsets'), text.indexOf('# IPVS')));
    const ipvs = new FakeIpvs();
    const plan = planIpvs(snapshot, node, { scheduler: 'rr', nodeAddresses: localNodeAddresses(node) });
    new IpvsServers(ipvs, {
      family: 'IPv4',
      excluded: () => false,
      now: () => 0,
      logger: SILENT_LOGGER,
    }).apply(plan, true);
    const kernel = { ...reader(), ipvsVirtualServers: () => Promise.resolve(fakeServers(ipvs)) };
    const all = await checkProgrammed(port.objects, kernel);
    assert.ok(
      all.some((o) => o.object.startsWith('-A -t 198.18.100.10:80 -s rr')),
      JSON.stringify(all, null, 1),
    );
    assert.deepEqual(
      all.filter((o) => o.state !== 'present'),
      [],
    );

    const vip = {
      address: '198.18.100.10',
      port: 80,
      protocol: 'TCP' as const,
      scheduler: 'rr',
      flags: 0,
      timeout: 0,
    };
    assert.ok(ipvs.deleteRealServer(vip, { address: '198.19.2.1', port: 8080, weight: 1 }).ok);
    inNs('ipset', ['del', 'KUBE-CLUSTER-IP', '198.18.100.10,tcp:80']);
    const changed = (await checkProgrammed(port.objects, kernel)).filter((o) => o.state !== 'present');
    assert.deepEqual(
      changed.map((o) => [o.object.split('\n')[0], o.state, o.difference]),
      [
        ['-A -t 198.18.100.10:80 -s rr', 'different', 'real servers 198.19.1.1:8080 w1'],
        ['add KUBE-CLUSTER-IP 198.18.100.10,tcp:80', 'missing', undefined],
      ],
    );
    inNs('ipset', ['destroy']);
  });
});

/** FakeIpvs's servers as the kernel reader gives them. */
function fakeServers(ipvs: FakeIpvs): Map<string, { service: string; realServers: string[] }> {
  const out = new Map<string, { service: string; realServers: string[] }>();
  const listed = ipvs.listVirtualServers();
  assert.ok(listed.ok);
  for (const vs of listed.value) {
    const real = ipvs.listRealServers(vs);
    assert.ok(real.ok);
    out.set(virtualServerKey(vs), {
      service: ipvsServiceText(vs),
      realServers: real.value.map((rs) => `${realServerKey(rs)} w${rs.weight}`).sort(),
    });
  }
  return out;
}
