// What one traced packet's path means, in the cluster's words: which Service port's frontend it matched, which
// endpoint kube-proxy sent it to, whether it was masqueraded, or why it was rejected or dropped. Read from the
// events themselves (verdicts, the chains' and elements' names the renderers gave them) and the frontend index
// of the live table; nothing here guesses what the rules would do.
import type { TraceEvent, TracePacketFields } from './events.js';
import type { ChainOwners, FrontendEntry, FrontendIndex } from './frontends.js';
import { frontendKey, servicePortOfChain, servicePortOfComment } from './frontends.js';
import type { TracedPacket } from './packets.js';
import type { ProxyMode } from '../../config/proxy-mode.js';

export type TraceOutcome =
  /** DNATed to an endpoint. */
  | 'sent-to-endpoint'
  | 'rejected'
  | 'dropped'
  /** kube-proxy's rules saw it and left it alone (not a Service frontend). */
  | 'not-a-service'
  /** Part of a connection conntrack already knows: NAT follows the entry, kube-proxy's NAT rules are not asked. */
  | 'follows-conntrack'
  /** No kube-proxy rule saw it. */
  | 'not-seen';

export interface TraceStep {
  readonly table: string;
  readonly chain: string;
  readonly kind: TraceEvent['kind'];
  readonly text: string;
  readonly verdict?: string;
}

export interface PacketMeaning {
  readonly packet: string;
  readonly outcome: TraceOutcome;
  /** "ns/name:port" of the Service port whose frontend matched. */
  readonly servicePort?: string;
  /** "198.19.0.10:80/tcp" or "NodePort 30080/tcp on 198.18.0.11". */
  readonly frontend?: string;
  /** "IP:PORT" the packet was sent to. */
  readonly endpoint?: string;
  readonly masqueraded: boolean;
  /** The source address after masquerading. */
  readonly masqueradedTo?: string;
  /** Sentences, most important first. */
  readonly why: readonly string[];
  /** Steps in kube-proxy's rules (and other tables' verdicts), not our own marking. */
  readonly path: readonly TraceStep[];
}

export function isKubeProxyEvent(ev: TraceEvent, mode: ProxyMode): boolean {
  if (mode === 'nftables') return ev.table === 'kube-proxy';
  return ev.chain.startsWith('KUBE-');
}

function describePacket(p: TracePacketFields | undefined): string {
  if (!p) return '(no headers)';
  const port = (a: string | undefined, n: number | undefined): string =>
    `${a ?? '?'}${n !== undefined ? `:${n}` : ''}`;
  return `${p.protocol ?? 'ip'} ${port(p.saddr, p.sport)} → ${port(p.daddr, p.dport)}${
    p.tcpFlags !== undefined ? ` [${p.tcpFlags}]` : ''
  }`;
}

function hostPort(address: string, port: number | undefined): string {
  const a = address.includes(':') ? `[${address}]` : address;
  return port === undefined ? a : `${a}:${port}`;
}

/** The entries of the index for this packet's destination: by IP frontend first, then by NodePort. */
function frontendEntries(index: FrontendIndex, p: TracePacketFields | undefined): FrontendEntry[] {
  if (!p?.daddr || !p.protocol || p.dport === undefined) return [];
  return [
    ...(index.get(frontendKey([p.daddr, p.protocol, p.dport])) ?? []),
    ...(index.get(frontendKey([p.protocol, p.dport])) ?? []),
  ];
}

function servicePortOfEvent(ev: TraceEvent, owners: ChainOwners): string | undefined {
  const fromChain = servicePortOfChain(ev.chain) ?? owners.get(ev.chain);
  if (fromChain) return fromChain;
  const target = /^(?:goto|jump) (\S+)$/.exec(ev.verdict ?? '')?.[1];
  if (target) {
    const s = servicePortOfChain(target) ?? owners.get(target);
    if (s) return s;
  }
  const comment = /comment "([^"]*)"/.exec(ev.text)?.[1];
  return comment !== undefined ? servicePortOfComment(comment) : undefined;
}

