// The real-kernel scenario suite: one set of scenarios, run for every proxy mode and each IP family, each asserting
// with real packets through real namespaces that the mode's rules behave as upstream's do (upstream-model.md §4,
// upstream-backends.md §1.6–1.8). One dual-stack topology per mode is shared by all its scenarios (each node runs
// one backend per family); each scenario has its own Service (own ClusterIP and NodePort) and removes it at the end.
//
// Topology (see packages/netns/src/topology.ts): node-0 and node-1, three pods each (pod-<node>-<k>), an external
// client on the underlay. Every pod serves HTTP on 8080 and UDP echo on 5353 and answers with its name and the source
// it saw.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Service } from '../../packages/agent/src/api/objects.js';
import { hostCommandRunner } from '../../packages/agent/src/netfilter/command.js';
import { sweepNamespaces } from '../../packages/netns/src/namespace.js';
import { IP_FAMILIES } from '../../packages/agent/src/model/ip.js';
import { kernelOptions, runPrefix } from '../helpers/kernel.js';
import { DATAPLANE_BACKENDS, MODE_SUPPORT, requestedBackends } from './harness/backends.js';
import type { DataplaneBackend } from './harness/backends.js';
import type { TestCluster } from './harness/cluster.js';
import { addressOf, makeTestCluster, nodeAddresses, removeTestCluster } from './harness/cluster.js';
import { dnsPort, endpointSlice, httpPort, service } from './harness/objects.js';
import type { EndpointConditions, ServiceSpecInput } from './harness/objects.js';
import { answered, errorKinds, failed, podsThatAnswered, sourcesSeen } from './harness/outcomes.js';
import { waitFor } from '../helpers/wait-for.js';

const REJECT_ERRORS = new Set(['ECONNREFUSED', 'EHOSTUNREACH']);

/** A scenario's Service as service() takes it (named without the family suffix) and the pods of its one slice. */
interface ServiceCase extends ServiceSpecInput {
  /** The slice's endpoints, in order: each ready, serving and not terminating unless `conditions` says otherwise. */
  readonly backends: readonly string[];
  readonly conditions?: Readonly<Record<string, EndpointConditions>>;
}

/** What a scenario's body gets: the Service as applied, and its backends' pod names. */
interface Applied {
  readonly svc: Service;
  readonly backends: readonly string[];
}

function optionsFor(mode: DataplaneBackend): { skip: string | false } {
  const skip = (reason: string): { skip: string } => {
    console.log(`# skip: ${reason}`);
    return { skip: reason };
  };
  if (MODE_SUPPORT[mode].create === null)
    return skip(`no ${mode} backend yet (test/dataplane/harness/backends.ts)`);
  if (!requestedBackends().has(mode)) return skip(`${mode} not in KPTS_DATAPLANE_BACKENDS`);
  const lacks = MODE_SUPPORT[mode].kernelLacks?.();
  if (lacks !== undefined) return skip(lacks);
  return kernelOptions(MODE_SUPPORT[mode].tools ?? ['ip']);
}

