// The lab's address plan per `lab up --ip-family`: which addresses nodes, pods, the client and Services get, that
// they stay in 198.18.0.0/15 and 2001:db8::/32, that the state file records the family for down/exec/status, and
// the network commands a dual-stack lab issues (addresses of both families, IPv6 forwarding, no DAD wait).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import type {
  CommandOptions,
  CommandResult,
  CommandRunner,
} from '../../../packages/agent/src/netfilter/command.js';
import { cidrContains } from '../../../packages/agent/src/model/ip.js';
import {
  clientIPs,
  clusterCIDRs,
  labLayout,
  labPaths,
  serviceCIDRs,
  type LabIPFamily,
} from '../../../packages/lab/src/cluster/layout.js';
import { attachPod, buildLabNetwork, podIPsOf } from '../../../packages/lab/src/cluster/network.js';
import { labProxyConfiguration } from '../../../packages/lab/src/cluster/proxy-config.js';
import {
  layoutOf,
  readLabState,
  writeLabState,
  type LabState,
} from '../../../packages/lab/src/cluster/state.js';
import { labState } from './fixtures.js';

const V4 = '198.18.0.0/15';
const V6 = '2001:db8::/32';

/** Every address of a layout: nodes' underlay IPs and bridge addresses, the client's. */
function addressesOf(family: LabIPFamily): string[] {
  const layout = labLayout(3, 'kptstest', family);
  return [
    ...clientIPs(layout),
    ...layout.nodes.flatMap((n) => n.families.flatMap((f) => [f.ip, f.gatewayIP])),
  ];
}

describe('lab layout per IP family', () => {
  test('ipv4 (the default) is the plan the lab always had', () => {
    const layout = labLayout(2, 'kptstest');
    assert.equal(layout.ipFamily, 'ipv4');
    assert.deepEqual(
      layout.nodes.map((n) => [n.ip, n.podCIDR, n.gatewayIP]),
      [
        ['198.18.0.10', '198.18.10.0/24', '198.18.10.1'],
        ['198.18.0.11', '198.18.11.0/24', '198.18.11.1'],
      ],
    );
    assert.deepEqual(
      layout.nodes.map((n) => n.families.map((f) => f.family)),
      [[4], [4]],
    );
    assert.deepEqual(clusterCIDRs(layout), ['198.18.8.0/21']);
    assert.deepEqual(serviceCIDRs(layout), ['198.19.0.0/16']);
    assert.deepEqual(clientIPs(layout), ['198.18.1.10']);
    for (const ip of addressesOf('ipv4')) assert.ok(cidrContains(V4, ip), ip);
  });

  test('ipv6: every address and range is IPv6, inside 2001:db8::/32', () => {
    const layout = labLayout(2, 'kptstest', 'ipv6');
    assert.deepEqual(
      layout.nodes.map((n) => [n.ip, n.podCIDR, n.gatewayIP]),
      [
        ['2001:db8::10', '2001:db8:10::/64', '2001:db8:10::1'],
        ['2001:db8::11', '2001:db8:11::/64', '2001:db8:11::1'],
      ],
    );
    assert.deepEqual(clusterCIDRs(layout), ['2001:db8:10::/44']);
    assert.deepEqual(serviceCIDRs(layout), ['2001:db8:ff::/112']);
    assert.deepEqual(clientIPs(layout), ['2001:db8:1::10']);
    for (const ip of addressesOf('ipv6')) assert.ok(cidrContains(V6, ip), ip);
    for (const c of [...clusterCIDRs(layout), ...serviceCIDRs(layout)])
      assert.ok(c.startsWith('2001:db8:'), c);
  });

  test('dual: IPv4 primary, then IPv6, for nodes, ranges and the client', () => {
    const layout = labLayout(3, 'kptstest', 'dual');
    for (const n of layout.nodes) {
      assert.deepEqual(
        n.families.map((f) => f.family),
        [4, 6],
        n.name,
      );
      assert.equal(n.ip, n.families[0]?.ip, 'the primary family is IPv4');
      const [v4, v6] = n.families;
      assert.ok(v4 && v6);
      assert.ok(cidrContains(v4.podCIDR, v4.gatewayIP) && cidrContains(v6.podCIDR, v6.gatewayIP));
      assert.ok(cidrContains(clusterCIDRs(layout)[0] ?? '', v4.podCIDR.split('/')[0] ?? ''));
      assert.ok(cidrContains(clusterCIDRs(layout)[1] ?? '', v6.podCIDR.split('/')[0] ?? ''));
    }
    assert.deepEqual(clusterCIDRs(layout), ['198.18.8.0/21', '2001:db8:10::/44']);
    assert.deepEqual(serviceCIDRs(layout), ['198.19.0.0/16', '2001:db8:ff::/112']);
    const all = addressesOf('dual');
    for (const ip of all) assert.ok(cidrContains(V4, ip) || cidrContains(V6, ip), ip);
    assert.equal(new Set(all).size, all.length, 'no address used twice');
    // Node, client and service addresses never fall in a pod range (the local-traffic detector would misfire).
    for (const n of layout.nodes)
      for (const f of n.families)
        for (const c of clusterCIDRs(layout)) assert.ok(!cidrContains(c, f.ip), `${f.ip} outside ${c}`);
  });

  test("the proxies' configuration: clusterCIDR of every family; health checks on [::] once IPv6 is there", () => {
    const config = (family: LabIPFamily): Record<string, unknown> =>
      parse(
        labProxyConfiguration('nftables', { clusterCIDRs: clusterCIDRs(labLayout(2, 'kptstest', family)) }),
      ) as Record<string, unknown>;
    assert.equal(config('ipv4').clusterCIDR, '198.18.8.0/21');
    assert.equal(config('ipv4').healthzBindAddress, '0.0.0.0:10256');
    assert.equal(config('dual').clusterCIDR, '198.18.8.0/21,2001:db8:10::/44');
    assert.equal(config('dual').healthzBindAddress, '[::]:10256');
    assert.equal(config('ipv6').clusterCIDR, '2001:db8:10::/44');
    assert.equal(
      labProxyConfiguration('nftables'),
      labProxyConfiguration('nftables', { clusterCIDRs: ['198.18.8.0/21'] }),
    );
  });
});

