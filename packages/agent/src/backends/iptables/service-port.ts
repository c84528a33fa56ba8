// One service port's iptables rules, from its policy (src/model/port-policy.ts), which decided everything but the
// rules: its frontends in the shared top-level chains (ClusterIP, external IPs, load-balancer IPs, NodePorts,
// health-check port), its service chains (external traffic, firewall), and its policy and endpoint chains.
import type { Endpoint } from '../../model/endpoint.js';
import { clusterIPMasquerade } from '../../model/local-detector.js';
import type { NoEndpointsVerdict, ServicePortPolicy } from '../../model/port-policy.js';
import type { ServicePort } from '../../model/service-port.js';
import type { IptablesRule } from '../../netfilter/iptables/types.js';
import { commentMatch } from '../../netfilter/iptables/types.js';
import {
  endpointChainName,
  KUBE_EXTERNAL_SERVICES,
  KUBE_MARK_MASQ,
  KUBE_NODEPORTS,
  KUBE_PROXY_FIREWALL,
  KUBE_SERVICES,
  servicePortChainNames,
} from './naming.js';
import type { RenderContext, ServicePortRules } from './render.js';
import { localMatch } from '../../netfilter/iptables/local-match.js';
import { hasCounter, localhostNodePortsActive, NFACCT_LOCALHOST_NODEPORTS } from './render.js';

/** Everything the port's rules are written from: its policy, names, matches and the no-endpoint verdicts. */
type PortContext = ReturnType<typeof portContext>;

function portContext(policy: ServicePortPolicy, ctx: RenderContext) {
  const { node, extras } = ctx;
  const sp = policy.servicePort;
  const { internal, external, hasEndpoints } = policy;
  const name = sp.nameString;
  const proto = sp.protocol.toLowerCase();
  const port = String(sp.port);
  const names = servicePortChainNames(name, sp.protocol);
  // Each endpoint's chain name is needed by the selection rules and by the endpoint chain: hash it once.
  const epChainNames = new Map<string, string>();
  const epChain = (ep: Endpoint): string => {
    let c = epChainNames.get(ep.endpoint);
    if (c === undefined) {
      c = endpointChainName(name, sp.protocol, ep.endpoint);
      epChainNames.set(ep.endpoint, c);
    }
    return c;
  };
  const clusterPolicyChain = names.clusterPolicy;
  const internalTrafficChain = sp.internalPolicyLocal ? names.localPolicy : names.clusterPolicy;
  const externalPolicyChain = sp.externalPolicyLocal ? names.localPolicy : names.clusterPolicy;
  const externalTrafficChain = names.external;
  // The firewall chain ends in the external chain, which exists only while the Service has endpoints.
  const firewall = hasEndpoints ? policy.firewall : undefined;
  const loadBalancerTrafficChain = firewall !== undefined ? names.firewall : externalTrafficChain;

  const protoMatch = ['-m', proto, '-p', proto];
  // Every ClusterIP, external IP and load-balancer IP rule matches the same way: one address and the port.
  const frontendMatch = (comment: string, ip: string): string[] => [
    ...commentMatch(comment),
    ...protoMatch,
    '-d',
    ip,
    '--dport',
    port,
  ];

  return {
    node,
    extras,
    sp,
    policy,
    internal,
    external,
    hasEndpoints,
    name,
    proto,
    port,
    names,
    epChain,
    clusterPolicyChain,
    internalTrafficChain,
    externalPolicyChain,
    externalTrafficChain,
    firewall,
    loadBalancerTrafficChain,
    protoMatch,
    frontendMatch,
  };
}

/** The filter verdict for frontends whose policy leaves no endpoint: none while there is one. */
function filterVerdict(
  name: string,
  v: NoEndpointsVerdict | undefined,
): { target: string; comment: string } | undefined {
  if (v === undefined) return undefined;
  return v === 'reject'
    ? { target: 'REJECT', comment: `${name} has no endpoints` }
    : { target: 'DROP', comment: `${name} has no local endpoints` };
}

/** Rules for one service port, from its policy. */
export function renderServicePort(policy: ServicePortPolicy, ctx: RenderContext): ServicePortRules {
  const p = portContext(policy, ctx);
  const { filterRules, natTopRules } = frontendRules(p);
  const chains: string[] = [];
  const chainRules: IptablesRule[] = [];
  serviceChainRules(p, chains, chainRules);
  policyAndEndpointChains(p, ctx, chains, chainRules);
  return {
    filterRules,
    natTopRules,
    chains,
    chainRules,
    noLocalEndpointsInternal: policy.noLocalEndpointsInternal,
    noLocalEndpointsExternal: policy.noLocalEndpointsExternal,
  };
}

