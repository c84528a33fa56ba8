// `trace` on a real kernel: the dataplane harness's nodes (namespaces) with a real backend's rules, our trace
// table added in a node, real packets from a pod or the client, and the path read back from `nft monitor trace`.
// Each case asserts what the trace says (Service port by frontend, endpoint, masquerade, reject, drop) and that
// the trace table is gone afterwards. Expected values come from the objects the test programs, not from output.
import { spawn } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { sweepNamespaces } from '../../packages/netns/src/namespace.js';
import { hostCommandRunner, netnsStreamRunner } from '../../packages/agent/src/netfilter/command.js';
import { inNamespace } from '../../packages/netns/src/exec.js';
import { runTrace } from '../../packages/agent/src/inspect/trace/session.js';
import type { TraceReport } from '../../packages/agent/src/inspect/trace/session.js';
import {
  TRACE_TABLE,
  installTraceTable,
  traceTablePresent,
} from '../../packages/agent/src/inspect/trace/table.js';
import { parseTraceTarget } from '../../packages/agent/src/inspect/trace/target.js';
import type { TraceTarget } from '../../packages/agent/src/inspect/trace/target.js';
import type { RequestOutcome } from './harness/traffic.js';
import { kernelOptions, runPrefix } from '../helpers/kernel.js';
import { makeTestCluster } from './harness/cluster.js';
import type { TestCluster } from './harness/cluster.js';
import { endpointSlice, httpPort, service } from './harness/objects.js';
import type { DataplaneBackend } from './harness/backends.js';
import type { Service } from '../../packages/agent/src/api/objects.js';
import { servicePortsOf } from '../../packages/agent/src/cli/cluster-objects.js';
import { frontendsFromServicePorts } from '../../packages/agent/src/inspect/trace/frontends.js';
import type { FrontendIndex } from '../../packages/agent/src/inspect/trace/frontends.js';
import { AGENT_MAIN, SOURCE_FLAGS } from '../helpers/cli.js';

/** `kube-proxy-ts trace ARGS` as a user runs it inside a node's namespace. */
function traceProcess(
  ns: string,
  args: readonly string[],
): {
  readonly started: Promise<void>;
  readonly exited: Promise<{ code: number | null; stdout: string; stderr: string }>;
  interrupt(): void;
} {
  const child = spawn(
    'ip',
    ['netns', 'exec', ns, process.execPath, ...SOURCE_FLAGS, AGENT_MAIN, 'trace', ...args],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let stdout = '';
  let stderr = '';
  let onStart: () => void = () => {};
  const started = new Promise<void>((resolve) => (onStart = resolve));
  child.stdout.on('data', (b: Buffer) => (stdout += b.toString('utf8')));
  child.stderr.on('data', (b: Buffer) => {
    stderr += b.toString('utf8');
    if (stderr.includes('send traffic now')) onStart();
  });
  const exited = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    child.on('close', (code) => {
      onStart();
      resolve({ code, stdout, stderr });
    }),
  );
  return { started, exited, interrupt: () => void child.kill('SIGINT') };
}

function target(to: string, from?: string): TraceTarget {
  const t = parseTraceTarget(to, from);
  if (!t.ok) throw new Error(t.reason);
  return t.target;
}