describe('lab state records the family', () => {
  const base: LabState = labState('kptstest');
  const dir = mkdtempSync(join(tmpdir(), 'kpts-layout-'));

  test('round trip; down, exec and status rebuild the same layout from it', () => {
    const path = join(dir, 'state.json');
    writeLabState(path, { ...base, ipFamily: 'dual' });
    const read = readLabState(path);
    assert.ok(read.ok);
    assert.equal(read.state.ipFamily, 'dual');
    assert.deepEqual(layoutOf(read.state), labLayout(2, 'kptstest', 'dual'));
  });

  test('a record from before the flag is an IPv4 lab; an unknown family is refused by name', () => {
    assert.deepEqual(layoutOf(base), labLayout(2, 'kptstest', 'ipv4'));
    const path = join(dir, 'bad.json');
    writeLabState(path, { ...base, ipFamily: 'ipv5' as LabIPFamily });
    const read = readLabState(path);
    assert.ok(!read.ok);
    assert.match(read.reason, /fields missing or of the wrong type: ipFamily/);
  });
});

/** Keeps every command; `sysctl -n` answers "1" (br_netfilter is on). */
function recordingRunner(): CommandRunner & { lines: string[] } {
  const lines: string[] = [];
  return {
    lines,
    run(cmd: string, args: readonly string[], _options?: CommandOptions): Promise<CommandResult> {
      lines.push([cmd, ...args].join(' '));
      const stdout =
        cmd === 'ip' && args.join(' ') === '-json netns list' ? '[]' : args.includes('-n') ? '1\n' : '';
      return Promise.resolve({ code: 0, stdout, stderr: '' });
    },
  };
}

describe('a dual-stack lab network', () => {
  const layout = labLayout(2, 'kptstest', 'dual');

  test('nodes get both underlay addresses, bridge addresses, routes, and IPv6 forwarding', async () => {
    const runner = recordingRunner();
    await buildLabNetwork(runner, layout);
    const has = (re: RegExp): void =>
      assert.ok(
        runner.lines.some((l) => re.test(l)),
        `${String(re)} among:\n${runner.lines.join('\n')}`,
      );
    has(/^ip -n kptstest-control-plane address add 198\.18\.0\.10\/24 dev eth0$/);
    // nodad: without it the address stays tentative (unusable) while the kernel runs duplicate detection.
    has(/^ip -n kptstest-control-plane address add 2001:db8::10\/64 dev eth0 nodad$/);
    has(/^ip -n kptstest-control-plane address add 2001:db8:10::1\/64 dev cbr0 nodad$/);
    has(/kptstest-control-plane .*net\.ipv6\.conf\.all\.forwarding=1/);
    has(/kptstest-control-plane .*net\.ipv4\.ip_forward=1/);
    has(/^ip -6 -n kptstest-control-plane route add 2001:db8:11::\/64 via 2001:db8::11$/);
    has(/^ip -6 -n kptstest-control-plane route add default via 2001:db8::1$/);
    has(/^ip -n kptstest-client address add 2001:db8:1::10\/64 dev eth0 nodad$/);
  });

  test('a pod gets an address and a default route per family of status.podIPs', async () => {
    const runner = recordingRunner();
    const node = layout.nodes[1];
    assert.ok(node);
    const pod = {
      metadata: { name: 'p' },
      status: { podIP: '198.18.11.5', podIPs: [{ ip: '198.18.11.5' }, { ip: '2001:db8:11::5' }] },
    };
    assert.deepEqual(podIPsOf(pod), ['198.18.11.5', '2001:db8:11::5']);
    assert.deepEqual(podIPsOf({ metadata: {}, status: { podIP: '198.18.11.6' } }), ['198.18.11.6']);
    await attachPod(runner, { namespace: 'kptstest-default-p', node, veth: 'veth0', ips: podIPsOf(pod) });
    const text = runner.lines.join('\n');
    assert.match(text, /address add 198\.18\.11\.5\/24 dev eth0/);
    assert.match(text, /address add 2001:db8:11::5\/64 dev eth0 nodad/);
    assert.match(text, /route add default via 198\.18\.11\.1/);
    assert.match(text, /route add default via 2001:db8:11::1/);
  });
});

test('a relative state directory gives absolute paths (containers run in working directories of their own)', () => {
  const paths = labPaths('relative-state');
  assert.equal(paths.stateDir, join(process.cwd(), 'relative-state'));
  assert.equal(paths.kubeconfig, join(process.cwd(), 'relative-state', 'kubeconfig'));
  assert.equal(
    paths.nodeKubeconfig('worker'),
    join(process.cwd(), 'relative-state', 'nodes', 'worker', 'kubeconfig'),
  );
});