/** The port's rules in the shared top-level chains: a jump for each frontend, or its filter verdict. */
function frontendRules(p: PortContext): { filterRules: IptablesRule[]; natTopRules: IptablesRule[] } {
  const {
    node,
    extras,
    sp,
    internal,
    external,
    hasEndpoints,
    name,
    names,
    internalTrafficChain,
    externalTrafficChain,
    firewall,
    loadBalancerTrafficChain,
    protoMatch,
    frontendMatch,
  } = p;
  const internalFilter = filterVerdict(name, internal.noEndpoints);
  const externalFilter = filterVerdict(name, external.noEndpoints);
  const filterRules: IptablesRule[] = [];
  const natTopRules: IptablesRule[] = [];
  // ClusterIP.
  if (internal.noEndpoints === undefined) {
    natTopRules.push({
      chain: KUBE_SERVICES,
      args: [...frontendMatch(`${name} cluster IP`, sp.clusterIP), '-j', internalTrafficChain],
    });
  } else if (internalFilter) {
    filterRules.push({
      chain: KUBE_SERVICES,
      args: [...frontendMatch(internalFilter.comment, sp.clusterIP), '-j', internalFilter.target],
    });
  }

  // externalIPs.
  for (const ip of sp.externalIPs) {
    if (hasEndpoints) {
      natTopRules.push({
        chain: KUBE_SERVICES,
        args: [...frontendMatch(`${name} external IP`, ip), '-j', externalTrafficChain],
      });
    }
    if (externalFilter) {
      filterRules.push({
        chain: KUBE_EXTERNAL_SERVICES,
        args: [...frontendMatch(externalFilter.comment, ip), '-j', externalFilter.target],
      });
    }
  }

  // Load-balancer IPs.
  for (const ip of sp.loadBalancerVIPs) {
    if (hasEndpoints) {
      natTopRules.push({
        chain: KUBE_SERVICES,
        args: [...frontendMatch(`${name} loadbalancer IP`, ip), '-j', loadBalancerTrafficChain],
      });
    }
    if (firewall !== undefined) {
      filterRules.push({
        chain: KUBE_PROXY_FIREWALL,
        args: [...frontendMatch(`${name} traffic not accepted by ${names.firewall}`, ip), '-j', 'DROP'],
      });
    }
  }
  if (externalFilter) {
    for (const ip of sp.loadBalancerVIPs) {
      filterRules.push({
        chain: KUBE_EXTERNAL_SERVICES,
        args: [...frontendMatch(externalFilter.comment, ip), '-j', externalFilter.target],
      });
    }
  }

  // NodePorts (never subject to loadBalancerSourceRanges).
  if (sp.nodePort !== 0) {
    const nodePort = String(sp.nodePort);
    if (hasEndpoints) {
      if (localhostNodePortsActive(node, extras) && hasCounter(extras, NFACCT_LOCALHOST_NODEPORTS)) {
        // Same verdict as the next rule; it exists only to count localhost NodePort traffic.
        natTopRules.push({
          chain: KUBE_NODEPORTS,
          args: [
            ...commentMatch(name),
            ...protoMatch,
            '-d',
            '127.0.0.0/8',
            '--dport',
            nodePort,
            '-m',
            'nfacct',
            '--nfacct-name',
            NFACCT_LOCALHOST_NODEPORTS,
            '-j',
            externalTrafficChain,
          ],
        });
      }
      natTopRules.push({
        chain: KUBE_NODEPORTS,
        args: [...commentMatch(name), ...protoMatch, '--dport', nodePort, '-j', externalTrafficChain],
      });
    }
    if (externalFilter) {
      filterRules.push({
        chain: KUBE_EXTERNAL_SERVICES,
        args: [
          ...commentMatch(externalFilter.comment),
          '-m',
          'addrtype',
          '--dst-type',
          'LOCAL',
          ...protoMatch,
          '--dport',
          nodePort,
          '-j',
          externalFilter.target,
        ],
      });
    }
  }

  // Health-check node port: always TCP.
  if (sp.healthCheckNodePort !== 0) {
    filterRules.push({
      chain: KUBE_NODEPORTS,
      args: [
        ...commentMatch(`${name} health check node port`),
        '-m',
        'tcp',
        '-p',
        'tcp',
        '--dport',
        String(sp.healthCheckNodePort),
        '-j',
        'ACCEPT',
      ],
    });
  }

  return { filterRules, natTopRules };
}

