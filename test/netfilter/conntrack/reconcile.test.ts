import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { ConntrackFlow } from '../../../packages/agent/src/netfilter/conntrack/flow.js';
import {
  deletionArgs,
  planStaleFlowDeletions,
} from '../../../packages/agent/src/netfilter/conntrack/reconcile.js';
import type { ConntrackDeletion } from '../../../packages/agent/src/netfilter/conntrack/reconcile.js';
import type { Endpoint } from '../../../packages/agent/src/model/endpoint.js';
import type { ServicePort } from '../../../packages/agent/src/model/service-port.js';
import { endpoint, servicePort } from './fixtures.js';

function udp(
  dst: string,
  dport: number,
  replySrc: string,
  replySport: number,
  protocol = 'udp',
): ConntrackFlow {
  const v6 = dst.includes(':');
  const client = v6 ? '2001:db8:ff::1' : '198.18.9.9';
  return {
    family: v6 ? 'IPv6' : 'IPv4',
    protocol,
    original: { src: client, dst, sport: 40000, dport },
    reply: { src: replySrc, dst: client, sport: replySport, dport: 40000 },
  };
}

// dns: UDP ClusterIP 198.18.100.10:53 with an external IP and an LB VIP, NodePort 30053; endpoints .2 (ready),
// .3 (terminating but serving), .4 (not serving).
const DNS = servicePort('kube-system', 'dns', {
  clusterIP: '198.18.100.10',
  port: 53,
  nodePort: 30053,
  externalIPs: ['198.18.200.1'],
  loadBalancerVIPs: ['198.18.201.1'],
});
const DNS_EPS: Endpoint[] = [
  endpoint('198.18.1.2', 5353),
  endpoint('198.18.1.3', 5353, { ready: false, serving: true, terminating: true }),
  endpoint('198.18.1.4', 5353, { ready: false, serving: false }),
];
// empty: UDP service without serving endpoints.
const EMPTY = servicePort('ns', 'empty', { clusterIP: '198.18.100.20', port: 514, nodePort: 30514 });
// web: TCP service; its flows are never touched.
const WEB = servicePort('ns', 'web', { clusterIP: '198.18.100.30', port: 80, protocol: 'TCP' });

const SERVICES = new Map<string, ServicePort>([DNS, EMPTY, WEB].map((sp) => [sp.key, sp]));
const ENDPOINTS = new Map<string, readonly Endpoint[]>([
  [DNS.key, DNS_EPS],
  [EMPTY.key, [endpoint('198.18.1.9', 514, { ready: false, serving: false })]],
  [WEB.key, [endpoint('198.18.1.5', 8080)]],
]);

type Filter = Omit<ConntrackDeletion, 'family' | 'protocol'>;

/** The filter for flows to frontend `dst`:`dport` that `replySrc`:`replySport` answered. */
const toFrontend = (dst: string, dport: number, replySrc: string, replySport: number): Filter => ({
  origDst: dst,
  origDstPort: dport,
  replySrc,
  replySrcPort: replySport,
});

/** A NodePort's filter: by port alone, whichever node address the client used. */
const toNodePort = (dport: number, replySrc: string, replySport: number): Filter => ({
  origDstPort: dport,
  replySrc,
  replySrcPort: replySport,
});

interface Case {
  readonly name: string;
  readonly flow: ConntrackFlow;
  /** The deletion filter expected, or undefined when the flow must be kept. */
  readonly want?: Filter;
}

