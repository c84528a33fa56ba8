// The node agent as an operator runs it: `kube-proxy-ts --kubeconfig F --hostname-override NODE --proxy-mode
// nftables` (and the same from a --config file) in a network namespace, against an API server the test controls.
// It programs what it is shown, follows adds, updates and deletes, serves upstream's metrics on 127.0.0.1:10249
// and upstream's /healthz on :10256, and leaves its rules in place on SIGTERM.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { kernelOptions } from '../helpers/kernel.js';
import { AgentLab, kubeProxyConfiguration } from './helpers/agent-lab.js';
import { parseExposition, samplesOf, valueOf } from './helpers/agent-metrics.js';
import { CLUSTER_CIDR, PATHS, webService } from './helpers/agent-objects.js';
import type { AgentProcess } from './helpers/agent-process.js';
import type { CanonicalTable } from './helpers/agent-table.js';
import { until } from './helpers/agent-wait.js';

const KERNEL = kernelOptions(['ip', 'nft', 'curl']);

// upstream-backends.md §1: service chains are "service-<8 base32 chars>-<namespace>/<name>/<protocol>/<port name>".
const SERVICE_CHAIN = (ns: string, name: string, port: string): RegExp =>
  new RegExp(`^service-[A-Z2-7]{8}-${ns}/${name}/tcp/${port}$`);

function serviceChain(table: CanonicalTable, ns: string, name: string, port: string): string | undefined {
  return Object.keys(table.chains).find((c) => SERVICE_CHAIN(ns, name, port).test(c));
}

/** The service-ips map's entries for one ClusterIP as "ip . proto . port → verdict target". */
function serviceIPEntries(table: CanonicalTable, ip: string): string[] {
  const map = table.containers['map service-ips'];
  return (map?.elements ?? []).filter((e) => e.includes(`"${ip}"`));
}

/** The endpoint addresses a service chain's rules DNAT to. */
function dnatTargets(table: CanonicalTable, chain: string): string[] {
  const rules = table.chains[chain]?.rules ?? [];
  return [...rules.join('\n').matchAll(/198\.18\.10\.\d+/g)].map((m) => m[0]).sort();
}

async function waitForTable(
  lab: AgentLab,
  proxy: AgentProcess,
  check: (t: CanonicalTable) => boolean,
  what: string,
): Promise<CanonicalTable> {
  let table: CanonicalTable | undefined;
  await until(
    async () => {
      if (!proxy.running) throw new Error(`proxy exited: ${JSON.stringify(proxy.exit)}\n${proxy.tail()}`);
      table = await lab.table();
      return table !== undefined && check(table);
    },
    what,
    60_000,
    () => proxy.tail(20),
  );
  return table as CanonicalTable;
}