/** ClusterIP masquerading, the external chain and the load-balancer firewall chain. */
function serviceChainRules(p: PortContext, chains: string[], chainRules: IptablesRule[]): void {
  const {
    node,
    sp,
    internal,
    external,
    name,
    names,
    clusterPolicyChain,
    internalTrafficChain,
    externalPolicyChain,
    externalTrafficChain,
    firewall,
    frontendMatch,
  } = p;
  if (internal.noEndpoints === undefined) {
    const clusterIPMatch = frontendMatch(`${name} cluster IP`, sp.clusterIP);
    const masquerade = clusterIPMasquerade(node.masqueradeAll, node.localDetector);
    if (masquerade === 'all') {
      chainRules.push({ chain: internalTrafficChain, args: [...clusterIPMatch, '-j', KUBE_MARK_MASQ] });
    } else if (masquerade === 'from-outside-cluster') {
      // Masquerade off-cluster traffic to the ClusterIP, so replies come back through this node.
      chainRules.push({
        chain: internalTrafficChain,
        args: [...clusterIPMatch, ...localMatch(node.localDetector, false), '-j', KUBE_MARK_MASQ],
      });
    }
  }

  if (external.viaExternalChain) {
    chains.push(externalTrafficChain);
    if (!sp.externalPolicyLocal) {
      // Cluster policy may send the packet to another node: masquerade so the reply returns through us.
      chainRules.push({
        chain: externalTrafficChain,
        args: [...commentMatch(`masquerade traffic for ${name} external destinations`), '-j', KUBE_MARK_MASQ],
      });
    } else {
      if (node.localDetector.mode !== 'None') {
        chainRules.push({
          chain: externalTrafficChain,
          args: [
            ...commentMatch(`pod traffic for ${name} external destinations`),
            ...localMatch(node.localDetector, true),
            '-j',
            clusterPolicyChain,
          ],
        });
      }
      chainRules.push({
        chain: externalTrafficChain,
        args: [
          ...commentMatch(`masquerade LOCAL traffic for ${name} external destinations`),
          '-m',
          'addrtype',
          '--src-type',
          'LOCAL',
          '-j',
          KUBE_MARK_MASQ,
        ],
      });
      chainRules.push({
        chain: externalTrafficChain,
        args: [
          ...commentMatch(`route LOCAL traffic for ${name} external destinations`),
          '-m',
          'addrtype',
          '--src-type',
          'LOCAL',
          '-j',
          clusterPolicyChain,
        ],
      });
    }
    if (external.noEndpoints === undefined)
      chainRules.push({ chain: externalTrafficChain, args: ['-j', externalPolicyChain] });
  }

  if (firewall !== undefined) {
    chains.push(names.firewall);
    const lbComment = commentMatch(`${name} loadbalancer IP`);
    for (const source of [...firewall.sourceRanges, ...firewall.allowedVIPs]) {
      chainRules.push({
        chain: names.firewall,
        args: [...lbComment, '-s', source, '-j', externalTrafficChain],
      });
    }
    // Reaching the end means no DNAT happened: KUBE-PROXY-FIREWALL (filter) drops it.
    chainRules.push({
      chain: names.firewall,
      args: commentMatch(`other traffic to ${name} will be dropped by KUBE-PROXY-FIREWALL`),
    });
  }
}

/** The Cluster and Local policy chains (endpoint selection) and one chain per reachable endpoint. */
function policyAndEndpointChains(
  p: PortContext,
  ctx: RenderContext,
  chains: string[],
  chainRules: IptablesRule[],
): void {
  const { sp, policy, name, names, epChain, protoMatch } = p;
  if (policy.usesClusterEndpoints) {
    chains.push(names.clusterPolicy);
    writeEndpointSelection(chainRules, sp, names.clusterPolicy, policy.clusterEndpoints, epChain, ctx);
  }
  if (policy.usesLocalEndpoints) {
    chains.push(names.localPolicy);
    writeEndpointSelection(chainRules, sp, names.localPolicy, policy.localEndpoints, epChain, ctx);
  }

  for (const ep of policy.reachableEndpoints) {
    const chain = epChain(ep);
    chains.push(chain);
    const comment = ctx.largeClusterMode ? [] : commentMatch(name);
    // Hairpin: a pod reaching itself through the service must be masqueraded or it would answer itself directly.
    chainRules.push({ chain, args: [...comment, '-s', ep.ip, '-j', KUBE_MARK_MASQ] });
    const affinity = sp.sessionAffinityClientIP ? ['-m', 'recent', '--name', chain, '--set'] : [];
    chainRules.push({
      chain,
      args: [...comment, ...affinity, ...protoMatch, '-j', 'DNAT', '--to-destination', ep.endpoint],
    });
  }
}

/** Upstream's probability for rule i of n: 1/(n−i), printed with Go's %0.10f. */
export function probability(remaining: number): string {
  return (1 / remaining).toFixed(10);
}

function writeEndpointSelection(
  out: IptablesRule[],
  sp: ServicePort,
  chain: string,
  endpoints: readonly Endpoint[],
  epChain: (ep: Endpoint) => string,
  ctx: RenderContext,
): void {
  const name = sp.nameString;
  const epChains = endpoints.map(epChain);
  const comment = (ep: Endpoint): string[] =>
    ctx.largeClusterMode ? [] : commentMatch(`${name} -> ${ep.endpoint}`);
  // ClientIP affinity: a client seen recently goes back to the same endpoint before any random choice.
  if (sp.sessionAffinityClientIP) {
    endpoints.forEach((ep, i) => {
      const epChain = epChains[i] as string;
      out.push({
        chain,
        args: [
          ...comment(ep),
          '-m',
          'recent',
          '--name',
          epChain,
          '--rcheck',
          '--seconds',
          String(sp.stickyMaxAgeSeconds),
          '--reap',
          '-j',
          epChain,
        ],
      });
    });
  }
  const n = endpoints.length;
  endpoints.forEach((ep, i) => {
    const statistic =
      i < n - 1 ? ['-m', 'statistic', '--mode', 'random', '--probability', probability(n - i)] : [];
    out.push({ chain, args: [...comment(ep), ...statistic, '-j', epChains[i] as string] });
  });
}