const CASES: Case[] = [
  { name: 'ClusterIP flow to a ready endpoint is kept', flow: udp('198.18.100.10', 53, '198.18.1.2', 5353) },
  {
    name: 'ClusterIP flow to a terminating but serving endpoint is kept',
    flow: udp('198.18.100.10', 53, '198.18.1.3', 5353),
  },
  {
    name: 'ClusterIP flow to a removed endpoint is deleted (orig dst, dport, reply src, sport)',
    flow: udp('198.18.100.10', 53, '198.18.1.7', 5353),
    want: toFrontend('198.18.100.10', 53, '198.18.1.7', 5353),
  },
  {
    name: 'ClusterIP flow to a not-serving endpoint is deleted',
    flow: udp('198.18.100.10', 53, '198.18.1.4', 5353),
    want: toFrontend('198.18.100.10', 53, '198.18.1.4', 5353),
  },
  {
    name: 'flow created before endpoints existed (never DNATed: reply from the VIP) is deleted',
    flow: udp('198.18.100.10', 53, '198.18.100.10', 53),
    want: toFrontend('198.18.100.10', 53, '198.18.100.10', 53),
  },
  {
    name: 'endpoint IP right but old target port: deleted',
    flow: udp('198.18.100.10', 53, '198.18.1.2', 53),
    want: toFrontend('198.18.100.10', 53, '198.18.1.2', 53),
  },
  {
    name: 'external IP frontend',
    flow: udp('198.18.200.1', 53, '198.18.1.8', 5353),
    want: toFrontend('198.18.200.1', 53, '198.18.1.8', 5353),
  },
  {
    name: 'load-balancer VIP frontend',
    flow: udp('198.18.201.1', 53, '198.18.1.8', 5353),
    want: toFrontend('198.18.201.1', 53, '198.18.1.8', 5353),
  },
  { name: 'LB VIP flow to a serving endpoint is kept', flow: udp('198.18.201.1', 53, '198.18.1.3', 5353) },
  {
    name: 'NodePort flow to a stale endpoint is matched by port alone, any destination IP',
    flow: udp('198.18.50.7', 30053, '198.18.1.8', 5353),
    want: toNodePort(30053, '198.18.1.8', 5353),
  },
  {
    name: 'NodePort flow to a serving endpoint is kept',
    flow: udp('198.18.50.8', 30053, '198.18.1.2', 5353),
  },
  {
    // upstream #139629: scaled to zero, the flow would keep its DNAT to the removed endpoint while the client sends.
    name: 'service with no serving endpoints: a ClusterIP flow to a removed endpoint is deleted',
    flow: udp('198.18.100.20', 514, '198.18.1.99', 514),
    want: toFrontend('198.18.100.20', 514, '198.18.1.99', 514),
  },
  {
    name: 'service with no serving endpoints: a flow never DNATed (reply from the VIP) is deleted too',
    flow: udp('198.18.100.20', 514, '198.18.100.20', 514),
    want: toFrontend('198.18.100.20', 514, '198.18.100.20', 514),
  },
  {
    name: 'service with no serving endpoints: a DNATed NodePort flow is deleted, by port alone',
    flow: udp('198.18.50.7', 30514, '198.18.1.99', 514),
    want: toNodePort(30514, '198.18.1.99', 514),
  },
  {
    name: 'service with no serving endpoints: a flow to its NodePort number that was never DNATed is kept',
    flow: udp('198.18.77.1', 30514, '198.18.77.1', 30514),
  },
  { name: 'TCP is never touched', flow: udp('198.18.100.30', 80, '198.18.1.99', 8080, 'tcp') },
  {
    name: 'TCP flow to a UDP frontend address and port is not touched either',
    flow: udp('198.18.100.10', 53, '198.18.1.99', 5353, 'tcp'),
  },
  {
    name: 'flow to something that is not a service is kept',
    flow: udp('198.18.77.1', 53, '198.18.1.99', 5353),
  },
  { name: 'SCTP is never touched', flow: udp('198.18.100.10', 53, '198.18.1.99', 5353, 'sctp') },
];

