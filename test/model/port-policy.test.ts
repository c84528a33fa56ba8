// servicePortPolicy: the one per-port decision every renderer reads (traffic policies, no-endpoint verdicts,
// which endpoint sets a port needs, the load-balancer firewall).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Endpoint } from '../../packages/agent/src/model/endpoint.js';
import { endpointOf, servicePortOf } from '../helpers/model-values.js';
import type { ServicePort } from '../../packages/agent/src/model/service-port.js';
import { policyNode, servicePortPolicy } from '../../packages/agent/src/model/port-policy.js';
import type { ServicePortPolicy } from '../../packages/agent/src/model/port-policy.js';

const e = endpointOf;
const port = (p: Partial<ServicePort> = {}): ServicePort =>
  servicePortOf({ clusterIP: '198.18.100.1', ...p });

const NODE = policyNode({ nodeName: 'node-a', zone: 'zone-a' }, '198.18.0.2', undefined);

/** The decision in a comparable shape: endpoint IPs instead of objects. */
function summary(p: ServicePortPolicy) {
  const ips = (eps: readonly Endpoint[]) => eps.map((x) => x.ip);
  return {
    hasEndpoints: p.hasEndpoints,
    cluster: p.usesClusterEndpoints ? ips(p.clusterEndpoints) : null,
    local: p.usesLocalEndpoints ? ips(p.localEndpoints) : null,
    reachable: ips(p.reachableEndpoints),
    internal: [p.internal.policy, ips(p.internal.endpoints), p.internal.noEndpoints ?? 'ok'],
    external: [p.external.policy, ips(p.external.endpoints), p.external.noEndpoints ?? 'ok'],
    viaExternalChain: p.external.viaExternalChain,
    noLocal: [p.noLocalEndpointsInternal, p.noLocalEndpointsExternal],
  };
}

describe('servicePortPolicy', () => {
  const summaries: readonly {
    name: string;
    sp: ServicePort;
    eps: Endpoint[];
    want: ReturnType<typeof summary>;
  }[] = [
    {
      name: 'no endpoints at all: every frontend rejects, nothing counts as "no local endpoints"',
      sp: port({ nodePort: 30080 }),
      eps: [],
      want: {
        hasEndpoints: false,
        cluster: null,
        local: null,
        reachable: [],
        internal: ['Cluster', [], 'reject'],
        external: ['Cluster', [], 'reject'],
        viaExternalChain: false,
        noLocal: [false, false],
      },
    },
    {
      name: 'Cluster policies with ready endpoints: both traffic kinds use the Cluster set',
      sp: port({ nodePort: 30080 }),
      eps: [e('198.19.0.1', 'rs'), e('198.19.0.2', 'rsl')],
      want: {
        hasEndpoints: true,
        cluster: ['198.19.0.1', '198.19.0.2'],
        local: null,
        reachable: ['198.19.0.1', '198.19.0.2'],
        internal: ['Cluster', ['198.19.0.1', '198.19.0.2'], 'ok'],
        external: ['Cluster', ['198.19.0.1', '198.19.0.2'], 'ok'],
        viaExternalChain: true,
        noLocal: [false, false],
      },
    },
    {
      name: 'internalTrafficPolicy Local with no local endpoint drops ClusterIP traffic and counts it',
      sp: port({ internalPolicyLocal: true }),
      eps: [e('198.19.0.1', 'rs')],
      want: {
        hasEndpoints: true,
        cluster: null,
        local: null,
        reachable: [],
        internal: ['Local', [], 'drop'],
        // No external frontend: the Cluster set is never used, and nothing external is dropped.
        external: ['Cluster', [], 'ok'],
        viaExternalChain: false,
        noLocal: [true, false],
      },
    },
    {
      name: 'externalTrafficPolicy Local: external traffic uses only local endpoints, the ClusterIP all of them',
      sp: port({ nodePort: 30080, externalPolicyLocal: true }),
      eps: [e('198.19.0.1', 'rs'), e('198.19.0.2', 'rsl')],
      want: {
        hasEndpoints: true,
        cluster: ['198.19.0.1', '198.19.0.2'],
        local: ['198.19.0.2'],
        reachable: ['198.19.0.1', '198.19.0.2'],
        internal: ['Cluster', ['198.19.0.1', '198.19.0.2'], 'ok'],
        external: ['Local', ['198.19.0.2'], 'ok'],
        viaExternalChain: true,
        noLocal: [false, false],
      },
    },
  ];
  for (const c of summaries) {
    test(c.name, () => {
      assert.deepEqual(summary(servicePortPolicy(c.sp, c.eps, NODE)), c.want);
    });
  }

  test('externalTrafficPolicy Local on a node without local endpoints: external drop, counted', () => {
    const sp = port({ nodePort: 30080, externalPolicyLocal: true });
    const p = servicePortPolicy(sp, [e('198.19.0.1', 'rs')], NODE);
    assert.deepEqual(p.external.noEndpoints, 'drop');
    assert.deepEqual(p.internal.noEndpoints, undefined);
    assert.deepEqual([p.noLocalEndpointsInternal, p.noLocalEndpointsExternal], [false, true]);
    // The external chain still exists: it short-circuits pod and node traffic to the Cluster set.
    assert.equal(p.external.viaExternalChain, true);
  });

  test('only terminating endpoints: they serve rather than reject', () => {
    const p = servicePortPolicy(port(), [e('198.19.0.1', 'st'), e('198.19.0.2', 't')], NODE);
    assert.deepEqual(summary(p).internal, ['Cluster', ['198.19.0.1'], 'ok']);
  });

  test('load-balancer firewall: source ranges, and the VIPs too when the node itself is in a range', () => {
    const lb = { loadBalancerVIPs: ['198.18.200.1'], nodePort: 30080 };
    const eps = [e('198.19.0.1', 'rs')];
    const outside = servicePortPolicy(
      port({ ...lb, loadBalancerSourceRanges: ['198.18.64.0/24'] }),
      eps,
      NODE,
    );
    assert.deepEqual(outside.firewall, { sourceRanges: ['198.18.64.0/24'], allowedVIPs: [] });
    const inside = servicePortPolicy(port({ ...lb, loadBalancerSourceRanges: ['198.18.0.0/24'] }), eps, NODE);
    assert.deepEqual(inside.firewall, { sourceRanges: ['198.18.0.0/24'], allowedVIPs: ['198.18.200.1'] });
    const noNodeIP = policyNode({ nodeName: 'node-a' }, undefined, undefined);
    const unknown = servicePortPolicy(
      port({ ...lb, loadBalancerSourceRanges: ['198.18.0.0/24'] }),
      eps,
      noNodeIP,
    );
    assert.deepEqual(unknown.firewall?.allowedVIPs, []);
    assert.equal(servicePortPolicy(port(lb), eps, NODE).firewall, undefined, 'no ranges, no firewall');
  });

  test('feature gates reach the hint decision: PreferSameNode only with the gate on', () => {
    const hinted = (ip: string, node: string): Endpoint => ({ ...e(ip, 'rs'), nodeHints: new Set([node]) });
    const eps = [hinted('198.19.0.1', 'node-a'), hinted('198.19.0.2', 'node-b')];
    const on = servicePortPolicy(port(), eps, NODE);
    assert.deepEqual(summary(on).cluster, ['198.19.0.1']);
    const off = policyNode({ nodeName: 'node-a' }, '198.18.0.2', { preferSameTrafficDistribution: false });
    assert.deepEqual(summary(servicePortPolicy(port(), eps, off)).cluster, ['198.19.0.1', '198.19.0.2']);
  });
});