describe('kube-proxy-ts as the node agent', () => {
  test(
    'flags: programs Services, follows add/update/delete, serves metrics and healthz, keeps rules on SIGTERM',
    KERNEL,
    async () => {
      await AgentLab.with(async (lab) => {
        const web = webService('web', '198.19.0.10', ['198.18.10.2', '198.18.10.3'], 30080);
        lab.putService(web);
        const proxy = lab.startProxy(lab.flags());

        // Shown one Service: its ClusterIP goes to its service chain, which DNATs to both endpoints.
        let table = await waitForTable(
          lab,
          proxy,
          (t) => serviceIPEntries(t, '198.19.0.10').length > 0,
          'web in service-ips',
        );
        const webChain = serviceChain(table, 'default', 'web', 'http');
        assert.ok(webChain, `no service chain for default/web in ${Object.keys(table.chains).join(', ')}`);
        assert.deepEqual(serviceIPEntries(table, '198.19.0.10'), [
          JSON.stringify([{ concat: ['198.19.0.10', 'tcp', 80] }, { goto: { target: webChain } }]),
        ]);
        assert.deepEqual(dnatTargets(table, webChain), ['198.18.10.2', '198.18.10.3']);
        await lab.expectRules(proxy);

        // Add a second Service.
        const api = webService('api', '198.19.0.20', ['198.18.10.7']);
        lab.putService(api);
        table = await waitForTable(
          lab,
          proxy,
          (t) => serviceIPEntries(t, '198.19.0.20').length > 0,
          'api in service-ips',
        );
        const apiChain = serviceChain(table, 'default', 'api', 'http');
        assert.ok(apiChain);
        assert.deepEqual(dnatTargets(table, apiChain), ['198.18.10.7']);
        await lab.expectRules(proxy);

        // Update: web gains an endpoint and loses one.
        const web2 = webService('web', '198.19.0.10', ['198.18.10.3', '198.18.10.4', '198.18.10.5'], 30080);
        lab.put(PATHS.endpointSlices, web2.slice);
        table = await waitForTable(
          lab,
          proxy,
          (t) => dnatTargets(t, webChain).join() === '198.18.10.3,198.18.10.4,198.18.10.5',
          'web to DNAT to its three new endpoints',
        );
        await lab.expectRules(proxy);

        // Delete api: its ClusterIP leaves service-ips.
        lab.remove(PATHS.endpointSlices, api.slice);
        lab.remove(PATHS.services, api.service);
        await waitForTable(
          lab,
          proxy,
          (t) => serviceIPEntries(t, '198.19.0.20').length === 0,
          'api gone from service-ips',
        );
        await lab.expectRules(proxy);

        // Metrics: upstream's names, types and labels.
        const m = await lab.get('http://127.0.0.1:10249/metrics');
        assert.equal(m.status, 200);
        const e = parseExposition(m.body);
        const H = 'kubeproxy_sync_proxy_rules_duration_seconds';
        assert.equal(e.types.get(H), 'histogram');
        // 0.001 × 2ⁿ, 15 buckets (upstream-model.md §6), then +Inf.
        const bounds = samplesOf(e, `${H}_bucket`, { ip_family: 'IPv4' }).map((s) =>
          s.labels.le === '+Inf' ? Infinity : Number(s.labels.le),
        );
        assert.deepEqual(bounds, [...Array.from({ length: 15 }, (_, n) => 0.001 * 2 ** n), Infinity]);
        const syncs = valueOf(e, `${H}_count`, { ip_family: 'IPv4' });
        assert.ok(syncs >= 4, `expected at least 4 syncs, histogram counted ${syncs}`);
        assert.equal(e.types.get('kubeproxy_sync_proxy_rules_endpoint_changes_total'), 'counter');
        assert.equal(e.types.get('kubeproxy_sync_proxy_rules_service_changes_total'), 'counter');
        // Every event counts (upstream-model.md §10.6). Slices: web listed, api added, web updated, api deleted.
        // Services: web listed, api added, api deleted.
        assert.equal(valueOf(e, 'kubeproxy_sync_proxy_rules_endpoint_changes_total'), 4);
        assert.equal(valueOf(e, 'kubeproxy_sync_proxy_rules_service_changes_total'), 3);
        assert.equal(valueOf(e, 'kubeproxy_sync_proxy_rules_endpoint_changes_pending'), 0);
        assert.equal(e.types.get('kubeproxy_sync_proxy_rules_last_timestamp_seconds'), 'gauge');
        const last = valueOf(e, 'kubeproxy_sync_proxy_rules_last_timestamp_seconds', { ip_family: 'IPv4' });
        assert.ok(
          Math.abs(last - Date.now() / 1000) < 300,
          `last_timestamp ${last} is not a recent Unix time`,
        );
        assert.equal(e.types.get('kubeproxy_sync_proxy_rules_nftables_sync_failures_total'), 'counter');

        const mode = await lab.get('http://127.0.0.1:10249/proxyMode');
        assert.deepEqual(mode, { status: 200, body: 'nftables' });

        // /healthz: 200 with upstream's body, field for field and in order.
        const h = await lab.get('http://127.0.0.1:10256/healthz');
        assert.equal(h.status, 200, h.body);
        const body = JSON.parse(h.body) as Record<string, unknown>;
        assert.deepEqual(Object.keys(body), [
          'lastUpdated',
          'currentTime',
          'nodeEligible',
          'healthy',
          'status',
        ]);
        const rfc3339 = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/;
        assert.match(String(body.lastUpdated), rfc3339);
        assert.match(String(body.currentTime), rfc3339);
        assert.equal(body.nodeEligible, true);
        assert.equal(body.healthy, true);
        const status = body.status as Record<string, Record<string, unknown>>;
        assert.deepEqual(Object.keys(status), ['IPv4']);
        assert.deepEqual(Object.keys(status.IPv4 ?? {}), ['lastUpdated', 'healthy']);
        const after = parseExposition((await lab.get('http://127.0.0.1:10249/metrics')).body);
        assert.ok(valueOf(after, 'kubeproxy_proxy_healthz_total', { code: '200' }) >= 1);

        // SIGTERM: a clean exit that leaves the rules in place (upstream tears nothing down on shutdown).
        const before = await lab.table();
        const exit = await proxy.kill('SIGTERM');
        assert.deepEqual(exit, { code: 0, signal: null }, proxy.tail());
        assert.deepEqual(await lab.table(), before);
      });
    },
  );

  test(
    '--config FILE with mode nftables: programs, answers /proxyMode, exits when the file changes',
    KERNEL,
    async () => {
      await AgentLab.with(async (lab) => {
        const web = webService('web', '198.19.0.30', ['198.18.10.9']);
        lab.putService(web);
        const config = kubeProxyConfiguration(lab.kubeconfig, [
          'mode: nftables',
          `clusterCIDR: ${CLUSTER_CIDR}`,
        ]);
        const path = lab.file('kube-proxy.yaml', config);
        const proxy = lab.startProxy(['--config', path]);
        await waitForTable(
          lab,
          proxy,
          (t) => serviceIPEntries(t, '198.19.0.30').length > 0,
          'web in service-ips',
        );
        await lab.expectRules(proxy);
        assert.deepEqual(await lab.get('http://127.0.0.1:10249/proxyMode'), {
          status: 200,
          body: 'nftables',
        });

        // Upstream exits on any write to the --config file, to be restarted with the new one by its DaemonSet.
        lab.file('kube-proxy.yaml', `${config}# touched\n`);
        assert.deepEqual(await proxy.exitWithin(30_000), { code: 1, signal: null }, proxy.tail());
        assert.ok(
          proxy.matching((r) => /configuration file .* changed/.test(r.msg)).length === 1,
          proxy.tail(),
        );
      });
    },
  );
});