export function interpretPacket(
  packet: TracedPacket,
  options: {
    readonly mode: ProxyMode;
    readonly index?: FrontendIndex;
    readonly owners?: ChainOwners;
    readonly traceTable: string;
  },
): PacketMeaning {
  const { mode, traceTable } = options;
  const index = options.index ?? new Map();
  const owners = options.owners ?? new Map();
  const first = packet.first;
  const last = packet.last;
  const kp = packet.events.filter((e) => isKubeProxyEvent(e, mode));
  const path: TraceStep[] = packet.events
    .filter((e) => e.table !== traceTable || e.kind !== 'packet')
    .filter((e) => e.table !== traceTable)
    .map((e) => ({
      table: e.table,
      chain: e.chain,
      kind: e.kind,
      text: e.text,
      ...(e.verdict !== undefined ? { verdict: e.verdict } : {}),
    }));
  const why: string[] = [];
  const entries = frontendEntries(index, first);
  const servicePort =
    kp.map((e) => servicePortOfEvent(e, owners)).find((s) => s !== undefined) ??
    entries.find((e) => e.servicePort !== undefined)?.servicePort;
  const nodePortEntry = entries.find((e) => e.key.length === 2);
  const viaNodePort = kp.some(
    (e) =>
      /@(service-nodeports|no-endpoint-nodeports|nodeport-)/.test(e.text) ||
      (e.kind === 'rule' && (e.chain === 'KUBE-NODEPORTS' || e.chain === 'KUBE-EXTERNAL-SERVICES')),
  );
  const frontend =
    first?.daddr === undefined
      ? undefined
      : viaNodePort || (nodePortEntry && !entries.some((e) => e.key.length === 3))
        ? `NodePort ${first.dport ?? '?'}/${first.protocol ?? '?'} on ${first.daddr}`
        : `${hostPort(first.daddr, first.dport)}/${first.protocol ?? '?'}`;

  const rejected = packet.events.find(
    (e) => e.kind === 'rule' && e.verdict === 'drop' && /\breject\b/i.test(e.text),
  );
  const dropped = packet.events.find(
    (e) => (e.kind === 'rule' && e.verdict === 'drop') || (e.kind === 'policy' && e.verdict === 'drop'),
  );
  const dnat = kp.find((e) => e.kind === 'rule' && /\bdnat\b/i.test(e.text));
  const masq = kp.find((e) => e.kind === 'rule' && /\bmasquerade\b/i.test(e.text) && e.verdict === 'accept');
  const rewroteDst =
    first?.daddr !== undefined &&
    last?.daddr !== undefined &&
    (first.daddr !== last.daddr || first.dport !== last.dport);
  const rewroteSrc = first?.saddr !== undefined && last?.saddr !== undefined && first.saddr !== last.saddr;
  const endpoint = rewroteDst && last?.daddr ? hostPort(last.daddr, last.dport) : undefined;
  const masqueraded = masq !== undefined || (rewroteSrc && dnat !== undefined);
  const masqueradedTo = masqueraded && rewroteSrc ? last?.saddr : undefined;

  // Which no-endpoint map said so, and for whom.
  const noEndpointRule = kp.find((e) => /@no-endpoint-(services|nodeports)/.test(e.text));
  const noEndpointEntry = entries.find((e) => e.map.startsWith('no-endpoint-'));
  const who = servicePort ?? noEndpointEntry?.servicePort;

  let outcome: TraceOutcome;
  if (rejected || dropped) {
    const at = rejected ?? dropped;
    outcome = rejected ? 'rejected' : 'dropped';
    const where = at ? `${at.table} ${at.chain}: ${at.text}` : '';
    if (noEndpointRule) {
      const map = /@(no-endpoint-(?:services|nodeports))/.exec(noEndpointRule.text)?.[1] ?? '';
      why.push(
        map === 'no-endpoint-nodeports' || viaNodePort
          ? `${outcome}: ${who ?? 'the Service port'} has no endpoint this node may send external traffic to ` +
              `(no endpoints, or externalTrafficPolicy: Local and none on this node): ${map} holds ` +
              `${noEndpointEntry ? `${noEndpointEntry.key.join(' . ')} : ${noEndpointEntry.value}` : 'its frontend'}`
          : `${outcome}: ${who ?? 'the Service port'} has no ready endpoints: ${map} holds ` +
              `${noEndpointEntry ? `${noEndpointEntry.key.join(' . ')} : ${noEndpointEntry.value}` : 'its frontend'}`,
      );
    } else if (at && /comment "[^"]*endpoints[^"]*"/.test(at.text)) {
      // iptables mode's own words, in the rule's comment ("ns/name:port has no local endpoints").
      why.push(`${outcome}: ${/comment "([^"]*)"/.exec(at.text)?.[1] ?? ''} (${at.table} ${at.chain})`);
    } else if (entries.some((e) => e.comment?.includes('endpoints'))) {
      const e = entries.find((x) => x.comment?.includes('endpoints'));
      why.push(`${outcome}: ${e?.comment ?? ''} (${e?.map ?? ''}: ${at?.text.trim() ?? ''})`);
    } else if (at && !isKubeProxyEvent(at, mode)) {
      why.push(`${outcome} outside kube-proxy's rules, by ${where}`);
    } else {
      why.push(`${outcome} by ${where}`);
    }
  } else if (dnat || (rewroteDst && kp.length > 0 && endpoint)) {
    if (dnat) {
      outcome = 'sent-to-endpoint';
      why.push(
        `matched ${who ?? 'a Service port'} by its frontend ${frontend ?? '?'}; sent to endpoint ${endpoint ?? '(not seen after DNAT)'}`,
      );
    } else {
      outcome = 'follows-conntrack';
      why.push(
        `not a new connection: conntrack already maps it to ${endpoint ?? '?'}; kube-proxy's NAT rules decide only a connection's first packet`,
      );
    }
  } else if (kp.length === 0) {
    outcome = 'not-seen';
    why.push(`no rule of kube-proxy's ${mode === 'nftables' ? 'table' : 'chains'} saw this packet`);
  } else {
    outcome = 'not-a-service';
    why.push(`${describePacket(first)} matched no Service frontend; kube-proxy let it pass unchanged`);
  }
  if (masqueraded)
    why.push(
      `masqueraded${masqueradedTo ? ` to ${masqueradedTo}` : ''} (${masq ? `${masq.chain}: ${masq.text}` : 'source rewritten'})`,
    );
  else if (outcome === 'sent-to-endpoint')
    why.push('not masqueraded: the endpoint sees the client’s own address');

  return {
    packet: describePacket(first),
    outcome,
    ...(who !== undefined ? { servicePort: who } : {}),
    ...(frontend !== undefined && (who !== undefined || outcome !== 'not-seen') ? { frontend } : {}),
    ...(endpoint !== undefined ? { endpoint } : {}),
    masqueraded,
    ...(masqueradedTo !== undefined ? { masqueradedTo } : {}),
    why,
    path,
  };
}
