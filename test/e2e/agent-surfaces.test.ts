// Surfaces an operator scripts against, on a real agent in a node namespace: /configz in upstream's shape,
// per-Service health-check ports bound where upstream binds them (the node IPs nodePortAddresses admits), and
// route_localnet set when iptables mode serves localhost NodePorts, and iptables mode's nfacct counters made, used
// by the rules and exported; nftables mode's drop of unallocated ClusterIPs from the cluster's ServiceCIDR objects.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { kernelOptions } from '../helpers/kernel.js';
import { AgentLab } from './helpers/agent-lab.js';
import { NODE_IP, NODE_NAME, PATHS, sliceObject } from './helpers/agent-objects.js';
import { inNs } from './helpers/agent-table.js';

const KERNEL = kernelOptions(['ip', 'nft', 'iptables', 'curl', 'ss']);
const KERNEL_NFACCT = kernelOptions(['ip', 'iptables', 'iptables-save', 'curl', 'nfacct']);

/** A /proc/sys value as the node's network namespace sees it. */
async function nodeSysctl(lab: AgentLab, path: string): Promise<string> {
  return (await inNs(lab.node, 'cat', [`/proc/sys/${path}`])).stdout.trim();
}

/** A LoadBalancer Service with externalTrafficPolicy Local: it gets a health-check node port. */
function localLoadBalancer(healthCheckNodePort: number) {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'lb', namespace: 'default' },
    spec: {
      type: 'LoadBalancer',
      clusterIP: '198.19.0.30',
      clusterIPs: ['198.19.0.30'],
      ipFamilies: ['IPv4'],
      externalTrafficPolicy: 'Local',
      healthCheckNodePort,
      ports: [{ name: 'http', port: 80, protocol: 'TCP', targetPort: 8080, nodePort: 30090 }],
    },
  };
}