// Every mode, and nftables mode's flat layout: the same scenarios, unchanged, for each.
for (const mode of DATAPLANE_BACKENDS) {
  describe(`dataplane scenarios: ${mode}`, optionsFor(mode), () => {
    const prefix = runPrefix();
    let cluster: TestCluster | undefined;

    /** Runs a scenario; on failure the message carries every node's rules, which is what one needs to debug it. */
    const scenario = (name: string, fn: (c: TestCluster) => Promise<void>): void => {
      test(name, async () => {
        assert.ok(cluster, 'cluster was set up');
        try {
          await fn(cluster);
        } catch (e) {
          const rules = await cluster
            .dumpRules()
            .catch((d: unknown) => `(could not dump rules: ${String(d)})`);
          if (e instanceof Error) e.message += `\n\nRules at failure:\n${rules}`;
          throw e;
        }
      });
    };

    before(async () => {
      await sweepNamespaces(hostCommandRunner, prefix + '-');
      cluster = await makeTestCluster({ mode, prefix, nodes: 2, podsPerNode: 3 });
    });

    after(() => removeTestCluster(cluster, prefix));

    for (const family of IP_FAMILIES) {
      describe(family, () => {
        // Each family has its own Services: ClusterIPs from its service CIDR, NodePorts 100 apart (NodePorts are
        // allocated cluster-wide), names with a family suffix.
        const suffix = family === 'IPv4' ? 'v4' : 'v6';
        const vip = (n: number): string => (family === 'IPv4' ? `198.19.0.${n}` : `2001:db8:ff::${n}`);
        const np = (port: number): number => (family === 'IPv4' ? port : port + 100);
        const ip = (x: { readonly ip: string; readonly ip6: string }): string => addressOf(x, family);

        /**
         * A scenario about one Service of this family and one EndpointSlice of its backends: both are applied
         * before `body` and removed after it, also when it fails. `objects` may be a function of the cluster, for
         * a Service that names the cluster's own addresses (the pods' are known only once it is built).
         */
        const serviceScenario = (
          name: string,
          objects: ServiceCase | ((c: TestCluster) => ServiceCase),
          body: (c: TestCluster, applied: Applied) => Promise<void>,
        ): void => {
          scenario(name, (c) => {
            const {
              backends,
              conditions = {},
              ...input
            } = typeof objects === 'function' ? objects(c) : objects;
            const svc = service({ ...input, name: `${input.name}-${suffix}` });
            const slice = endpointSlice(
              svc,
              backends.map((p) => c.endpoint(p, family, conditions[p])),
            );
            return c.withObjects({ services: [svc], slices: [slice] }, () => body(c, { svc, backends }));
          });
        };

        serviceScenario(
          'a ClusterIP Service with three backends: 60 requests from a pod reach all three',
          {
            name: 'web',
            clusterIP: vip(10),
            ports: [httpPort()],
            backends: ['pod-0-0', 'pod-1-0', 'pod-1-1'],
          },
          async (c, { backends }) => {
            // pod-0-2 shares node-0's bridge with pod-0-0 (bridged reply) and reaches node-1's pods across the underlay.
            const client = c.pod('pod-0-2');
            const outcomes = await c.http(client.namespace, vip(10), 80, { count: 60 });
            assert.deepEqual(errorKinds(outcomes), {}, 'every request answered');
            assert.equal(answered(outcomes).length, 60);
            assert.deepEqual(podsThatAnswered(outcomes), [...backends].sort());
            // Pod-to-ClusterIP traffic from inside the cluster CIDR is not masqueraded.
            assert.deepEqual(sourcesSeen(outcomes), [ip(client)]);
          },
        );

        serviceScenario(
          'a UDP Service answers, from both backends',
          { name: 'dns', clusterIP: vip(11), ports: [dnsPort()], backends: ['pod-0-1', 'pod-1-2'] },
          async (c, { backends }) => {
            const client = c.pod('pod-1-0');
            const outcomes = await c.udp(client.namespace, vip(11), 53, { count: 30 });
            assert.deepEqual(errorKinds(outcomes), {}, 'every datagram answered');
            // Each request is a new socket, so a new conntrack flow and a new choice: 30 picks miss one of two
            // backends with probability 2^-29.
            assert.deepEqual(podsThatAnswered(outcomes), [...backends].sort());
            assert.deepEqual(sourcesSeen(outcomes), [ip(client)]);
          },
        );

        serviceScenario(
          'a Service with no endpoints is rejected at once (ClusterIP and NodePort, TCP and UDP)',
          {
            name: 'empty',
            clusterIP: vip(12),
            ports: [httpPort({ nodePort: np(30082) }), dnsPort()],
            backends: [],
          },
          async (c) => {
            // A reject is an ICMP error, and the kernel rate-limits those per destination (a burst of 6, then
            // one a second): two requests from each of three sources stay inside the burst. Generous timeouts: a
            // reject answers within milliseconds; only a drop would run into them.
            const tcp = await c.http(c.pod('pod-0-2').namespace, vip(12), 80, {
              count: 2,
              timeoutMs: 5000,
            });
            const udp = await c.udp(c.pod('pod-1-0').namespace, vip(12), 53, {
              count: 2,
              timeoutMs: 5000,
            });
            const nodePort = await c.http(c.client.namespace, ip(c.node('node-1')), np(30082), {
              count: 2,
              timeoutMs: 5000,
            });
            for (const [what, outcomes] of [
              ['TCP to the ClusterIP', tcp],
              ['UDP to the ClusterIP', udp],
              ['TCP to the NodePort', nodePort],
            ] as const) {
              assert.equal(failed(outcomes).length, 2, `${what}: every request fails`);
              for (const f of failed(outcomes)) {
                assert.ok(
                  REJECT_ERRORS.has(f.error),
                  `${what}: rejected (ECONNREFUSED/EHOSTUNREACH), got ${f.error}`,
                );
              }
            }
          },
        );

        serviceScenario(
          'a NodePort answers a client outside the cluster, on every node, masqueraded',
          {
            name: 'nodeport',
            clusterIP: vip(13),
            ports: [httpPort({ nodePort: np(30080) })],
            backends: ['pod-0-0', 'pod-1-0'],
          },
          async (c, { backends }) => {
            for (const node of c.nodes) {
              const outcomes = await c.http(c.client.namespace, ip(node), np(30080), { count: 30 });
              assert.deepEqual(errorKinds(outcomes), {}, `${node.name}: every request answered`);
              assert.deepEqual(
                podsThatAnswered(outcomes),
                [...backends].sort(),
                `${node.name}: both backends, local and remote`,
              );
              // externalTrafficPolicy: Cluster SNATs to the ingress node, so the reply returns through it.
              for (const source of sourcesSeen(outcomes)) {
                assert.ok(
                  nodeAddresses(node, family).includes(source),
                  `${node.name}: pod saw ${source}, one of the node's addresses`,
                );
              }
            }
          },
        );

        serviceScenario(
          'externalTrafficPolicy Local keeps the client address; a node without a local endpoint drops',
          {
            name: 'local',
            clusterIP: vip(14),
            ports: [httpPort({ nodePort: np(30081) })],
            externalTrafficPolicy: 'Local',
            backends: ['pod-0-1'],
          },
          async (c) => {
            const withEndpoint = await c.http(c.client.namespace, ip(c.node('node-0')), np(30081), {
              count: 10,
            });
            assert.deepEqual(errorKinds(withEndpoint), {}, 'node-0 (local endpoint) answers');
            assert.deepEqual(podsThatAnswered(withEndpoint), ['pod-0-1']);
            assert.deepEqual(
              sourcesSeen(withEndpoint),
              [ip(c.client)],
              'the pod sees the client, not the node',
            );

            const withoutEndpoint = await c.http(c.client.namespace, ip(c.node('node-1')), np(30081), {
              count: 2,
              timeoutMs: 1500,
            });
            assert.deepEqual(
              errorKinds(withoutEndpoint),
              { TIMEOUT: 2 },
              'node-1 (no local endpoint) drops silently',
            );

            // Pod traffic to a Local NodePort is short-circuited to the Cluster set (upstream-model.md §4), so a pod
            // on node-1 is answered through node-1's NodePort although node-1 has no local endpoint.
            const fromPod = c.pod('pod-1-0');
            const shortCircuit = await c.http(fromPod.namespace, ip(c.node('node-1')), np(30081), {
              count: 3,
            });
            assert.deepEqual(errorKinds(shortCircuit), {}, 'pod traffic to the NodePort is not dropped');
            assert.deepEqual(podsThatAnswered(shortCircuit), ['pod-0-1']);
            // So is the node's own traffic (masqueraded, as it leaves with a node address anyway).
            const node1 = c.node('node-1');
            const fromNode = await c.http(node1.namespace, ip(node1), np(30081), { count: 3 });
            assert.deepEqual(
              errorKinds(fromNode),
              {},
              'the node reaching its own Local NodePort is not dropped',
            );
            assert.deepEqual(podsThatAnswered(fromNode), ['pod-0-1']);

            // The ClusterIP is policy Cluster: from node-1's pods it still reaches the endpoint on node-0.
            const internal = await c.http(c.pod('pod-1-0').namespace, vip(14), 80, { count: 3 });
            assert.deepEqual(podsThatAnswered(internal), ['pod-0-1']);
          },
        );

        serviceScenario(
          'the node itself reaches a ClusterIP and its own NodePort (the output hook)',
          {
            name: 'from-node',
            clusterIP: vip(18),
            ports: [httpPort({ nodePort: np(30083) })],
            backends: ['pod-0-0', 'pod-1-0'],
          },
          async (c, { backends }) => {
            const node = c.node('node-1');
            for (const [what, target, port] of [
              ['ClusterIP', vip(18), 80],
              ['own NodePort', ip(node), np(30083)],
            ] as const) {
              const outcomes = await c.http(node.namespace, target, port, { count: 30 });
              assert.deepEqual(errorKinds(outcomes), {}, `${what}: every request answered`);
              assert.deepEqual(podsThatAnswered(outcomes), [...backends].sort(), `${what}: both backends`);
              for (const source of sourcesSeen(outcomes)) {
                assert.ok(
                  nodeAddresses(node, family).includes(source),
                  `${what}: pod saw ${source}, a node-1 address`,
                );
              }
            }
          },
        );

        serviceScenario(
          'internalTrafficPolicy Local: a node with a local endpoint uses only it, one without drops',
          {
            name: 'node-local',
            clusterIP: vip(19),
            ports: [httpPort()],
            internalTrafficPolicy: 'Local',
            backends: ['pod-0-0', 'pod-1-0'],
          },
          async (c, { svc }) => {
            const fromNode0 = await c.http(c.pod('pod-0-2').namespace, vip(19), 80, { count: 20 });
            assert.deepEqual(errorKinds(fromNode0), {});
            assert.deepEqual(
              podsThatAnswered(fromNode0),
              ['pod-0-0'],
              'node-0 pods reach only node-0 endpoints',
            );
            const fromNode1 = await c.http(c.pod('pod-1-1').namespace, vip(19), 80, { count: 20 });
            assert.deepEqual(
              podsThatAnswered(fromNode1),
              ['pod-1-0'],
              'node-1 pods reach only node-1 endpoints',
            );

            // pod-1-0 goes away: node-1 has no local endpoint left, while the Service still has one (on node-0).
            const onlyNode0 = endpointSlice(svc, [c.endpoint('pod-0-0', family)]);
            await c.apply({ slices: [onlyNode0] });
            if (mode === 'ipvs') {
              // Upstream's IPVS proxier would fall back to the Cluster endpoints (k/k #97081), but this Service has
              // no external frontend, so it has no Cluster set: the virtual server is left without real servers,
              // and the node's own stack refuses the connection (model: ipvsTrafficPolicy → reject).
              const refused = await c.http(c.pod('pod-1-1').namespace, vip(19), 80, {
                count: 2,
                timeoutMs: 5000,
              });
              assert.equal(failed(refused).length, 2, 'ipvs mode: every request fails');
              for (const f of failed(refused))
                assert.ok(REJECT_ERRORS.has(f.error), `refused, got ${f.error}`);
              return;
            }
            const dropped = await c.http(c.pod('pod-1-1').namespace, vip(19), 80, {
              count: 2,
              timeoutMs: 1500,
            });
            assert.deepEqual(errorKinds(dropped), { TIMEOUT: 2 }, 'dropped (not rejected) on node-1');
          },
        );

        serviceScenario(
          'serving, terminating endpoints are used when no endpoint is ready; not-serving ones never',
          {
            name: 'draining',
            clusterIP: vip(20),
            ports: [httpPort({ nodePort: np(30084) })],
            externalTrafficPolicy: 'Local',
            backends: ['pod-0-1', 'pod-0-0'],
            conditions: {
              'pod-0-1': { ready: false, serving: true, terminating: true },
              'pod-0-0': { ready: false, serving: false, terminating: true },
            },
          },
          async (c) => {
            // Cluster set (ClusterIP) and Local set (NodePort on node-0) both fall back to the serving one.
            const internal = await c.http(c.pod('pod-1-0').namespace, vip(20), 80, { count: 20 });
            assert.deepEqual(errorKinds(internal), {});
            assert.deepEqual(podsThatAnswered(internal), ['pod-0-1']);
            const external = await c.http(c.client.namespace, ip(c.node('node-0')), np(30084), {
              count: 20,
            });
            assert.deepEqual(errorKinds(external), {});
            assert.deepEqual(podsThatAnswered(external), ['pod-0-1']);
            assert.deepEqual(sourcesSeen(external), [ip(c.client)]);
          },
        );

        serviceScenario(
          'a pod reaching itself through its ClusterIP (hairpin) is answered and masqueraded',
          { name: 'hairpin', clusterIP: vip(15), ports: [httpPort(), dnsPort()], backends: ['pod-1-2'] },
          async (c) => {
            const pod = c.pod('pod-1-2');
            const node = c.node(pod.nodeName);
            const tcp = await c.http(pod.namespace, vip(15), 80, { count: 5 });
            const udp = await c.udp(pod.namespace, vip(15), 53, { count: 5 });
            for (const [what, outcomes] of [
              ['TCP', tcp],
              ['UDP', udp],
            ] as const) {
              assert.deepEqual(errorKinds(outcomes), {}, `${what}: every request answered`);
              assert.deepEqual(podsThatAnswered(outcomes), ['pod-1-2']);
              const sources = sourcesSeen(outcomes);
              assert.ok(
                !sources.includes(ip(pod)),
                `${what}: the pod must not see its own address (saw ${sources.join(', ')})`,
              );
              for (const s of sources) {
                assert.ok(
                  nodeAddresses(node, family).includes(s),
                  `${what}: masqueraded to a node address, saw ${s}`,
                );
              }
            }
          },
        );

        // The edge Service's addresses, outside every node and pod (EXTERNAL_CIDR in packages/netns/src/topology.ts).
        const externalIP = family === 'IPv4' ? '198.18.200.1' : '2001:db8:200::1';
        const lbIP = family === 'IPv4' ? '198.18.200.2' : '2001:db8:200::2';
        serviceScenario(
          'externalIPs and load-balancer IPs answer from outside; loadBalancerSourceRanges drop other sources',
          (c) => ({
            name: 'edge',
            clusterIP: vip(21),
            ports: [httpPort({ nodePort: np(30085) })],
            externalIPs: [externalIP],
            loadBalancerIPs: [lbIP],
            // Only the external client may use the load-balancer IP.
            loadBalancerSourceRanges: [family === 'IPv4' ? `${c.client.ip}/32` : `${c.client.ip6}/128`],
            backends: ['pod-0-0', 'pod-1-1'],
          }),
          async (c, { backends }) => {
            // The client's routes send both addresses to node-0 (packages/netns/src/topology.ts, EXTERNAL_CIDR).
            const entry = c.node('node-0');
            for (const [what, target] of [
              ['externalIP', externalIP],
              ['load-balancer IP, from an allowed source', lbIP],
            ] as const) {
              const outcomes = await c.http(c.client.namespace, target, 80, { count: 20 });
              assert.deepEqual(errorKinds(outcomes), {}, `${what}: every request answered`);
              assert.deepEqual(podsThatAnswered(outcomes), [...backends].sort(), `${what}: both backends`);
              for (const source of sourcesSeen(outcomes)) {
                assert.ok(
                  nodeAddresses(entry, family).includes(source),
                  `${what}: masqueraded to node-0 (eTP Cluster), saw ${source}`,
                );
              }
            }
            // A pod is not in the source ranges: its node drops it before DNAT.
            const denied = await c.http(c.pod('pod-1-0').namespace, lbIP, 80, {
              count: 2,
              timeoutMs: 1500,
            });
            assert.deepEqual(errorKinds(denied), { TIMEOUT: 2 }, 'a source outside the ranges is dropped');
            // Source ranges guard the load-balancer IP only: the same pod reaches the externalIP.
            const viaExternal = await c.http(c.pod('pod-1-0').namespace, externalIP, 80, { count: 5 });
            assert.deepEqual(errorKinds(viaExternal), {});
          },
        );

        serviceScenario(
          'ClientIP session affinity pins a client to one backend',
          {
            name: 'sticky',
            clusterIP: vip(16),
            ports: [httpPort()],
            sessionAffinity: 'ClientIP',
            affinityTimeoutSeconds: 300,
            backends: ['pod-0-0', 'pod-0-1', 'pod-1-0'],
          },
          async (c, { backends }) => {
            for (const client of [c.pod('pod-1-1'), c.pod('pod-0-2')]) {
              const outcomes = await c.http(client.namespace, vip(16), 80, { count: 20 });
              assert.deepEqual(errorKinds(outcomes), {}, `${client.name}: every request answered`);
              const pods = podsThatAnswered(outcomes);
              // Without affinity, 20 fresh connections over 3 backends all land on one with probability 3^-19.
              assert.equal(
                pods.length,
                1,
                `${client.name}: one backend for all 20 requests, got ${pods.join(', ')}`,
              );
              assert.ok(backends.includes(pods[0]!));
            }
          },
        );

        serviceScenario(
          'a removed endpoint leaves the rotation after the next partial sync, with no failed request',
          {
            name: 'rolling',
            clusterIP: vip(17),
            ports: [httpPort()],
            backends: ['pod-0-0', 'pod-1-0', 'pod-1-1'],
          },
          async (c, { svc, backends: all }) => {
            const kept = ['pod-0-0', 'pod-1-0'];
            const client = c.pod('pod-0-2');
            const traffic = c.traffic(client.namespace, {
              proto: 'http',
              ip: vip(17),
              port: 80,
              count: 3000, // a bound; the scenario stops it long before
              intervalMs: 10,
              timeoutMs: 5000,
            });
            let syncedAt = Number.POSITIVE_INFINITY;
            let outcomes: Awaited<ReturnType<typeof traffic.stop>>;
            try {
              await waitFor('every backend answering the running traffic', () => {
                const o = traffic.outcomes();
                return o.length >= 30 && podsThatAnswered(o).length === all.length ? o : undefined;
              });
              // The same slice, updated: pod-1-1 is gone (as when it is deleted or stops being ready).
              const shrunk = endpointSlice(
                svc,
                kept.map((p) => c.endpoint(p, family)),
              );
              const syncs = await c.apply({ slices: [shrunk] });
              syncedAt = Date.now();
              for (const s of syncs) {
                assert.equal(s.full, false, `${s.node} ${s.family}: the change is a partial sync`);
                // The other family's proxier ignores a slice of this family: nothing changed for it.
                assert.deepEqual(
                  s.changedServices,
                  s.family === family ? [`dataplane/rolling-${suffix}`] : [],
                  `${s.node} ${s.family}: only the rolling Service changed`,
                );
              }
              await waitFor('40 requests started after the sync', () => {
                const later = traffic.outcomes().filter((o) => o.startedAt > syncedAt);
                return later.length >= 40 ? later : undefined;
              });
            } finally {
              // Stopped before the Service is removed, so that the removal fails no request.
              outcomes = await traffic.stop();
            }
            assert.deepEqual(errorKinds(outcomes), {}, 'no request failed while the endpoint was removed');
            const beforeSync = outcomes.filter((o) => o.startedAt <= syncedAt);
            const afterSync = outcomes.filter((o) => o.startedAt > syncedAt);
            assert.deepEqual(
              podsThatAnswered(beforeSync),
              [...all].sort(),
              'all three served before the change',
            );
            assert.deepEqual(
              podsThatAnswered(afterSync),
              [...kept].sort(),
              'only the kept two serve after the sync',
            );
          },
        );
      });
    }
  });
}