for (const mode of ['nftables', 'nftables-flat', 'iptables'] as const satisfies readonly DataplaneBackend[]) {
  describe(
    `trace (${mode}): one packet through a node's rules`,
    { ...kernelOptions(['ip', 'nft', 'iptables']), timeout: 240_000 },
    () => {
      const prefix = runPrefix();
      let c: TestCluster;
      const services: Service[] = [];
      const traceMode = mode === 'iptables' ? 'iptables' : 'nftables';

      before(async () => {
        c = await makeTestCluster({ mode, prefix, nodes: 2, podsPerNode: 1, families: ['IPv4', 'IPv6'] });
        const [p0, p1] = c.pods;
        assert.ok(p0 && p1);
        const web = service({ name: 'web', clusterIP: '198.19.0.10', ports: [httpPort()] });
        const web6 = service({ name: 'web6', clusterIP: '2001:db8:ff::10', ports: [httpPort()] });
        const empty = service({ name: 'empty', clusterIP: '198.19.0.11', ports: [httpPort()] });
        const local = service({
          name: 'local',
          clusterIP: '198.19.0.12',
          ports: [httpPort({ nodePort: 30080 })],
          externalTrafficPolicy: 'Local',
        });
        services.push(web, empty, local, web6);
        await c.apply({
          services: [web, empty, local, web6],
          slices: [
            endpointSlice(web, [c.endpoint(p1.name, 'IPv4')]),
            endpointSlice(web6, [c.endpoint(p1.name, 'IPv6')]),
            endpointSlice(local, [c.endpoint(p0.name, 'IPv4')]),
          ],
        });
      });

      after(async () => {
        try {
          await c?.cleanup();
        } finally {
          await sweepNamespaces(hostCommandRunner, prefix + '-');
        }
      });

      /** Traces on `node` while `send` runs once the monitor listens. */
      const traceOn = async (
        node: string,
        t: TraceTarget,
        send: () => Promise<RequestOutcome[]>,
        timeoutMs = 15_000,
        clusterFrontends?: FrontendIndex,
      ): Promise<{ report: TraceReport; sent: RequestOutcome[] }> => {
        const ns = c.node(node).namespace;
        let sent: RequestOutcome[] = [];
        const report = await runTrace({
          target: t,
          mode: traceMode,
          runner: inNamespace(hostCommandRunner, ns),
          streams: netnsStreamRunner(ns),
          count: 1,
          timeoutMs,
          ...(clusterFrontends ? { clusterFrontends } : {}),
          onReady: async () => {
            sent = await send();
          },
        });
        assert.equal(
          await traceTablePresent(inNamespace(hostCommandRunner, ns)),
          false,
          `the trace table ${TRACE_TABLE} is gone from ${node}`,
        );
        return { report, sent };
      };

      test('a pod to a ClusterIP Service: the frontend match and the endpoint chosen', async () => {
        const p0 = c.pods[0]!;
        const p1 = c.pods[1]!;
        const { report, sent } = await traceOn('node-0', target('198.19.0.10:80/tcp'), () =>
          c.http(p0.namespace, '198.19.0.10', 80),
        );
        assert.equal(sent[0]?.ok, true, 'the request was answered');
        assert.equal(report.ended, 'count');
        const [pkt] = report.packets;
        assert.ok(pkt, `one packet traced: ${JSON.stringify(report)}`);
        assert.equal(pkt.outcome, 'sent-to-endpoint', pkt.why.join('; '));
        // The flat layout's table does not name a ClusterIP frontend's Service (no per-service chain, no element
        // comment in service-ips): trace gives the frontend and the endpoint only.
        if (mode !== 'nftables-flat') assert.equal(pkt.servicePort, 'dataplane/web:http');
        assert.equal(pkt.frontend, '198.19.0.10:80/tcp');
        assert.equal(pkt.endpoint, `${p1.ip}:8080`);
        assert.equal(pkt.masqueraded, false, 'pod-to-Service traffic keeps the pod address');
        if (mode === 'iptables')
          assert.ok(
            pkt.path.some(
              (step) =>
                step.text.includes('-A KUBE-SERVICES') &&
                step.text.includes('--comment "dataplane/web:http cluster IP"'),
            ),
            'iptables mode reads xtables-monitor --trace: the rules in iptables words, with their comments',
          );
        if (mode === 'nftables-flat') {
          // With the cluster's Services (trace -f / --kubeconfig) the frontend is named all the same.
          const named = await traceOn(
            'node-0',
            target('198.19.0.10:80/tcp'),
            () => c.http(p0.namespace, '198.19.0.10', 80),
            15_000,
            frontendsFromServicePorts(servicePortsOf({ services, endpointSlices: [] }, 'IPv4')),
          );
          assert.equal(named.report.packets[0]?.servicePort, 'dataplane/web:http');
        }
        assert.ok(pkt.path.length > 0);
      });

      test('IPv6: a pod to a ClusterIP Service, the endpoint chosen', async () => {
        const p0 = c.pods[0]!;
        const p1 = c.pods[1]!;
        const { report, sent } = await traceOn('node-0', target('[2001:db8:ff::10]:80/tcp'), () =>
          c.http(p0.namespace, '2001:db8:ff::10', 80),
        );
        assert.equal(
          sent[0]?.ok,
          true,
          `${JSON.stringify(sent)} ${JSON.stringify(report.packets.map((p) => p.why))}`,
        );
        const [pkt] = report.packets;
        assert.ok(pkt, JSON.stringify(report));
        assert.equal(pkt.outcome, 'sent-to-endpoint', pkt.why.join('; '));
        if (mode !== 'nftables-flat') assert.equal(pkt.servicePort, 'dataplane/web6:http');
        assert.equal(pkt.frontend, '[2001:db8:ff::10]:80/tcp');
        assert.equal(pkt.endpoint, `[${p1.ip6}]:8080`);
      });

      test('a Service with no endpoints: the reject, and which Service it was', async () => {
        const p0 = c.pods[0]!;
        const { report, sent } = await traceOn('node-0', target('198.19.0.11:80/tcp'), () =>
          c.http(p0.namespace, '198.19.0.11', 80, { timeoutMs: 2000 }),
        );
        assert.equal(sent[0]?.ok, false);
        const [pkt] = report.packets;
        assert.ok(pkt, JSON.stringify(report));
        assert.equal(pkt.outcome, 'rejected', pkt.why.join('; '));
        assert.equal(pkt.servicePort, 'dataplane/empty:http');
        assert.match(pkt.why[0] ?? '', /no ready endpoints|has no endpoints/);
      });

      test('the client to a NodePort with externalTrafficPolicy Local on a node without a local endpoint: the drop', async () => {
        const node1 = c.node('node-1');
        const { report, sent } = await traceOn('node-1', target(`${node1.ip}:30080/tcp`, c.client.ip), () =>
          c.http(c.client.namespace, node1.ip, 30080, { timeoutMs: 1500 }),
        );
        assert.equal(sent[0]?.ok, false);
        const [pkt] = report.packets;
        assert.ok(pkt, JSON.stringify(report));
        assert.equal(pkt.outcome, 'dropped', pkt.why.join('; '));
        assert.equal(pkt.servicePort, 'dataplane/local:http');
        assert.equal(pkt.frontend, `NodePort 30080/tcp on ${node1.ip}`);
      });

      test('the same NodePort on the node with the endpoint: sent there, client address kept', async () => {
        const node0 = c.node('node-0');
        const p0 = c.pods[0]!;
        const { report, sent } = await traceOn('node-0', target(`${node0.ip}:30080/tcp`), () =>
          c.http(c.client.namespace, node0.ip, 30080),
        );
        assert.equal(sent[0]?.ok, true);
        const [pkt] = report.packets;
        assert.ok(pkt, JSON.stringify(report));
        assert.equal(pkt.outcome, 'sent-to-endpoint', pkt.why.join('; '));
        assert.equal(pkt.endpoint, `${p0.ip}:8080`);
        assert.equal(pkt.masqueraded, false);
      });

      test('the command: prints the path and its meaning, and ends by itself after --count packets', async () => {
        if (mode !== 'nftables') return;
        const ns = c.node('node-0').namespace;
        const p = traceProcess(ns, ['--to', '198.19.0.10:80/tcp', '--timeout', '60']);
        await p.started;
        const sent = await c.http(c.pods[0]!.namespace, '198.19.0.10', 80);
        assert.equal(sent[0]?.ok, true);
        const out = await p.exited;
        assert.equal(out.code, 0, out.stderr);
        assert.match(out.stdout, /^trace 198\.19\.0\.10:80\/tcp \(nftables mode\): 1 packet, ended by count/);
        assert.match(
          out.stdout,
          /kube-proxy services: ip daddr \. meta l4proto \. th dport vmap @service-ips {2}→ goto service-GLEXRXEO-dataplane\/web\/tcp\/http/,
        );
        assert.match(
          out.stdout,
          /Service port dataplane\/web:http\n {4}frontend {5}198\.19\.0\.10:80\/tcp\n {4}endpoint {5}198\.18\.11\.10:8080/,
        );
        assert.equal(await traceTablePresent(inNamespace(hostCommandRunner, ns)), false);
      });

      test('Ctrl-C ends the command and removes its table', async () => {
        if (mode !== 'nftables') return;
        const ns = c.node('node-0').namespace;
        const p = traceProcess(ns, ['--to', '198.19.0.10:80/tcp', '--timeout', '60']);
        await p.started;
        assert.equal(
          await traceTablePresent(inNamespace(hostCommandRunner, ns)),
          true,
          'the table is there while tracing',
        );
        p.interrupt();
        const out = await p.exited;
        assert.equal(out.code, 0, out.stderr);
        assert.match(out.stdout, /0 packets, ended by interrupted/);
        assert.equal(
          await traceTablePresent(inNamespace(hostCommandRunner, ns)),
          false,
          'Ctrl-C removed the table',
        );
      });

      test('a trace table left by a crashed run is removed by the next run', async () => {
        const ns = c.node('node-0').namespace;
        await installTraceTable(inNamespace(hostCommandRunner, ns), target('198.19.0.99'));
        const { report } = await traceOn('node-0', target('198.19.0.10:80/tcp'), async () => [], 1500);
        assert.deepEqual(report.removedLeftovers, [`ip ${TRACE_TABLE}`]);
        assert.equal(report.ended, 'timeout');
        assert.equal(report.packets.length, 0, 'trace never sends traffic of its own');
      });
    },
  );
}