describe('agent surfaces', () => {
  test(
    '/configz is upstream’s object; the health-check port listens on the node IP, not 0.0.0.0',
    KERNEL,
    async () => {
      await AgentLab.with(async (lab) => {
        lab.put(PATHS.services, localLoadBalancer(32123));
        const slice = sliceObject({
          service: 'lb',
          addresses: ['198.18.10.2'],
          ports: [{ name: 'http', port: 8080 }],
        });
        const endpoints = (slice as unknown as { endpoints: Record<string, unknown>[] }).endpoints;
        for (const e of endpoints) e.nodeName = NODE_NAME;
        lab.put(PATHS.endpointSlices, slice);
        const proxy = lab.startProxy(lab.flags('--v=2'));
        const listening = async (): Promise<string[]> => {
          const r = await inNs(lab.node, 'ss', ['-ltnH']);
          return r.stdout
            .split('\n')
            .map((l) => l.trim().split(/\s+/)[3] ?? '')
            .filter((a) => a.endsWith(':32123'));
        };
        await proxy.waitUntil(async () => (await listening()).length > 0, 'the health-check port listening');
        assert.deepEqual(
          await listening(),
          [`${NODE_IP}:32123`],
          'bound on the node IP that nodePortAddresses (primary) admits',
        );
        const health = await lab.get(`http://${NODE_IP}:32123/`);
        assert.equal(health.status, 200, health.body);
        assert.match(health.body, /"localEndpoints": ?1/);

        const configz = await lab.get('http://127.0.0.1:10249/configz');
        assert.equal(configz.status, 200);
        const doc = JSON.parse(configz.body) as Record<string, Record<string, unknown>>;
        const kp = doc['kubeproxy.config.k8s.io'];
        assert.ok(kp, configz.body);
        assert.equal(kp.Mode, 'nftables');
        assert.equal(kp.HostnameOverride, NODE_NAME);
        assert.deepEqual((kp.NFTables as Record<string, unknown>).SyncPeriod, '30s');
        assert.equal('syncPeriodMs' in kp, false);
        assert.equal(doc['kube-proxy-ts']?.nftablesLayout, 'upstream');
        // The agent runs inside the node's namespace, so auto takes libnftables in its own process, and set
        // elements over nf_tables netlink.
        assert.equal(doc['kube-proxy-ts']?.nftExecutor, 'auto');
        assert.equal(doc['kube-proxy-ts']?.nftExecutorInUse, 'library', configz.body);
        assert.match(String(doc['kube-proxy-ts']?.nftExecutorReason), /nf_tables netlink/, configz.body);
      });
    },
  );

  test(
    'iptables mode with localhost NodePorts sets route_localnet in the node’s namespace',
    KERNEL,
    async () => {
      await AgentLab.with(async (lab) => {
        const routeLocalnet = (): Promise<string> => nodeSysctl(lab, 'net/ipv4/conf/all/route_localnet');
        assert.equal(await routeLocalnet(), '0', 'a fresh namespace starts without it');
        const proxy = lab.startProxy(lab.flags('--proxy-mode', 'iptables'));
        await proxy.waitUntil(async () => (await routeLocalnet()) === '1', 'route_localnet = 1');
      });
    },
  );

  test(
    'iptables mode makes its nfacct counters, counts into them and exports them',
    KERNEL_NFACCT,
    async () => {
      await AgentLab.with(async (lab) => {
        const proxy = lab.startProxy(lab.flags('--proxy-mode', 'iptables'));
        const save = async (): Promise<string> =>
          (await inNs(lab.node, 'iptables-save', ['-t', 'filter'])).stdout;
        await proxy.waitUntil(async () => /KUBE-FORWARD/.test(await save()), 'iptables rules programmed');
        const list = (await inNs(lab.node, 'nfacct', ['list'])).stdout;
        assert.match(list, /= ct_state_invalid_dropped_pkts;/);
        assert.match(list, /= localhost_nps_accepted_pkts;/);
        assert.match(
          await save(),
          /-A KUBE-FORWARD -m conntrack --ctstate INVALID -m nfacct --nfacct-name +ct_state_invalid_dropped_pkts -j DROP/,
        );
        const metrics = await lab.get('http://127.0.0.1:10249/metrics');
        assert.match(metrics.body, /^kubeproxy_iptables_ct_state_invalid_dropped_packets_total \d+$/m);
        assert.match(metrics.body, /^kubeproxy_iptables_localhost_nodeports_accepted_packets_total \d+$/m);
      });
    },
  );

  test(
    'nftables mode drops unallocated ClusterIPs of the ServiceCIDR objects, and follows their changes',
    KERNEL,
    async () => {
      await AgentLab.with(async (lab) => {
        const path = '/apis/networking.k8s.io/v1/servicecidrs';
        const serviceCIDR = (cidrs: string[]) => ({
          apiVersion: 'networking.k8s.io/v1',
          kind: 'ServiceCIDR',
          metadata: { name: 'kubernetes' },
          spec: { cidrs },
        });
        lab.put(path, serviceCIDR(['198.19.0.0/16', '2001:db8:ff::/108']));
        const proxy = lab.startProxy(lab.flags());
        const checkChain = async (): Promise<string> =>
          (await inNs(lab.node, 'nft', ['list', 'chain', 'ip', 'kube-proxy', 'cluster-ips-check'])).stdout;
        await proxy.waitUntil(
          // nft lists a one-element set as the bare prefix.
          async () => /ip daddr 198\.19\.0\.0\/16 drop/.test(await checkChain().catch(() => '')),
          'the drop of unallocated ClusterIPs in 198.19.0.0/16',
        );
        // A second range is added: the next (full) sync rewrites the rule with both.
        lab.put(path, serviceCIDR(['198.19.0.0/16', '198.18.128.0/20']));
        await proxy.waitUntil(
          async () => /ip daddr \{ 198\.18\.128\.0\/20, 198\.19\.0\.0\/16 \} drop/.test(await checkChain()),
          'the rule rewritten with both ranges',
        );
      });
    },
  );

  test(
    'each conntrack sysctl is applied on its own, also when maxPerCore and the TCP timeouts are 0',
    KERNEL,
    async () => {
      await AgentLab.with(async (lab) => {
        // nf_conntrack_udp_timeout is per network namespace: the node's own, never the host's.
        const udpTimeout = (): Promise<string> => nodeSysctl(lab, 'net/netfilter/nf_conntrack_udp_timeout');
        assert.notEqual(await udpTimeout(), '47');
        // lab.flags() carries --conntrack-max-per-core=0 and zero TCP timeouts (host-global otherwise).
        const proxy = lab.startProxy(lab.flags('--conntrack-udp-timeout=47s'));
        await proxy.waitUntil(async () => (await udpTimeout()) === '47', 'nf_conntrack_udp_timeout = 47');
      });
    },
  );
});