describe('planStaleFlowDeletions', () => {
  for (const c of CASES) {
    test(c.name, () => {
      const plan = planStaleFlowDeletions('IPv4', SERVICES, ENDPOINTS, [c.flow]);
      if (c.want) {
        assert.deepEqual(plan.deletions, [{ family: 'IPv4', protocol: 'udp', ...c.want }]);
        assert.equal(plan.staleFlows, 1);
      } else {
        assert.deepEqual(plan.deletions, []);
        assert.equal(plan.staleFlows, 0);
      }
    });
  }

  test('whole table at once: flows sharing a filter give one deletion; counts every stale flow', () => {
    const flows = CASES.map((c) => c.flow);
    const stale = udp('198.18.100.10', 53, '198.18.1.7', 5353);
    const sameFilterOtherClient: ConntrackFlow = {
      ...stale,
      original: { ...stale.original, src: '198.18.9.10' },
    };
    const plan = planStaleFlowDeletions('IPv4', SERVICES, ENDPOINTS, [...flows, sameFilterOtherClient]);
    const expected = CASES.filter((c) => c.want).length;
    assert.equal(plan.deletions.length, expected);
    assert.equal(plan.staleFlows, expected + 1);
  });

  test('IPv6: bracketed keys compare with Endpoint.endpoint; flows of the other family are ignored', () => {
    const sp = servicePort('ns', 'dns6', {
      family: 'IPv6',
      clusterIP: '2001:db8:100::a',
      port: 53,
      nodePort: 30053,
    });
    const services = new Map([[sp.key, sp]]);
    const eps = new Map([[sp.key, [endpoint('2001:db8:1::2', 5353)]]]);
    const keep = udp('2001:db8:100::a', 53, '2001:db8:1::2', 5353);
    const drop = udp('2001:db8:100::a', 53, '2001:db8:1::7', 5353);
    const v4SamePort = udp('198.18.50.7', 30053, '198.18.1.8', 5353);
    const plan = planStaleFlowDeletions('IPv6', services, eps, [keep, drop, v4SamePort]);
    assert.deepEqual(plan.deletions, [
      {
        family: 'IPv6',
        protocol: 'udp',
        origDst: '2001:db8:100::a',
        origDstPort: 53,
        replySrc: '2001:db8:1::7',
        replySrcPort: 5353,
      },
    ]);
    assert.deepEqual(deletionArgs(plan.deletions[0]!), [
      '-D',
      '-p',
      'udp',
      '-f',
      'ipv6',
      '--orig-dst',
      '2001:db8:100::a',
      '--orig-port-dst',
      '53',
      '--reply-src',
      '2001:db8:1::7',
      '--reply-port-src',
      '5353',
    ]);
  });

  test('NodePort deletion arguments carry no destination IP', () => {
    const args = deletionArgs({
      family: 'IPv4',
      protocol: 'udp',
      origDstPort: 30053,
      replySrc: '198.18.1.8',
      replySrcPort: 5353,
    });
    assert.equal(args.includes('--orig-dst'), false);
    assert.deepEqual(args.slice(-6), [
      '--orig-port-dst',
      '30053',
      '--reply-src',
      '198.18.1.8',
      '--reply-port-src',
      '5353',
    ]);
  });

  // upstream #141371: a deleted Service's ports are no longer in the map, so the reconciler is given them.
  describe('deleted service ports', () => {
    const GONE = servicePort('ns', 'gone', {
      clusterIP: '198.18.100.40',
      port: 8125,
      nodePort: 30125,
      externalIPs: ['198.18.200.4'],
    });
    const toRemoved = udp('198.18.100.40', 8125, '198.18.1.60', 8125);

    test('without them a deleted Service is unknown and its flows stay (the bug)', () => {
      const plan = planStaleFlowDeletions('IPv4', SERVICES, ENDPOINTS, [toRemoved]);
      assert.deepEqual(plan.deletions, []);
    });

    test('its ClusterIP, external IP and DNATed NodePort flows are deleted; an undNATed NodePort-number flow is kept', () => {
      const flows = [
        toRemoved,
        udp('198.18.200.4', 8125, '198.18.1.60', 8125),
        udp('198.18.50.7', 30125, '198.18.1.60', 8125),
        udp('198.18.77.1', 30125, '198.18.77.1', 30125),
      ];
      const plan = planStaleFlowDeletions('IPv4', SERVICES, ENDPOINTS, flows, [GONE]);
      assert.deepEqual(plan.deletions, [
        {
          family: 'IPv4',
          protocol: 'udp',
          origDst: '198.18.100.40',
          origDstPort: 8125,
          replySrc: '198.18.1.60',
          replySrcPort: 8125,
        },
        {
          family: 'IPv4',
          protocol: 'udp',
          origDst: '198.18.200.4',
          origDstPort: 8125,
          replySrc: '198.18.1.60',
          replySrcPort: 8125,
        },
        { family: 'IPv4', protocol: 'udp', origDstPort: 30125, replySrc: '198.18.1.60', replySrcPort: 8125 },
      ]);
    });

    test('a live port with the same frontend or NodePort wins: its serving endpoints are kept', () => {
      const reused = servicePort('ns', 'new', { clusterIP: '198.18.100.40', port: 8125, nodePort: 30125 });
      const services = new Map([[reused.key, reused]]);
      const eps = new Map([[reused.key, [endpoint('198.18.1.61', 8125)]]]);
      const live = udp('198.18.100.40', 8125, '198.18.1.61', 8125);
      const liveNodePort = udp('198.18.50.7', 30125, '198.18.1.61', 8125);
      const plan = planStaleFlowDeletions('IPv4', services, eps, [live, liveNodePort, toRemoved], [GONE]);
      assert.equal(plan.staleFlows, 1);
      assert.equal(plan.deletions[0]?.replySrc, '198.18.1.60');
    });

    test('TCP and the other family are ignored', () => {
      const tcp = servicePort('ns', 'gone-tcp', { clusterIP: '198.18.100.40', port: 8125, protocol: 'TCP' });
      const v6 = servicePort('ns', 'gone6', { family: 'IPv6', clusterIP: '198.18.100.40', port: 8125 });
      const plan = planStaleFlowDeletions('IPv4', SERVICES, ENDPOINTS, [toRemoved], [tcp, v6]);
      assert.deepEqual(plan.deletions, []);
    });
  });
});
